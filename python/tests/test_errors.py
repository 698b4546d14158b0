"""Errors: typed exceptions from the engine, TypeError/ValueError for bad arguments, and never a
crash of the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import memdb

NOTE = {"source": "note", "time": "2024-05-01T09:30:00+01:00", "external_id": "n1"}


def run_python(code: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs `code` in a second interpreter (the installed package), its output captured."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_exception_hierarchy() -> None:
    for name in memdb.__all__:
        if name.endswith("Error"):
            assert issubclass(getattr(memdb, name), memdb.MemdbError), name
    assert issubclass(memdb.CatalogDamagedError, memdb.CorruptionError)
    assert issubclass(memdb.QuerySyntaxError, ValueError)
    assert issubclass(memdb.NotFoundError, LookupError)


def test_locked_by_another_process_fails_at_once(tmp_path: Path) -> None:
    path = tmp_path / "locked.memdb"
    code = f"""
        import sys, time, memdb
        started = time.perf_counter()
        try:
            memdb.Store.open({str(path)!r})
        except memdb.LockedError as e:
            print("locked", e.kind, round(time.perf_counter() - started, 3), e.path)
            sys.exit(0)
        print("opened")
        sys.exit(1)
    """
    with memdb.Store.open(path) as store:
        store.ingest([{**NOTE, "body": "held by this process"}], embed=False)
        started = time.perf_counter()
        other = run_python(code)
        elapsed = time.perf_counter() - started
        assert other.returncode == 0, other.stdout + other.stderr
        word, kind, seconds, where = other.stdout.split()
        assert (word, kind, where) == ("locked", "Locked", str(path))
        assert float(seconds) < 1.0, other.stdout  # refused at once, not after waiting
        assert elapsed < 30
    # Closed: the lock is released and the other process opens it.
    reopened = run_python(
        f"import memdb; s = memdb.Store.open({str(path)!r}); print(s.get('n1')['body'])"
    )
    assert reopened.returncode == 0, reopened.stderr
    assert reopened.stdout.strip() == "held by this process"


def flip_byte_of(store_path: Path, marker: bytes) -> Path:
    """Flips one byte of `marker` where it is stored in a segment file; returns that file."""
    for segment in sorted((store_path / "segments").glob("*.seg")):
        data = bytearray(segment.read_bytes())
        at = data.find(marker)
        if at >= 0:
            data[at + len(marker) // 2] ^= 0x20
            segment.write_bytes(bytes(data))
            return segment
    raise AssertionError(f"{marker!r} is in no segment of {store_path}")


def test_corrupt_segment_gives_corruption_error(tmp_path: Path) -> None:
    path = tmp_path / "damaged.memdb"
    marker = b"QXJZV corruption marker of this test"
    with memdb.Store.open(path) as store:
        store.ingest([{**NOTE, "body": marker.decode()}], embed=False)
        store.ingest(
            [{**NOTE, "external_id": "n2", "body": "an intact note"}], embed=False
        )
        item_id = store.get("n1")["id"]
    segment = flip_byte_of(path, marker)
    with memdb.Store.open(path, create=False) as store:
        with pytest.raises(memdb.CorruptionError) as info:
            store.get(item_id)
        assert info.value.kind == "Corruption"
        assert info.value.segment == int(segment.stem, 16)
        assert info.value.offset // 4096 == info.value.page
        assert "corruption in segment" in str(info.value)
        assert store.get("n2")["body"] == "an intact note"  # the rest still reads
        report = store.check()
        assert report["clean"] is False and report["problems"], report
        assert item_id in report["lost"]["items"]


def test_bad_arguments_raise_type_or_value_errors(store: memdb.Store) -> None:
    store.ingest([{**NOTE, "body": "a note"}], embed=False)
    bad_type = [
        lambda: store.recall(123),
        lambda: store.recall("q", k="3"),
        lambda: store.recall("q", k=2.5),
        lambda: store.recall("q", filters=[("source", "chat")]),
        lambda: store.recall("q", filters={"source": 4}),
        lambda: store.recall("q", filters={"ids": "12"}),
        lambda: store.recall("q", filters={"from": 20240101}),
        lambda: store.get(True),
        lambda: store.get(1.5),
        lambda: store.get(None),
        lambda: store.delete(["n1"]),
        lambda: store.ingest("not a list of dicts"),
        lambda: store.ingest([["source", "note"]]),
        lambda: store.ingest([{"source": "note", "time": None, "body": object()}]),
        lambda: store.ingest([{1: "a key that is no str"}]),
        lambda: store.import_jsonl(42),
        lambda: store.query(None),
        lambda: store.forget("timed-gentle", as_of=20300101),
        lambda: store.remember(b"bytes are not text"),
        lambda: memdb.Store.open(12345),
    ]
    for call in bad_type:
        with pytest.raises(TypeError):
            call()
    nested: list = []
    nested.append(nested)
    bad_value = [
        lambda: store.recall("q", k=0),
        lambda: store.recall("q", k=-5),
        lambda: store.recall("q", k=2**80),
        lambda: store.recall("q", filters={"colour": "red"}),
        lambda: store.recall("q", filters={"source": "diary"}),
        lambda: store.recall("q", filters={"from": "last tuesday"}),
        lambda: store.recall("q", filters={"signals": ["dense", "telepathy"]}),
        lambda: store.get(-1),
        lambda: store.get(2**64),
        lambda: store.get(""),
        lambda: store.ingest([{"source": "note", "time": None, "body": float("nan")}]),
        lambda: store.ingest([{"source": "note", "time": None, "tags": nested}]),
        lambda: store.ingest([{"source": "note", "time": None, "n": 2**70}]),
        lambda: store.ingest([NOTE], batch=0),
        lambda: store._native.import_files("tarball", ["x"]),
        lambda: store.forget("timed-gentle", as_of="2024-13-01"),
        lambda: store.forget("no-such-policy"),
        lambda: store.remember("I live in Lisbon.", time="yesterday"),
        lambda: store.query("ITEMS WHERE"),
    ]
    for call in bad_value:
        with pytest.raises(ValueError):
            call()
    # Nothing of the refused calls was written, and the store still works.
    assert store.stats()["items"] == 1
    assert store.check()["clean"] is True


def test_calls_on_a_closed_store(tmp_path: Path) -> None:
    store = memdb.Store.open(tmp_path / "closed.memdb")
    store.close()
    for call in [
        store.stats,
        store.check,
        lambda: store.get(1),
        lambda: store.recall("q"),
        lambda: store.ingest([NOTE], embed=False),
        lambda: store.query("SHOW STATS"),
    ]:
        with pytest.raises(memdb.ClosedError):
            call()


def test_missing_model_is_a_model_error_before_anything_is_written(tmp_path: Path) -> None:
    path = tmp_path / "nomodel.memdb"
    code = f"""
        import memdb
        store = memdb.Store.open({str(path)!r})
        try:
            store.ingest([{{"source": "note", "time": None, "body": "needs a vector"}}])
        except memdb.ModelError as e:
            assert "scripts/install-model.sh" in str(e), str(e)
            print("model-error")
        assert store.stats()["items"] == 0
        store.ingest([{{"source": "note", "time": None, "body": "no vector asked"}}], embed=False)
        for call in (lambda: store.recall("q"), lambda: store.remember("I live in Lisbon."),
                     lambda: store.query("RECALL 'q' TOP 3"), store.embed):
            try:
                call()
                raise SystemExit("no ModelError")
            except memdb.ModelError:
                pass
        print(store.stats()["items"])
    """
    result = run_python(code, env={"MEMDB_MODEL_DIR": str(tmp_path / "no-model-here")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == ["model-error", "1"]
