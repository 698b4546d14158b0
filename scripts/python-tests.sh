#!/usr/bin/env bash
# The Python package's tests (python/: the `memdb` wheel, built with maturin from the crate
# memdb-py, and its pytest suite python/tests/).
#
#   scripts/python-tests.sh prepare   needs the network once: the virtual environment
#                                     $CARGO_TARGET_DIR/pyvenv (default target/pyvenv) with pinned
#                                     maturin, pytest and mcp (the MCP SDK the MCP server's tests
#                                     use), then `pip install ./python` into it
#   scripts/python-tests.sh run [ARGS]  no network: pytest on the installed wheel (ARGS go to
#                                     pytest); MEMDB_BIN names the `memdb` binary for the MCP tests
#   scripts/python-tests.sh [ARGS]    both
#
# The wheel is built with the dev profile into the workspace's target directory, with the
# engine's features as `cargo test --workspace` has them (feature `workspace-test-build`), so
# after `cargo test --workspace --all-targets --no-run` it compiles pyo3 and this one crate and
# reuses everything else (burn included). Tests need the shared corpora ($MEMDB_SHARED_DIR, else
# ../shared) and the encoder's weights (scripts/install-model.sh); under CI=1 their absence fails.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
venv="$target/pyvenv"
python="${PYTHON:-python3}"
# Pinned: what the suite was written and timed against.
requirements=(maturin==1.16.0 pytest==9.2.0 mcp==2.3.0)

elapsed() { echo "memdb: python: $1 in $(( $(date +%s) - $2 )) s" >&2; }

prepare() {
  local start
  start=$(date +%s)
  if ! "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
  elapsed "virtual environment $venv ready" "$start"

  start=$(date +%s)
  local log="$target/pyinstall.log"
  # The package installs as a Python package does: `pip install ./python`, maturin being its
  # PEP 517 backend (python/pyproject.toml). Its distribution is `memdb-engine` (`memdb` on
  # PyPI is an unrelated project); an earlier wheel of ours named `memdb` goes first.
  "$venv/bin/python" -m pip uninstall --quiet --yes memdb >/dev/null 2>&1 || true
  # The dev profile with the engine's features as `cargo test --workspace` has them (feature
  # `workspace-test-build`), into the workspace's target directory: after `cargo test
  # --workspace --all-targets --no-run` only pyo3 and memdb-py compile. --no-build-isolation:
  # the pinned maturin of this environment, no network.
  if ! PATH="$venv/bin:$PATH" CARGO_TARGET_DIR="$target" \
    MATURIN_PEP517_ARGS="--profile dev --features workspace-test-build --strip" \
    "$venv/bin/python" -m pip install --no-build-isolation --no-deps --force-reinstall \
    --disable-pip-version-check --verbose ./python >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "memdb: python: \`pip install ./python\` failed (whole log: $log)" >&2
    return 1
  fi
  # Anything but pyo3 and memdb-py compiled means python/Cargo.toml's `workspace-test-build`
  # no longer matches the features the workspace build gives that crate (it still works, only
  # slower); expected on a cold target directory.
  local again
  again=$(sed -n 's/^ *Compiling \([^ ]*\) .*/\1/p' "$log" | grep -vE '^(memdb-py|pyo3.*)$' | sort -u | tr '\n' ' ' || true)
  if [ -n "$again" ]; then
    echo "memdb: python: note: the package build compiled $again(expected on a cold target" \
      "directory; after \`cargo test --workspace --all-targets --no-run\` it means their features" \
      "differ from the workspace build's: see workspace-test-build in python/Cargo.toml)" >&2
  fi
  elapsed "pip install ./python done" "$start"
}

run() {
  local start
  start=$(date +%s)
  export MEMDB_BIN="${MEMDB_BIN:-$target/debug/memdb}"
  # From the repository root, so `import memdb` finds the installed wheel, not python/memdb/.
  PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -p no:cacheprovider -q python/tests "$@"
  elapsed "pytest passed" "$start"
}

case "${1:-all}" in
  prepare) prepare ;;
  run) shift; run "$@" ;;
  all) prepare; run ;;
  *) prepare; run "$@" ;;
esac
