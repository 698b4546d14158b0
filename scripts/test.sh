#!/usr/bin/env bash
# memdb's test command (the README's, and what .ci/run calls).
#
# Runs every test of the workspace. Tests that need the shared corpora find them at
# ../shared (or $MEMDB_SHARED_DIR); under CI=1 their absence is a failure, elsewhere a loud skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export MEMDB_SHARED_DIR="${MEMDB_SHARED_DIR:-$(cd .. && pwd)/shared}"
if [ -x scripts/install-model.sh ]; then
  scripts/install-model.sh
fi
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
