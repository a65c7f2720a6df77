#!/usr/bin/env bash
# tests/train/test_average.sh — the weight average (--ema-steps, --ema-start, --ema-blend) end to
# end on a tiny model with one thread: the average a run saves (model_avg.safetensors) equals an
# EMA recomputed in numpy from a checkpoint of every step, and its state tensors in the last
# checkpoint are the EMA before the blend; a run stopped halfway and resumed ends with the same
# weights, state and average, bit for bit; `frontier eval` of the run (the average), of the
# average's file and of --weights raw give the summary's val_bpb and val_bpb_raw; sample and CORE
# read it; bad combinations are refused; without an average nothing changes.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
[ -x "$F" ] || { echo "FAIL: $F not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
STEPS=12
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
      --eval-tokens 3000 --quiet --threads 1 --steps $STEPS)
EMA=(--ema-steps 3 --ema-start 0.25 --ema-blend 0.3)
bpb() { sed -n "s/.*\"$2\":[[:space:]]*\([0-9.e+-]*\).*/\1/p" "$1/summary.json"; }
evalv() { $F eval --eval-tokens 3000 "$@" 2>/dev/null | tail -1 | sed 's/.*"val_bpb":\([0-9.e+-]*\).*/\1/'; }

# 1. a run with a checkpoint every step, and the same run stopped halfway and resumed
$F train "${TINY[@]}" "${EMA[@]}" --save-every 1steps --keep-checkpoints 100 --run-dir "$tmp/a" > "$tmp/a.out" 2>&1 \
  || { bad "train with an average"; tail -5 "$tmp/a.out"; }
$F train "${TINY[@]}" "${EMA[@]}" --stop-after 6 --run-dir "$tmp/b" > /dev/null 2>&1 || bad "train --stop-after 6"
[ ! -e "$tmp/b/model_avg.safetensors" ] && ok "an unfinished run has no average" || bad "an unfinished run wrote model_avg"
$F train --resume "$tmp/b" --stop-after 0 --threads 1 --quiet > /dev/null 2>&1 || bad "resume"
[ -s "$tmp/a/model_avg.safetensors" ] && ok "model_avg.safetensors written" || bad "no model_avg.safetensors"
same_tensors "$tmp/a/model.safetensors" "$tmp/b/model.safetensors" && ok "resumed weights bit-identical" || bad "resumed weights differ"
same_tensors "$tmp/a/train_state.safetensors" "$tmp/b/train_state.safetensors" && ok "resumed state (the EMA in it) bit-identical" \
  || bad "resumed optimizer state differs"
same_tensors "$tmp/a/model_avg.safetensors" "$tmp/b/model_avg.safetensors" && ok "resumed average bit-identical" || bad "resumed average differs"

# 2. the average against numpy: ema_1 = θ_1, ema_s = θ_s while the step began before ema-start,
# else d·ema + (1 − d)·θ_s with d = exp(−1/3); the saved model is 0.3·θ + 0.7·ema
/usr/bin/python3 - "$tmp/a" $STEPS 3 0.25 0.3 <<'PY' && ok "average = EMA recomputed from every step's checkpoint" || bad "average differs from numpy's EMA"
import math, sys; sys.path.insert(0, "tests/util")
import numpy as np
from safetensors_read import load
run, steps, n, start, blend = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
d = math.exp(-1 / n)
ema = None
for s in range(1, steps + 1):
    w = {k: v[1].astype(np.float64) for k, v in load(f"{run}/checkpoints/step-{s:08d}/model.safetensors")[0].items()}
    if ema is None or s <= 1 or (s - 1) / steps < start:
        ema = dict(w)
    else:
        ema = {k: d * ema[k] + (1 - d) * w[k] for k in w}
avg = load(f"{run}/model_avg.safetensors")[0]
state = load(f"{run}/train_state.safetensors")[0]
worst = 0.0
for k, e in ema.items():
    want = blend * w[k] + (1 - blend) * e
    scale = max(1e-3, float(np.abs(want).max()))
    worst = max(worst, float(np.abs(avg[k][1] - want).max()) / scale,
                float(np.abs(state[k + ".ema"][1] - e).max()) / max(1e-3, float(np.abs(e).max())))
    if np.array_equal(want, w[k]):
        sys.exit(print(f"{k}: the average equals the weights"))
print(f"worst relative difference {worst:.2e} over {len(ema)} tensors")
sys.exit(0 if worst < 2e-6 else 1)
PY

# 3. what eval reads: the run = its average = the summary's val_bpb; --weights raw = val_bpb_raw
s=$(bpb "$tmp/a" val_bpb); sr=$(bpb "$tmp/a" val_bpb_raw)
v=$(evalv --ckpt "$tmp/a"); va=$(evalv --ckpt "$tmp/a/model_avg.safetensors"); vr=$(evalv --ckpt "$tmp/a" --weights raw)
[ -n "$s" ] && [ "$v" = "$s" ] && [ "$va" = "$s" ] && ok "eval of the run = eval of model_avg.safetensors = summary ($s)" \
  || bad "eval $v, of the file $va, summary $s"
[ -n "$sr" ] && [ "$vr" = "$sr" ] && [ "$sr" != "$s" ] && ok "eval --weights raw = summary val_bpb_raw ($sr)" || bad "raw eval $vr vs summary $sr (avg $s)"
$F sample --ckpt "$tmp/a" --weights avg --prompt "The" -n 8 --seed 1 > "$tmp/a.sample" 2>&1 && [ -s "$tmp/a.sample" ] \
  && ok "sample --weights avg" || bad "sample --weights avg: $(tail -2 "$tmp/a.sample")"
$F eval --ckpt "$tmp/a" --core --tasks copa --max-per-task 4 > "$tmp/a.core" 2>&1 \
  && grep -q '"model":[[:space:]]*"[^"]*model_avg.safetensors"' "$tmp/a/core.json" && ok "CORE scores the average and says so" \
  || bad "CORE on the average: $(tail -2 "$tmp/a.core")"

# 4. without an average: no file, no val_bpb_raw, no .ema state; --weights avg is refused
$F train "${TINY[@]}" --run-dir "$tmp/c" > /dev/null 2>&1 || bad "train without an average"
[ ! -e "$tmp/c/model_avg.safetensors" ] && ! grep -q val_bpb_raw "$tmp/c/summary.json" \
  && ! grep -q '\.ema"' <(head -c 20000 "$tmp/c/train_state.safetensors" | tr -d '\0') && ok "no average: nothing of it written" \
  || bad "a run without --ema-steps wrote parts of an average"
check "--weights avg without one" 2 "has no weight average" $F eval --ckpt "$tmp/c" --weights avg
check "--weights garbage" 2 "--weights must be" $F eval --ckpt "$tmp/c" --weights mean
check "steps and seconds" 2 "give one" $F train "${TINY[@]}" --ema-steps 3 --ema-seconds 2 --run-dir "$tmp/d"
[ "$fails" -eq 0 ]
