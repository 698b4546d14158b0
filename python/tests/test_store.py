"""Every method of memdb.Store on small stores: what it returns and what it changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memdb


def note(ext: str, body: str, time: str = "2024-05-01T09:30:00+01:00", **more) -> dict:
    return {"source": "note", "time": time, "external_id": ext, "body": body, **more}


NOTES = [
    note("n1", "Booked the hotel in Lisbon for the conference", tags=["travel"]),
    note("n2", "Bought a red bicycle at the market", time="2024-06-02T10:00:00+01:00"),
    note("n3", "Dinner with Ana at the harbour", time="2024-07-03T20:00:00+01:00"),
]


def test_open_create_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "a.memdb"
    store = memdb.Store.open(path)
    assert not store.closed and not store.read_only
    assert Path(store.path) == path
    assert store.stats()["items"] == 0
    store.close()
    assert store.closed
    store.close()  # a second close does nothing
    with pytest.raises(memdb.ClosedError):
        store.stats()
    with memdb.Store(path, create=False) as again:
        assert again.stats()["items"] == 0
    assert again.closed
    with pytest.raises(memdb.NoStoreError) as info:
        memdb.Store.open(tmp_path / "missing.memdb", create=False)
    assert info.value.kind == "NoStore"
    assert "missing.memdb" in info.value.path


def test_an_encrypted_store_needs_its_passphrase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMDB_PASSPHRASE", raising=False)
    path = tmp_path / "sealed.memdb"
    with memdb.Store.open(path, passphrase="correct horse") as store:
        store.ingest([note("secret", "The safe code is 4417-8213")], embed=False)
        assert store.stats()["encrypted"] is True
    for file in path.rglob("*"):
        if file.is_file():
            assert b"4417-8213" not in file.read_bytes(), file
    with pytest.raises(memdb.EncryptionError) as missing:
        memdb.Store.open(path, create=False)
    assert missing.value.kind == "Encrypted" and "sealed.memdb" in missing.value.path
    with pytest.raises(memdb.EncryptionError) as wrong:
        memdb.Store.open(path, passphrase="wrong horse")
    assert wrong.value.kind == "Key" and "does not open" in str(wrong.value)
    monkeypatch.setenv("MEMDB_PASSPHRASE", "correct horse")
    with memdb.Store.open(path, create=False, read_only=True) as store:
        assert store.get("secret")["body"] == "The safe code is 4417-8213"


def test_ingest_get_and_update(store: memdb.Store) -> None:
    summary = store.ingest(NOTES, embed=False)
    assert (summary["added"], summary["updated"], summary["skipped"]) == (3, 0, [])
    assert summary["derived"] is None
    item = store.get("n1")
    assert item is not None
    assert item["body"] == NOTES[0]["body"] and item["tags"] == ["travel"]
    assert item["source"] == "note" and item["external_id"] == "n1"
    assert store.get(item["id"]) == item
    assert store.get("no-such-id") is None
    assert store.get(10**12) is None

    # Replacing an imported item is an update of imported data: it needs allow=["delete"].
    path = store.path
    store.close()
    store = memdb.Store.open(path, create=False, allow=["delete"])
    again = store.ingest([note("n1", "Booked the hotel in Porto instead")], embed=False)
    assert (again["added"], again["updated"]) == (0, 1)
    updated = store.get("n1")
    assert updated["id"] == item["id"] and updated["body"] == "Booked the hotel in Porto instead"
    assert [v["body"] for v in updated["earlier_versions"]] == [NOTES[0]["body"]]

    history = store.history("n1")
    assert history["id"] == item["id"]
    assert [v["body"] for v in history["versions"]] == [NOTES[0]["body"], updated["body"]]
    assert [v["current"] for v in history["versions"]] == [False, True]
    assert store.stats()["items"] == 3
    store.close()


def test_ingest_reports_bad_items_and_keeps_the_rest(store: memdb.Store) -> None:
    summary = store.ingest(
        [
            {"source": "note", "time": None, "body": "an undated note"},
            {"source": "diary", "time": None, "body": "unknown source"},
            {"body": "no source, no time"},
            {"source": "note", "time": "yesterday", "body": "bad time"},
        ],
        embed=False,
    )
    assert summary["added"] == 1
    skipped = summary["skipped"]
    assert [s.split(":")[0] for s in skipped] == ["items[1]", "items[2]", "items[3]"], skipped
    assert "source" in skipped[0] and "time" in skipped[2]


def test_delete_keeps_history(store: memdb.Store) -> None:
    store.ingest(NOTES, embed=False)
    target = store.get("n2")
    # Imported notes are not remembered facts: deleting one needs the capability, and a
    # refusal changes nothing.
    assert store.allowed == []
    with pytest.raises(memdb.CapabilityError) as refused:
        store.delete("n2")
    assert refused.value.capability == "delete" and 'allow=["delete"]' in str(refused.value)
    assert store.get("n2") == target
    path = store.path
    store.close()
    store = memdb.Store.open(path, create=False, allow=["delete"])
    assert store.allowed == ["delete"]
    done = store.delete("n2", reason="it was blue")
    assert done["event"] == "DELETE" and done["memory_id"] == target["id"]
    assert store.get("n2") is None and store.get(target["id"]) is None
    history = store.history(target["id"])
    assert [v["body"] for v in history["versions"]] == [NOTES[1]["body"]]
    assert history["versions"][0]["current"] is False
    assert [op["event"] for op in history["ops"]][-1] == "DELETE"
    assert history["ops"][-1]["reason"] == "it was blue"
    with pytest.raises(memdb.NotFoundError):
        store.delete("n2")
    with pytest.raises(memdb.NotFoundError) as info:
        store.delete(target["id"])
    assert info.value.kind == "NoMemory" and info.value.id == target["id"]
    with pytest.raises(memdb.NotFoundError):
        store.history("never-there")
    assert store.stats()["items"] == 2
    # The delete is undone: the note is back, with the delete and the undo in its history.
    back = store.undelete(target["id"])
    assert back["event"] == "UNDELETE" and back["memory_id"] == target["id"]
    assert store.get("n2")["body"] == NOTES[1]["body"]
    assert [op["event"] for op in store.history(target["id"])["ops"]] == ["ADD", "DELETE", "ADD"]
    with pytest.raises(ValueError):
        store.undelete(target["id"])  # not deleted
    # A purge needs its own capability.
    with pytest.raises(memdb.CapabilityError) as refused:
        store.purge(target["id"])
    assert refused.value.capability == "purge"
    assert store.get("n2") is not None
    store.close()
    with memdb.Store.open(path, create=False, allow="purge") as purger:
        assert purger.purge(target["id"]) == {"memory_id": target["id"], "purged": True}
        assert purger.get("n2") is None
        with pytest.raises(memdb.NotFoundError):
            purger.undelete(target["id"])


def test_replacing_an_imported_item_needs_the_delete_capability(store: memdb.Store) -> None:
    store.ingest(NOTES, embed=False)
    before = store.get("n2")
    # Re-putting it unchanged is no change; changing it, or making it a "memory" so that it
    # could be deleted without the capability, is an update of imported data: skipped.
    same = store.ingest([NOTES[1]], embed=False)
    assert same["skipped"] == [] and same["unchanged"] == 1, same
    changed = store.ingest(
        [note("n2", "Sold the red bicycle"), note("n2", NOTES[1]["body"], tags=["memory"])],
        embed=False,
    )
    assert changed["updated"] == 0 and len(changed["skipped"]) == 2, changed
    assert all('allow=["delete"]' in s for s in changed["skipped"]), changed["skipped"]
    assert store.get("n2") == before
    # New items still land beside the refusals.
    added = store.ingest([note("n9", "A new note")], embed=False)
    assert added["added"] == 1
    path = store.path
    store.close()
    with memdb.Store.open(path, create=False, allow=["delete"]) as owner:
        done = owner.ingest([note("n2", "Sold the red bicycle")], embed=False)
        assert done["updated"] == 1 and owner.get("n2")["body"] == "Sold the red bicycle"


def test_remembered_facts_are_deleted_without_a_capability(store: memdb.Store, model: str) -> None:
    made = store.remember("My locker code at the gym is 4471.")
    (fact,) = made["results"]
    assert store.delete(fact["memory_id"])["event"] == "DELETE"
    assert store.undelete(fact["memory_id"])["event"] == "UNDELETE"
    assert "4471" in store.get(fact["memory_id"])["body"]


def test_query_rows_and_documents(store: memdb.Store) -> None:
    store.ingest(NOTES, embed=False)
    rows = store.query("ITEMS WHERE source = note AND time >= 2024-06-01 ORDER BY time ASC TOP 10")
    assert [r["external_id"] for r in rows] == ["n2", "n3"]
    stats = store.query("SHOW STATS")
    assert len(stats) == 1 and stats[0]["items"] == 3
    doc = store.query_document("EXPLAIN ITEMS WHERE tag = 'travel'")
    assert doc["kind"] == "items" and [r["external_id"] for r in doc["rows"]] == ["n1"]
    assert doc["plan"]["stages"], doc["plan"]
    first = store.get("n1")
    history = store.query(f"HISTORY OF {first['id']}")
    assert [r["body"] for r in history] == [NOTES[0]["body"]]
    with pytest.raises(memdb.QuerySyntaxError) as info:
        store.query("ITEMS WHERE source = note TPO 3")
    assert isinstance(info.value, ValueError)
    assert (info.value.line, info.value.column) == (1, 27)
    assert info.value.suggestion == "TOP"
    with pytest.raises(memdb.NotFoundError):
        store.query("SHOW ITEM 999999")


def test_stats_check_and_compact(store: memdb.Store) -> None:
    store.ingest(NOTES, embed=False)
    stats = store.stats()
    assert stats["items"] == 3 and stats["items_by_source"]["note"] == 3
    assert stats["segment_bytes"] > 0 and stats["total_bytes"] >= stats["segment_bytes"]
    report = store.check()
    assert report["clean"] is True and report["items"] == 3 and report["problems"] == []
    path = store.path
    store.close()
    store = memdb.Store.open(path, create=False, allow=["delete"])
    store.delete("n1")
    store.ingest([note("n3", "Dinner with Ana and Rui at the harbour")], embed=False)
    compacted = store.compact(all=True)
    # Every segment rewritten (deleted and replaced items keep their versions, so the bytes
    # need not shrink); the items still read and check.
    assert compacted["segments_removed"] >= 1 and compacted["segments_written"] >= 1
    assert compacted["items_kept"] >= 2
    assert store.check()["clean"] is True
    assert store.get("n3")["body"] == "Dinner with Ana and Rui at the harbour"
    store.close()


def test_read_only_beside_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "ro.memdb"
    with memdb.Store.open(path) as writer:
        writer.ingest(NOTES, embed=False)
        with memdb.Store.open(path, read_only=True, allow="delete,forget") as reader:
            assert reader.read_only
            assert reader.get("n1")["body"] == NOTES[0]["body"]
            with pytest.raises(memdb.ReadOnlyError) as info:
                reader.ingest([note("n9", "a new note")], embed=False)
            assert info.value.kind == "ReadOnly"
            with pytest.raises(memdb.ReadOnlyError):
                reader.delete("n1")
            with pytest.raises(memdb.ReadOnlyError):
                reader.query("FORGET 'timed-gentle' AS OF 2030-01-01")
            writer.ingest([note("n4", "written while a reader is open")], embed=False)
            assert reader.get("n4") is not None  # each call reads the writer's latest commit
    with pytest.raises(memdb.NoStoreError):
        memdb.Store.open(tmp_path / "none.memdb", read_only=True)


def test_import_jsonl(tmp_path: Path, store: memdb.Store) -> None:
    lines = [json.dumps(n) for n in NOTES] + ['{"source": "note"}', "not json"]
    path = tmp_path / "notes.jsonl"
    path.write_text("\n".join(lines) + "\n")
    summary = store.import_jsonl(path, embed=False)
    assert (summary["files"], summary["added"]) == (1, 3)
    assert len(summary["skipped"]) == 2 and all("notes.jsonl" in s for s in summary["skipped"])
    missing = store.import_jsonl([tmp_path / "absent.jsonl"], embed=False)
    assert missing["added"] == 0 and "no such file" in missing["skipped"][0]
    again = store.import_jsonl(str(path), embed=False)
    assert (again["added"], again["unchanged"]) == (0, 3)


def test_import_mail_and_photos(shared_dir: Path, store: memdb.Store) -> None:
    mail = sorted((shared_dir / "data" / "mail").rglob("*.eml"))[:5]
    assert len(mail) == 5
    summary = store.import_mail(mail, embed=False)
    assert summary["files"] == 5 and summary["added"] + len(summary["skipped"]) >= 5
    assert summary["added"] >= 4, summary
    photos = shared_dir / "data" / "photos" / "exif-orientation-examples"
    shots = store.import_photos(photos, embed=False)
    assert shots["added"] >= 1, shots
    stats = store.stats()
    assert stats["items_by_source"]["email"] == summary["added"]
    assert stats["items_by_source"]["image"] == shots["added"]
    assert stats["blobs_by_kind"]["original"]["count"] >= 1
    again = store.import_photos([photos], embed=False)
    assert again["added"] == 0 and again["unchanged"] == shots["added"]


def test_embed_remember_and_recall(store: memdb.Store, model: str) -> None:
    summary = store.ingest(NOTES)
    assert summary["derived"]["encoded"] == 3
    assert store.stats()["model"].startswith("all-MiniLM-L6-v2@sha256:")
    assert store.embed()["encoded"] == 0  # nothing left to embed
    described = store.embed(item_text="descriptive")
    assert described["item_text"] == "descriptive"
    assert (described["remade"], described["encoded"]) == (3, 3)
    assert store.embed(item_text="sgm")["remade"] == 3
    with pytest.raises(ValueError, match="sgm"):
        store.embed(item_text="poetic")
    hits = store.recall("where did I book a hotel?", k=2)
    assert len(hits) == 2 and isinstance(hits[0], memdb.Hit)
    assert hits[0].item["external_id"] == "n1" and hits[0].text and hits[0].score > hits[1].score
    assert isinstance(hits[0].explanation, memdb.Explanation)

    done = store.remember("I live in Lisbon. My sister Ana plays the cello.", speaker="me")
    assert [d["event"] for d in done["results"]] == ["ADD", "ADD"], done
    for d in done["results"]:
        assert store.get(d["memory_id"])["body"] == d["fact"]
        assert "memory" in store.get(d["memory_id"])["tags"]
    again = store.remember("I live in Lisbon.", speaker="me")
    assert [d["event"] for d in again["results"]] == ["NONE"], again
    assert again["results"][0]["memory_id"] == done["results"][0]["memory_id"]
    asked = store.remember("Is it raining?")  # a question is no fact, and says why
    assert asked["results"] == [] and "question" in asked["skipped"][0]["reason"], asked

    # Scopes: another user's fact never changes this one's, and recall filters by scope.
    mine = store.remember("I drive a red Fiat Panda.", user_id="ana", idempotency_key="k1")
    theirs = store.remember("I drive a blue Kia.", user_id="ben")
    assert [d["event"] for d in theirs["results"]] == ["ADD"], theirs
    hits = store.recall("what car do I drive?", k=5, filters={"user_id": "ben"})
    assert [h.item["user_id"] for h in hits] == ["ben"], hits
    # A retry with the idempotency key applies nothing.
    retry = store.remember("I drive a red Fiat Panda.", user_id="ana", idempotency_key="k1")
    assert retry["replayed"] is True
    assert [d["memory_id"] for d in retry["results"]] == [
        d["memory_id"] for d in mine["results"]
    ]


def test_forget(locomo_copy: Path, shared_dir: Path) -> None:
    with memdb.Store.open(locomo_copy, create=False) as store:
        # Without the capability forgetting only plans: the default is a dry run, and a real
        # run is refused before anything changes.
        plan = store.forget("timed-gentle", "2030-01-01")
        assert plan["dry_run"] is True
        before = store.stats()
        with pytest.raises(memdb.CapabilityError) as refused:
            store.forget("timed-gentle", "2030-01-01", dry_run=False)
        assert refused.value.capability == "forget"
        with pytest.raises(memdb.CapabilityError):
            store.query("FORGET 'timed-gentle' AS OF 2030-01-01")
        assert store.stats() == before
    with memdb.Store.open(locomo_copy, create=False, allow=["forget"]) as store:
        plan = store.forget("timed-gentle", "2030-01-01", dry_run=True)
        assert plan["policy"] == "timed-gentle" and plan["dry_run"] is True
        assert plan["as_of"] == "2030-01-01"
        before = store.stats()
        done = store.forget("timed-gentle", "2030-01-01", dry_run=False)
        assert done["dry_run"] is False
        assert sum(s["pages_changed"] for s in done["stages"]) > 0, done
        assert store.stats()["pages_by_stage"] != before["pages_by_stage"]
        again = store.forget("timed-gentle", "2030-01-01", dry_run=False)
        assert sum(s["pages_changed"] for s in again["stages"]) == 0  # monotone: nothing left
        assert store.check()["clean"] is True
        with pytest.raises(memdb.PolicyError):
            store.forget("forget-everything")
        assert store.forget("no-forget", dry_run=True)["policy"] == "no-forget"  # as_of: today


def test_forgetting_photo_originals_needs_consent(tmp_path: Path, shared_dir: Path) -> None:
    with memdb.Store.open(tmp_path / "photos.memdb", allow=["forget"]) as store:
        shots = store.import_photos(shared_dir / "data" / "photos" / "exif-samples", embed=False)
        originals = store.stats()["blobs_by_kind"]["original"]["count"]
        assert originals == shots["added"] > 0
        with pytest.raises(memdb.ConsentError) as info:
            store.forget("timed-gentle", "2030-01-01", dry_run=False)
        assert info.value.kind == "OriginalsNeedConsent" and 0 < info.value.count <= originals
        assert store.stats()["blobs_by_kind"]["original"]["count"] == originals  # nothing dropped
        done = store.forget("timed-gentle", "2030-01-01", dry_run=False, drop_originals=True)
        assert len(done["originals"]) == info.value.count
        left = store.stats()["blobs_by_kind"].get("original", {"count": 0})["count"]
        assert left == originals - info.value.count
        dropped = store.get(done["originals"][0]["item"])["dropped_blobs"]
        assert [d["kind"] for d in dropped] == ["original"] and "timed-gentle" in dropped[0]["why"]
        assert store.check()["clean"] is True


def test_a_folder_with_other_files_is_no_store(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a store")
    with pytest.raises(memdb.AlreadyExistsError) as info:
        memdb.Store.open(tmp_path)
    assert info.value.kind == "AlreadyExists" and info.value.path == str(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "not a store"
