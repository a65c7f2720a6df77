#!/usr/bin/env bash
# tests/train/test_repeat.sh — training when the data repeats, end to end: the data order
# (--data-order, --epoch-order, --crop-rest) and the regularisers (--dropout, --wd-per-epoch), on
# a tiny model with one thread, training on a fixed random sample of documents up to 10,000
# tokens, read ~3 times: for each order, and with dropout and the epoch-scaled weight decay on, a
# run stopped past its first epoch and resumed ends with the same weights and optimizer state, bit for bit, as the run that never stopped; the orders
# train differently from each other, and so do dropout and the decay; dropout's masks do not
# depend on the micro-batch split; config.json and the summary
# say what ran; a resume cannot change the order; fixed rows with --crop-rest drop is refused.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
[ -x "$F" ] || { echo "FAIL: $F not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
      --eval-tokens 2000 --quiet --threads 1 --steps 60 --train-tokens 10000)
# a top-level number of a JSON file (summary.json's "sources" repeat some names per source)
jnum() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }

ORDERS=("docs fresh keep" "rows fresh keep" "rows same keep" "docs same drop" "docs fresh keep --dropout 0.2 --wd-per-epoch 3")
for o in "${ORDERS[@]}"; do
  read -r d e c extra <<<"$o"; name="$d-$e-$c${extra:+-reg}"
  ARGS=(--data-order "$d" --epoch-order "$e" --crop-rest "$c" ${extra:-})
  $F train "${TINY[@]}" "${ARGS[@]}" --run-dir "$tmp/$name-a" > "$tmp/$name-a.out" 2>&1 \
    || { bad "$name: train"; tail -5 "$tmp/$name-a.out"; continue; }
  $F train "${TINY[@]}" "${ARGS[@]}" --stop-after 37 --run-dir "$tmp/$name-b" > /dev/null 2>&1 || bad "$name: --stop-after 37"
  $F train --resume "$tmp/$name-b" --stop-after 0 --threads 1 --quiet > "$tmp/$name-b.out" 2>&1 \
    || { bad "$name: resume"; tail -5 "$tmp/$name-b.out"; }
  same_tensors "$tmp/$name-a/model.safetensors" "$tmp/$name-b/model.safetensors" \
    && same_tensors "$tmp/$name-a/train_state.safetensors" "$tmp/$name-b/train_state.safetensors" \
    && ok "$name: stopped past its first epoch and resumed = uninterrupted, bit for bit" || bad "$name: the resumed run differs"
  ep=$(jnum "$tmp/$name-a/summary.json" epochs)
  /usr/bin/python3 -c "import sys; sys.exit(not 2.5 < float('$ep') < 4)" 2>/dev/null \
    && ok "$name: the summary counts $ep epochs" || bad "$name: epochs '$ep', expected 2.5 to 4"
  grep -q "\"data-order\":[[:space:]]*\"$d\"" "$tmp/$name-a/config.json" \
    && grep -q "\"epoch-order\":[[:space:]]*\"$e\"" "$tmp/$name-a/config.json" \
    && grep -q "\"crop-rest\":[[:space:]]*\"$c\"" "$tmp/$name-a/config.json" && ok "$name: config.json says the order" \
    || bad "$name: config.json lacks the order"
done
# each setting changes what is trained (pairs that differ in exactly one of them)
differs() { ! same_tensors "$tmp/$1-a/model.safetensors" "$tmp/$2-a/model.safetensors" > /dev/null; }
# --train-subset: the sample and the file-order prefix are other documents, the same for every seed
$F train "${TINY[@]}" --steps 2 --train-subset first --run-dir "$tmp/first" > /dev/null 2>&1 || bad "--train-subset first: train"
$F train "${TINY[@]}" --steps 2 --seed 7 --run-dir "$tmp/sample7" > /dev/null 2>&1 || bad "--seed 7: train"
u_sample=$(jnum "$tmp/docs-fresh-keep-a/summary.json" unique_tokens); u_first=$(jnum "$tmp/first/summary.json" unique_tokens)
[ -n "$u_sample" ] && [ -n "$u_first" ] && [ "$u_sample" != "$u_first" ] && [ "$(jnum "$tmp/sample7/summary.json" unique_tokens)" = "$u_sample" ] \
  && grep -q '"train-subset":[[:space:]]*"first"' "$tmp/first/config.json" \
  && ok "--train-subset: sample ($u_sample tokens, any seed) and first ($u_first) differ; config.json says which" \
  || bad "--train-subset: sample '$u_sample', first '$u_first', seed 7 '$(jnum "$tmp/sample7/summary.json" unique_tokens)'"
