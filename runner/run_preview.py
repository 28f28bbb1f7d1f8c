"""`runner probe`: what a measurement would record and the matrix it would run, as text."""

from __future__ import annotations

import datetime as dt
import os

from runner.bundle.formats import context_label
from runner.bundle.redact import known_secrets, redact
from runner.bundle.terminal_text import printable
from runner.client import Client
from runner.errors import MeasureError, ServerError
from runner.hardware import detect_gpus
from runner.metadata import build_header, is_local
from runner.options import Options
from runner.plan import decode_cells, estimate_seconds, over_capacity, plan_for
from runner.progress import duration_text
from runner.server_facts import probe_server


async def run_preview(options: Options) -> str:
    """Probe the server and describe the run that `runner measure` would make."""
    api_key = os.environ.get(options.api_key_env) or None
    secrets = known_secrets(api_key, options.launch_command)
    client = Client(options.base_url, api_key, options.stall_timeout)
    try:
        facts = await probe_server(client, options.model, options.ready_timeout, options.kv_capacity,
                                    options.launch_command)
    except ServerError as exc:
        raise MeasureError(redact(str(exc), secrets)) from None
    finally:
        await client.aclose()
    plan = plan_for(options, facts)
    gpus = detect_gpus() if is_local(options.base_url) else None
    header = build_header(options, facts, gpus, secrets, dt.datetime.now(dt.timezone.utc))
    hw = header.hardware
    cells = decode_cells(plan)
    gpu_text = f"{hw.gpu_count or '?'} × {hw.gpu} {hw.vram_per_gpu_gb or '?'} GB" if hw.gpu else "none detected"
    skipped = sum(over_capacity(c, n, plan.max_output, plan.kv_capacity) for c, n in cells)
    lines = [
        f"server:       {options.base_url}",
        f"engine:       {header.engine.name} {header.engine.version or '(version unknown)'}",
        f"model:        {facts.model} (display name {header.model!r})",
        f"max length:   {facts.max_model_len or 'unknown'} tokens",
        f"KV capacity:  {f'{facts.kv_capacity:,} tokens ({facts.kv_source})' if facts.kv_capacity else 'unknown (no cell is skipped as over capacity)'}",
        f"queue gauge:  {'yes' if facts.queue_gauge else 'no (queueing judged from average active requests)'}",
        f"GPUs:         {gpu_text}",
        f"bundle id:    {header.id}",
        f"prefill at:   {', '.join(context_label(c) for c in plan.prefill_contexts)}",
        f"decode:       {len(plan.contexts)} contexts ({', '.join(context_label(c) for c in plan.contexts)}) × "
        f"{len(plan.concurrency)} concurrency levels ({', '.join(map(str, plan.concurrency))})",
        f"cells:        {len(cells)} ({skipped} over capacity), {plan.duration:g} s each, max output {plan.max_output:,} tokens"
        + (f", each measured {plan.repeats} times" if plan.repeats > 1 else ""),
        f"estimate:     about {duration_text(estimate_seconds(plan))}",
    ]
    # The server's own words (its model id, its version) are neither trusted nor secret-free.
    return "\n".join(printable(redact(line, secrets)) for line in lines)
