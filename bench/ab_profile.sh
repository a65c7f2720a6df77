#!/usr/bin/env bash
# bench/ab_profile.sh — is B faster than A in training? Alternated `frontier profile` runs of two
# builds (or two settings), compared per (op, shape) and for the whole step.
#
# usage: bench/ab_profile.sh [--pairs N] [--top N] [--env-a VAR=VALUE]... [--env-b VAR=VALUE]...
#                            [--out FILE] [--keep DIR] A B [-- PROFILE_ARGS...]
#   A, B          each a git revision (built in a temporary worktree) or "." (the working tree's
#                 ./frontier, built by make first)
#   --pairs N     runs of each (default 6: fewer cannot reach p < 0.05 in the sign test); pair i
#                 runs A then B when i is odd, B then A when even
#   --env-a/-b    environment for A's / B's runs only (FRONTIER_KERNELS=..., OMP_NUM_THREADS=...),
#                 so one build can be compared with itself under two settings
#   --top N       rows for the N costliest (op, shape) pairs (default 12); rows whose share moved
#                 by more than a point are added
#   --out FILE    also write the table, with date, machine and command, to FILE
#   --keep DIR    keep the runs' profile_shapes.csv and logs in DIR (A_1, B_1, ...), to tabulate
#                 again with bench/ab_profile.py --top N --a DIR/A_* --b DIR/B_*
#   PROFILE_ARGS  `frontier profile`'s options, the same for both (default: --steps 30, cpu preset)
#
# Why: on a shared 2-vCPU machine the speed drifts ±10-20% between minutes, so one run of each,
# or a microbenchmark, says little (docs/perf.md). Alternated pairs see the same spells; the
# table gives per-row medians, the ratio, the median share of the step (steadier than times,
# since A's and B's shares in one spell are measured against their own step), and in how many
# pairs B was faster, with the sign test's p-value for the step. Examples:
#   bench/ab_profile.sh HEAD~1 .                          # the last commit against the working tree
#   bench/ab_profile.sh . . --env-b FRONTIER_KERNELS=avx512,attention_bwd=ref
#   bench/ab_profile.sh main . -- --preset kit-d10 --seq-len 1024 --batch-tokens 4096 --device-batch 2 --steps 4
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

usage() { sed -n '4,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench/ab_profile.sh: $*" >&2; exit 2; }

PAIRS=6 TOP=12 OUT= KEEP= ENV_A=() ENV_B=() SIDES=() PROFILE_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) [ $# -ge 2 ] || usage; PAIRS=$2; shift 2 ;;
    --top) [ $# -ge 2 ] || usage; TOP=$2; shift 2 ;;
    --env-a) [ $# -ge 2 ] || usage; ENV_A+=("$2"); shift 2 ;;
    --env-b) [ $# -ge 2 ] || usage; ENV_B+=("$2"); shift 2 ;;
    --out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
    --keep) [ $# -ge 2 ] || usage; KEEP=$2; shift 2 ;;
    --help|-h) usage ;;
    --) shift; PROFILE_ARGS=("$@"); break ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) SIDES+=("$1"); shift ;;
  esac
