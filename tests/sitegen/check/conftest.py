"""Runs measured once for the checker's tests, and a fresh copy of one for each test to tamper with."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.bundle.records import records_path
from runner.simulator import SimConfig
from sitegen.importers.import_files import import_files
from sitegen.importers.options import ImportOptions
from tests.builders import FIXTURES, measure_simulator

SIM = SimConfig(max_model_len=8192)


@pytest.fixture(scope="session")
def measured_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run the runner measured from the simulator, with its raw request records: two cells and a prefill point."""
    out = tmp_path_factory.mktemp("measured") / "runs" / "measured.json"
    measure_simulator(SIM, out, contexts=[1024], prefill_contexts=[1024], concurrency=[1, 3], duration=0.5, max_output=48)
    return out


@pytest.fixture(scope="session")
def repeated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose one cell was measured three times (`--repeats 3`), with its raw request records."""
    out = tmp_path_factory.mktemp("repeated") / "runs" / "repeated.json"
    measure_simulator(SIM, out, contexts=[1024], prefill_contexts=[], concurrency=[2], duration=0.6, max_output=48, repeats=3)
    return out


def copy_run(bundle: Path, folder: Path, records: bool = True) -> Path:
    """The bundle (and its records, unless told not to) copied into `folder`/runs/."""
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    copy = Path(shutil.copy(bundle, folder / "runs" / bundle.name))
    if records:
        shutil.copy(records_path(bundle), records_path(copy))
    return copy


@pytest.fixture
def run(measured_run: Path, tmp_path: Path) -> Path:
    """A fresh copy of the measured run and its records, to tamper with."""
    return copy_run(measured_run, tmp_path)


@pytest.fixture
def bare_run(measured_run: Path, tmp_path: Path) -> Path:
    """A fresh copy of the measured run without its records: the checks that need no records alone."""
    return copy_run(measured_run, tmp_path, records=False)


@pytest.fixture
def seed_run(tmp_path: Path) -> Path:
    """A seed page imported afresh: figures as a page prints them, rounded."""
    written, errors = import_files([FIXTURES / "seeds" / "001_952c74cd5ec244a9.txt"], tmp_path / "runs", ImportOptions())
    assert errors == [] and written[0].name == "inkling-nvfp4-h200-sxm-x8-2026-09-17.json"
    return written[0]
