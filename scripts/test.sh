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
"${isolate[@]}" cargo test --offline --workspace --all-targets "$@"
"${isolate[@]}" scripts/python-tests.sh run
# Doc tests build dependencies under another profile hash, so including the crates that link burn
# would compile burn a second time (6 minutes on 2 cores). Their doc examples are `no_run` and the
# same calls are compiled by `--all-targets` (engine/encode/examples/throughput.rs).
"${isolate[@]}" cargo test --offline --workspace --doc --exclude memdb-encode --exclude memdb-benches --exclude memdb-py
