"""Broken and hostile input, generated: every file is a bundle that publishes, or one clear line per problem."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.bundle.schema import Bundle, encode_bundle
from sitegen.build import build_site
from sitegen.cli import main
from sitegen.content.loader import decode_bundle_file
from sitegen.errors import InputError, InputErrors
from sitegen.importers.options import ImportOptions
from sitegen.importers.registry import import_file
from sitegen.views.runview import run_view
from tests.builders import FIGURES, FIXTURES, NASTY_STRINGS, SEEDS, tree_digest
from tests.sample_site import sample_runs, write_content

# The sample runs as files written by hand would hold them (indented, so line edits have lines to work on).
BUNDLES = [json.dumps(json.loads(encode_bundle(bundle)), indent=2).encode() for bundle in sample_runs()]
JSON_TEXTS = [*BUNDLES, (FIXTURES / "llm-inference-bench-0.4.18.json").read_bytes()]
TEXTS = [*(p.read_bytes() for p in SEEDS), *JSON_TEXTS]
DOCS = [json.loads(text) for text in JSON_TEXTS]
JUNK_NUMBERS = [b"fast", b"-1", b"1e309", b"NaN", b"Infinity", b"0x10", b"1,2", b"", b"9" * 40, b"-0", b"1e-400", "\u00bd".encode(), "\u0661\u0662".encode()]
# Whole-file problems need no line or field: the file is not JSON at all, or not a format we know.
WHOLE_FILE = ("invalid JSON", "unknown JSON format")
FUZZ = settings(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TRIED = {"inputs": 0, "bundles": 0, "errors": 0}


def _nested(depth: int) -> object:
    value: object = None
    for _ in range(depth):
        value = [value]
    return value


JUNK_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 80), max_value=1 << 80),
    st.floats(),
    st.sampled_from(NASTY_STRINGS),
    st.text(max_size=20),
    st.sampled_from([_nested(40), _nested(20_000), {"a": {"b": [1, {"c": None}]}}]),
    st.recursive(st.none() | st.integers() | st.text(max_size=5), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8),
)


def _json_paths(value: object, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path to a value inside a JSON document, the root first."""
    yield prefix
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        yield from _json_paths(child, (*prefix, key))


DOC_PATHS = [list(_json_paths(doc))[1:] for doc in DOCS]


def _replaced(doc: object, path: tuple, value: object, delete: bool) -> object:
    """doc with the value at path replaced (or removed when delete is set), copying only along the path."""
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    key = path[0]
    if len(path) > 1:
        copy[key] = _replaced(doc[key], path[1:], value, delete)
    elif delete:
        del copy[key]
    else:
        copy[key] = value
    return copy


@st.composite
def json_mutants(draw: st.DrawFn, sources: range = range(len(DOCS))) -> bytes:
    """A JSON source with one to three values replaced by junk (or removed), pretty or compact."""
    index = draw(st.sampled_from(sources))
    doc = DOCS[index]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(DOC_PATHS[index]))
        try:
            doc = _replaced(doc, path, draw(JUNK_VALUES), draw(st.booleans()))
        except (KeyError, IndexError, TypeError):
            continue
    try:
        return json.dumps(doc, indent=draw(st.sampled_from([None, 2])), ensure_ascii=draw(st.booleans())).encode()
    except RecursionError:
        return b"[" * 20_000


def _truncate(draw: st.DrawFn, data: bytes) -> bytes:
    return data[: draw(st.integers(0, len(data)))]


def _edit_lines(draw: st.DrawFn, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True) or [b""]
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    edit = draw(st.sampled_from(["delete", "duplicate", "swap"]))
    if edit == "delete":
        del lines[i]
    elif edit == "duplicate":
        lines.insert(i, lines[i])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _flip_byte(draw: st.DrawFn, data: bytes) -> bytes:
    if not data:
        return data
    at = draw(st.integers(0, len(data) - 1))
    return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]


def _junk_number(draw: st.DrawFn, data: bytes) -> bytes:
    numbers = list(re.finditer(rb"\d+(?:[.,]\d+)*", data))
    if not numbers:
        return data
    found = draw(st.sampled_from(numbers))
    return data[: found.start()] + draw(st.sampled_from(JUNK_NUMBERS)) + data[found.end():]


TEXT_EDITS: list[Callable[[st.DrawFn, bytes], bytes]] = [_truncate, _edit_lines, _flip_byte, _junk_number]


