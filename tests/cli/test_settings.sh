#!/usr/bin/env bash
# tests/cli/test_settings.sh — one table of settings: `frontier train --settings` (printed from the
# flags table that parsing, --help and config JSON use) is the copy in docs/training.md, and every
# setting research/space.json searches or derives is a `frontier train` setting whose searched
# values lie inside the flag's range (so a trial can never be refused for a value the space allows).
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

$F train --settings > "$tmp/table.md" || bad "frontier train --settings failed"
sed -n '/^<!-- settings:begin/,/^<!-- settings:end/p' docs/training.md | sed '1d;$d' > "$tmp/doc.md"
if [ -s "$tmp/doc.md" ] && cmp -s "$tmp/table.md" "$tmp/doc.md"; then ok "docs/training.md holds the current settings table ($(($(wc -l < "$tmp/table.md") - 2)) settings)"
else bad "docs/training.md's settings table differs from frontier train --settings (regenerate it between the settings markers)"; diff "$tmp/doc.md" "$tmp/table.md" | head -10; fi
check "--help still lists the settings" 0 "--matrix-lr LR" $F train --help

/usr/bin/python3 - "$tmp/table.md" research/space.json <<'PY' || fails=$((fails + 1))
import json, sys
rows = {}
for line in open(sys.argv[1]).read().splitlines()[2:]:
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    name, typ, rng = cells[0].strip("`"), cells[1], cells[2]
    lo, hi = (float(x) for x in rng.split("..")) if rng else (None, None)
    rows[name] = (typ, lo, hi)
space = json.load(open(sys.argv[2]))
bad = []
for name, p in space["params"].items():
    if name not in rows: bad.append(f"{name}: not a frontier train setting"); continue
    typ, lo, hi = rows[name]
    vals = p.get("values") or [v for v in (p.get("min"), p.get("max")) if v is not None]
    for v in vals:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and lo is not None and not (lo <= v <= hi):
            bad.append(f"{name}: searched value {v} outside the flag's range {lo:g}..{hi:g}")
    if p.get("type") in ("int", "bool") and typ not in ("int",): bad.append(f"{name}: space type {p['type']} but setting {typ}")
for name in space.get("derive", {}):
    if name not in rows: bad.append(f"derive {name}: not a frontier train setting")
for b in bad: print("FAIL:", b)
if not bad: print(f"ok: research/space.json: {len(space['params'])} searched and {len(space.get('derive', {}))} derived settings, all inside the flags' ranges")
sys.exit(1 if bad else 0)
PY
echo "settings: $fails failed"
[ "$fails" -eq 0 ]
