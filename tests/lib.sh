# tests/lib.sh — helpers shared by the shell tests (sourced). Each test counts its failures in
# $fails and ends with `[ "$fails" -eq 0 ]`.
fails=0
# Hermetic: no plan uses the reference loss model shipped in plan/ unless its test names one.
export FRONTIER_PLAN_REFERENCE=none
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
# same_tensors A B: the tensors of two safetensors files are bit-identical (their metadata, which
# names the run folder, and train_state's wall-clock step_times may differ).
same_tensors() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys; sys.path.insert(0, "tests/util")
from safetensors_read import load
a, b = load(sys.argv[1])[0], load(sys.argv[2])[0]
diff = [k for k in a if k != "step_times" and (k not in b or a[k][1].tobytes() != b[k][1].tobytes())]
print("differ:", diff[:5]) if diff else None
sys.exit(0 if a.keys() == b.keys() and not diff else 1)
PY
}
# The default corpus, prepared (cached): its folder in $data; a test that cannot have it fails here.
prepare_data() {
  data=$("${F:-./frontier}" prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
  [ -d "$data" ] || { bad "prepare did not report a data folder"; exit 1; }
}
# seed_throughput FILE KEY: the planner's throughput model for layout KEY, merged into FILE, as
# calibration would measure it on a machine whose step time is its FLOPs at 600 GFLOP/s plus 2 ms
# (calibrating takes minutes; the planner's tests need a known machine).
seed_throughput() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, os, sys
path, key = sys.argv[1], sys.argv[2]
all = json.load(open(path)) if os.path.exists(path) else {}
coef = dict(gemm_flops=1/6e11, gemm_bytes=0, gemm_thin=0, attn_flops=1/6e11, elem_bytes=0, opt_flops=1/6e11, layer_calls=0,
            step=2e-3, allreduce_bytes=0)
all[key] = {"coef": coef, "n_points": 11, "rms_rel_err": 0.04, "max_rel_err": 0.08}
json.dump(all, open(path, "w"))
PY
}
# plan_data_key DATA: the key under which the planner files a prepared data folder's ladder, fit
# and worth (computed here independently of the planner: the tokenizer's id, the SHA-256 of the
# training and validation shards, the sequence length).
plan_data_key() {
  echo "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokenizer_id"][:16])' "$1/manifest.json")-$(cat "$1"/train_*.bin "$1"/val_*.bin | sha256sum | cut -c1-12)-T256"
}
