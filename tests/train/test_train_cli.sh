#!/usr/bin/env bash
# tests/train/test_train_cli.sh — training end to end through the CLI on the prepared corpus with a
# tiny model: the run folder; bit-exact resume (20 steps in one go == 10, save, resume, 10, with
# 1 thread); val_bpb independent of the eval batch and the thread count; no page faults in
# steady-state steps (default preset); and bad input (budget, batch, config/checkpoint
# mismatches, corrupt checkpoints) giving clear errors without touching existing files.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
expect_fail() {  # description, expected text, command...
  local what=$1 text=$2; shift 2
  local out rc; out=$("$@" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then bad "$what: succeeded"; elif ! grep -qF -- "$text" <<<"$out"; then bad "$what: no '$text' in: $(tail -2 <<<"$out")"; else ok "$what (exit $rc)"; fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
      --eval-tokens 3000 --quiet)

# 1. a run folder with everything in it
$F train "${TINY[@]}" --steps 20 --run-dir "$tmp/a" --threads 1 > "$tmp/a.out" 2>&1 || { bad "train"; cat "$tmp/a.out"; }
for f in config.json metrics.jsonl model.safetensors train_state.safetensors summary.json tokenizer/tokenizer.json; do
  [ -s "$tmp/a/$f" ] || bad "run folder lacks $f"
done
[ "$(wc -l < "$tmp/a/metrics.jsonl")" = 20 ] && ok "20 metrics lines" || bad "metrics.jsonl has $(wc -l < "$tmp/a/metrics.jsonl") lines"
grep -q '"val_bpb"' "$tmp/a/summary.json" && ok "summary has val_bpb" || bad "summary lacks val_bpb"
grep -q '^val_bpb' "$tmp/a.out" && ok "summary block printed" || bad "no summary block"
# the commit is the build's (the Makefile's header), whatever the working directory: run outside the checkout
want=$(sed -n 's/^#define FRONTIER_GIT_COMMIT "\(.*\)"$/\1/p' build/release/git_commit.h)
root=$PWD data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
(cd "$tmp" && "$root/$F" train "${TINY[@]}" --steps 1 --data "$root/$data" --run-dir "$tmp/root" --threads 1 > "$tmp/root.out" 2>&1) \
  || { bad "train outside the checkout"; tail -3 "$tmp/root.out"; }
got=$(sed -n 's/.*"git_commit":[[:space:]]*"\([^"]*\)".*/\1/p' "$tmp/root/summary.json" 2>/dev/null)
[ -n "$want" ] && [ "$want" != unknown ] && [ "$got" = "$want" ] && [ "${got%+dirty}" = "$(git rev-parse --short=12 HEAD)" ] \
  && ok "summary.json names the build's commit ($got), run outside the checkout" || bad "git_commit '$got', the build's '$want'"
! grep -q "budget buys only" "$tmp/a.out" && ok "no budget warning with --steps" || bad "budget warning with --steps"
# a budget that buys only a few steps is said early, with what to change (a 1 ms budget: any step is longer)
$F train "${TINY[@]}" --budget 0.001 --eval-tokens 512 --run-dir "$tmp/few" > "$tmp/few.out" 2>&1 || bad "train --budget 0.001"
if grep -q "budget buys only ~1 step, after 2 warm-up steps" "$tmp/few.out" && grep -q -- "lower --batch-tokens" "$tmp/few.out"; then
  ok "a budget buying ~1 step is warned about"
else bad "no few-steps warning: $(grep -i warn "$tmp/few.out")"; fi

# 2. resume is bit-exact: 10 steps, stop, resume to 20 == 20 in one go
$F train "${TINY[@]}" --steps 20 --stop-after 10 --run-dir "$tmp/b" --threads 1 > /dev/null 2>&1 || bad "train --stop-after"
$F train --resume "$tmp/b" --threads 1 --quiet > /dev/null 2>&1 || bad "resume"  # goes on past the saved --stop-after
if [ -s "$tmp/a/metrics.jsonl" ] && [ -s "$tmp/b/metrics.jsonl" ] && cmp -s <(sed 's/.*"loss":\([^,]*\),.*/\1/' "$tmp/a/metrics.jsonl") <(sed 's/.*"loss":\([^,]*\),.*/\1/' "$tmp/b/metrics.jsonl"); then
  ok "20 steps == 10 + resume + 10 (all losses identical)"
else
  bad "resumed losses differ"; paste <(cut -c1-60 "$tmp/a/metrics.jsonl") <(cut -c1-60 "$tmp/b/metrics.jsonl") | head -20
fi
same_tensors "$tmp/a/model.safetensors" "$tmp/b/model.safetensors" && ok "final weights bit-identical" || bad "final weights differ"
same_tensors "$tmp/a/train_state.safetensors" "$tmp/b/train_state.safetensors" && ok "final optimizer state bit-identical" || bad "final optimizer state differs"

# 3. val_bpb does not depend on the eval batch or the thread count
v() { $F eval --ckpt "$tmp/a" --eval-tokens 3000 "$@" 2>/dev/null | tail -1 | sed 's/.*"val_bpb":\([0-9.e+-]*\).*/\1/'; }
v1=$(v --batch 1 --threads 1); v2=$(v --batch 7 --threads 2); v3=$(v --batch 4 --threads 2)
s=$(sed -n 's/.*"val_bpb":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/a/summary.json")
awk -v a="$v1" -v b="$v2" -v c="$v3" -v s="$s" 'BEGIN { d = (a > b ? a - b : b - a) / a; e = (a > c ? a - c : c - a) / a; f = (a > s ? a - s : s - a) / a;
  exit !(a > 0 && d <= 1e-6 && e <= 1e-6 && f <= 1e-6) }' && ok "val_bpb $v1 = $v2 = $v3 = summary $s" || bad "val_bpb varies: $v1 $v2 $v3 summary $s"

# 3a. sliding-window attention (--window-pattern): recorded in config.json, changes what is
# trained, resumes bit-exactly, and `frontier eval` scores the checkpoint with the same windows
W=(--depth 2 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
   --eval-tokens 3000 --quiet --threads 1 --steps 8)
$F train "${W[@]}" --window-pattern SL --window 16 --run-dir "$tmp/w1" > /dev/null 2>&1 || bad "train --window-pattern SL"
$F train "${W[@]}" --window-pattern SL --window 16 --stop-after 4 --run-dir "$tmp/w2" > /dev/null 2>&1 || bad "train windowed --stop-after"
$F train --resume "$tmp/w2" --stop-after 0 --threads 1 --quiet > /dev/null 2>&1 || bad "resume windowed"
$F train "${W[@]}" --run-dir "$tmp/w0" > /dev/null 2>&1 || bad "train full attention"
losses() { sed 's/.*"loss":\([^,]*\),.*/\1/' "$1/metrics.jsonl"; }
grep -q '"window-pattern":[[:space:]]*"SL"' "$tmp/w1/config.json" && grep -q '"window":[[:space:]]*16' "$tmp/w1/config.json" \
  && ok "config.json records the window" || bad "config.json lacks window-pattern SL / window 16"
cmp -s <(losses "$tmp/w1") <(losses "$tmp/w2") && ok "windowed: 8 steps == 4 + resume + 4" || bad "windowed resume differs"
cmp -s <(losses "$tmp/w1") <(losses "$tmp/w0") && bad "the window changed nothing" || ok "the window changes the losses"
vw=$($F eval --ckpt "$tmp/w1" --eval-tokens 3000 2>/dev/null | tail -1 | sed 's/.*"val_bpb":\([0-9.e+-]*\).*/\1/')
sw=$(sed -n 's/.*"val_bpb":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/w1/summary.json")
[ -n "$vw" ] && [ "$vw" = "$sw" ] && ok "eval of the windowed checkpoint: val_bpb $vw = summary" || bad "windowed eval $vw vs summary $sw"

# 3b. every recipe feature on (lambdas, backout, q/k scale, value embeddings, smear, bigram table):
# recorded in config.json, resumes bit-exactly, `eval` reproduces the summary's val_bpb, and
# `sample` and CORE (scored through the prefix cache) run on the checkpoint
RC=(--depth 3 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
    --eval-tokens 3000 --quiet --threads 1 --steps 8 --lambdas 1 --backout 1 --qk-scale 1.2 --value-embeds 1
    --smear 1 --bigram 1021)
$F train "${RC[@]}" --run-dir "$tmp/r1" > /dev/null 2>&1 || bad "train, recipe on"
$F train "${RC[@]}" --stop-after 4 --run-dir "$tmp/r2" > /dev/null 2>&1 || bad "train, recipe on, --stop-after"
$F train --resume "$tmp/r2" --stop-after 0 --threads 1 --quiet > /dev/null 2>&1 || bad "resume, recipe on"
for k in '"value-embeds":[[:space:]]*1' '"smear":[[:space:]]*1' '"bigram":[[:space:]]*1021'; do
  grep -q "$k" "$tmp/r1/config.json" || bad "config.json lacks $k"
done
cmp -s <(losses "$tmp/r1") <(losses "$tmp/r2") && ok "recipe on: 8 steps == 4 + resume + 4" || bad "recipe resume differs"
same_tensors "$tmp/r1/model.safetensors" "$tmp/r2/model.safetensors" && ok "recipe on: resumed weights bit-identical" || bad "recipe on: resumed weights differ"
vr=$($F eval --ckpt "$tmp/r1" --eval-tokens 3000 2>/dev/null | tail -1 | sed 's/.*"val_bpb":\([0-9.e+-]*\).*/\1/')
sr=$(sed -n 's/.*"val_bpb":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/r1/summary.json")
[ -n "$vr" ] && [ "$vr" = "$sr" ] && ok "eval of the recipe checkpoint: val_bpb $vr = summary" || bad "recipe eval $vr vs summary $sr"
$F sample --ckpt "$tmp/r1" --prompt "The" -n 8 --seed 1 > "$tmp/r1.sample" 2>&1 && [ -s "$tmp/r1.sample" ] \
  && ok "sample from the recipe checkpoint" || bad "sample, recipe on: $(tail -2 "$tmp/r1.sample")"
$F eval --ckpt "$tmp/r1" --core --tasks hellaswag_zeroshot,copa --max-per-task 8 > "$tmp/r1.core" 2>&1 \
  && grep -q '"core"' "$tmp/r1/core.json" && ok "CORE subset on the recipe checkpoint" || bad "CORE, recipe on: $(tail -2 "$tmp/r1.core")"

# 3c. steady-state training allocates nothing: the timed steps of the default preset take no page
# faults (summary.json's page_faults_per_step; each costs ~10 us on a VM). The fp32 attention
# once allocated its packed K and V per call: ~2,000 faults a step (docs/profiling.md).
for prec in fp32 auto; do
  $F train --precision $prec --steps 12 --stop-after 12 --run-dir "$tmp/pf_$prec" --quiet > /dev/null 2>&1 || bad "train --precision $prec"
  pf=$(sed -n 's/.*"page_faults_per_step":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$tmp/pf_$prec/summary.json")
  if [ -n "$pf" ] && awk -v x="$pf" 'BEGIN { exit !(x < 50) }'; then ok "precision $prec: $pf page faults per step"
  else bad "precision $prec: page faults per step '$pf' (want < 50)"; fi
done

# 4. bad input: clear errors, exit 1 or 2, nothing overwritten
cp -r "$tmp/a" "$tmp/keep"
expect_fail "budget <= 0"        "--budget"            $F train "${TINY[@]}" --budget 0 --run-dir "$tmp/c"
expect_fail "budget garbage"     "--budget"            $F train "${TINY[@]}" --budget 5parsecs --run-dir "$tmp/c"
expect_fail "batch not dividing" "is not a multiple"   $F train "${TINY[@]}" --batch-tokens 1000 --steps 1 --run-dir "$tmp/c"
expect_fail "kv heads"           "--n-kv-head"         $F train "${TINY[@]}" --n-kv-head 3 --steps 1 --run-dir "$tmp/c"
expect_fail "window pattern"     "--window-pattern"    $F train "${TINY[@]}" --window-pattern SXL --steps 1 --run-dir "$tmp/c"
expect_fail "unknown config key" "unknown setting"     $F train --config <(echo '{"depht": 3}') --run-dir "$tmp/c"
data=$(sed -n 's/.*"data":[[:space:]]*"\([^"]*\)".*/\1/p' "$tmp/a/config.json")
[ -n "$data" ] || data=$($F prepare --quiet | sed -n 's/^data \([^ ]*\).*/\1/p')
expect_fail "vocab vs tokenizer" "must match"          $F train "${TINY[@]}" --data "$data" --vocab-size 4096 --steps 1 --run-dir "$tmp/c"
expect_fail "resume, other depth" "--depth conflicts"  $F train --resume "$tmp/a" --depth 2
expect_fail "resume, missing"    "$tmp/nowhere"        $F train --resume "$tmp/nowhere"
expect_fail "resume, finished"   "already ran its 20 steps" $F train --resume "$tmp/a"
expect_fail "resume, stop-after not later" "--stop-after 10 is not after step 20" $F train --resume "$tmp/a" --stop-after 10
cmp -s "$tmp/a/model.safetensors" "$tmp/keep/model.safetensors" && cmp -s "$tmp/a/metrics.jsonl" "$tmp/keep/metrics.jsonl" \
  && ok "failed commands left the run untouched" || bad "a failed command changed the run folder"
head -c 5000 "$tmp/a/model.safetensors" > "$tmp/trunc.safetensors"
expect_fail "truncated checkpoint" "trunc.safetensors" $F eval --ckpt "$tmp/trunc.safetensors"
printf 'garbage!' > "$tmp/junk.safetensors"
expect_fail "corrupt checkpoint"   "junk.safetensors"  $F eval --ckpt "$tmp/junk.safetensors"
# a state file from another save: model and state disagree on the step
cp "$tmp/a/train_state.safetensors" "$tmp/keep/train_state.safetensors"
cp "$tmp/b/train_state.safetensors" "$tmp/b/state.bak"
$F train "${TINY[@]}" --steps 20 --stop-after 5 --run-dir "$tmp/d" --threads 1 > /dev/null 2>&1
cp "$tmp/b/train_state.safetensors" "$tmp/d/train_state.safetensors"
expect_fail "mismatched state file" "same save"        $F train --resume "$tmp/d"

# a tokenizer that does not match the shards
cp -r "$data" "$tmp/data2"
$F tokenizer train --input "${FRONTIER_DATA:-../shared/data}/text/val" --vocab-size 8192 \
  --out "$tmp/data2/tokenizer" > /dev/null 2>&1 || true
expect_fail "tokenizer vs shards" "were made with tokenizer" $F train "${TINY[@]}" --data "$tmp/data2" --steps 1 --run-dir "$tmp/e"

# divergence: a NaN/inf loss stops with a clear message and saves nothing
expect_fail "diverging run"      "training diverged"   $F train "${TINY[@]}" --steps 30 --embedding-lr 1000 --unembedding-lr 1000 --matrix-lr 1000 --lr-batch-ref 512 --run-dir "$tmp/f"
[ ! -e "$tmp/f/model.safetensors" ] && ok "no checkpoint written after divergence" || bad "a diverged run saved a checkpoint"

echo "train cli: $fails failed"
[ "$fails" -eq 0 ]
