"""`memdb mcp` driven by a real MCP client: the official Python SDK (`mcp`, pinned in
scripts/python-tests.sh) over stdio, against the `memdb` binary (MEMDB_BIN).

Every tool is called and its result checked against the store, through the tools themselves and
through a second process (the `memdb` CLI reading the store while the server holds it):
an added memory is found by `search_memory`, a deleted one is not, `memory_history` shows both.
Malformed calls get MCP errors and the server keeps serving; a server killed with SIGKILL in
the middle of `add_memories` loses no committed memory and leaves `memdb check` clean.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {
    "add_memories",
    "search_memory",
    "list_memories",
    "get_memory",
    "update_memory",
    "delete_memories",
    "delete_all_memories",
    "undelete_memory",
    "purge_memory",
    "memory_history",
    "query",
    "forget",
}


def cli(memdb_bin: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(memdb_bin), *args], capture_output=True, text=True, check=check, timeout=300
    )


def init_store(memdb_bin: Path, path: Path) -> Path:
    cli(memdb_bin, "init", str(path))
    return path


def server(memdb_bin: Path, store: Path, *extra: str, pid_file: Path | None = None):
    """The parameters that start `memdb mcp STORE` (through `sh -c 'echo $$ …; exec'` when the
    test needs the server's pid: exec keeps it)."""
    args = ["mcp", str(store), *extra]
    if pid_file is None:
        return StdioServerParameters(command=str(memdb_bin), args=args, env=dict(os.environ))
    script = 'echo $$ > "$0"; exec "$@"'
    return StdioServerParameters(
        command="sh",
        args=["-c", script, str(pid_file), str(memdb_bin), *args],
        env=dict(os.environ),
    )


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=600))


async def call(session: ClientSession, tool: str, **arguments) -> dict:
    """Calls a tool that must succeed; returns its JSON."""
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text
    assert not result.is_error, f"{tool}({arguments}) failed: {text}"
    return json.loads(text)


async def call_error(session: ClientSession, tool: str, arguments) -> str:
    """Calls a tool that must fail: an MCP tool error (isError) or a JSON-RPC error; returns the
    message."""
    try:
        result = await session.call_tool(tool, arguments)
    except Exception as e:  # the SDK raises the JSON-RPC error
        return str(e)
    assert result.is_error, f"{tool}({arguments!r:.200}) should have failed: {result.content}"
    return result.content[0].text


def ids_of(hits: dict) -> list[int]:
    return [h["id"] for h in hits["results"]]


def test_tools_are_listed_with_described_schemas(memdb_bin: Path, tmp_path: Path) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")

    async def go():
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                init = await session.initialize()
                assert init.server_info.name == "memdb"
                tools = (await session.list_tools()).tools
                assert {t.name for t in tools} == TOOLS
                for tool in tools:
                    assert tool.description, tool.name
                    props = tool.input_schema.get("properties", {})
                    assert props, tool.name
                    for name, prop in props.items():
                        assert prop.get("description"), f"{tool.name}.{name} has no description"
                add = next(t for t in tools if t.name == "add_memories")
                assert add.input_schema["required"] == ["text"]
                # Portable schemas: one type per property, no nullable type arrays, no
                # non-standard number formats (strict clients and the Inspector reject them).
                for tool in tools:
                    for name, prop in tool.input_schema.get("properties", {}).items():
                        where = f"{tool.name}.{name}"
                        assert isinstance(prop.get("type"), str), (where, prop)
                        assert "nullable" not in prop and "format" not in prop, (where, prop)
                        items = prop.get("items")
                        if items is not None:
                            assert isinstance(items.get("type"), str), (where, items)

    run(go())


