#!/usr/bin/env bash
# tests/research/test_research_promote.sh — `frontier research --promote-budget` end to end over
# the simulated trainer (tests/research/sim_trainer.py): two settings help 1-second trials and hurt
# 2-second ones (SIM_REVERSE), the six others help at both. Every keep must be followed at once by
# its promotion (the incumbent it beat, then the keep, on fresh seeds at 2 s); the keeps of the two
# reversing settings must come out no-transfer and the next candidate must build on the incumbent
# they beat; the others transfer; best.json never holds a change that did not transfer; the
# report shows both verdicts; the promotion settings are part of the research's definition.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
[ -x $F ] || { bad "build ./frontier first"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SIM_RHO=0.8 SIM_REVERSE="2:matrix-lr,warmdown" SIM_SALT=7
source tests/research/sim_fixture.sh
sim_fixture "$tmp"
R=(research --strategy greedy --budget-per-trial 1s --seed 3 --space "$tmp/space.json" --base "$tmp/base.json"
   --out "$tmp/r" --trainer "/usr/bin/python3 -S tests/research/sim_trainer.py")
$F "${R[@]}" --trials 100 --promote-budget 2s --promote-seeds 3 > "$tmp/r.out" 2>&1 \
  || { bad "the research failed:"; tail -5 "$tmp/r.out"; }

/usr/bin/python3 - "$tmp/r" <<'PY' && ok "every keep promoted at once; the reversing changes did not transfer and were undone, the others transferred" || bad "promotion audit"
import csv, json, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(f"{d}/results.tsv"), delimiter="\t"))
cfg = lambda t: json.load(open(f"{d}/trials/{int(t):04d}/trial.json"))
REV = {"matrix-lr": 0.03, "warmdown": 0.6}
def changed(t):  # the setting a greedy candidate moved, from its change column
    ch = json.loads(rows[int(t) - 1]["change"]); return [k for k in ch if k != "seed"]
incumbent, verdicts, i = "1", {"transfer": 0, "no-transfer": 0}, 0
while i < len(rows):
    r = rows[i]
    if r["status"] == "keep" and r["kind"] != "baseline":
        g = r["parent"] if r["kind"] == "seed" else r["trial"]
        beaten, k = incumbent, i + 1
        while k < len(rows) and rows[k]["kind"].startswith("promote"):
            p = rows[k]
            want = "promote-pair" if (k - i) % 2 == 1 else "promote"
            assert p["kind"] == want, (p["trial"], p["kind"], want)
            assert p["parent"] == (beaten if want == "promote-pair" else g), (p["trial"], p["parent"])
            assert float(p["budget_s"]) == 2 and float(p["seed"]) >= 1042, p["trial"]
            k += 1
        assert k - i - 1 == 6 or k == len(rows), f"keep {r['trial']}: {k - i - 1} promotion rows"
        if k == len(rows): break
        v = rows[k - 1]["status"]
        verdicts[v] += 1
        moved = changed(g)
        rev = any(m in REV and cfg(g)[m] == REV[m] for m in moved)
        assert v == ("no-transfer" if rev else "transfer"), f"keep {g} moved {moved}: {v}"
        incumbent = g if v == "transfer" else beaten
        nxt = rows[k] if k < len(rows) else None
        if nxt: assert nxt["parent"] == incumbent, (nxt["trial"], nxt["parent"], incumbent)
        i = k
        continue
    i += 1
best = json.load(open(f"{d}/best.json"))
assert all(best[k] != v for k, v in REV.items()), best
print(f"verdicts: {verdicts}")
assert verdicts["transfer"] >= 2 and verdicts["no-transfer"] >= 1, verdicts
PY
grep -q "transferred at --promote-budget" "$tmp/r/summary.md" && grep -q "| no: d +" "$tmp/r/summary.md" \
  && grep -q "| yes: d -" "$tmp/r/summary.md" && ok "summary.md shows both verdicts" || bad "summary.md lacks the promotion verdicts"
grep -q '"promote_budget_s":[[:space:]]*2' "$tmp/r/research.json" && ok "research.json records the promotion" \
  || bad "research.json lacks promote_budget_s"
check "another --promote-budget on rerun" 1 "promote_budget_s" $F "${R[@]}" --trials 101 --promote-budget 3s
check "a rerun without --promote-budget" 1 "promote_budget_s" $F "${R[@]}" --trials 101
check "--promote-budget not above the trial budget" 2 "longer than --budget-per-trial" \
  $F research --budget-per-trial 2m --trials 3 --promote-budget 90s --out "$tmp/x"
[ "$fails" -eq 0 ]
