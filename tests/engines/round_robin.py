"""A round-robin front for several servers, as a data-parallel deployment's load balancer: each new
TCP connection goes to the next backend in turn (what an L4 balancer does)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


@contextmanager
def round_robin(backends: list[tuple[str, int]]) -> Iterator[str]:
    """A front on 127.0.0.1 for `backends` (host, port) while the block runs; its base URL."""
    turn = itertools.cycle(backends)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: dict[str, object] = {}

    async def serve(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        host, port = next(turn)
        try:
            server_reader, server_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))

    async def main() -> None:
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        holder["port"] = server.sockets[0].getsockname()[1]
        holder["server"] = server
        started.set()
        async with server:
            try:
                await server.serve_forever()
            except asyncio.CancelledError:  # the block ended
                pass

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    started.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}/v1"
    finally:
        loop.call_soon_threadsafe(lambda: [task.cancel() for task in asyncio.all_tasks(loop)])
        thread.join(5)
