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
cargo test --workspace --all-targets "$@"
# Doc tests build dependencies under another profile hash, so including the crates that link burn
# would compile burn a second time (6 minutes on 2 cores). Their doc examples are `no_run` and the
# same calls are compiled by `--all-targets` (engine/encode/examples/throughput.rs).
cargo test --workspace --doc --exclude memdb-encode --exclude memdb-benches
