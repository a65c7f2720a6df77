#!/usr/bin/env bash
# tests/dist/test_mpirun_preflight.sh — where frontier starts mpirun itself (phase 2 over ranks,
# the planner's runs over ranks), as root without Open MPI's opt-in it stops before any work with
# a usage error that says how to opt in (exit 2), instead of a failed run whose log holds
# mpirun's refusal; a launcher of the user's is not checked, and when it fails the error quotes
# what its log says first inside a framed message (Open MPI's boxes), not the frame.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
prepare_data
noopt=(env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)

if [ "$(id -u)" = 0 ]; then
  out=$("${noopt[@]}" $F run --phase 2 --ranks 2 --budget 10s --data "$data" --cache "$tmp/c" --run-dir "$tmp/p2" 2>&1); rc=$?
  [ $rc = 2 ] && grep -q "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1" <<<"$out" && [ ! -e "$tmp/p2" ] && [ ! -e "$tmp/c/plan" ] \
    && ok "phase 2 over ranks as root without the opt-in: exit 2 before any work, saying how to opt in" \
    || { bad "phase 2 as root: exit $rc"; echo "$out" | tail -3; }
  out=$("${noopt[@]}" $F plan --budget 2m --ranks 2 --data "$data" --cache "$tmp/c" --out "$tmp/p.json" 2>&1); rc=$?
  [ $rc = 2 ] && grep -q "OMPI_ALLOW_RUN_AS_ROOT=1" <<<"$out" && [ ! -e "$tmp/c/plan" ] \
    && ok "plan --ranks 2 as root without the opt-in: exit 2 before its calibration" \
    || { bad "plan --ranks 2 as root: exit $rc"; echo "$out" | tail -3; }
else
  skip_part "not root: mpirun's refusal of root does not apply"
fi

# a launcher of the user's is theirs: not checked; its failure quotes the framed message's lead
cat > "$tmp/box.sh" <<'SH'
#!/bin/sh
echo "--------------------------------------------------------------------------" >&2
echo "mpirun has detected an attempt to run as root." >&2
echo "" >&2
echo "We reiterate our advice against doing so - please proceed at your own risk." >&2
echo "--------------------------------------------------------------------------" >&2
exit 1
SH
out=$("${noopt[@]}" $F plan --budget 2m --ranks 2 --launcher "/bin/sh $tmp/box.sh {cmd}" --data "$data" --cache "$tmp/c2" \
      --out "$tmp/p.json" 2>&1); rc=$?
[ $rc = 1 ] && grep -q "failed: exit 1: mpirun has detected an attempt to run as root" <<<"$out" \
  && ok "a user's failing launcher: not checked; the error quotes the framed message's lead line" \
  || { bad "failing launcher: exit $rc"; echo "$out" | grep -i "error" | head -3; }
echo "mpirun preflight: $fails failed"
[ "$fails" -eq 0 ]
