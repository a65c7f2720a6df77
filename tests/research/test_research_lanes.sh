#!/usr/bin/env bash
# tests/research/test_research_lanes.sh — `frontier research --lanes N`: side-by-side pairs, and
# the lanes beyond the first pair running what follows it.
#   1. Over the simulated trainer (whose value of a config on a seed does not depend on when it
#      runs), a research in 2 lanes, and one in 6 (through a launcher, so on any machine), make
#      exactly the decisions of the same research in 1 lane: twins stand in for the pair rows and
#      for the incumbent's earlier runs with the same values. So the keep rule's error rates, which
#      test_research_sim.sh measures in one lane, hold in any number of lanes. Every candidate run
#      follows its twin (the incumbent on its seed); no pair row is left. In 6 lanes the rows of a
#      batch name its first trial, a batch holds up to 3 pairs, and every run the research did not
#      record (unused.tsv) was planned past a candidate's decision in its batch. The same holds for
#      halving (4 screens at once) and for promotions (their runs 4 at once) in 4 lanes.
#   2. Real training (a tiny model, 2-second budgets): the twin and the candidate train at the same
#      moment, each with its lane's threads (base.json and every trial.json say threads = CPUs / 2),
#      each pinned to its own CPU; research.json records the lanes and a rerun with others is refused;
#      a research killed while a twin and its candidate train continues when run again.
#   3. Usage: --lanes above 64, and 2 lanes on a process allowed one CPU, are refused (exit 2).
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
[ -x $F ] || { bad "build ./frontier first"; exit 1; }
tmp=$(mktemp -d)
cleanup() { [ -n "${bgpid:-}" ] && kill -9 "$bgpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export SIM_RHO=0.8 SIM_SALT=11
source tests/research/sim_fixture.sh
sim_fixture "$tmp"
SIM=(research --strategy greedy --budget-per-trial 1s --seed 5 --space "$tmp/space.json" --base "$tmp/base.json"
     --trainer "/usr/bin/python3 -S tests/research/sim_trainer.py")
$F "${SIM[@]}" --trials 40 --out "$tmp/one" > "$tmp/one.out" 2>&1 || { bad "1 lane:"; tail -5 "$tmp/one.out"; }
# (in 2 lanes each trial also notes the CPUs it may run on)
$F "${SIM[@]}" --trials 70 --lanes 2 --out "$tmp/two" \
  --trainer "grep Cpus_allowed_list /proc/self/status >> $tmp/cpus.txt; /usr/bin/python3 -S tests/research/sim_trainer.py" \
  > "$tmp/two.out" 2>&1 || { bad "2 lanes:"; tail -5 "$tmp/two.out"; }
$F "${SIM[@]}" --trials 90 --lanes 6 --launcher "env {cmd}" --out "$tmp/six" > "$tmp/six.out" 2>&1 \
  || { bad "6 lanes:"; tail -5 "$tmp/six.out"; }
if [ "$(nproc)" -ge 2 ]; then  # the baseline in lane 1's CPUs, twins there, candidates in lane 2's
  sets=$(awk '{print $NF}' "$tmp/cpus.txt" | sort -u | paste -sd' ' -)
  [ "$(awk '{print $NF}' "$tmp/cpus.txt" | sort -u | wc -l)" = 2 ] && ok "each lane pinned to its own CPUs ($sets)" \
    || bad "lanes' CPU sets: $sets"
fi
for lanes in two six; do
/usr/bin/python3 - "$tmp/one" "$tmp/$lanes" <<'PY' && ok "$lanes lanes decide as 1 lane; every candidate run follows its twin" || bad "$lanes lanes: decisions or twins"
import csv, os, sys
one, two = ([r for r in csv.DictReader(open(f"{d}/results.tsv"), delimiter="\t")] for d in sys.argv[1:])
def decisions(rows):  # what each candidate run decided, in order (the twins and pairs aside)
    return [(r["kind"], r["change"], r["status"]) for r in rows if r["kind"] not in ("pair", "twin")]
a, b = decisions(one), decisions(two)
n = min(len(a), len(b))
assert n >= 20, (len(a), len(b))
assert a[:n] == b[:n], next((i, a[i], b[i]) for i in range(n) if a[i] != b[i])
assert not any(r["kind"] == "pair" for r in two), "a pair row in lanes"
for i, r in enumerate(two):
    if r["kind"] in ("greedy", "seed"):
        t = two[i - 1]
        assert t["kind"] == "twin" and t["seed"] == r["seed"] and t["paired"] == "-", (r["trial"], t["trial"])
        assert abs(float(r["paired"]) - float(t["val_bpb"])) < 1e-9, r["trial"]
        assert t["batch"] == r["batch"] != "-", (t["trial"], r["trial"])
batches = {}
for r in two:
    if r["batch"] != "-": batches.setdefault(int(r["batch"]), []).append(int(r["trial"]))
for first, ts in batches.items():  # consecutive rows from the batch's first trial
    assert ts == list(range(first, first + len(ts))), (first, ts)
widest = max(len(ts) for ts in batches.values())
unused = list(csv.DictReader(open(f"{sys.argv[2]}/unused.tsv"), delimiter="\t")) if os.path.exists(f"{sys.argv[2]}/unused.tsv") else []
decided = {int(r["batch"]) for r in two if r["batch"] != "-" and r["status"] in ("keep", "discard")}
assert all(int(u["batch"]) in decided for u in unused), "an unused run in a batch where nothing was decided"
if sys.argv[2].endswith("six"):
    assert widest == 6, f"no batch used all 6 lanes ({widest})"
    assert unused, "6 lanes never ran past a decision: nothing speculative was tested"
print(f"{n} decisions identical; {sum(r['kind'] == 'twin' for r in two)} twins; batches up to {widest} trials; "
      f"{len(unused)} runs past a decision unused")
PY
done
# halving screens and promotion runs fill the lanes too (4 at once), with the decisions of 1 lane
H=(--strategy halving --eta 3 --rungs 2 --bracket 6)
P=(--strategy greedy --promote-budget 6s --promote-seeds 3)
for arm in H P; do
  declare -n flags=$arm
  $F "${SIM[@]}" "${flags[@]}" --budget-per-trial 3s --trials 60 --out "$tmp/${arm}1" > "$tmp/${arm}1.out" 2>&1 \
    || { bad "$arm in 1 lane:"; tail -3 "$tmp/${arm}1.out"; }
  $F "${SIM[@]}" "${flags[@]}" --budget-per-trial 3s --trials 90 --lanes 4 --launcher "{cmd}" --out "$tmp/${arm}4" \
    > "$tmp/${arm}4.out" 2>&1 || { bad "$arm in 4 lanes:"; tail -3 "$tmp/${arm}4.out"; }
  /usr/bin/python3 - "$tmp/${arm}1" "$tmp/${arm}4" "$arm" <<'PY' && ok "$arm: 4 lanes decide as 1 lane, 4 screens or promotion runs at once" || bad "$arm in 4 lanes"
import csv, sys
one, four = ([r for r in csv.DictReader(open(f"{d}/results.tsv"), delimiter="\t")] for d in sys.argv[1:3])
dec = lambda rows: [(r["kind"], r["change"], r["status"]) for r in rows if r["kind"] not in ("pair", "twin", "promote-pair")]
a, b = dec(one), dec(four)
n = min(len(a), len(b))
assert n >= 20 and a[:n] == b[:n], (n, next(((i, a[i], b[i]) for i in range(n) if a[i] != b[i]), None))
kind = "rung0" if sys.argv[3] == "H" else "promote"
batches = {}
for r in four:
    if r["kind"].startswith(kind[:5]) and r["batch"] != "-": batches[r["batch"]] = batches.get(r["batch"], 0) + 1
assert batches and max(batches.values()) >= (4 if kind == "rung0" else 2), batches
PY
done
grep -q '^| lanes | 2: .*1 thread each; a trial had 1/2 of the machine' "$tmp/two/summary.md" && \
  grep -q "^| lanes | 6: .*through the launcher; lanes busy [0-9]*% of the machine time, $(($(wc -l < "$tmp/six/unused.tsv") - 1)) runs" \
    "$tmp/six/summary.md" && ok "the reports say what a lane had and how busy the lanes were" \
  || bad "lanes in the reports: $(grep -h '^| lanes' "$tmp/two/summary.md" "$tmp/six/summary.md")"

# 2. real training, 2 lanes of one CPU each
cat > "$tmp/tiny.json" <<'JSON'
{"depth": 1, "n-embd": 64, "n-head": 2, "head-dim": 32, "seq-len": 64, "device-batch": 4, "batch-tokens": 512,
 "eval-tokens": 2000}
JSON
cpus=$(nproc)
if [ "$cpus" -ge 2 ]; then
  $F research --budget-per-trial 2s --trials 5 --lanes 2 --seed 2 --space "$tmp/space.json" --base "$tmp/tiny.json" \
    --out "$tmp/real" > "$tmp/real.out" 2>&1 || { bad "a real research in 2 lanes:"; tail -5 "$tmp/real.out"; }
  grep -q "lane 2 of 2" "$tmp/real.out" && ok "trials announced in lanes" || bad "no lane in the log"
  /usr/bin/python3 - "$tmp/real" "$((cpus / 2))" <<'PY' && ok "twin and candidate trained at once, $((cpus / 2)) thread(s) each" || bad "real lanes"
import csv, json, os, sys
d, k = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(f"{d}/results.tsv"), delimiter="\t"))
assert json.load(open(f"{d}/base.json"))["threads"] == k
assert json.load(open(f"{d}/research.json"))["lanes"] == 2
twins = [i for i, r in enumerate(rows) if r["kind"] == "twin"]
assert twins, "no twin"
for i in twins:
    t, c = (f"{d}/trials/{int(rows[j]['trial']):04d}/run" for j in (i, i + 1))
    for run in (t, c):
        assert json.load(open(f"{run}/config.json"))["threads"] == k, run
    # both started (config.json) before either finished (summary.json): they overlapped
    start = max(os.path.getmtime(f"{r}/config.json") for r in (t, c))
    end = min(os.path.getmtime(f"{r}/summary.json") for r in (t, c))
    assert start < end, (t, c, start, end)
