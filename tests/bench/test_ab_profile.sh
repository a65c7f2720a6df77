#!/usr/bin/env bash
# tests/bench/test_ab_profile.sh — bench/ab_profile.sh: the table's arithmetic on made-up
# profiles (exact medians, ratios, shares and pair counts), its errors, and one real A/B run.
# No timing is checked: only that the figures are the ones the runs printed.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/lib.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PY=/usr/bin/python3

# fake_run DIR STEP_MS STEPS ROWS...: a profile run folder; ROWS are "op,shape,total_ms,pct_step"
fake_run() {
  local dir=$1 step=$2 steps=$3; shift 3
  mkdir -p "$dir"
  printf 'ops and data cover 99.5%% of %d steps (%s ms/step)\nstep: %s ms, %d tok/s, MFU 40%%\n' \
    "$steps" "$step" "$step" "$((4096000 / ${step%.*}))" >"$dir/profile.log"
  echo "op,shape,calls,total_ms,pct_step,gflop,gbyte,gflops_per_s,gbytes_per_s,intensity,pct_roofline" >"$dir/profile_shapes.csv"
  for r in "$@"; do
    IFS=, read -r op shape ms pct <<<"$r"
    echo "$op,$shape,10,$ms,$pct,1,1,1,1,1,1" >>"$dir/profile_shapes.csv"
  done
}

# A: steps 100 and 110 ms; matmul 10 steps of 100 and 120 ms total (10, 12 ms/step), shares 10/11%;
# B: steps 90 and 120; matmul 80 and 90 ms (8, 9), shares 8.9/7.5%; head only in B's second run.
fake_run "$tmp/a1" 100 10 "matmul_nt,4096x128x128,100,10" "attn,16x256x128,50,5"
fake_run "$tmp/a2" 110 10 "matmul_nt,4096x128x128,120,11" "attn,16x256x128,60,5.5"
fake_run "$tmp/b1" 90 10 "matmul_nt,4096x128x128,80,8.9" "attn,16x256x128,55,6.1"
fake_run "$tmp/b2" 120 10 "matmul_nt,4096x128x128,90,7.5" "attn,16x256x128,40,3.3" "head,4096x8192x128,300,25"
out=$($PY bench/ab_profile.py --a "$tmp/a1" "$tmp/a2" --b "$tmp/b1" "$tmp/b2" 2>&1)
echo "$out"
expect() {  # a line the table must hold, exactly
  if grep -qxF -- "$1" <<<"$out"; then ok "table: $1"; else bad "table lacks: $1"; fi
}
expect "| **whole step** | 105.00 | 105.00 | 1.000 | 100 | 100 | 1/2 |"
expect "| matmul_nt 4096x128x128 | 11.000 | 8.500 | 0.773 | 10.50 | 8.20 | 2/2 |"
expect "| attn 16x256x128 | 5.500 | 4.750 | 0.864 | 5.25 | 4.70 | 1/2 |"
# the sign test: 1 of 2 pairs is no evidence at all (p = 1), and 2 pairs cannot reach below 0.5
expect "The step: B faster in 1/2 pairs, sign test p = 1.000 (the chance of a split at least this lopsided from a change that does nothing; 2 pairs can reach p = 0.500 at best)."
for case in "6 6 0.031" "5 6 0.219" "0 6 0.031" "3 6 1.000" "9 10 0.021"; do
  set -- $case
  got=$($PY -c "import importlib.util as u; s=u.spec_from_file_location('m','bench/ab_profile.py'); m=u.module_from_spec(s); s.loader.exec_module(m); print(f'{m.sign_test($1, $2):.3f}')")
  [ "$got" = "$3" ] && ok "sign test $1/$2 = $3" || bad "sign test $1/$2: $got, expected $3"
done
# a row only B has: 0 in A's runs, listed because its share moved by more than a point
expect "| head 4096x8192x128 | 0.000 | 15.000 | — | 0.00 | 12.50 | 0/2 |"
# --top 1: only the costliest row by A's share, plus the rows whose share moved > 1 point
out=$($PY bench/ab_profile.py --top 1 --a "$tmp/a1" "$tmp/a2" --b "$tmp/b1" "$tmp/b2" 2>&1)
if grep -q '^| attn' <<<"$out"; then bad "--top 1 kept attn (share moved 0.55)"; else ok "--top 1 drops attn"; fi
expect "| matmul_nt 4096x128x128 | 11.000 | 8.500 | 0.773 | 10.50 | 8.20 | 2/2 |"

