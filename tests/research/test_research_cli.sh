#!/usr/bin/env bash
# tests/research/test_research_cli.sh — `frontier research` end to end with a tiny model and
# 2-second budgets: usage errors; a greedy research killed with kill -9 in the middle of a trial
# and rerun (the trainer child dies with it, the ledger continues without a duplicated or broken
# row); a forced crash (FRONTIER_RESEARCH_FAULT) recorded as crash while the loop goes on; greedy
# records paired candidate rows the keep rule can be audited from; best.json is a config `frontier train`
# accepts; agent mode with bad proposals rejected with clear messages; the shipped example
# proposer; torn and corrupt ledgers (exit 2), a deleted or cut ledger (refused, trial folders
# untouched), a second research into a folder in use (refused with the pid); the report; trials
# through a launcher (mpirun), a hang inside it stopped. About 60 s on two busy cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d)
cleanup() { [ -n "${bgpid:-}" ] && kill -9 "$bgpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

cat > "$tmp/base.json" <<'EOF'
{"depth": 1, "n-embd": 64, "n-head": 2, "head-dim": 32, "seq-len": 64, "device-batch": 4, "batch-tokens": 512,
 "eval-tokens": 2000, "threads": 1}
EOF
# A small space around the tiny model, so every trial stays cheap whatever is drawn.
cat > "$tmp/space.json" <<'EOF'
{"params": {"matrix-lr":    {"type": "float", "min": 0.005, "max": 0.08, "log": true},
            "embedding-lr": {"type": "float", "min": 0.05, "max": 1.2, "log": true},
            "warmdown":     {"type": "float", "min": 0.2, "max": 0.9, "step": 0.05},
            "normuon":      {"type": "bool"},
            "head-dim":     {"type": "choice", "values": [16, 32, 64]}},
 "derive": {"n-head": {"div": ["n-embd", "head-dim"]}, "n-kv-head": "n-head"},
 "constraints": [{"divides": ["head-dim", "n-embd"]}]}
EOF
rows() { tail -n +2 "$1/results.tsv" | wc -l; }
# The ledger's pairing, audited from its columns alone: a candidate row (kind greedy, random, agent,
# final or seed) names in "paired" the val_bpb of the incumbent's run on the same seed, has a z
# when it trained, and a keep is never a candidate's first (single-seed) run.
ledger_audit() {
  /usr/bin/python3 - "$1" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
group, inc, bad = {}, "1", 0
for r in rows:
    t, k = r["trial"], r["kind"]
    group[t] = "1" if k == "baseline" else group[r["parent"]] if k in ("seed", "pair") else t
    if k in ("greedy", "random", "agent", "final", "seed") and r["status"] not in ("crash", "timeout", "rejected"):
        runs = [x for x in rows[: int(t) - 1] if group.get(x["trial"]) == inc and x["seed"] == r["seed"] and x["val_bpb"] != "-"]
        if not runs or runs[0]["val_bpb"] != r["paired"] or r["z"] == "-":
            print(f"trial {t}: paired {r['paired']} z {r['z']}, incumbent runs on seed {r['seed']}: {[x['trial'] for x in runs]}"); bad = 1
        if r["status"] == "keep" and k != "seed":
            print(f"trial {t}: kept on one seed"); bad = 1
    if r["status"] == "keep" and k != "baseline": inc = group[t]
sys.exit(bad)
PY
}

# 1. usage and input errors: exit 2 for flags, 1 for bad files, messages name the flag or key path
check "no budget"            2 "--budget-per-trial is required" $F research --trials 3
check "no trials or hours"   2 "give --trials N or --hours H"   $F research --budget-per-trial 2s
check "bad budget"           2 "--budget-per-trial '2 parsecs'" $F research --budget-per-trial "2 parsecs" --trials 3
check "bad strategy"         2 "--strategy 'annealing'"         $F research --budget-per-trial 2s --trials 3 --strategy annealing
check "bad threshold"        2 "--threshold 'lots'"             $F research --budget-per-trial 2s --trials 3 --threshold lots
check "help"                 0 "frontier research report DIR"   $F research --help
echo '{"params": {"depth": {"type": "int", "min": 4, "max": 1}}}' > "$tmp/bad_space.json"
check "space min > max"      1 "bad_space.json: params.depth: min 4 is greater than max 1" \
  $F research --budget-per-trial 2s --trials 3 --space "$tmp/bad_space.json" --out "$tmp/x"
echo '{"params": {"matrx-lr": {"type": "float", "min": 0.01, "max": 0.1}}}' > "$tmp/typo_space.json"
check "space, unknown setting" 1 "params.matrx-lr: not a setting of frontier train" \
  $F research --budget-per-trial 2s --trials 3 --space "$tmp/typo_space.json" --base "$tmp/base.json" --out "$tmp/y"
echo '{"depth": 1, "n-embd": 64, "n-head": 2, "head-dim": 32, "n-kv-head": 3}' > "$tmp/bad_base.json"
check "base that does not train" 1 "the base config does not train" \
  $F research --budget-per-trial 2s --trials 3 --space "$tmp/space.json" --base "$tmp/bad_base.json" --out "$tmp/z"

# 2. greedy, killed with kill -9 during trial 3, then resumed; trial 4 crashes on purpose
A=(--budget-per-trial 2s --trials 6 --space "$tmp/space.json" --base "$tmp/base.json" --out "$tmp/a" --seed 5)
FRONTIER_RESEARCH_FAULT=crash:4 $F research "${A[@]}" > "$tmp/a1.out" 2>&1 &
bgpid=$!
for _ in $(seq 1 300); do [ -f "$tmp/a/results.tsv" ] && [ "$(rows "$tmp/a")" -ge 2 ] && break; sleep 0.2; done
sleep 1
# the folder is locked while the research runs: a second one is refused with the holder's pid
check "second research into a folder in use" 1 "in use by another frontier process (pid $bgpid)" $F research "${A[@]}"
seen=0; pgrep -f "$tmp/a/trials/0003/trial.json" > /dev/null && seen=1
kill -9 "$bgpid" 2>/dev/null; wait "$bgpid" 2>/dev/null; bgpid=
n_killed=$(rows "$tmp/a")
[ "$n_killed" = 2 ] && ok "killed with 2 trials recorded (trial 3 in flight)" || bad "killed with $n_killed rows: $(tail -3 "$tmp/a1.out")"
# the trainer gets SIGKILL as its parent-death signal: gone as soon as the kernel delivers it
gone() { for _ in $(seq 1 200); do pgrep -f "$1" > /dev/null || return 0; sleep 0.05; done; return 1; }
if ! gone "$tmp/a/trials/0003/trial.json"; then bad "trial 3's trainer outlived the research process by 10 s"
elif [ $seen = 1 ]; then ok "trial 3's trainer died with the research process"
else echo "note: trial 3's trainer was not seen running at the kill (a slow machine); orphan check skipped"; fi
FRONTIER_RESEARCH_FAULT=crash:4 $F research "${A[@]}" > "$tmp/a2.out" 2>&1 && ok "resumed run finished" || { bad "resumed run failed"; tail -5 "$tmp/a2.out"; }
grep -q "resuming $tmp/a after trial 2" "$tmp/a2.out" && ok "says it resumes after trial 2" || bad "no resume message"
[ "$(rows "$tmp/a")" = 6 ] && ok "6 rows" || bad "$(rows "$tmp/a") rows, expected 6"
[ "$(head -1 "$tmp/a/results.tsv" | cut -f1,7,8,9,15)" = "$(printf 'trial\tval_bpb\tpaired\tz\tstatus')" ] && ok "header line" || bad "header: $(head -1 "$tmp/a/results.tsv")"
awk -F'\t' 'NR > 1 && ($1 != NR - 1 || NF != 17) { bad = 1 } END { exit bad }' "$tmp/a/results.tsv" \
  && ok "trial ids 1..6 in order, 17 fields each (no duplicated or torn row)" || bad "ledger rows malformed: $(cut -f1 "$tmp/a/results.tsv" | tr '\n' ' ')"
awk -F'\t' 'NR == 5 { exit !($15 == "crash" && $7 == "-" && $16 ~ /simulated crash/) }' "$tmp/a/results.tsv" \
  && ok "trial 4 recorded as crash with the reason" || bad "trial 4: $(sed -n 5p "$tmp/a/results.tsv" | cut -f7,15,16)"
awk -F'\t' 'NR > 5 && $15 != "crash" { n++ } END { exit !(n == 2) }' "$tmp/a/results.tsv" && ok "the loop went on after the crash" || bad "no trials after the crash"
awk -F'\t' 'NR == 2 { exit !($3 == "baseline" && $5 == 42 && $15 == "keep") } ' "$tmp/a/results.tsv" && \
awk -F'\t' 'NR == 3 { exit !($3 == "baseline" && $5 == 43 && $6 == "{\"seed\":43}" && $15 == "replicate") }' "$tmp/a/results.tsv" && \
awk -F'\t' 'NR == 4 { exit !($3 == "baseline" && $5 == 44 && $15 == "replicate") }' "$tmp/a/results.tsv" \
  && ok "baseline run with three seeds" || bad "baseline rows: $(sed -n 2,4p "$tmp/a/results.tsv" | cut -f3,5,6,15)"
# every candidate row is paired with the incumbent's own run on the same seed, carries its z, and
# no candidate is kept on a single seed
ledger_audit "$tmp/a/results.tsv" && ok "candidate rows carry the incumbent's paired run and z" || bad "a candidate row is not paired"
for f in base.json best.json research.json summary.md report.html trials/0001/trial.json trials/0001/train.log; do
  [ -s "$tmp/a/$f" ] || bad "research folder lacks $f"
done
$F train --config "$tmp/a/best.json" --steps 1 --eval-tokens 1 --run-dir "$tmp/repro" --quiet > "$tmp/repro.out" 2>&1 \
  && ok "frontier train --config best.json accepts the best config" || { bad "best.json does not train"; tail -3 "$tmp/repro.out"; }
grep -q '"budget":[[:space:]]*"2s"' "$tmp/a/best.json" && ok "best.json carries the budget" || bad "best.json lacks the budget"
grep -q '<svg' "$tmp/a/report.html" && ! grep -Eo '(src|href)="[^"#]|https?://[^"]*' "$tmp/a/report.html" | grep -v 'http://www.w3.org/2000/svg' \
  && ok "report.html is self-contained with a chart" || bad "report.html has no chart or external references"
grep -q "improvement over the baseline" "$tmp/a/summary.md" && ok "summary.md has the improvement" || bad "summary.md incomplete"
check "another strategy in the same folder" 1 "was started with another strategy" $F research "${A[@]}" --strategy random

# 3. a torn last row (killed mid-write) is dropped; a corrupt row in the middle stops with the line
cp -r "$tmp/a" "$tmp/t"
printf '7\t6\tgreedy\t2\t{"warm' >> "$tmp/t/results.tsv"
check "torn row dropped" 0 "ends with a torn row" $F research "${A[@]/$tmp\/a/$tmp/t}"
[ "$(rows "$tmp/t")" = 6 ] && tail -c1 "$tmp/t/results.tsv" | od -c | grep -q '\\n' && ok "ledger back to 6 whole rows" || bad "torn row not dropped"
cp -r "$tmp/a" "$tmp/c"
sed -i '3s/\t/ /g' "$tmp/c/results.tsv"
check "corrupt row" 2 "results.tsv:3: expected 17 tab-separated fields" $F research "${A[@]/$tmp\/a/$tmp/c}"
cp -r "$tmp/a" "$tmp/n"
awk -F'\t' -v OFS='\t' 'NR == 3 { $7 = -5 } { print }' "$tmp/a/results.tsv" > "$tmp/n/results.tsv"
check "negative val_bpb" 2 "results.tsv:3: val_bpb -5 is not a bits-per-byte" $F research "${A[@]/$tmp\/a/$tmp/n}"
# trial ids come from the ledger: folders it cannot account for are never overwritten
cp -r "$tmp/a" "$tmp/d"
rm "$tmp/d/results.tsv"
check "ledger deleted" 1 "holds trial folders (up to trials/0006) but no results.tsv" $F research "${A[@]/$tmp\/a/$tmp/d}"
[ -s "$tmp/d/trials/0001/train.log" ] && [ ! -e "$tmp/d/results.tsv" ] && ok "trial folders untouched" || bad "trial folders changed"
head -3 "$tmp/a/results.tsv" > "$tmp/d/results.tsv"
check "ledger cut" 1 "records 2 trials but $tmp/d/trials holds folders up to trials/0006" $F research "${A[@]/$tmp\/a/$tmp/d}"

# 4. agent mode: garbage, an out-of-range value and a derived setting are rejected, then a good one runs
cat > "$tmp/proposer.sh" <<EOF
#!/bin/sh
cat > "$tmp/bundle.json"
n=\$(cat "$tmp/count" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > "$tmp/count"
case \$n in
  1) echo "I think the learning rate is too low" ;;
  2) echo '{"matrix-lr": 5}' ;;
  3) echo '{"n-head": 4}' ;;
  *) echo 'thinking...'; echo '{"change": {"warmdown": 0.7}, "description": "longer warm-down"}' ;;