PY
  check "a rerun with another --lanes" 1 "lanes" $F research --budget-per-trial 2s --trials 6 --seed 2 \
    --space "$tmp/space.json" --base "$tmp/tiny.json" --out "$tmp/real"
  # killed (-9) while a twin and its candidate train: the rerun wipes both folders and goes on
  K=(research --budget-per-trial 2s --lanes 2 --seed 4 --space "$tmp/space.json" --base "$tmp/tiny.json" --out "$tmp/kill")
  $F "${K[@]}" --trials 8 > "$tmp/kill.out" 2>&1 &
  bgpid=$!
  for _ in $(seq 1 600); do grep -q "lane 2 of 2" "$tmp/kill.out" && break; sleep 0.1; done
  sleep 0.5
  kill -9 $bgpid 2>/dev/null; wait $bgpid 2>/dev/null
  n=$(tail -n +2 "$tmp/kill/results.tsv" | wc -l)
  [ -d "$tmp/kill/trials/$(printf %04d $((n + 2)))" ] && ok "killed with 2 trials in flight (folders $((n + 1)) and $((n + 2)))" \
    || bad "the kill did not land while 2 trials were in flight (ledger $n rows)"
  $F "${K[@]}" --trials 8 > "$tmp/kill2.out" 2>&1 && [ "$(tail -n +2 "$tmp/kill/results.tsv" | wc -l)" -ge 8 ] \
    && ok "the rerun continued after the 2 trials in flight" || { bad "rerun after a kill in 2 lanes:"; tail -3 "$tmp/kill2.out"; }
else
  skip_part_hardware "one CPU: 2 lanes of real training need 2"
fi

# 3. usage
check "--lanes 65" 2 "--lanes" $F research --budget-per-trial 2s --trials 3 --lanes 65 --out "$tmp/x"
if command -v taskset > /dev/null; then
  check "2 lanes on one CPU" 2 "needs 2 CPUs" taskset -c 0 $F research --budget-per-trial 2s --trials 3 --lanes 2 --out "$tmp/x"
else
  bad "taskset (util-linux) is missing"
fi
[ "$fails" -eq 0 ]
