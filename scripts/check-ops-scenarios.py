#!/usr/bin/env python3
"""Check tests/data/ops-scenarios.jsonl (memory update decider scenarios).

Usage: scripts/check-ops-scenarios.py [PATH]
Prints counts per expected operation and per kind; exits 1 on any problem.
"""
import collections
import datetime
import json
import sys

OPS = {"ADD", "UPDATE", "DELETE", "NONE"}
REQUIRED = ("existing", "new", "time", "expected")


def date(value, where, errors):
    try:
        if not isinstance(value, str) or len(value) != 10:
            raise ValueError
        return datetime.date.fromisoformat(value)
    except ValueError:
        errors.append(f"{where}: bad date {value!r}")
        return None


def check(path):
    errors = []
    seen = {}
    ops = collections.Counter()
    kinds = collections.Counter()
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        where = f"line {n}"
        if line in seen:
            errors.append(f"{where}: duplicate of line {seen[line]}")
            continue
        seen[line] = n
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            errors.append(f"{where}: not JSON ({e})")
            continue
        if not isinstance(rec, dict):
            errors.append(f"{where}: not an object")
            continue
        missing = [k for k in REQUIRED if k not in rec]
        if missing:
            errors.append(f"{where}: missing {missing}")
            continue
        op = rec["expected"]
        if op not in OPS:
            errors.append(f"{where}: expected {op!r} not one of {sorted(OPS)}")
            continue
        if not isinstance(rec["new"], str) or not rec["new"].strip():
            errors.append(f"{where}: empty new fact")
        t = date(rec["time"], f"{where} time", errors)
        existing = rec["existing"]
        if not isinstance(existing, list) or len(existing) > 6:
            errors.append(f"{where}: existing must be a list of at most 6")
            continue
        ids = []
        for m in existing:
            if not isinstance(m, dict) or not {"id", "text", "time"} <= m.keys():
                errors.append(f"{where}: memory {m!r} lacks id/text/time")
                continue
            if not isinstance(m["id"], str) or not isinstance(m["text"], str) or not m["text"].strip():
                errors.append(f"{where}: memory {m!r} id/text not non-empty strings")
            ids.append(m["id"])
            mt = date(m["time"], f"{where} memory {m['id']}", errors)
            if t and mt and mt > t:
                errors.append(f"{where}: memory {m['id']} time {mt} after new time {t}")
        if len(set(ids)) != len(ids):
            errors.append(f"{where}: duplicate ids {ids}")
        target = rec.get("target")
        if op == "ADD":
            if target is not None:
                errors.append(f"{where}: ADD with target {target!r}")
        elif target not in ids:
            errors.append(f"{where}: {op} target {target!r} not among ids {ids}")
        ops[op] += 1
        kinds[(op, rec.get("kind", "-"))] += 1
    return errors, ops, kinds, len(lines)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/data/ops-scenarios.jsonl"
    errors, ops, kinds, total = check(path)
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{total} scenarios")
    for op in ("ADD", "UPDATE", "DELETE", "NONE"):
        print(f"{op:7} {ops[op]}")
    for (op, kind), c in sorted(kinds.items()):
        print(f"  {op:7} {kind:22} {c}")
    if errors:
        print(f"{len(errors)} problem(s)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
