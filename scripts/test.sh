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
#
# memdb-benches is left out: it has no tests, its programs are benchmarks (run in release, see
# the README), and clippy --all-targets compiles them in CI.
cargo test --workspace --exclude memdb-benches --all-targets --no-run "$@"
# The Python package (python/) and the MCP server's tests with the official Python MCP client:
# the virtual environment, its pinned tools (maturin, pytest, mcp) and the wheel need the
# network (pip) once; the tests themselves run isolated below.
scripts/python-tests.sh prepare
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
# The reliability suite (memdb-it: kill -9 loops, power-loss images, the two-minute
# reader/writer test) runs beside the rest: its binaries spend much of their time waiting on
# child processes and clocks, so on a 2-core machine the two halves share the cores instead of
# taking turns (a few minutes of every CI run). Both select the same packages' features as the
# build above, so nothing is compiled again; the reliability log is printed when both are done.
it_log=$(mktemp)
trap 'rm -f "$it_log"' EXIT
"${isolate[@]}" cargo test --offline -p memdb-it --all-targets "$@" >"$it_log" 2>&1 &
it_pid=$!
status=0
"${isolate[@]}" cargo test --offline --workspace --exclude memdb-benches --exclude memdb-it \
  --all-targets "$@" || status=$?
it_status=0
wait "$it_pid" || it_status=$?
echo "---- memdb-it (reliability suite) ----"
cat "$it_log"
if [ "$status" -ne 0 ] || [ "$it_status" -ne 0 ]; then
  echo "memdb: tests failed (workspace: exit $status, memdb-it: exit $it_status)" >&2
  exit 1
fi
"${isolate[@]}" scripts/python-tests.sh run
# Doc tests build dependencies under another profile hash, so including the crates that link burn
# would compile burn a second time (6 minutes on 2 cores). Their doc examples are `no_run` and the
# same calls are compiled by `--all-targets` (engine/encode/examples/throughput.rs).
"${isolate[@]}" cargo test --offline --workspace --doc --exclude memdb-encode --exclude memdb-benches --exclude memdb-py