def test_every_tool_against_the_store(memdb_bin: Path, tmp_path: Path, model: str) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")

    async def go():
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                # Verbatim: one memory, the text as given.
                added = await call(
                    session,
                    "add_memories",
                    text="I adopted a grey cat named Miso from the shelter.",
                    infer=False,
                    time="2024-03-05T10:00:00+01:00",
                )
                (cat,) = added["results"]
                assert cat["event"] == "ADD"
                cat_id = cat["memory_id"]
                # Inferred: Mem0's pipeline, one decision per fact.
                inferred = await call(
                    session,
                    "add_memories",
                    text="My sister Ana lives in Porto. I started learning the cello in June.",
                    time="2024-03-06",
                )
                events = [r["event"] for r in inferred["results"]]
                assert events == ["ADD", "ADD"], inferred
                cello_id = inferred["results"][1]["memory_id"]

                # Found by search, with its text, time, score and explanation.
                hits = await call(session, "search_memory", query="what is my cat called?", k=3)
                top = hits["results"][0]
                assert top["id"] == cat_id, hits
                assert "Miso" in top["memory"]
                assert top["score"] > 0 and "why" in top and top["time"].startswith("2024-03-05")
                # Filters: the cat is outside this window, the cello fact inside.
                windowed = await call(
                    session, "search_memory", query="cat Miso", since="2024-03-06", k=5
                )
                assert cat_id not in ids_of(windowed) and cello_id in ids_of(windowed)
                only_email = await call(
                    session, "search_memory", query="cat Miso", source="email", k=5
                )
                assert only_email["results"] == []

                # A second process reads the store while the server holds it.
                seen = json.loads(cli(memdb_bin, "--json", "get", str(store), str(cat_id)).stdout)
                assert "Miso" in seen["body"]

                # get and list (paged with the cursor).
                got = await call(session, "get_memory", id=cat_id)
                assert got["id"] == cat_id and "Miso" in got["memory"]
                first = await call(session, "list_memories", limit=2)
                assert first["total"] == 3 and len(first["memories"]) == 2
                rest = await call(session, "list_memories", limit=2, cursor=first["next_cursor"])
                assert rest["next_cursor"] is None
                listed = [m["id"] for m in first["memories"] + rest["memories"]]
                assert sorted(listed) == listed and set(listed) == {cat_id, cello_id} | {
                    inferred["results"][0]["memory_id"]
                }

                # Update: the new text is found, the old one is history.
                before_update = (await call(session, "get_memory", id=cat_id))["time"]
                updated = await call(
                    session, "update_memory", id=cat_id, text="My grey cat Miso turned two in May."
                )
                assert updated["old_memory"].startswith("I adopted")
                hits = await call(session, "search_memory", query="when did Miso turn two?", k=1)
                assert ids_of(hits) == [cat_id] and "turned two" in hits["results"][0]["memory"]
                assert before_update

                # Delete: gone from search and lists, both versions and the delete in history.
                deleted = await call(session, "delete_memories", ids=[cat_id, 999_999])
                assert deleted == {"deleted": [cat_id], "not_found": [999_999], "warnings": []}
                hits = await call(session, "search_memory", query="grey cat Miso", k=5)
                assert cat_id not in ids_of(hits)
                history = (await call(session, "memory_history", id=cat_id))["history"]
                assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE"], history
                assert history[0]["new_memory"].startswith("I adopted")
                assert history[1]["old_memory"].startswith("I adopted")
                assert history[1]["new_memory"].startswith("My grey cat")
                gone = await call_error(session, "get_memory", {"id": cat_id})
                assert str(cat_id) in gone

                # The query language, read-only by default; a page comes back as an image.
                rows = await call(session, "query", statement="ITEMS WHERE source = note TOP 10")
                assert isinstance(rows, dict)
                assert "Porto" in json.dumps(rows) and "Miso" not in json.dumps(rows)
                page = await session.call_tool("query", {"statement": "SHOW PAGE 2024-03-06"})
                assert not page.is_error, page.content
                kinds = [c.type for c in page.content]
                assert kinds[0] == "text" and "image" in kinds, kinds
                image = next(c for c in page.content if c.type == "image")
                assert image.mime_type == "image/jpeg" and len(image.data) > 1000
                refused = await call_error(
                    session, "query", {"statement": "FORGET 'timed-gentle' AS OF 2030-01-01"}
                )
                assert "--allow forget" in refused

                # Forgetting: a dry run by default, and nothing changes.
                plan = await call(session, "forget", policy="timed-gentle", as_of="2030-01-01")
                assert plan["dry_run"] is True, plan
                assert len((await call(session, "list_memories"))["memories"]) == 2

                # Deleting everything needs the delete capability this server lacks.
                no = await call_error(session, "delete_all_memories", {"confirm": False})
                assert "confirm" in no
                no = await call_error(session, "delete_all_memories", {})
                assert "--allow delete" in no
                assert len((await call(session, "list_memories"))["memories"]) == 2
                # The memories an agent made it deletes one by one (OpenMemory's memory_ids),
                # and an undelete brings one back with its history.
                remaining = [m["id"] for m in (await call(session, "list_memories"))["memories"]]
                gone = await call(session, "delete_memories", memory_ids=remaining)
                assert sorted(gone["deleted"]) == sorted(remaining)
                assert (await call(session, "list_memories"))["memories"] == []
                back = await call(session, "undelete_memory", id=cello_id)
                assert back["event"] == "UNDELETE" and "cello" in back["memory"]
                history = (await call(session, "memory_history", id=cello_id))["history"]
                assert [h["event"] for h in history] == ["ADD", "DELETE", "ADD"]
                hits = await call(session, "search_memory", query="learning the cello", k=3)
                assert cello_id in ids_of(hits)

    run(go())
    assert cli(memdb_bin, "check", str(store)).returncode == 0