done
[ ${#SIDES[@]} -eq 2 ] || die "give exactly two builds to compare, A and B (a git revision or '.'), got ${#SIDES[@]}"
[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || die "--pairs must be a positive integer (got '$PAIRS')"
[[ $TOP =~ ^[1-9][0-9]*$ ]] || die "--top must be a positive integer (got '$TOP')"
for e in "${ENV_A[@]}" "${ENV_B[@]}"; do
  [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env-a/--env-b take VAR=VALUE (got '$e')"
done
[ ${#PROFILE_ARGS[@]} -gt 0 ] || PROFILE_ARGS=(--steps 30)
if [ -n "$KEEP" ]; then
  mkdir -p "$KEEP" || die "cannot create --keep '$KEEP'"
  [ -z "$(ls -A "$KEEP")" ] || die "--keep '$KEEP' is not empty (runs from another comparison would mix in)"
fi

tmp=$(mktemp -d)
worktrees=()
cleanup() {
  for w in "${worktrees[@]}"; do git worktree remove --force "$w" >/dev/null 2>&1 || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# build SIDE NAME: BIN_NAME = the frontier binary for SIDE ("." or a revision). Not in a
# subshell: the worktree list must reach cleanup.
build() {
  local side=$1 name=$2
  if [ "$side" = . ]; then
    make -s frontier >"$tmp/build_$name.log" 2>&1 ||
      { tail -20 "$tmp/build_$name.log" >&2; die "building the working tree failed"; }
    printf -v "BIN_$name" '%s' "$PWD/frontier"
    return
  fi
  local rev
  rev=$(git rev-parse --verify --quiet "$side^{commit}") ||
    die "'$side' is not a git revision (nor '.', the working tree)"
  local wt=$tmp/wt_$name
  git worktree add --detach "$wt" "$rev" >/dev/null 2>&1 || die "git worktree add for '$side' failed"
  worktrees+=("$wt")
  make -s -C "$wt" -j"$(nproc)" frontier >"$tmp/build_$name.log" 2>&1 ||
    { tail -20 "$tmp/build_$name.log" >&2; die "building '$side' ($rev) failed"; }
  printf -v "BIN_$name" '%s' "$wt/frontier"
}

describe() {  # SIDE ENV... -> "rev abc1234" or "working tree (abc1234 + changes)", with the env
  local side=$1; shift
  local what
  if [ "$side" = . ]; then
    local head
    if head=$(git rev-parse --short HEAD 2>/dev/null); then
      what="working tree ($head$(git diff --quiet HEAD -- 2>/dev/null || echo ' + uncommitted changes'))"
    else
      what="working tree (not a git checkout)"
    fi
  else
    what="$side ($(git rev-parse --short "$side^{commit}"))"
  fi
  [ $# -gt 0 ] && what="$what with $*"
  echo "$what"
}

build "${SIDES[0]}" A
build "${SIDES[1]}" B
DESC_A=$(describe "${SIDES[0]}" "${ENV_A[@]}")
DESC_B=$(describe "${SIDES[1]}" "${ENV_B[@]}")

# run NAME I: one profile of side NAME into $tmp/runs/NAME_I (profile.log beside its CSVs; the
# checkpoints and the trace, which the table does not read, deleted at once: kit-d10's are ~1 GB)
run() {
  local name=$1 i=$2 bin env
  if [ "$name" = a ]; then bin=$BIN_A; env=("${ENV_A[@]}"); else bin=$BIN_B; env=("${ENV_B[@]}"); fi
  local dir=$tmp/runs/${name}_$i
  mkdir -p "$dir"
  if ! env "${env[@]}" "$bin" profile "${PROFILE_ARGS[@]}" --run-dir "$dir" >"$dir/profile.log" 2>&1; then
    tail -20 "$dir/profile.log" >&2
    die "run $i of ${name^^} failed: $bin profile ${PROFILE_ARGS[*]}"
  fi
  rm -f "$dir"/*.safetensors "$dir/trace.json"
  printf '  pair %d %s: %s\n' "$i" "${name^^}" "$(grep -m1 '^step:' "$dir/profile.log")" >&2
}

echo "A: $DESC_A" >&2
echo "B: $DESC_B" >&2
for i in $(seq 1 "$PAIRS"); do
  if [ $((i % 2)) = 1 ]; then run a "$i"; run b "$i"; else run b "$i"; run a "$i"; fi
done

runs() { for i in $(seq 1 "$PAIRS"); do echo "$tmp/runs/${1}_$i"; done; }
table=$tmp/table.md
{
  echo "A/B of training profiles, $(bench_machine)"
  echo
  echo "- A: $DESC_A"
  echo "- B: $DESC_B"
  echo "- command: \`frontier profile ${PROFILE_ARGS[*]}\`, $PAIRS alternated pairs (\`bench/ab_profile.sh\`)"
  echo
  # shellcheck disable=SC2046
  /usr/bin/python3 bench/ab_profile.py --top "$TOP" --a $(runs a) --b $(runs b)
} >"$table"
cat "$table"
if [ -n "$KEEP" ]; then
  for d in "$tmp"/runs/*; do cp -r "$d" "$KEEP/$(basename "$d" | tr ab AB)"; done
fi
if [ -n "$OUT" ]; then
  cp "$table" "$OUT.tmp.$$" && mv "$OUT.tmp.$$" "$OUT" || die "cannot write --out '$OUT'"
fi
