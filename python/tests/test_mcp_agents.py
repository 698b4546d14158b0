"""`memdb mcp` as agents meet it (issue "agent interfaces that cannot destroy"), driven by the
official Python MCP SDK over stdio and Streamable HTTP, on loopback only:

- capabilities: without them an agent's deletes, purges and real forgetting are refused with
  the flag named and nothing changes (item count and export manifest identical); with
  `--allow delete`, deleting a scope's memories leaves imported photos and mail untouched, and
  an undelete restores a memory with its history;
- no lock while idle: two servers and a `memdb import` work on one store at once, and a
  SIGKILL of one server mid-write loses nothing acknowledged;
- bounded answers: a 1 MB memory never makes an answer exceed its cap, and ten hits fit 4 KB;
- the HTTP transport serves the same tools.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from test_mcp import call, call_error, cli, init_store, run, server

PHOTOS = ("data", "photos", "exif-orientation-examples")


def manifest(memdb_bin: Path, store: Path, out: Path) -> dict:
    """The export manifest's summary (what the store holds), without the export's own time."""
    cli(memdb_bin, "export", "--no-pages", str(store), str(out))
    summary = json.loads((out / "manifest.json").read_text())["summary"]
    summary.pop("dir")
    return summary


def stats(memdb_bin: Path, store: Path) -> dict:
    return json.loads(cli(memdb_bin, "--json", "stats", str(store)).stdout)


def imported_store(memdb_bin: Path, shared_dir: Path, path: Path) -> Path:
    store = init_store(memdb_bin, path)
    cli(memdb_bin, "import", "photos", str(store), str(shared_dir.joinpath(*PHOTOS)))
    mbox = sorted((shared_dir / "data" / "mail" / "mbox").iterdir())[0]
    cli(memdb_bin, "import", "mail", str(store), str(mbox))
    return store


def ids_by_source(memdb_bin: Path, store: Path, source: str) -> list[int]:
    rows = json.loads(
        cli(memdb_bin, "--json", "query", str(store), f"ITEMS WHERE source = {source} TOP 1000")
        .stdout
    )
    return [r["id"] for r in rows["rows"]]


def test_without_capabilities_an_agent_destroys_nothing(
    memdb_bin: Path, shared_dir: Path, tmp_path: Path, model: str
) -> None:
    store = imported_store(memdb_bin, shared_dir, tmp_path / "s.memdb")
    photo = ids_by_source(memdb_bin, store, "image")[0]
    mail = ids_by_source(memdb_bin, store, "email")[0]

    async def refused_calls():
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                mine = await call(
                    session, "add_memories", text="My bike lock code is 2718.", infer=False,
                    user_id="alice",
                )
                return session, mine["results"][0]["memory_id"]

    # The agent's own memory first (adds need no capability), then the baseline.
    _, mine = run(refused_calls())
    before_stats = stats(memdb_bin, store)
    before = manifest(memdb_bin, store, tmp_path / "before")

    async def go():
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                attempts = [
                    ("delete_all_memories", {}, "--allow delete"),
                    ("delete_all_memories", {"confirm": True, "user_id": "alice"}, "--allow delete"),
                    ("delete_memories", {"memory_ids": [photo]}, "--allow delete"),
                    ("delete_memories", {"memory_ids": [mine, mail]}, "--allow delete"),
                    ("update_memory", {"id": mail, "text": "nothing"}, "--allow delete"),
                    (
                        "forget",
                        {"policy": "timed-gentle", "as_of": "2040-01-01", "dry_run": False,
                         "drop_originals": True},
                        "--allow forget",
                    ),
                    ("query", {"statement": "FORGET 'timed-gentle' AS OF 2040-01-01"},
                     "--allow forget"),
                    ("purge_memory", {"id": mine}, "--allow purge"),
                    ("purge_memory", {"id": photo}, "--allow purge"),
                ]
                for tool, arguments, flag in attempts:
                    message = await call_error(session, tool, arguments)
                    assert flag in message, (tool, arguments, message)
                # A dry run of forgetting is a read: allowed.
                plan = await call(
                    session, "forget", policy="timed-gentle", as_of="2040-01-01",
                    drop_originals=True,
                )
                assert plan["dry_run"] is True

    run(go())
    assert stats(memdb_bin, store)["items"] == before_stats["items"]
    assert manifest(memdb_bin, store, tmp_path / "after") == before

    # With --allow delete and the user's scope: the scope's memories go, imports stay.
    async def granted():
        async with stdio_client(
            server(memdb_bin, store, "--allow", "delete", "--user-id", "alice")
        ) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                other = await call(
                    session, "add_memories", text="Bob's locker is number 9.", infer=False,
                    user_id="bob",
                )
                gone = await call(session, "delete_all_memories")
                assert gone["deleted"] == 1 and gone["scope"] == {"user_id": "alice"}, gone
                listed = await call(session, "list_memories", user_id="bob")
                assert [m["id"] for m in listed["memories"]] == [
                    other["results"][0]["memory_id"]
                ]
                back = await call(session, "undelete_memory", id=mine)
                assert back["event"] == "UNDELETE" and "2718" in back["memory"]
                history = (await call(session, "memory_history", id=mine))["history"]
                assert [h["event"] for h in history] == ["ADD", "DELETE", "ADD"], history
                # The user's scope does not reach the owner's imports, even with delete.
                outside = await call(session, "delete_memories", memory_ids=[photo])
                assert outside["deleted"] == [] and outside["not_found"] == [photo]

    run(granted())

    # Unscoped, the delete capability reaches imports by id, and an undelete brings a photo
    # back with its original.
    async def owner():
        async with stdio_client(server(memdb_bin, store, "--allow", "delete")) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                deleted = await call(session, "delete_memories", memory_ids=[photo])
                assert deleted["deleted"] == [photo], deleted

    run(owner())
    after = manifest(memdb_bin, store, tmp_path / "granted")
    assert after["originals"] == before["originals"] - 1
    cli(memdb_bin, "undelete", str(store), str(photo))
    again = manifest(memdb_bin, store, tmp_path / "undeleted")
    assert again["originals"] == before["originals"]
    assert again["original_bytes"] == before["original_bytes"]
    assert cli(memdb_bin, "check", str(store)).returncode == 0


def test_two_servers_and_an_import_share_a_store(
    memdb_bin: Path, shared_dir: Path, tmp_path: Path, model: str
) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")
    pid_b = tmp_path / "b.pid"
    acknowledged: list[int] = []

    async def adds(session: ClientSession, who: str, n: int) -> None:
        for i in range(n):
            out = await call(
                session, "add_memories", text=f"{who} note {i}: the plant on shelf {i} needs water.",
                infer=False, user_id=who,
            )
            acknowledged.append(out["results"][0]["memory_id"])

    async def killed_adds(session: ClientSession, n: int) -> None:
        try:
            for i in range(n):
                out = await call(
                    session, "add_memories", text=f"b note {i}: shelf {i}.", infer=False,
                    user_id="b",
                )
                acknowledged.append(out["results"][0]["memory_id"])
                if i == 3:
                    # SIGKILL while the next write may be under way.
                    os.kill(int(pid_b.read_text()), signal.SIGKILL)
        except Exception:  # the killed server's session ends; what it acknowledged stands
            pass

    async def go():
        mbox = sorted((shared_dir / "data" / "mail" / "mbox").iterdir())[0]
        importer = await asyncio.create_subprocess_exec(
            str(memdb_bin), "import", "mail", str(store), str(mbox),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        async with stdio_client(server(memdb_bin, store)) as (ra, wa):
            async with ClientSession(ra, wa) as a:
                await a.initialize()
                try:
                    async with stdio_client(server(memdb_bin, store, pid_file=pid_b)) as (rb, wb):
                        async with ClientSession(rb, wb) as b:
                            await b.initialize()
                            await asyncio.gather(adds(a, "a", 8), killed_adds(b, 8))
                except Exception:
                    pass  # the killed server's transport closing
                await adds(a, "a2", 3)
                listed = await call(a, "list_memories", limit=1000, max_bytes=1_048_576)
                seen = {m["id"] for m in listed["memories"]}
                assert set(acknowledged) <= seen, set(acknowledged) - seen
        out, err = await importer.communicate()
        assert importer.returncode == 0, err.decode()
        return out.decode()

    imported = run(go())
    assert "added" in imported
    assert len(acknowledged) >= 8 + 4 + 3
    assert cli(memdb_bin, "check", str(store)).returncode == 0


def test_answers_are_bounded(memdb_bin: Path, tmp_path: Path, model: str, report) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")
    huge = ("The long diary of the garden. " * 40_000)[:1_000_000]

    async def go():
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                big = await call(session, "add_memories", text=huge, infer=False)
                big_id = big["results"][0]["memory_id"]
                for i in range(15):
                    await call(
                        session, "add_memories", infer=False,
                        text=f"Garden note {i}: watered the tomatoes and the basil on day {i} "
                        "before the heat, and moved the lemon tree into the shade.",
                    )
                result = await session.call_tool("search_memory", {"query": "garden diary"})
                text = result.content[0].text
                assert len(text.encode()) <= 4096, len(text)
                hits = json.loads(text)["results"]
                assert len(hits) == 10 and "omitted" not in json.loads(text)
                for hit in hits:
                    assert None not in hit.values(), hit
                    assert len(hit["memory"]) <= 200
                cut = next(h for h in hits if h["id"] == big_id)
                assert cut["truncated"] is True and cut["chars"] == 1_000_000
                report(
                    f"MCP search_memory, default bounds: {len(text.encode())} bytes of JSON for "
                    f"{len(hits)} hits (cap 4096), one of them a 1,000,000-char memory cut to "
                    f"{len(cut['memory'])} chars"
                )
                small = await session.call_tool(
                    "search_memory", {"query": "garden diary", "k": 50, "max_bytes": 1000}
                )
                doc = json.loads(small.content[0].text)
                assert len(small.content[0].text.encode()) <= 1000
                assert doc["omitted"] == 16 - len(doc["results"]) and "max_bytes" in doc["note"]
                wide = await call(
                    session, "search_memory", query="garden diary", k=3, max_chars=5000,
                    max_bytes=100_000,
                )
                assert any(len(h["memory"]) == 5000 for h in wide["results"])
                # A list cut at max_bytes ends its page there; the cursor goes on from it.
                seen, cursor, pages = [], None, 0
                while True:
                    args = {"limit": 1000, "max_bytes": 1500}
                    if cursor is not None:
                        args["cursor"] = cursor
                    listed = await session.call_tool("list_memories", args)
                    assert len(listed.content[0].text.encode()) <= 1500
                    page = json.loads(listed.content[0].text)
                    assert page["total"] == 16
                    seen += [m["id"] for m in page["memories"]]
                    pages += 1
                    cursor = page["next_cursor"]
                    if cursor is None:
                        break
                assert pages > 1 and sorted(seen) == seen and len(set(seen)) == 16
                whole = await call(session, "get_memory", id=big_id)
                assert len(whole["memory"]) == 1_000_000

    run(go())


def test_the_http_transport_serves_the_same_tools(
    memdb_bin: Path, tmp_path: Path, model: str
) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")
    refused = subprocess.run(
        [str(memdb_bin), "mcp", str(store), "--http", "0.0.0.0:0"],
        capture_output=True, text=True, timeout=60,
    )
    assert refused.returncode == 2 and "loopback" in refused.stderr, refused.stderr
    proc = subprocess.Popen(
        [str(memdb_bin), "mcp", str(store), "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    try:
        url = None
        assert proc.stderr is not None
        for line in proc.stderr:
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].strip()
                break
        assert url and url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url

        async def go():
            async with streamable_http_client(url) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    tools = {t.name for t in (await session.list_tools()).tools}
                    assert {"add_memories", "search_memory", "delete_all_memories"} <= tools
                    await call(session, "add_memories", text="My dentist is Dr. Sousa.", infer=False)
                    hits = await call(session, "search_memory", query="who is my dentist?", k=1)
                    assert "Sousa" in hits["results"][0]["memory"]

        run(go())
    finally:
        proc.kill()
        proc.wait()
    assert cli(memdb_bin, "check", str(store)).returncode == 0
