#!/usr/bin/env bash
# tests/planner/test_plan_fit.sh — `frontier plan --fit` end to end, its ladder's runs made by a
# stand-in trainer through --launcher (a real ladder trains for an hour: bench/plan_validate.sh).
# The stand-in reads each run's trial.json and writes the summary a run of that shape would on a
# machine of 600 GFLOP/s whose val_bpb follows a known law with repetition. Checks:
#   - the ladder runs every rung once, through the launcher, and writes the fit and its page;
#     the repeated rungs stay inside the law's domain (as many unique tokens as parameters);
#   - run again, it trains nothing (resumable); a rung folder holding another point's run is set
#     aside (kept, not deleted) and that rung alone is trained again;
#   - a reused run that memorises (read 8 times, 1M unique tokens for 8.8M parameters) is left out
#     of the fit, said so on stderr and listed apart on the page;
#   - --reuse reads a folder of plain run folders too (bench/plan_validate.sh's), a mixture's run excepted;
#   - the loss model is keyed by the tokens: a copy of the data folder under another name finds
#     the same ladder and trains nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prepare_data
key=$($F info | sed -n 's/^plan layout: *//p')
C=$tmp/cache
mkdir -p "$C/plan"
seed_throughput "$C/throughput.json" "$key"
cat > "$tmp/fake.py" <<'PY'
# the launcher's {cmd} is `frontier train --config TRIAL --run-dir RUN --quiet`: answer as a run would
import json, math, os, sys
a = sys.argv[1:]
cfg = json.load(open(a[a.index("--config") + 1]))
run = a[a.index("--run-dir") + 1]
os.makedirs(run, exist_ok=True)
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(run + "\n")
d, w = cfg["depth"], cfg["n-embd"]
N = d * 12 * w * w + 8192 * w
budget = float(cfg["budget"].rstrip("s"))
D = budget * 6e11 / (6 * N)
U = cfg.get("train-tokens") or 44419159
R = D / U - 1
Dp = D if R <= 0 else U + U * 15.4 * (1 - math.exp(-R / 15.4))
L = 0.7 + 60 * N ** -0.34 + 60 * Dp ** -0.28
json.dump({k: v for k, v in cfg.items() if k != "budget"}, open(run + "/config.json", "w"))
json.dump({"val_bpb": L, "tokens_trained": D, "unique_tokens": U, "tok_per_s": D / budget, "mfu": 0.5,
           "timed_s": budget}, open(run + "/summary.json", "w"))
PY
export FAKE_LOG=$tmp/launched
: > "$FAKE_LOG"
L=(--launcher "/usr/bin/python3 $tmp/fake.py {cmd}")
dk=$(plan_data_key "$data")
lad=$C/plan/ladder-$dk
fit() { $F plan --fit --budget 30m --data "$1" --cache "$C" --out "$tmp/plan.json" "${L[@]}" "${@:2}" 2>&1; }

out=$(fit "$data"); rc=$?
runs=$(wc -l < "$FAKE_LOG")
[ $rc = 0 ] && [ "$runs" -ge 15 ] && [ -s "$C/plan/scaling-$dk.json" ] && [ -s "$C/plan/scaling-$dk.html" ] \
  && ok "the ladder ran $runs rungs through the launcher into $(basename "$lad"), and the fit and its page are written" \
  || { bad "plan --fit: exit $rc, $runs runs"; echo "$out" | tail -5; }
grep -q "^loss model: L = " <<<"$out" && ok "the plan is ranked by the fitted law" || bad "no law in the plan's output"
reps=$(grep -c '"train-tokens"' "$lad"/[0-9][0-9][0-9][0-9]/trial.json | grep -c ':1$')
[ "$reps" -ge 2 ] && ! grep -q "left out" <<<"$out" \
  && ok "$reps repeated rungs, each inside the law's domain (none left out of the fit)" \
  || { bad "repeated rungs: $reps; left out: $(grep -c "left out" <<<"$out")"; }

out=$(fit "$data"); rc=$?
[ $rc = 0 ] && [ "$(wc -l < "$FAKE_LOG")" = "$runs" ] && ok "run again: nothing trained (resumed from the folders)" \
  || bad "run again: exit $rc, $(( $(wc -l < "$FAKE_LOG") - runs )) runs trained"

