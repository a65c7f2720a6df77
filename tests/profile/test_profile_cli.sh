#!/usr/bin/env bash
# tests/profile/test_profile_cli.sh — `frontier profile` on a tiny model: trace.json is valid
# trace-event JSON whose complete events nest properly on every lane (what Perfetto and
# chrome://tracing require), with step, phase, layer and op spans and a tok/s counter;
# profile.csv has one row per op, profile_shapes.csv one per (op, shape); the printed coverage
# is >= 95% of the step; and Chromium's DevTools trace engine (npm @paulirish/trace_engine, pinned
# by the lockfile here) imports every span with no warnings.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
./frontier profile --steps 3 --depth 2 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 \
  --batch-tokens 512 --run-dir "$tmp/p" --quiet > "$tmp/out.txt"
cover=$(sed -n 's/^ops and data cover \([0-9.]*\)%.*/\1/p' "$tmp/out.txt")
awk -v c="$cover" 'BEGIN { exit !(c >= 95) }' || { echo "FAIL: coverage '$cover'"; cat "$tmp/out.txt"; exit 1; }
echo "ok: op spans cover $cover% of the step"
# the phases directly inside the step: each of the main ones, together most of the step and no more
phases=$(grep '^time per phase:' "$tmp/out.txt") || { echo "FAIL: no phase line"; cat "$tmp/out.txt"; exit 1; }
for p in loader forward head backward optimizer; do
  echo "$phases" | grep -q " $p [0-9.]* ms (" || { echo "FAIL: phase $p missing: $phases"; exit 1; }
done
echo "$phases" | grep -o '([0-9.]*%)' | tr -d '()%' | awk '{t += $1} END { exit !(t >= 90 && t <= 100.5) }' ||
  { echo "FAIL: phases do not add up to the step: $phases"; exit 1; }
echo "ok: $phases"
head -1 "$tmp/p/profile.csv" | grep -qx 'op,calls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline'
grep -q '^matmul_nt,' "$tmp/p/profile.csv" && echo "ok: profile.csv"
# per (op, shape): the CSV (this model's q projection: 4 x 64 tokens, 64 wide) and the printed table
head -1 "$tmp/p/profile_shapes.csv" | grep -qx 'op,shape,calls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline'
grep -q '^matmul_nt,256x64x64,' "$tmp/p/profile_shapes.csv" || { echo "FAIL: no q projection row"; cat "$tmp/p/profile_shapes.csv"; exit 1; }
sed -n '/^costliest shapes/,$p' "$tmp/out.txt" | grep -Eq '^(matmul|head|relu2|attention)[a-z_]* [0-9x]+ ' ||
  { echo "FAIL: no shapes table"; cat "$tmp/out.txt"; exit 1; }
echo "ok: profile_shapes.csv and the costliest shapes"
/usr/bin/python3 - "$tmp/p/trace.json" <<'PY'
import json, sys, collections
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
cats = collections.Counter(e["cat"] for e in x)
for c in ("step", "phase", "layer", "op", "data"):
    assert cats[c] > 0, f"no {c} spans: {cats}"
assert sum(1 for e in ev if e["ph"] == "C" and e["name"] == "tok/s") == 3, "tok/s counter"
assert all(e["dur"] >= 0 for e in x)
lanes = collections.defaultdict(list)
for e in x:
    lanes[e["tid"]].append(e)
eps = 0.01  # us: timestamps are printed with 3 decimals
for tid, es in lanes.items():
    es.sort(key=lambda e: (e["ts"], -e["dur"]))
    stack = []
    for e in es:
        while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - eps:
            stack.pop()
        if stack:
            p = stack[-1]
            assert e["ts"] + e["dur"] <= p["ts"] + p["dur"] + eps, f"lane {tid}: {e['name']} overlaps {p['name']}"
        stack.append(e)
steps = [e for e in x if e["cat"] == "step"]
assert len(steps) == 3
ops = [e for e in x if e["cat"] == "op"]
assert all("gflop" in e["args"] and "shape" in e["args"] for e in ops if e["name"].startswith("matmul"))
print(f"ok: trace.json: {len(x)} spans on {len(lanes)} lanes nest properly; {cats['op']} op spans")
PY

here=tests/profile
[ -d "$here/node_modules/@paulirish/trace_engine" ] || (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
node "$here/devtools_import.mjs" "$tmp/p/trace.json" && echo "ok: Chromium DevTools' trace engine imports every span"
