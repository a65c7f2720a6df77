#!/usr/bin/env bash
# tests/eval/test_eval_cli.sh — `frontier eval` and `frontier sample` on two tiny trained runs:
# A on the default prepared data (vocab 8192, config "data" null), B on a tiny prepared corpus
# (vocab 400, config "data" set). eval reproduces the val_bpb train wrote to summary.json; --input
# works and cleans up; a missing, truncated or mismatched checkpoint (another run's tokenizer) and a
# missing --input file are bad input (exit 2), each with a clear message; bad flags exit 2. Runs from the
# project root.
set -uo pipefail
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
V=${FRONTIER_DATA:-../shared/data}/text/val/val_openstax_000.jsonl

# Run A: default data (prepared and cached under cache/), 2 steps.
if ! $F train --steps 2 --depth 1 --seq-len 64 --batch-tokens 512 --device-batch 8 --eval-tokens 2000 \
     --run-dir "$tmp/a" --quiet >"$tmp/a.log" 2>&1; then
  cat "$tmp/a.log"; echo "FAIL: could not train run A"; exit 1
fi
# Run B: a tiny corpus with its own vocab-400 tokenizer, passed with --data.
mkdir -p "$tmp/tr" "$tmp/va"
head -n 3 "$V" > "$tmp/tr/a.jsonl"
tail -n 1 "$V" > "$tmp/va/b.jsonl"
$F prepare --train "$tmp/tr" --val "$tmp/va" --cache "$tmp/cache" --vocab-size 400 --quiet >/dev/null 2>&1
dataB=$(ls -d "$tmp"/cache/shards/*/ | head -n 1)
if ! $F train --steps 2 --depth 1 --seq-len 32 --batch-tokens 256 --device-batch 8 --vocab-size 400 --eval-tokens 500 \
     --data "$dataB" --run-dir "$tmp/b" --quiet >"$tmp/b.log" 2>&1; then
  cat "$tmp/b.log"; echo "FAIL: could not train run B"; exit 1
fi

# eval reproduces summary.json's val_bpb (same --eval-tokens, --batch = train's --device-batch),
# for any --batch; the last line of stdout is JSON.
same_as_summary() {  # eval output, summary.json
  python3 - "$1" "$2" <<'EOF'
import json, sys
e = json.loads(sys.argv[1].strip().splitlines()[-1])
s = json.load(open(sys.argv[2]))
ok = abs(e["val_bpb"] - s["val_bpb"]) <= 1e-12 and e["positions"] == s["eval_positions"] and e["T"] == s["eval_T"]
if not ok: print("eval %r vs summary val_bpb %r positions %r" % (e, s["val_bpb"], s["eval_positions"]))
sys.exit(0 if ok else 1)
EOF
}
check "eval run A"                0 "val_bpb"  $F eval --ckpt "$tmp/a" --eval-tokens 2000 --batch 8
for b in 8 3; do
  out=$($F eval --ckpt "$tmp/a" --eval-tokens 2000 --batch $b 2>/dev/null)
  same_as_summary "$out" "$tmp/a/summary.json" && ok "eval A --batch $b = summary.json" || bad "eval A --batch $b differs from summary.json"
done
out=$($F eval --ckpt "$tmp/b" --eval-tokens 500 --batch 8 --threads 1 2>/dev/null)
same_as_summary "$out" "$tmp/b/summary.json" && ok "eval B (config data) = summary.json" || bad "eval B differs from summary.json"
check "eval the .safetensors path" 0 "val_bpb" $F eval --ckpt "$tmp/b/model.safetensors" --eval-tokens 100

# --precision bf16: the products take bf16 operands (the reference twins here, so any CPU runs
# it): val_bpb moves, by rounding only, and the JSON line says which precision scored it.
f32=$(FRONTIER_KERNELS=ref $F eval --ckpt "$tmp/a" --eval-tokens 2000 2>/dev/null | tail -n 1)
b16=$(FRONTIER_KERNELS=ref $F eval --ckpt "$tmp/a" --eval-tokens 2000 --precision bf16 2>/dev/null | tail -n 1)
python3 - "$f32" "$b16" <<'EOF2' && ok "eval --precision bf16: val_bpb within 1e-3 of fp32, not equal" || bad "eval --precision bf16: $f32 vs $b16"
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
d = abs(a["val_bpb"] - b["val_bpb"]) / a["val_bpb"]
sys.exit(0 if a["precision"] == "fp32" and b["precision"] == "bf16" and 0 < d < 1e-3 else 1)
EOF2

# --input: documents from a .jsonl and a .txt; the temporary shard folder is removed.
head -n 2 "$V" > "$tmp/in.jsonl"
printf 'To be, or not to be, that is the question.\n' > "$tmp/in.txt"
mkdir -p "$tmp/t"
check "eval --input jsonl"        0 '"val_bpb":' env TMPDIR="$tmp/t" $F eval --ckpt "$tmp/a" --input "$tmp/in.jsonl"
check "eval --input jsonl + txt"  0 "2 inputs, 3 documents" env TMPDIR="$tmp/t" $F eval --ckpt "$tmp/a" --input "$tmp/in.jsonl" --input "$tmp/in.txt" --seq-len 32
[ -z "$(ls -A "$tmp/t")" ] && ok "no temporary folder left" || bad "eval left $(ls "$tmp/t") in TMPDIR"
check "eval --input missing file" 2 "$tmp/none.jsonl" $F eval --ckpt "$tmp/a" --input "$tmp/none.jsonl"

# A missing, broken or mismatched checkpoint is bad input (exit 2).
check "missing checkpoint"        2 "--ckpt $tmp/none: no such run folder" $F eval --ckpt "$tmp/none"
mkdir -p "$tmp/trunc" && cp -r "$tmp/a/tokenizer" "$tmp/a/config.json" "$tmp/trunc/"
head -c 100000 "$tmp/a/model.safetensors" > "$tmp/trunc/model.safetensors"
check "truncated checkpoint"      2 "truncated"                     $F eval --ckpt "$tmp/trunc"
check "truncated (sample)"        2 "truncated"                     $F sample --ckpt "$tmp/trunc" -n 5
mkdir -p "$tmp/mixed" && cp "$tmp/a/model.safetensors" "$tmp/a/config.json" "$tmp/mixed/" && cp -r "$tmp/b/tokenizer" "$tmp/mixed/"
check "another run's tokenizer"   2 "use the tokenizer folder of the same run" $F eval --ckpt "$tmp/mixed"
check "another run's tokenizer (sample)" 2 "(vocab 400)"           $F sample --ckpt "$tmp/mixed"

# sample: text on stdout; same seed, same text; greedy runs into the context and says so.
s1=$($F sample --ckpt "$tmp/a" --prompt "The cell" -n 12 --seed 5 2>/dev/null); rc=$?
[ $rc = 0 ] && [ -n "$s1" ] && ok "sample prints text" || bad "sample: exit $rc, text '$s1'"
s2=$($F sample --ckpt "$tmp/a" --prompt "The cell" -n 12 --seed 5 --threads 1 2>/dev/null)
[ "$s1" == "$s2" ] && ok "same seed, same text" || bad "same seed gave '$s1' then '$s2'"
check "sample fills the context"  0 "the context is full"           $F sample --ckpt "$tmp/b" -n 1000 --temperature 0
check "sample -n 0"               0 "0 tokens"                      $F sample --ckpt "$tmp/a" -n 0
check "sample top-k 0"            0 "stopped"                       $F sample --ckpt "$tmp/b" --top-k 0 --temperature 1.5 -n 20
long=$(head -c 3000 "$V")
check "prompt longer than context" 1 "context holds 32"             $F sample --ckpt "$tmp/b" --prompt "$long"

# Usage errors: exit 2, naming the flag.
check "eval needs --ckpt"         2 "--ckpt RUN_DIR is required"    $F eval
check "eval unknown flag"         2 "unknown flag --nope"           $F eval --ckpt "$tmp/a" --nope
check "eval bad --batch"          2 "--batch expects an integer"    $F eval --ckpt "$tmp/a" --batch x
check "eval --seq-len too long"   2 "exceeds the model's seq_len 64" $F eval --ckpt "$tmp/a" --seq-len 65
check "eval bad --precision"      2 "--precision must be auto, fp32 or bf16, got 'fp16'" $F eval --ckpt "$tmp/a" --precision fp16
check "sample needs --ckpt"       2 "--ckpt RUN_DIR is required"    $F sample
check "sample -n < 0"             2 "-n must be between 0"          $F sample --ckpt "$tmp/a" -n -1
check "sample --temperature < 0"  2 "--temperature must be between 0 and 1000"    $F sample --ckpt "$tmp/a" --temperature -0.5
check "sample --top-k < 0"        2 "--top-k must be between 0"     $F sample --ckpt "$tmp/a" --top-k -1
check "sample unknown short flag" 2 "unknown flag '-x'"             $F sample --ckpt "$tmp/a" -x 3
check "sample --help shows -n"    0 "-n N"                          $F sample --help

echo "eval cli: $fails failed"
[ "$fails" -eq 0 ]