@st.composite
def broken_files(draw: st.DrawFn) -> bytes:
    """A seed page, bundle or llm-inference-bench file with one to three edits, a JSON mutant, or noise."""
    kind = draw(st.sampled_from(["edited", "edited", "edited", "json", "noise"]))
    if kind == "json":
        return draw(json_mutants())
    if kind == "noise":
        return draw(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)))
    data = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 3))):
        data = draw(st.sampled_from(TEXT_EDITS))(draw, data)
    return data


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch folder shared by the examples of this module (hypothesis forbids function-scoped tmp_path)."""
    return tmp_path_factory.mktemp("fuzz")


def _assert_clear(error: InputError, path: Path) -> None:
    """One line that starts with the file and names a line or field (or is about the whole file)."""
    line = error.line()
    assert line.splitlines() == [line], repr(line)
    assert line.startswith(f"{path}:"), line
    assert error.where or error.message.startswith(WHOLE_FILE), line


def _assert_publishes(bundle: Bundle, work: Path) -> None:
    """A bundle that loaded must render: its view, and a whole site built from it."""
    run_view(bundle)
    content = work / "content"
    shutil.rmtree(content, ignore_errors=True)
    (content / "runs").mkdir(parents=True)
    (content / "runs" / f"{bundle.id}.json").write_bytes(encode_bundle(bundle))
    shutil.rmtree(work / "site", ignore_errors=True)
    build_site(content, work / "site")


def _check(data: bytes, work: Path, read: Callable[[Path], Bundle]) -> None:
    """The property: read ends in a bundle that publishes, or InputError(s) with clear lines, nothing else."""
    path = work / "input.txt"
    path.write_bytes(data)
    TRIED["inputs"] += 1
    try:
        bundle = read(path)
    except InputErrors as exc:
        assert exc.errors
        for error in exc.errors:
            _assert_clear(error, path)
        TRIED["errors"] += 1
        return
    except InputError as exc:
        _assert_clear(exc, path)
        TRIED["errors"] += 1
        return
    TRIED["bundles"] += 1
    _assert_publishes(bundle, work)


@settings(FUZZ, max_examples=600)
@given(data=broken_files())
def test_import_file_survives_broken_input(work: Path, data: bytes) -> None:
    _check(data, work, lambda path: import_file(path, ImportOptions()))


@settings(FUZZ, max_examples=400)
@given(data=st.one_of(json_mutants(range(len(BUNDLES))), broken_files()))
def test_decode_bundle_file_survives_broken_input(work: Path, data: bytes) -> None:
    _check(data, work, lambda path: decode_bundle_file(path, path.read_bytes()))


@settings(FUZZ, max_examples=25)
@given(data=broken_files())
def test_cli_import_fails_with_lines_not_tracebacks(work: Path, data: bytes) -> None:
    path = work / "cli-input.txt"
    path.write_bytes(data)
    shutil.rmtree(work / "cli-runs", ignore_errors=True)
    TRIED["inputs"] += 1
    result = CliRunner().invoke(main, ["import", str(path), "--out", str(work / "cli-runs")])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    if result.exit_code:
        assert all(line.startswith(f"error: {path}:") for line in result.output.splitlines()), result.output
    else:
        assert result.output.startswith("wrote ")


@pytest.fixture(scope="module")
def old_site(work: Path) -> tuple[Path, list[Path]]:
    """A site built from every sample run but the first, the one the mutants are made from."""
    content = write_content(work / "old", runs=sample_runs()[1:], pages=False)
    build_site(content, work / "old-site")
    return work / "old-site", sorted((content / "runs").iterdir())


@settings(FUZZ, max_examples=10)
@given(data=json_mutants(range(1)))
def test_build_with_one_bad_bundle_keeps_the_old_site(work: Path, old_site: tuple[Path, list[Path]], data: bytes) -> None:
    site, good = old_site
    content, out = work / "build-content", work / "build-out"
    for folder in (content, out, work / ".build-out.sitegen"):
        shutil.rmtree(folder, ignore_errors=True)
    (content / "runs").mkdir(parents=True)
    for source in good:
        shutil.copy(source, content / "runs" / source.name)
    broken = content / "runs" / "broken.json"
    broken.write_bytes(data)
    shutil.copytree(site, out)
    shutil.copytree(site.parent / f".{site.name}.sitegen", work / ".build-out.sitegen")  # what marks it as sitegen's
    before = tree_digest(out)
    TRIED["inputs"] += 1
    try:
        decode_bundle_file(broken, data)
    except InputError:
        bad = True
    else:
        bad = False
    result = CliRunner().invoke(main, ["build", "--content", str(content), "--out", str(out)])
    assert "Traceback" not in result.output and isinstance(result.exception, (SystemExit, type(None)))
    if bad:
        assert result.exit_code != 0
        assert result.output.startswith(f"error: {broken}:") and len(result.output.splitlines()) == 1, result.output
        assert tree_digest(out) == before
        assert not [p for p in (work / ".build-out.sitegen").iterdir() if p.name.startswith(("build-", "state-", "old-"))]
    else:
        assert result.exit_code == 0, result.output


@pytest.fixture(scope="module", autouse=True)
def report_inputs_tried() -> Iterator[None]:
    """After the module: how many broken inputs the properties were checked against."""
    yield
    if TRIED["inputs"]:
        FIGURES.append(f"fuzz: {TRIED['inputs']} broken inputs tried, no traceback; of those read directly, "
                       f"{TRIED['bundles']} still made valid bundles (built) and {TRIED['errors']} gave clear error lines")
