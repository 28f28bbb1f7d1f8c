"""Redaction of launch commands and messages: secrets go, look-alikes stay."""

from __future__ import annotations

import pytest

from runner.bundle.redact import REDACTED, redact, redact_json

REDACTION_CASES = [
    ("vllm serve m --api-key sk-abc123 --port 8000", "vllm serve m --api-key <redacted> --port 8000"),
    ("vllm serve m --api-key=hunter2", "vllm serve m --api-key=<redacted>"),
    ('vllm serve m --api-key "two words"', "vllm serve m --api-key <redacted>"),
    ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz vllm serve m", "HF_TOKEN=<redacted> vllm serve m"),
    ("OPENAI_API_KEY=xyz CUDA_VISIBLE_DEVICES=0,1 vllm serve m", "OPENAI_API_KEY=<redacted> CUDA_VISIBLE_DEVICES=0,1 vllm serve m"),
    ("server --hf-token abc --token=def", "server --hf-token <redacted> --token=<redacted>"),
    ("curl -H 'Authorization: Bearer abc.def' x", "curl -H 'Authorization: Bearer <redacted>' x"),
    ('serve --auth-header "Bearer tokSECRET"', 'serve --auth-header <redacted>'),  # an auth-named option: all its values
    ("curl -H 'x-api-key: abc' x", "curl -H 'x-api-key: <redacted>' x"),
    ("--model https://user:pass@example.com/m", "--model https://<redacted>@example.com/m"),
    ("fetch https://h.example/m?api_key=abc&x=1", "fetch https://h.example/m?api_key=<redacted>&x=1"),
    ("fetch https://h.example/m?token=abc", "fetch https://h.example/m?token=<redacted>"),
    ("echo sk-proj-ABCDEFGHIJKLMNOPQRSTUV", "echo <redacted>"),
    ("echo ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "echo <redacted>"),
    # Look-alikes that are not secrets stay.
    ("vllm serve m --max-num-batched-tokens 8192 --tokenizer t", "vllm serve m --max-num-batched-tokens 8192 --tokenizer t"),
    ("vllm serve m --max-tokens 10 --tokenizer-mode auto", "vllm serve m --max-tokens 10 --tokenizer-mode auto"),
]


@pytest.mark.parametrize(("command", "expected"), REDACTION_CASES)
def test_redact(command: str, expected: str) -> None:
    assert redact(command) == expected


def test_redact_given_secret_anywhere() -> None:
    assert redact("error: key plainvalue rejected", ["plainvalue"]) == "error: key <redacted> rejected"


JSON_CASES = [
    ({"api_key": "K", "max_token": 5}, {"api_key": REDACTED, "max_token": 5}),
    ({"auth": ["user", "pw"], "token": {"value": "abc", "note": None}}, {"auth": REDACTED, "token": REDACTED}),
    ({"headers": [["X-Api-Key", "K"], ["Accept", "json"]]}, {"headers": [["X-Api-Key", REDACTED], ["Accept", "json"]]}),
    ([{"name": "Authorization", "value": "Bearer Z"}], [{"name": "Authorization", "value": REDACTED}]),
    ({"note": "curl -u me:pw https://h"}, {"note": "curl -u me:<redacted> https://h"}),
    # A measurement whose name holds a secret word keeps its figure and its unit.
    ({"time_to_first_token": {"value": 80.1, "unit": "ms"}}, {"time_to_first_token": {"value": 80.1, "unit": "ms"}}),
]


@pytest.mark.parametrize(("value", "expected"), JSON_CASES)
def test_redact_json(value: object, expected: object) -> None:
    assert redact_json(value) == expected
