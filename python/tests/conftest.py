"""Fixtures of the memdb Python test suite (run by scripts/python-tests.sh).

The suite tests the *installed* package (the wheel scripts/python-tests.sh built), never the
source folder python/memdb/, which has no compiled extension.

Shared with the MCP server's tests (python/tests/test_mcp.py):
- ``MEMDB_BIN`` (environment variable, set here when absent) and the ``memdb_bin`` fixture:
  the ``memdb`` CLI binary, ``$CARGO_TARGET_DIR/debug/memdb`` (default ``target/debug/memdb``);
- ``shared_dir``: the shared corpora (``$MEMDB_SHARED_DIR``, else ``../shared`` beside the repo);
- ``locomo_store_path``: a closed store (built once per session) holding one LoCoMo
  conversation (30.json, 369 turns), embedded, so any process can open it;
- ``locomo_store``: that store opened by this process (per test module, so a module that
  starts another process on the path does not meet this process's lock);
- ``model``: fails (under CI=1) or skips when the on-device encoder is not installed.

Missing corpora or model: under ``CI=1`` a failure, elsewhere a skip with the reason.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import memdb

REPO = Path(__file__).resolve().parents[2]
LOCOMO_FILE = "30.json"


def _target_dir() -> Path:
    target = os.environ.get("CARGO_TARGET_DIR")
    return Path(target) if target else REPO / "target"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("MEMDB_BIN", str(_target_dir() / "debug" / "memdb"))
    # The installed package, not python/memdb/ (which has no extension module).
    assert Path(memdb.__file__).resolve().parent != REPO / "python" / "memdb", (
        "the tests import the source folder python/memdb/; run them through "
        "scripts/python-tests.sh (installed wheel)"
    )


# Lines for the end of the run (the recall bench's figures): shown even when output is captured.
SUMMARY: list = []


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if SUMMARY:
        terminalreporter.section("memdb figures")
        for line in SUMMARY:
            terminalreporter.write_line(line)


@pytest.fixture
def report():
    """Records a line for the end-of-run summary (and prints it)."""

    def add(line: str) -> None:
        print(line)
        SUMMARY.append(line)

    return add


def _missing(what: str) -> None:
    if os.environ.get("CI") == "1":
        pytest.fail(f"{what} (required under CI=1)")
    pytest.skip(what)


@pytest.fixture(scope="session")
def memdb_bin() -> Path:
    """The memdb CLI binary (MEMDB_BIN)."""
    path = Path(os.environ["MEMDB_BIN"])
    if not path.is_file():
        _missing(f"the memdb binary is not built at {path} (cargo build -p memdb-cli)")
    return path


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared test corpora (MEMDB_SHARED_DIR, else ../shared)."""
    path = Path(os.environ.get("MEMDB_SHARED_DIR") or REPO.parent / "shared")
    if not (path / "data").is_dir():
        _missing(f"the shared corpora are not at {path} (set MEMDB_SHARED_DIR)")
    return path


@pytest.fixture(scope="session")
def model() -> str:
    """The on-device encoder's folder; recall, remember and embedding need it."""
    where, present = memdb.model_location()
    if not present:
        _missing(f"the on-device encoder is not installed at {where} (scripts/install-model.sh)")
    return where


@pytest.fixture
def store(tmp_path: Path):
    """A new, empty store, closed after the test."""
    s = memdb.Store.open(tmp_path / "test.memdb")
    yield s
    s.close()


@pytest.fixture(scope="session")
def locomo_file(shared_dir: Path) -> Path:
    path = shared_dir / "data" / "locomo" / LOCOMO_FILE
    if not path.is_file():
        _missing(f"{path} is missing")
    return path


@pytest.fixture(scope="session")
def locomo_store_path(tmp_path_factory: pytest.TempPathFactory, locomo_file: Path, model: str) -> Path:
    """A closed store holding LoCoMo conversation 30 (369 turns), embedded and in the graph."""
    path = tmp_path_factory.mktemp("locomo") / "locomo.memdb"
    started = time.perf_counter()
    with memdb.Store.open(path) as s:
        summary = s.import_locomo(locomo_file)
    seconds = time.perf_counter() - started
    assert summary["added"] == 369, summary
    assert summary["derived"]["encoded"] == 369, summary
    SUMMARY.append(
        f"LoCoMo store ({LOCOMO_FILE}): {summary['added']} turns imported and embedded in {seconds:.1f} s"
    )
    return path


@pytest.fixture(scope="module")
def locomo_store(locomo_store_path: Path):
    """The LoCoMo store opened by this process (read and write), for one test module."""
    s = memdb.Store.open(locomo_store_path, create=False)
    yield s
    s.close()


@pytest.fixture
def locomo_copy(locomo_store_path: Path, tmp_path: Path) -> Path:
    """A private copy of the LoCoMo store's folder, for a test that changes or damages it."""
    path = tmp_path / "copy.memdb"
    shutil.copytree(locomo_store_path, path)
    return path