differs docs-fresh-keep rows-fresh-keep && ok "docs and rows train differently" || bad "--data-order changed nothing"
differs rows-fresh-keep rows-same-keep && ok "a fresh and the same epoch order train differently" \
  || bad "--epoch-order changed nothing past the first epoch"
differs docs-fresh-keep docs-fresh-keep-reg && ok "dropout and the epoch-scaled decay change the training" \
  || bad "--dropout / --wd-per-epoch changed nothing"
/usr/bin/python3 - "$tmp/docs-fresh-keep-a" "$tmp/docs-fresh-keep-reg-a" <<'PY' && ok "--wd-per-epoch: Muon's decay x 1 + 3 (epochs - 1) once the data repeats" || bad "--wd-per-epoch's factors"
import json, sys
rows = [[json.loads(l) for l in open(f"{d}/metrics.jsonl")] for d in sys.argv[1:]]
unique = json.load(open(f"{sys.argv[1]}/summary.json"))["unique_tokens"]
worst = 0
# the loader counts the tokens it places: T+1 = 65 per row of 64 (a row's last token starts the next)
for base, reg in zip(*rows):
    ratio, epochs = reg["muon_wd"] / base["muon_wd"] if base["muon_wd"] else 1, (base["tokens"] - 512) * 65 / 64 / unique
    want = 1 + 3 * max(0.0, epochs - 1)
    if epochs < 0.95 and ratio != 1: sys.exit(print(f"step {base['step']}: factor {ratio} in the first epoch"))
    if base["muon_wd"] > 1e-3: worst = max(worst, abs(ratio - want) / want)
print(f"worst relative difference from 1 + 3 (epochs - 1): {worst:.1e}")
sys.exit(0 if worst < 1e-4 else 1)
PY
grep -q '"dropout":[[:space:]]*0.2' "$tmp/docs-fresh-keep-reg-a/config.json" && ok "config.json says --dropout" \
  || bad "config.json lacks dropout"
$F train "${TINY[@]}" --steps 20 --run-dir "$tmp/f20" > /dev/null 2>&1 || bad "20-step run, keep"
$F train "${TINY[@]}" --crop-rest drop --steps 20 --run-dir "$tmp/d20" > /dev/null 2>&1 || bad "20-step run, drop"
! same_tensors "$tmp/d20/model.safetensors" "$tmp/f20/model.safetensors" > /dev/null \
  && ok "--crop-rest drop trains differently from keep" || bad "--crop-rest changed nothing"

# dropout's mask follows a row, not the micro-batch: one micro-batch of 4 rows and two of 2 train
# the same step (the losses differ only by the order of their sums; other masks move them ~1e-2)
for b in 4 2; do
  $F train "${TINY[@]}" --dropout 0.2 --device-batch $b --steps 8 --run-dir "$tmp/mb$b" > /dev/null 2>&1 || bad "dropout, --device-batch $b"
done
/usr/bin/python3 - "$tmp/mb4" "$tmp/mb2" <<'PY' && ok "dropout: the same masks for 1 x 4 and 2 x 2 rows per step" || bad "dropout's mask depends on the micro-batch split"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(f"{d}/metrics.jsonl")] for d in sys.argv[1:])
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
print(f"8 steps, worst relative loss difference {worst:.1e}")
sys.exit(0 if len(a) == 8 and worst < 1e-4 else 1)
PY
check "a resume cannot change the data order" 2 "--data-order" \
  $F train --resume "$tmp/docs-fresh-keep-b" --data-order rows --steps 70 --threads 1 --quiet
check "fixed rows with --crop-rest drop" 2 "--crop-rest drop applies to --data-order docs" \
  $F train "${TINY[@]}" --data-order rows --crop-rest drop --run-dir "$tmp/x"
[ "$fails" -eq 0 ]
