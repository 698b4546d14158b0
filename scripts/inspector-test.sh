#!/usr/bin/env bash
# The MCP Inspector's CLI (the official debugging client, npm package
# @modelcontextprotocol/inspector) against `memdb mcp`, over stdio and over Streamable HTTP:
# `tools/list --strict` must list every tool with no schema-portability warning, and
# `tools/call search_memory` must pass `k`.
#
#   scripts/inspector-test.sh prepare   needs the network (npm) once: the pinned Inspector into
#                                       $CARGO_TARGET_DIR/inspector (default target/inspector)
#   scripts/inspector-test.sh run       no network: the checks (MEMDB_BIN names the binary)
#   scripts/inspector-test.sh           both
#
# Without npm (or node) on the machine the checks are skipped with a notice: the Inspector is a
# Node program, and the Python MCP SDK's tests (python/tests/test_mcp*.py) cover the protocol.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/target" ;; esac
dir="$target/inspector"
# Pinned: the release the portability check was written against.
version=2.12.0
inspector="$dir/node_modules/.bin/mcp-inspector"
work="" server=""

have_node() {
  command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1
}

prepare() {
  if ! have_node; then
    echo "memdb: inspector: npm is not installed; the Inspector checks are skipped" >&2
    return 0
  fi
  if [ -x "$inspector" ] && grep -q "\"version\": \"$version\"" \
    "$dir/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null; then
    return 0
  fi
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --silent \
    "@modelcontextprotocol/inspector@$version" >&2
}

fail() {
  echo "memdb: inspector: $*" >&2
  exit 1
}

run() {
  if ! have_node || [ ! -x "$inspector" ]; then
    echo "memdb: inspector: not installed (npm missing); the Inspector checks are skipped" >&2
    return 0
  fi
  local bin="${MEMDB_BIN:-$target/debug/memdb}"
  work=$(mktemp -d)
  trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
  "$bin" init "$work/s.memdb" >/dev/null
  local stdio=(--cli "$bin" mcp "$work/s.memdb")

  # stdio: the tool list, strictly portable, then a write and a search that passes k.
  "$inspector" "${stdio[@]}" --method tools/list --strict >"$work/list.json" 2>"$work/list.err" \
    || fail "tools/list --strict over stdio failed (exit $?): $(cat "$work/list.err")"
  # --strict prints each finding as a `Warning: tool …` block (and a summary without it).
  grep -qE "Warning|Schema portability" "$work/list.err" \
    && fail "the Inspector warns about the schemas: $(cat "$work/list.err")"
  local tools
  tools=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tools"]))' "$work/list.json")
  [ "$tools" -ge 12 ] || fail "tools/list listed $tools tools"
  "$inspector" "${stdio[@]}" --method tools/call --tool-name add_memories \
    --tool-arg "text=My dentist is Dr. Sousa in Braga." --tool-arg infer=false \
    >"$work/add.json" 2>"$work/add.err" || fail "add_memories: $(cat "$work/add.err")"
  check_search() {
    python3 - "$1" <<'PY' || fail "search_memory over $2 answered: $(cat "$1")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert not doc.get("isError"), doc
hits = json.loads(doc["content"][0]["text"])["results"]
assert 1 <= len(hits) <= 2 and "Sousa" in hits[0]["memory"], hits
PY
  }
  "$inspector" "${stdio[@]}" --method tools/call --tool-name search_memory \
    --tool-arg "query=who is my dentist?" --tool-arg k=2 >"$work/search.json" 2>"$work/search.err" \
    || fail "search_memory over stdio: $(cat "$work/search.err")"
  check_search "$work/search.json" stdio

  # Streamable HTTP on loopback: the same two checks.
  "$bin" mcp "$work/s.memdb" --http 127.0.0.1:0 2>"$work/http.log" &
  server=$!
  local url="" i
  for i in $(seq 1 200); do
    url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$work/http.log")
    [ -n "$url" ] && break
    sleep 0.05
  done
  [ -n "$url" ] || fail "the HTTP server did not start: $(cat "$work/http.log")"
  "$inspector" --cli "$url" --transport http --method tools/list --strict \
    >"$work/hlist.json" 2>"$work/hlist.err" \
    || fail "tools/list --strict over HTTP failed: $(cat "$work/hlist.err")"
  grep -qE "Warning|Schema portability" "$work/hlist.err" \
    && fail "the Inspector warns about the schemas over HTTP: $(head -5 "$work/hlist.err")"
  "$inspector" --cli "$url" --transport http --method tools/call --tool-name search_memory \
    --tool-arg "query=who is my dentist?" --tool-arg k=2 >"$work/hsearch.json" 2>"$work/hsearch.err" \
    || fail "search_memory over HTTP: $(cat "$work/hsearch.err")"
  check_search "$work/hsearch.json" HTTP
  echo "memdb: inspector $version: $tools tools, no portability finding, search_memory with k over stdio and HTTP" >&2
}

case "${1:-all}" in
  prepare) prepare ;;
  run) run ;;
  all) prepare; run ;;
  *) echo "usage: $0 [prepare|run]" >&2; exit 2 ;;
esac