@pytest.mark.parametrize("flags", [("--allow", "forget"), ("--allow-writes",)])
def test_writing_statements_run_with_the_forget_capability(
    memdb_bin: Path, tmp_path: Path, flags: tuple
) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")

    async def go():
        async with stdio_client(server(memdb_bin, store, *flags)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                out = await call(
                    session, "query", statement="FORGET 'timed-gentle' AS OF 2030-01-01"
                )
                assert out["dry_run"] is False, out

    run(go())


def test_malformed_calls_get_errors_and_the_server_keeps_serving(
    memdb_bin: Path, tmp_path: Path
) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")
    ten_mb = "memory " * (10 * 1024 * 1024 // 7)

    async def go():
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                bad_calls = [
                    ("add_memories", {}),  # missing argument
                    ("add_memories", {"text": 42}),  # wrong type
                    ("add_memories", {"text": "x", "infer": "maybe"}),
                    ("add_memories", {"text": "   "}),  # empty
                    ("add_memories", {"text": ten_mb, "infer": False}),  # 10 MB
                    ("add_memories", {"text": "x", "time": "yesterday-ish"}),
                    ("add_memories", {"text": "x", "source": "fax", "infer": False}),
                    ("search_memory", {"query": "x", "k": 0}),
                    ("search_memory", {"query": "x", "k": -3}),
                    ("search_memory", {"query": "x", "since": "2024-13-45"}),
                    ("search_memory", {"query": "x", "near_km": 5}),
                    ("get_memory", {"id": "seven"}),
                    ("get_memory", {"id": 12345}),
                    ("update_memory", {"id": 12345, "text": "no such memory"}),
                    ("delete_memories", {"ids": "all"}),
                    ("memory_history", {"id": 12345}),
                    ("query", {"statement": "SELECT * FROM items"}),
                    ("query", {"statement": "ITEMS TOP 1; ITEMS TOP 2"}),
                    ("forget", {"policy": "no-such-policy", "as_of": "2030-01-01"}),
                    ("forget", {"policy": "timed-gentle", "as_of": "soon"}),
                    ("no_such_tool", {"x": 1}),
                ]
                for tool, arguments in bad_calls:
                    message = await call_error(session, tool, arguments)
                    assert message, (tool, arguments)
                    if tool == "add_memories" and arguments.get("text") == ten_mb:
                        assert "at most" in message, message[:300]
                # Still serving, and nothing was stored by the refused calls.
                listed = await call(session, "list_memories")
                assert listed["memories"] == [], listed
                ok = await call(session, "query", statement="SHOW STATS")
                assert ok

    run(go())
    assert cli(memdb_bin, "check", str(store)).returncode == 0


def test_kill_during_add_loses_no_committed_memory(
    memdb_bin: Path, tmp_path: Path, model: str
) -> None:
    store = init_store(memdb_bin, tmp_path / "s.memdb")
    pid_file = tmp_path / "server.pid"
    texts = [
        f"Memory number {i}: I planted {i + 2} tomato seedlings on the balcony." for i in range(400)
    ]
    answered: dict[int, str] = {}
    unanswered: list[str] = []

    async def go():
        try:
            async with stdio_client(server(memdb_bin, store, pid_file=pid_file)) as (r, w):
                async with ClientSession(r, w) as session:
                    await session.initialize()
                    # The first add loads the encoder; then 399 more are sent at once (the server
                    # takes them one at a time) and the server is killed as soon as the first of
                    # them is answered, in the middle of the rest. (An add on a fast disk takes
                    # about a millisecond: 39 adds and a 50 ms pause once let all of them finish
                    # before the kill on CI.)
                    first = await call(session, "add_memories", text=texts[0], infer=False)
                    answered[first["results"][0]["memory_id"]] = texts[0]
                    calls = [
                        asyncio.ensure_future(
                            session.call_tool("add_memories", {"text": t, "infer": False})
                        )
                        for t in texts[1:]
                    ]
                    await asyncio.wait(calls, return_when=asyncio.FIRST_COMPLETED)
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
                    await asyncio.wait(calls, timeout=30)
                    for text, c in zip(texts[1:], calls):
                        result = c.result() if c.done() and not c.exception() else None
                        if result is not None and not result.is_error:
                            out = json.loads(result.content[0].text)
                            answered[out["results"][0]["memory_id"]] = text
                        else:
                            unanswered.append(text)
        except BaseException:
            # The transport breaks with the killed server; that is the point of the test.
            pass

    run(go())
    print(f"killed after {len(answered)} answered adds, {len(unanswered)} unanswered")
    assert len(answered) >= 2, "the server died before answering the batch"
    assert unanswered, "every add finished before the kill: the test did not kill mid-add"
    check = cli(memdb_bin, "check", str(store), check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    # Every answered add is in the store, whole; an unanswered one is there whole or not at all.
    for memory_id, text in answered.items():
        got = json.loads(cli(memdb_bin, "--json", "get", str(store), str(memory_id)).stdout)
        assert got["body"] == text
    listed = json.loads(cli(memdb_bin, "--json", "ls", str(store), "--limit", "1000").stdout)
    bodies = [item["body"] for item in listed]
    assert set(answered.values()) <= set(bodies)
    assert set(bodies) <= set(texts), bodies


def test_scopes_and_idempotency_keys_through_mcp(
    memdb_bin: Path, tmp_path: Path, model: str
) -> None:
    """A fact of one user never changes another's memory; a search of one user sees only
    theirs; an add repeated with its idempotency key (a retry after a lost answer) adds
    nothing and answers what the first call did."""
    store = init_store(memdb_bin, tmp_path / "s.memdb")

    async def go():
        async with stdio_client(server(memdb_bin, store, "--allow", "delete")) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                alice = await call(
                    session, "add_memories", text="I moved to Porto.", user_id="alice",
                    idempotency_key="alice-1",
                )
                (moved,) = alice["results"]
                assert moved["event"] == "ADD" and alice["replayed"] is False, alice
                bob = await call(
                    session, "add_memories", text="I moved to Braga.", user_id="bob"
                )
                assert [r["event"] for r in bob["results"]] == ["ADD"], bob
                got = await call(session, "get_memory", id=moved["memory_id"])
                assert got["body"] == "I moved to Porto" and got["user_id"] == "alice", got

                hits = await call(session, "search_memory", query="where did I move?", user_id="bob")
                assert [h["user_id"] for h in hits["results"]] == ["bob"], hits
                listed = await call(session, "list_memories", user_id="alice")
                assert [m["id"] for m in listed["memories"]] == [moved["memory_id"]], listed

                before = await call(session, "list_memories")
                again = await call(
                    session, "add_memories", text="I moved to Porto.", user_id="alice",
                    idempotency_key="alice-1",
                )
                assert again["replayed"] is True, again
                assert [r["memory_id"] for r in again["results"]] == [moved["memory_id"]]
                assert await call(session, "list_memories") == before
                verbatim = await call(
                    session, "add_memories", text="Parking spot 42", infer=False,
                    idempotency_key="v-1",
                )
                twice = await call(
                    session, "add_memories", text="Parking spot 42", infer=False,
                    idempotency_key="v-1",
                )
                assert twice["replayed"] is True
                assert twice["results"][0]["memory_id"] == verbatim["results"][0]["memory_id"]
                assert (await call(session, "list_memories"))["total"] == 3

                # Deletes keep to the scope they name.
                refused = await call(
                    session, "delete_memories", ids=[moved["memory_id"]], user_id="bob"
                )
                assert refused["deleted"] == [] and refused["not_found"] == [moved["memory_id"]]
                gone = await call(session, "delete_all_memories", confirm=True, user_id="bob")
                assert gone["deleted"] == 1
                assert (await call(session, "list_memories"))["total"] == 2

    run(go())
    assert cli(memdb_bin, "check", str(store)).returncode == 0


def locomo_turns(path: Path) -> list[tuple[str, str, str]]:
    """(speaker, text, session date) of each turn of a LoCoMo conversation, in order."""
    import re

    conv = json.loads(path.read_text())
    sessions = sorted(
        (int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k)
    )
    turns = []
    for _, key in sessions:
        when = conv.get(f"{key}_date_time", "")
        for turn in conv[key]:
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            turns.append((turn["speaker"], text, when))
    return turns


def test_a_conversation_turn_by_turn_never_crosses_speakers(
    memdb_bin: Path, tmp_path: Path, model: str, shared_dir: Path, report
) -> None:
    """LoCoMo conversation 26 added turn by turn through MCP with inference on, each turn's
    speaker its subject: no add fails, every turn's result lists its facts or why it had none,
    and no UPDATE or DELETE changes a memory of the other speaker (printed count 0). The turns
    taken are MEMDB_LOCOMO_TURNS (default: all 419)."""
    path = shared_dir / "data" / "locomo" / "26.json"
    turns = locomo_turns(path)
    limit = int(os.environ.get("MEMDB_LOCOMO_TURNS", len(turns)))
    turns = turns[:limit]
    store = init_store(memdb_bin, tmp_path / "s.memdb")
    speaker_of: dict[int, str] = {}
    crossings = []
    changes = 0
    skipped_turns = 0

    async def go():
        nonlocal changes, skipped_turns
        async with stdio_client(server(memdb_bin, store)) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                for speaker, text, _ in turns:
                    out = await call(session, "add_memories", text=text, speaker=speaker)
                    assert out["results"] or out["skipped"], (text, out)
                    assert all(s["reason"] for s in out["skipped"]), out
                    if not out["results"]:
                        skipped_turns += 1
                    for r in out["results"]:
                        mid = r["memory_id"]
                        if r["event"] == "ADD" and mid is not None:
                            speaker_of[mid] = speaker
                        elif r["event"] in ("UPDATE", "DELETE") and r["target"] is not None:
                            changes += 1
                            if speaker_of.get(r["target"], speaker) != speaker:
                                crossings.append((speaker, text, r))

    run(go())
    report(
        f"MCP add_memories, LoCoMo conversation 26 turn by turn ({len(turns)} turns): "
        f"{len(speaker_of)} memories added, {changes} updates or deletes, {len(crossings)} "
        f"crossing speakers, {skipped_turns} turns with no fact (each with its reason)"
    )
    assert crossings == [], crossings[:3]
    assert cli(memdb_bin, "check", str(store)).returncode == 0
