"""Secrets by class: a generated corpus of forms, checked through every file the runner and sitegen write."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.bundle.redact import redact
from runner.cli import main as runner_main
from runner.journal import journal_path
from sitegen.build import build_site
from sitegen.cli import main as sitegen_main
from tests.builders import FIGURES, SEEDS
from tests.sample_site import write_content

_chance = random.Random(1313)
_PREFIXES = ["", "api", "hf", "s3", "aws", "db", "admin", "openai", "my.service"]
_WORDS = ["key", "keys", "token", "secret", "password", "passwd", "credential", "credentials", "apikey", "access-key",
          "secret-key", "auth-token", "pass"]
_SEPARATORS = ["-", "_"]


def _secret() -> str:
    """A value no page would show by chance; some hold the characters that break naive patterns."""
    body = "".join(_chance.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(12))
    return "Zq" + body + _chance.choice(["", "@x", ":y", "-z", ".w", "/v", "%40"])


def _name(separator: str, case: str) -> str:
    prefix, word = _chance.choice(_PREFIXES), _chance.choice(_WORDS)
    name = separator.join(p for p in (prefix.replace(".", separator), word.replace("-", separator)) if p)
    return name.upper() if case == "upper" else name


def _nested(key: str, value: str, depth: int) -> object:
    """A JSON document with the secret `depth` levels down, beside harmless keys."""
    document: object = {key: value, "n": 1}
    for level in range(depth):
        document = {"level": level, "inner": [document] if level % 2 else document}
    return document


def corpus() -> list[tuple[str, list[str]]]:
    """(form, the secrets in it): each class of the issue, in generated variants."""
    forms: list[tuple[str, list[str]]] = []
    for separator, equals, count in itertools.product(_SEPARATORS, (False, True), (1, 2, 3)):
        values = [_secret() for _ in range(1 if equals else count)]
        flag = "--" + _name("-" if separator == "-" else "_", "lower")
        forms.append((f"{flag}={values[0]}" if equals else f"{flag} {' '.join(values)}", values))
    for case in ("upper", "lower"):
        for _ in range(4):
            value = _secret()
            forms.append((f"{_name('_', case)}={value}", [value]))
    for depth, quote in itertools.product((0, 1, 3), ("json", "python", "escaped")):
        value = _secret()
        document = _nested(_name("_", "lower"), value, depth)
        text = json.dumps(document) if quote != "python" else repr(document)
        if quote == "escaped":
            text = json.dumps(text)[1:-1]
        forms.append((f"--model-loader-extra-config '{text}'", [value]))
    for _ in range(3):
        user, password = "u" + _secret()[2:6], _secret().replace("/", "") + "@p@q"  # a raw / would end the host
        forms.append((f"--endpoint https://{user}:{password}@host.example/v1", [password]))
        forms.append((f"curl -u {user}:{password} http://h", [password]))
        forms.append((f"curl --user={user}:{password} http://h", [password]))
    for header in ("Authorization: Bearer", "X-Api-Key:", "api-key:", "Authorization: Basic"):
        value = _secret()
        forms.append((f"curl -H '{header} {value}' http://h", [value]))
    value = _secret()
    forms.append((f"fetch https://h.example/m?x=1&api_key={value}&y=2", [value]))
    return forms


CORPUS = corpus()
COMMAND = " && ".join(["vllm serve m --max-num-batched-tokens 8192 --tokenizer t", *(form for form, _ in CORPUS)])
SECRETS = [secret for _, secrets in CORPUS for secret in secrets]


@pytest.mark.parametrize(("form", "secrets"), CORPUS, ids=[f"form{i}" for i in range(len(CORPUS))])
def test_each_form_alone_is_redacted(form: str, secrets: list[str]) -> None:
    text = redact(form)
    assert not [s for s in secrets if s in text or s.split("@")[0] in text], text
    assert "<redacted>" in text


def _leaks(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            leaked = [s for s in SECRETS if s.encode() in data or json.dumps(s)[1:-1].encode() in data]
            if leaked:
                found[str(path.relative_to(folder))] = leaked
    return found


def test_no_form_reaches_any_file_the_runner_or_sitegen_writes(tmp_path: Path) -> None:
    """One simulated run with the whole corpus as its launch command and in its notes, then a site built from it."""
    content = write_content(tmp_path, runs=())
    out = content / "runs" / "corpus.json"
    result = CliRunner().invoke(runner_main, [
        "simulate", "--out", str(out), "--launch-command", COMMAND, "--contexts", "1K", "--prefill-contexts", "1K",
        "--concurrency", "1", "--duration", "0.2", "--max-output", "8", "--engine-version", COMMAND[:300]])
    assert result.exit_code == 0, result.output
    assert journal_path(out).is_file()
    log = result.output
    # A bundle written by hand (or another tool) with secrets in its free text: sitegen must scrub them too.
    bundle = json.loads(out.read_text())
    run_id = bundle["id"]
    bundle.update(id="by-hand", notes=COMMAND, launch_command=COMMAND)
    bundle["decode"][0].update(status="Failed", error=COMMAND, total_tok_s=None)
    (content / "runs" / "by-hand.json").write_text(json.dumps(bundle))
    imported = CliRunner().invoke(sitegen_main, ["import", str(SEEDS[0]), "--out", str(content / "runs"),
                                                 "--launch-command", COMMAND])
    assert imported.exit_code == 0, imported.output
    build_site(content, tmp_path / "site")
    leaked = {**_leaks(content / "runs"), **_leaks(tmp_path / "site")}
    leaked.pop("by-hand.json")  # the input itself, as its author wrote it
    assert leaked == {}, json.dumps(leaked, indent=0)[:3000]
    assert [s for s in SECRETS if s in log] == []
    written = sorted(p.name for p in (tmp_path / "site" / "runs" / run_id).iterdir())
    assert written == ["bundle.json", "index.html", "index.txt", "measurements.csv", "picker.js"]
    FIGURES.append(f"secrets: {len(CORPUS)} generated forms holding {len(SECRETS)} secrets, none found in the bundle, "
                   f"journal, log or any of {sum(1 for p in (tmp_path / 'site').rglob('*') if p.is_file())} site files")
