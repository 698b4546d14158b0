#!/usr/bin/env bash
# Fits the learned memory-operation decider on the project's labelled scenarios and writes the
# weights the engine ships (engine/src/ops/decider_weights.rs), with the cross-validation that
# decides whether it replaces the rules as the on-device default (SPEC.md §5.7):
#
#   scripts/train-decider.sh [--mistakes]
#
# Needs the encoder's weights (scripts/install-model.sh). Takes a few minutes on 2 cores (a
# nested cross-validation over four model variants, and each scenario file held out). Rebuild
# afterwards: the weights are compiled into the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --release -p memdb-cli --bin memdb
exec target/release/memdb ops train --write engine/src/ops/decider_weights.rs "$@" \
  --scenarios tests/data/ops-scenarios.jsonl tests/data/ops-scenarios-b.jsonl \
  tests/data/ops-scenarios-c.jsonl tests/data/ops-scenarios-d.jsonl \
  tests/data/ops-scenarios-e.jsonl
