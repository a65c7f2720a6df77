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
