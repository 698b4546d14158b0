#!/usr/bin/env bash
# Bounded fuzz smoke of every memdb fuzz target (reliability.md R7): runs each target for a fixed
# time from its committed seeds, prints executions per target, fails on any crash, timeout or
# out-of-memory.
#
#   fuzz/run-ci.sh [SECONDS_PER_TARGET] [TARGET...]
#
# SECONDS_PER_TARGET defaults to $FUZZ_SECONDS, else 30; TARGETs default to every file in
# fuzz/fuzz_targets/. FUZZ_SANITIZER picks cargo-fuzz's sanitizer (default: none, see below).
#
# The committed seeds (fuzz/seeds/TARGET) are copied into a scratch corpus, fuzz/corpus/TARGET
# (git-ignored, kept between local runs so coverage accumulates), together with the importer
# test corpora (formats/tests/{good,bad}/PARSER), so libFuzzer never writes into a committed
# directory. Crashing inputs land in fuzz/artifacts/TARGET/; each must become a regression test.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${1:-${FUZZ_SECONDS:-30}}
[[ $# -gt 0 ]] && shift
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
    echo "run-ci.sh: seconds per target must be a positive integer, got '$seconds'" >&2
    exit 2
fi
if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    targets=()
    for src in fuzz/fuzz_targets/*.rs; do
        targets+=("$(basename "$src" .rs)")
    done
fi
# The formats crate forbids unsafe code, so AddressSanitizer has nothing of ours to catch and
# would cost about half the executions; overflow checks and debug assertions stay on (see -O below).
sanitizer=${FUZZ_SANITIZER:-none}

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

# -O everywhere: cargo-fuzz's default (-a) adds `-Cdebug-assertions` to RUSTFLAGS, which would
# reach every crate, mail-parser included: mail-parser 0.11 carries a `debug_assert!(false, …)`
# that malformed multipart mail reaches and that release builds (what users run) skip, so
# mail_message would only rediscover that one line. With -O, fuzz/Cargo.toml's release profile
# decides instead: overflow checks and debug assertions on for every crate but mail-parser. One
# set of flags for all targets also means one build of the dependencies, not two.
opt=-O

# Build every target once, in one cargo call, so the time budget below is spent fuzzing.
echo "== building ${#targets[@]} fuzz targets (sanitizer: $sanitizer)"
if [[ ${#targets[@]} -eq $(ls fuzz/fuzz_targets/*.rs | wc -l) ]]; then
    cargo +nightly fuzz build --sanitizer "$sanitizer" "$opt"
else
    for target in "${targets[@]}"; do
        cargo +nightly fuzz build --sanitizer "$sanitizer" "$opt" "$target"
    done
fi

# Importer test corpora that also seed a target.
extra_seed_dirs() {
    case $1 in
        jsonl_line) echo formats/tests/good/jsonl formats/tests/bad/jsonl ;;
        locomo_file) echo formats/tests/good/locomo formats/tests/bad/locomo ;;
        # The real broken and odd inputs of ../shared/data (not committed: licences).
        mail_message) echo ../shared/data/mail/malformed/* ../shared/data/mail/mbox/mimekit ;;
        photo_file) echo ../shared/data/photos/metadata-extractor-images/ImageTestSuite ;;
    esac
}

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
rows=()
failed=()
for target in "${targets[@]}"; do
    corpus=fuzz/corpus/$target
    mkdir -p "$corpus"
    for dir in "fuzz/seeds/$target" $(extra_seed_dirs "$target"); do
        if [[ -d $dir ]]; then
            cp -n "$dir"/* "$corpus"/ 2>/dev/null || true
        fi
    done
    flags=(-max_total_time="$seconds" -rss_limit_mb=512 -timeout=2 -print_final_stats=1)
    if [[ -f fuzz/dicts/$target.dict ]]; then
        flags+=(-dict="fuzz/dicts/$target.dict")
    fi
    echo "== fuzzing $target for ${seconds}s"
    log=$logs/$target.log
    set +e
    cargo +nightly fuzz run --sanitizer "$sanitizer" "$opt" "$target" "$corpus" \
        -- "${flags[@]}" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    if [[ -z $execs ]]; then
        # No final stats (the run died early): the last status line still counts executions.
        execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    fi
    execs=${execs:-0}
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
    if [[ $rc -eq 0 ]]; then
        result=ok
    else
        result="FAILED (exit $rc)"
        failed+=("$target")
        echo "---- $target: last 60 lines of the libFuzzer log ----"
        tail -n 60 "$log"
        echo "---- crashing inputs: $(ls fuzz/artifacts/"$target" 2>/dev/null | tr '\n' ' ')"
    fi
    rows+=("$(printf '%-14s %8s %12s %10s %7s %12s  %s' "$target" "$seconds" "$execs" \
        "$((execs / seconds))" "${cov:--}" "${corp:--}" "$result")")
done

echo
printf '%-14s %8s %12s %10s %7s %12s  %s\n' target seconds execs execs/s cov corpus result
for row in "${rows[@]}"; do
    echo "$row"
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]} (inputs in fuzz/artifacts/)" >&2
    exit 1
fi
