# tests/lib.sh — helpers shared by the shell tests (sourced). Each test counts its failures in
# $fails and ends with `[ "$fails" -eq 0 ]`.
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# check DESCRIPTION EXIT_CODE TEXT COMMAND...: the command exits with EXIT_CODE and its output
# (stdout + stderr) contains TEXT (skipped when TEXT is "").
check() {
  local what=$1 want_rc=$2 want_text=$3; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$want_rc" ]; then echo "FAIL: $what: exit $rc, expected $want_rc"; echo "$out" | head -8; fails=$((fails+1)); return; fi
  if [ -n "$want_text" ] && ! grep -qF -- "$want_text" <<<"$out"; then
    echo "FAIL: $what: output lacks '$want_text'"; echo "$out" | head -8; fails=$((fails+1)); return; fi
  echo "ok: $what"
}
# A test that cannot run its subject here says why and exits 77; tests/run.sh reports it as SKIP
# (a failure under CI=true, where scripts/setup.sh has installed everything).
skip_test() { echo "SKIP: $*"; exit 77; }
# The same when this CPU lacks an instruction set: still SKIP under CI=true, since no setup can
# install hardware.
skip_hardware() { echo "SKIP hardware: $*"; exit 77; }
# A part of a test that cannot run here: say so (tests/run.sh shows the reason next to PASS).
skip_part() { echo "SKIP: $*"; }
skip_part_hardware() { echo "SKIP hardware: $*"; }