esac
EOF
chmod +x "$tmp/proposer.sh"
$F research --budget-per-trial 2s --trials 7 --space "$tmp/space.json" --base "$tmp/base.json" \
  --out "$tmp/b" --proposer "$tmp/proposer.sh" > "$tmp/b.out" 2>&1 && ok "agent research ran" || { bad "agent research failed"; tail -5 "$tmp/b.out"; }
st() { sed -n "$(( $2 + 1 ))p" "$1/results.tsv" | cut -f15; }
desc() { sed -n "$(( $2 + 1 ))p" "$1/results.tsv" | cut -f16; }
[ "$(st "$tmp/b" 4)" = rejected ] && desc "$tmp/b" 4 | grep -q "not a JSON object" && ok "garbage rejected: $(desc "$tmp/b" 4 | cut -c1-70)" || bad "trial 4: $(st "$tmp/b" 4) $(desc "$tmp/b" 4)"
[ "$(st "$tmp/b" 5)" = rejected ] && desc "$tmp/b" 5 | grep -q "matrix-lr: 5 is above the maximum 0.08" && ok "out-of-range value rejected" || bad "trial 5: $(st "$tmp/b" 5) $(desc "$tmp/b" 5)"
[ "$(st "$tmp/b" 6)" = rejected ] && desc "$tmp/b" 6 | grep -q "n-head\" is derived" && ok "derived setting rejected" || bad "trial 6: $(st "$tmp/b" 6) $(desc "$tmp/b" 6)"
# one seed never keeps: the proposal is pending (its next seed comes next) or clearly worse
sed -n 8p "$tmp/b/results.tsv" | awk -F'\t' '{ exit !($3 == "agent" && $6 == "{\"warmdown\":0.7}" && ($15 == "pending" || $15 == "discard") && $16 ~ /longer warm-down/) }' \
  && ok "a valid proposal trained" || bad "trial 7: $(sed -n 8p "$tmp/b/results.tsv")"
