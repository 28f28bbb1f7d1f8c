"""The simulator's lifecycle: start it, change its faults, kill or close it, serve forever.

start_simulator (async), running_simulator (a background thread with its own
event loop, for synchronous tests) and serve (blocking, for `runner simulate`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

from runner.simulator.config import SimConfig
from runner.simulator.engine import BatchEngine, EngineStats
from runner.simulator.faults import Faults, FaultState, merge_faults
from runner.simulator.protocol import (
    HttpError,
    read_request,
    reset_connection,
    response_bytes,
)
from runner.simulator.routes import Routes
from runner.simulator.tokenizer import Tokenizer

R = TypeVar("R")
CALL_TIMEOUT_S = 10.0


class PortUnavailable(Exception):
    """The simulator cannot listen where it was asked to; str() is one line for the user."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        """Say why `host`:`port` cannot be listened on, in words rather than an errno."""
        if cause.errno == errno.EADDRINUSE:
            super().__init__(f"port {port} on {host} is in use")
        else:
            super().__init__(f"cannot listen on port {port} on {host}: {cause.strerror or cause}")


class SimServer:
    """A running simulated inference server; create it with start_simulator."""

    def __init__(self, config: SimConfig, host: str) -> None:
        """Prepare (not start) a server for `config` on `host`."""
        self.config = config
        self.host = host
        self.port = 0
        self.tokenizer = Tokenizer()
        self._token_log = open(config.token_log, "a", encoding="utf-8", buffering=1) if config.token_log else None
        self.engine = BatchEngine(config, self.tokenizer, self._token_log)
        self._loop = asyncio.get_running_loop()
        self._thread_id = threading.get_ident()
        self._fault_state = FaultState(Faults(), self._loop.time(), 0, config.seed)
        self.routes = Routes(config, self.tokenizer, self.engine, self._fault_state, self._arm)
        self._listener: asyncio.Server | None = None
        self._die_timer: asyncio.TimerHandle | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._stopped: asyncio.Task[None] | None = None

    async def _start(self, port: int) -> None:
        """Listen on `port` (0 = any free port), start the engine, arm the configured faults."""
        try:
            self._listener = await asyncio.start_server(self._serve_connection, self.host, port)
        except OSError as exc:
            raise PortUnavailable(self.host, port, exc) from None
        self.port = self._listener.sockets[0].getsockname()[1]
        self.engine.on_tokens = self._check_token_death
        self.engine.start()
        self._arm(self.config.faults)

    @property
    def root_url(self) -> str:
        """The server's root, e.g. http://127.0.0.1:PORT (where /health and /metrics live)."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, e.g. http://127.0.0.1:PORT/v1."""
        return self.root_url + "/v1"

    @property
    def faults(self) -> Faults:
        """The faults in force."""
        return self._fault_state.faults

    @property
    def dead(self) -> bool:
        """Whether the server has died (a fault, kill()) or been closed."""
        return self._stopped is not None

    def set_faults(self, faults: Faults | None = None, /, **changes: object) -> Faults:
        """Replace the faults with `faults` (default: those in force), updated by `changes`.

        Counters and timers (error_next, die_after_*) restart now. Thread-safe.
        `set_faults(Faults())` clears everything; raises msgspec.ValidationError on bad values.
        """
        merged = merge_faults(faults if faults is not None else self.faults, changes)
        self._call(lambda: self._arm(merged))
        return merged

    def stats(self) -> EngineStats:
        """The engine's gauges and counters now. Thread-safe."""
        return self._call(self.engine.stats)

    def kill(self) -> None:
        """Die now, like a crashed server: stop listening, reset every connection. Thread-safe."""
        self._call(self._die)

    async def close(self) -> None:
        """Stop the server and wait until the engine and all connections are gone."""
        self._die()
        assert self._stopped is not None
        await self._stopped

    def _call(self, fn: Callable[[], R]) -> R:
        """Run `fn` on the server's event loop and return its result, from any thread."""
        if threading.get_ident() == self._thread_id:
            return fn()
        future: concurrent.futures.Future[R] = concurrent.futures.Future()

        def run() -> None:
            """Call `fn` on the loop and hand its outcome to the waiting thread."""
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future.result(timeout=CALL_TIMEOUT_S)

    def _arm(self, faults: Faults) -> None:
        """Put `faults` in force from now, with fresh counters and timers."""
        self._fault_state = FaultState(faults, self._loop.time(),
                                       self.engine.generation_tokens_total, self.config.seed)
        self.routes.faults = self._fault_state
        if self._die_timer is not None:
            self._die_timer.cancel()
            self._die_timer = None
        die_at = self._fault_state.die_at()
        if die_at is not None:
            self._die_timer = self._loop.call_at(die_at, self._die)
        self._check_token_death(self.engine.generation_tokens_total)

    def _check_token_death(self, tokens_total: int) -> None:
        """Die if the die_after_tokens fault has been reached."""
        if self._fault_state.tokens_kill(tokens_total):
            self._die()

    def _die(self) -> None:
        """Stop accepting, reset all connections and start stopping the engine (idempotent)."""
        if self._stopped is not None:
            return
        if self._die_timer is not None:
            self._die_timer.cancel()
        if self._listener is not None:
            self._listener.close()
        for writer in self._connections.values():
            reset_connection(writer)
        self._stopped = self._loop.create_task(self._stop())

    async def _stop(self) -> None:
        """Stop the engine, then cancel connection handlers still running."""
        await self.engine.stop()
        if self._token_log is not None:
            self._token_log.close()
        tasks = [t for t in self._connections if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _serve_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        """Serve requests on one connection until either side closes it."""
        task = asyncio.current_task()
        assert task is not None
        if self.dead:
            reset_connection(writer)
            return
        self._connections[task] = writer
        try:
            while (request := await read_request(reader)) is not None:
                if not await self.routes.handle(request, reader, writer):
                    break
        except HttpError as exc:
            writer.write(response_bytes(exc.status, str(exc).encode(), "text/plain", False))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing left to answer
        except asyncio.CancelledError:
            pass  # only _stop cancels handlers; ending normally keeps 3.11's stream callback quiet
        finally:
            del self._connections[task]
            writer.close()


async def start_simulator(config: SimConfig | None = None, host: str = "127.0.0.1",
                          port: int = 0) -> SimServer:
    """Start a simulator on `host`:`port` (0 = a free port) in the running event loop."""
    server = SimServer(config or SimConfig(), host)
    await server._start(port)
    return server


@contextlib.contextmanager
def running_simulator(config: SimConfig | None = None, host: str = "127.0.0.1",
                      port: int = 0) -> Iterator[SimServer]:
    """Run a simulator on its own event loop in a background thread, for synchronous code."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="simulator", daemon=True)
    thread.start()
    try:
        server = asyncio.run_coroutine_threadsafe(
            start_simulator(config, host, port), loop).result(CALL_TIMEOUT_S)
        try:
            yield server
        finally:
            asyncio.run_coroutine_threadsafe(server.close(), loop).result(CALL_TIMEOUT_S)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(CALL_TIMEOUT_S)
        loop.close()


# The exit status of `runner simulate --serve-only` when a fault kills the simulated server.
DIED_STATUS = 3


def serve(config: SimConfig | None = None, host: str = "127.0.0.1", port: int = 8000) -> int:
    """Serve until Ctrl-C (for `runner simulate`), printing the base URL first; 0, or DIED_STATUS
    when a fault killed the server, so a process that launched it sees it die as a real one would."""
    config = config or SimConfig()

    async def main() -> int:
        """Start, announce, and run until cancelled (Ctrl-C) or dead, then close."""
        server = await start_simulator(config, host, port)
        print(f"Simulating {config.model} at {server.base_url} (Ctrl-C stops)", flush=True)
        try:
            while not server.dead:
                await asyncio.sleep(0.2)
            print("the simulated server died (a fault in its config)", flush=True)
            return DIED_STATUS
        finally:
            await server.close()

    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(main())
    return 0
