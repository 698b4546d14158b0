#!/usr/bin/env bash
# memdb's test command (the README's, and what .ci/run calls).
#
# Runs every test of the workspace. Tests that need the shared corpora find them at
# ../shared (or $MEMDB_SHARED_DIR); under CI=1 their absence is a failure, elsewhere a loud skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMDB_SHARED_DIR="${MEMDB_SHARED_DIR:-$(cd .. && pwd)/shared}"
scripts/system-deps.sh
if [ -x scripts/install-model.sh ]; then
  scripts/install-model.sh
fi
# Build first (that may fetch crates), then run every test where no other host can be reached:
# in a network namespace whose only interface is loopback, a test that tried to open a network
# connection would fail (reliability R12: nothing leaves the device, the test suite included).
cargo test --workspace --all-targets --no-run "$@"
isolate=()
for flags in -n -rn; do
  if unshare "$flags" sh -c 'ip link set lo up' 2>/dev/null; then
    isolate=(env MEMDB_NO_NETWORK=1 unshare "$flags" sh -c 'ip link set lo up && exec "$@"' sh)
    echo "memdb: tests run without network (unshare $flags: loopback only)" >&2
    break
  fi
done
if [ ${#isolate[@]} -eq 0 ]; then
  echo "memdb: WARNING: this machine refuses network namespaces; tests run with the network" >&2
fi
# The reliability suite (memdb-it's integration tests: kill -9 loops, power-loss images, the
# two-minute reader/writer test) runs beside the rest: its binaries spend much of their time
# waiting on child processes and clocks, so on a 2-core machine the two halves share the cores
# instead of taking turns. Both halves select the whole workspace and differ only in which test
# targets they run, so cargo resolves the same features as the build above and compiles nothing
# again (selecting packages with -p/--exclude would change features and rebuild the engine).
# The target lists come from cargo metadata, so a new test file is never left out.
mapfile -t split < <(cargo metadata --offline --no-deps --format-version 1 | python3 -c '
import json, sys
meta = json.load(sys.stdin)
for pkg in meta["packages"]:
    for target in pkg["targets"]:
        if "test" in target["kind"]:
            print(("it" if pkg["name"] == "memdb-it" else "rest") + " " + target["name"])
')
reliability=() rest=(--lib --bins --examples --benches)
for line in "${split[@]}"; do
  case $line in
    "it "*) reliability+=(--test "${line#it }") ;;
    "rest "*) rest+=(--test "${line#rest }") ;;
  esac
done
it_log=$(mktemp)
trap 'rm -f "$it_log"' EXIT
"${isolate[@]}" cargo test --offline --workspace "${reliability[@]}" "$@" >"$it_log" 2>&1 &
it_pid=$!
status=0
"${isolate[@]}" cargo test --offline --workspace "${rest[@]}" "$@" || status=$?
# The examples in the docs (the memdb facade documents each of its names with one): one merged
# binary per crate.
"${isolate[@]}" cargo test --offline --workspace --doc "$@" || status=$?
it_status=0
wait "$it_pid" || it_status=$?
echo "---- reliability suite (memdb-it) ----"
cat "$it_log"
if [ "$status" -ne 0 ] || [ "$it_status" -ne 0 ]; then
  echo "memdb: tests failed (exit $status; reliability suite: exit $it_status)" >&2
  exit 1
fi
# The Python package (python/) and the MCP server's tests with the official Python MCP client:
# the virtual environment, its pinned tools (maturin, pytest, mcp) and the wheel need the
# network (pip) once; the tests themselves run isolated. The wheel is built after the Rust tests:
# maturin's environment rebuilds pyo3 for the wheel, and built before, it would have made the
# Rust tests compile pyo3 and memdb-py again.
scripts/python-tests.sh prepare
"${isolate[@]}" scripts/python-tests.sh run
# The MCP Inspector's CLI over stdio and HTTP (npm fetches it once; skipped without npm).
scripts/inspector-test.sh prepare
"${isolate[@]}" scripts/inspector-test.sh run
# Doc tests over the whole workspace: the same package selection as the build, so they reuse
# its artifacts (leaving crates out with --exclude changed feature unification and rebuilt the
# engine, about 3 minutes). memdb-py is a cdylib, which has no doc tests.
"${isolate[@]}" cargo test --offline --workspace --doc