grep -q '"protocol"' "$tmp/bundle.json" && grep -q '"ledger"' "$tmp/bundle.json" && grep -q '"space"' "$tmp/bundle.json" \
  && ok "the proposer got protocol, space and ledger" || bad "bundle incomplete"

# 5. the shipped example proposer makes a valid proposal from such a bundle
out=$(/usr/bin/python3 research/example_proposer.py < "$tmp/bundle.json") && grep -q '"change"' <<<"$out" \
  && ok "example proposer: $out" || bad "example proposer: $out"

# 6. the report subcommand
check "report" 0 "report" $F research report "$tmp/b" --out "$tmp/b.html" --md "$tmp/b.md"
[ -s "$tmp/b.html" ] && [ -s "$tmp/b.md" ] && ok "report files written" || bad "report files missing"
# 7. --launcher: trials through mpirun (the same results as without it); a trial that hangs inside
# the launcher is stopped at its limit, the launcher's children with it
check "launcher without {cmd}" 2 "has no {cmd}" $F research --budget-per-trial 1s --trials 3 --launcher "mpirun -np 1"
check "launcher, unknown placeholder" 2 "unknown placeholder at '{host}" $F research --budget-per-trial 1s --trials 3 --launcher "srun -w {host} {cmd}"
if command -v mpirun > /dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
  printf '#!/bin/sh\ncase "$2" in */0004/*) exec sleep 987 ;; esac\nexec /usr/bin/python3 %s/tests/research/sim_trainer.py "$@"\n' "$PWD" > "$tmp/hang4.sh"
  chmod +x "$tmp/hang4.sh"
  L=(--budget-per-trial 1s --trials 5 --eval-margin 8s --space "$tmp/space.json" --base "$tmp/base.json" --trainer "$tmp/hang4.sh")
  $F research "${L[@]}" --out "$tmp/l0" > "$tmp/l0.out" 2>&1 || { bad "research without the launcher failed"; tail -3 "$tmp/l0.out"; }
  $F research "${L[@]}" --out "$tmp/l1" --launcher "mpirun -np 1 --bind-to none {cmd}" > "$tmp/l1.out" 2>&1 \
    && ok "research through mpirun ran" || { bad "research through mpirun failed"; tail -3 "$tmp/l1.out"; }
  [ "$(cut -f7 "$tmp/l0/results.tsv")" = "$(cut -f7 "$tmp/l1/results.tsv")" ] && ok "the same val_bpb through the launcher" \
    || bad "launcher changed results: $(cut -f7 "$tmp/l1/results.tsv" | tr '\n' ' ')"
  [ "$(sed -n 5p "$tmp/l1/results.tsv" | cut -f15)" = timeout ] && ok "a trial hung under mpirun recorded as timeout" \
    || bad "trial 4 under mpirun: $(sed -n 5p "$tmp/l1/results.tsv" | cut -f15,16)"
  if ! gone "sleep 987"; then bad "the hung trial outlived its launcher by 10 s"; pkill -f "sleep 987"; else ok "no process of the hung trial left"; fi
  grep -q "mpirun -np 1 --bind-to none" "$tmp/l1/trials/0005/command.sh" && ok "command.sh records the launcher" || bad "command.sh: $(cat "$tmp/l1/trials/0005/command.sh")"
else
  bad "mpirun missing: scripts/setup.sh installs openmpi-bin"
fi
check "report of a non-research folder" 2 "not a research folder (no results.tsv)" $F research report "$tmp"
[ "$fails" -eq 0 ]