# a rung folder whose trial is another point's (the rungs changed since it ran)
/usr/bin/python3 - "$lad/0002/trial.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["depth"] += 1; json.dump(c, open(sys.argv[1], "w"))
PY
out=$(fit "$data"); rc=$?
[ $rc = 0 ] && [ "$(wc -l < "$FAKE_LOG")" = $((runs + 1)) ] && tail -1 "$FAKE_LOG" | grep -q "/0002/run" \
  && [ -s "$lad/0002.superseded/run/summary.json" ] && grep -q "held another point's run" <<<"$out" \
  && ok "a rung folder holding another point's run: kept as 0002.superseded, that rung alone trained again" \
  || { bad "stale rung: exit $rc, launched: $(tail -2 "$FAKE_LOG" | tr '\n' ' ')"; echo "$out" | grep -i superseded; }
runs=$(wc -l < "$FAKE_LOG")

# a memorising run among reused ones: left out of the fit
mkdir -p "$tmp/research/trials/0001/run"
/usr/bin/python3 - "$lad/0001/run/config.json" "$tmp/research/trials/0001/run" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["train-tokens"] = 1000000
json.dump(c, open(sys.argv[2] + "/config.json", "w"))
json.dump({"val_bpb": 3.4, "tokens_trained": 8e6, "unique_tokens": 1e6, "tok_per_s": 4e4, "mfu": 0.5, "timed_s": 200},
          open(sys.argv[2] + "/summary.json", "w"))
PY
n_before=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_points"])' "$C/plan/scaling-$dk.json")
out=$(fit "$data" --reuse "$tmp/research"); rc=$?
n_after=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_points"])' "$C/plan/scaling-$dk.json")
[ $rc = 0 ] && [ "$n_after" = "$n_before" ] && grep -q "left out a run that memorises" <<<"$out" \
  && grep -q "Left out of the fit" "$C/plan/scaling-$dk.html" \
  && ok "a reused run that memorises (1M unique tokens read 8 times) is left out of the fit ($n_after points) and listed apart" \
  || { bad "memorising run: exit $rc, points $n_before -> $n_after"; echo "$out" | tail -3; }

# a folder of plain run folders (`frontier train --run-dir DIR/x`, bench/plan_validate.sh's layout):
# each is a point; one trained on a mixture is not (the law is the corpus's alone)
mkdir -p "$tmp/validation/30m-s1" "$tmp/validation/30m-mix"
/usr/bin/python3 - "$lad/0001/run/config.json" "$tmp/validation" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
s = {"val_bpb": 1.45, "tokens_trained": 8e7, "unique_tokens": 44419159, "tok_per_s": 4.4e4, "mfu": 0.5, "timed_s": 1800}
for name, extra in (("30m-s1", {}), ("30m-mix", {"mix": "train=0.5,extra_books=0.5"})):
    json.dump({**c, **extra}, open(f"{sys.argv[2]}/{name}/config.json", "w"))
    json.dump(s, open(f"{sys.argv[2]}/{name}/summary.json", "w"))
PY
out=$(fit "$data" --reuse "$tmp/validation"); rc=$?
n_runs=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["n_points"])' "$C/plan/scaling-$dk.json")
[ $rc = 0 ] && [ "$n_runs" = $((n_before + 1)) ] && grep -q "1 reused" <<<"$out" \
  && ok "--reuse reads a folder of run folders: the run on the corpus is a point ($n_before -> $n_runs), the mixture's is not" \
  || { bad "folder of runs: exit $rc, points $n_before -> $n_runs"; echo "$out" | grep -E "reused|error" | head -3; }

# the same tokens in a folder of another name: the same ladder
mkdir "$tmp/copy"
for f in "$data"/*; do ln -s "$(realpath "$f")" "$tmp/copy/"; done
out=$(fit "$tmp/copy"); rc=$?
[ $rc = 0 ] && [ "$(wc -l < "$FAKE_LOG")" = "$runs" ] && ok "a copy of the data folder under another name finds the same ladder" \
  || { bad "data copy: exit $rc, $(( $(wc -l < "$FAKE_LOG") - runs )) runs trained"; echo "$out" | head -3; }
echo "plan fit: $fails failed"
[ "$fails" -eq 0 ]