# the aggregator's errors name the file and what is wrong
check "unequal pairs" 1 "same number of A and B runs" $PY bench/ab_profile.py --a "$tmp/a1" "$tmp/a2" --b "$tmp/b1"
check "not a run folder" 1 "$tmp/nothing/profile.log" $PY bench/ab_profile.py --a "$tmp/nothing" --b "$tmp/b1"
fake_run "$tmp/bad" 100 10 "matmul_nt,4096x128x128,abc,10"
check "bad number" 1 "$tmp/bad/profile_shapes.csv:2: bad row" $PY bench/ab_profile.py --a "$tmp/bad" --b "$tmp/b1"
echo "no step line" >"$tmp/a1/profile.log"
check "unfinished profile" 1 "no 'step: ... ms'" $PY bench/ab_profile.py --a "$tmp/a1" --b "$tmp/b1"

# the driver's usage errors: exit 2, saying what is wrong
check "one side" 2 "exactly two builds" bash bench/ab_profile.sh .
check "bad revision" 2 "'no-such-rev' is not a git revision" bash bench/ab_profile.sh no-such-rev .
check "bad --pairs" 2 "--pairs must be a positive integer" bash bench/ab_profile.sh --pairs 0 . .
check "bad --env-b" 2 "take VAR=VALUE" bash bench/ab_profile.sh --env-b nonsense . .
check "unknown option" 2 "unknown option '--bogus'" bash bench/ab_profile.sh --bogus . .
# A built from a revision in a worktree, B's environment reaching B's runs only (a bad kernel
# spec fails B after A ran), and the worktree removed on the way out
if git rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
  before=$(git worktree list | wc -l)
  check "env reaches B" 2 "run 1 of B failed" bash bench/ab_profile.sh --pairs 1 --env-b FRONTIER_KERNELS=nosuch HEAD . -- --steps 2
  after=$(git worktree list | wc -l)
  [ "$before" = "$after" ] && ok "the revision's worktree is removed" || bad "worktrees: $before before, $after after"
else  # a copy without its git history: the working tree alone
  skip_part "not a git checkout, so no revision to build (the working tree is still compared below)"
  check "env reaches B" 2 "run 1 of B failed" bash bench/ab_profile.sh --pairs 1 --env-b FRONTIER_KERNELS=nosuch . . -- --steps 2
fi

# one real A/B: the working tree against itself, 1 pair of 2-step profiles, the table also to --out
out=$(bash bench/ab_profile.sh --pairs 1 --out "$tmp/ab.md" --keep "$tmp/keep" . . -- --steps 2 2>&1); rc=$?
echo "$out" | tail -20
[ $rc = 0 ] && ok "A/B run exits 0" || bad "A/B run exit $rc"
grep -q '^| \*\*whole step\*\* | [0-9.]* | [0-9.]* | [0-9.]* | 100 | 100 | [01]/1 |$' <<<"$out" && ok "whole-step row" || bad "no whole-step row"
grep -q '^| head_ce_dx 4096x8192x128 |' <<<"$out" && ok "the head's row" || bad "no head_ce_dx row"
grep -q '^- command: `frontier profile --steps 2`, 1 alternated pairs' <<<"$out" && ok "command recorded" || bad "command missing"
cmp -s <(sed -n '/^A\/B of training profiles/,$p' <<<"$out") "$tmp/ab.md" && ok "--out holds the table" || bad "--out differs from the printed table"
# --keep: the runs stay, and tabulate again to the same rows
again=$($PY bench/ab_profile.py --a "$tmp/keep/A_1" --b "$tmp/keep/B_1" 2>&1)
[ -n "$again" ] && grep -qxF -- "$(grep -m1 '^| head_ce_dx' <<<"$out")" <<<"$again" && ok "--keep's runs tabulate again" ||
  bad "--keep's runs do not give the same head_ce_dx row"
check "--keep not empty" 2 "is not empty" bash bench/ab_profile.sh --keep "$tmp/keep" . .
[ "$fails" -eq 0 ]
