"""The GIL is released while the engine works: another Python thread keeps running during a
recall, an ingest with embedding, and a compaction."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

import memdb
from memdb import _native


def ticks_during(call: Callable[[], object], margin: float = 0.02) -> tuple:
    """Runs `call` on this thread while another thread counts; returns (ticks of the counter
    while `call` ran, seconds it ran)."""
    stamps: list = []
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.05)
    started = time.perf_counter()
    call()
    ended = time.perf_counter()
    stop.set()
    counter.join()
    # Only ticks well inside the call: none can happen there if the call holds the GIL.
    inside = [t for t in stamps if started + margin < t < ended - margin]
    return len(inside), ended - started


def test_recall_releases_the_gil(locomo_store: memdb.Store) -> None:
    ticks, seconds = ticks_during(
        lambda: _native.rust_recall_loop(locomo_store._native, "Why did Jon start a dance studio?", 10, 30)
    )
    assert seconds > 0.1, "the call was too short to tell"
    assert ticks >= 10, (ticks, seconds)
    ticks, seconds = ticks_during(
        lambda: [locomo_store.recall("What does Gina sell in her store?") for _ in range(30)]
    )
    assert ticks >= 10, (ticks, seconds)


def test_ingest_releases_the_gil(tmp_path: Path, model: str) -> None:
    notes = [
        {"source": "note", "time": None, "external_id": f"n{i}", "body": f"note {i} about the garden and the weather"}
        for i in range(400)
    ]
    with memdb.Store.open(tmp_path / "gil.memdb") as store:
        ticks, seconds = ticks_during(lambda: store.ingest(notes))
        assert store.stats()["items"] == 400
        assert seconds > 0.1 and ticks >= 10, (ticks, seconds)


def test_compaction_releases_the_gil(tmp_path: Path, shared_dir: Path) -> None:
    with memdb.Store.open(tmp_path / "photos.memdb") as store:
        store.import_photos(shared_dir / "data" / "photos" / "exif-samples", embed=False)
        # A compaction of these 18 MB takes some 25 ms: count from 2 ms after it starts (a
        # thread waiting for a held GIL gets none of that time; one sleeping 1 ms at a time,
        # when the GIL is free, some 20 ticks).
        for _ in range(3):
            ticks, seconds = ticks_during(lambda: store.compact(all=True), margin=0.002)
            if ticks >= 5:
                break
        assert ticks >= 5, (ticks, seconds)
        assert store.check()["clean"] is True
