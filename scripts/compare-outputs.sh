#!/usr/bin/env bash
# Behaviour before and after a refactor: runs the same commands with one `memdb` binary and
# writes their JSON outputs, timings and paths stripped, to OUT. Run it with the old and the new
# binary and `diff -r` the two folders (a RECALL statement's stage microseconds still differ).
#   scripts/compare-outputs.sh BIN OUT
# Needs the encoder installed (`memdb model install`) and the shared corpora (../shared or
# $MEMDB_SHARED_DIR). Tries no settings: every command runs on its defaults.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${MEMDB_SHARED_DIR:-$here/../shared}
bin=$(realpath "$1"); out=$2; rm -rf "$out"; mkdir -p "$out"; w=$(mktemp -d)
strip() { python3 -c '
import json,sys
def clean(v):
    if isinstance(v,dict): return {k:clean(x) for k,x in v.items() if not any(t in k for t in ("_ms","_us","micros","elapsed","seconds","ms_per","us_per","per_sec","qps","path","dir","store","file"))}
    if isinstance(v,list): return [clean(x) for x in v]
    return v
try:
    d=json.load(sys.stdin)
except Exception as e:
    print("NOT JSON", e); sys.exit(0)
print(json.dumps(clean(d),indent=1,sort_keys=True))'; }
L=$shared/data/locomo
$bin --json init $w/loc >/dev/null
$bin --json import locomo $w/loc $L/*.json | strip > $out/import.json
$bin --json embed $w/loc | strip > $out/embed.json
for q in "When did Caroline go to the LGBTQ support group?" "What is Melanie's hobby?" "Where did Jon travel for his business?" "What did Gina open?" "Who gave the speech at the school event?"; do
  $bin --json recall $w/loc "$q" -k 10 | strip >> $out/recall.json
  $bin --json query $w/loc "RECALL '${q//\'/\'\'}' TOP 10" | strip >> $out/query.json
done
$bin --json init $w/atm >/dev/null
$bin --json import atm $w/atm $here/tests/data/atm | strip > $out/atm_import.json
$bin --json embed $w/atm | strip > $out/atm_embed.json
$bin --json eval atm $w/atm $here/tests/data/atm/qa.json | strip > $out/atm_eval.json
$bin --json gate eval --cross-validate --locomo $L | strip > $out/gate_cv.json
$bin --json ops eval --scenarios $here/tests/data/ops-scenarios-b.jsonl --rules | strip > $out/ops_rules.json
$bin --json ops eval --scenarios $here/tests/data/ops-scenarios-b.jsonl | strip > $out/ops_ondevice.json
rm -rf "$w"
