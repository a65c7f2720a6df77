#!/usr/bin/env bash
# bench/tokenizer.sh — tokenizer training time on the whole training corpus (vocab 8192), and
# encode throughput side by side with tiktoken (npm, WASM) on the same ranks and the same text in
# the same run, 1 and 2 threads. Writes the "tokenizer" section of docs/perf.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
BUILD=${BUILD:-build/release}
DATA=${FRONTIER_DATA:-../shared/data}
REPEAT=${REPEAT:-3}
[ -d tests/interop/node_modules/tiktoken ] || (cd tests/interop && npm ci --no-audit --no-fund --loglevel=error)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# 1. training: wall time of the whole command (reading + splitting + counting + merging)
t0=$(date +%s.%N)
./frontier tokenizer train --out "$tmp/tok" > "$tmp/train.out" 2>&1
t1=$(date +%s.%N)
train_s=$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")
chars=$(sed -n 's/.* docs \/ \([0-9.]*M\) chars.*/\1/p' "$tmp/train.out")

# 2. encode throughput: the validation set + the first file of each training source (~11 MB)
TEXT=("$DATA/text/val/val_openstax_000.jsonl" "$DATA/text/val/val_standardebooks_000.jsonl"
      "$DATA/text/train/openstax_000.jsonl" "$DATA/text/train/standardebooks_000.jsonl")
declare -A mbps
for th in 1 2; do
  mbps[frontier,$th]=$("$BUILD/bench/bench_encode" "$tmp/tok" --threads $th --repeat "$REPEAT" "${TEXT[@]}" |
                       sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p')
  mbps[tiktoken,$th]=$(node tests/interop/tiktoken_bench.mjs "$tmp/tok" --threads $th --repeat "$REPEAT" "${TEXT[@]}" |
                       sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p')
done
tver=$(node -e 'console.log(require("./tests/interop/node_modules/tiktoken/package.json").version)')
bytes=$(cat "${TEXT[@]}" | wc -c)

body=$(mktemp)
cat > "$body" <<MD
## Tokenizer

$(bench_machine). Command: \`make bench\` (bench/tokenizer.sh).

**Training** (vocab 8192 = 256 bytes + 7927 merges + 9 special; documents cropped to 10,000
characters; the whole 172 MB training corpus, ${chars} characters kept): **${train_s} s** wall,
all threads (\`frontier tokenizer train --out DIR\`).

**Encoding** the same $(awk "BEGIN{printf \"%.1f\", $bytes/1e6}") MB of JSON Lines (the validation set plus
\`openstax_000\` and \`standardebooks_000\`) with the same ranks; MB/s of UTF-8 text, best of $REPEAT passes.
frontier starts every pass with cold per-chunk caches. tiktoken is the npm package $tver (OpenAI's Rust
core compiled to WASM; 2 threads = 2 worker_threads). Both produce identical ids (tests/interop).

| threads | frontier MB/s | tiktoken MB/s | frontier / tiktoken |
|---:|---:|---:|---:|
| 1 | ${mbps[frontier,1]} | ${mbps[tiktoken,1]} | $(ratio "${mbps[frontier,1]}" "${mbps[tiktoken,1]}")x |
| 2 | ${mbps[frontier,2]} | ${mbps[tiktoken,2]} | $(ratio "${mbps[frontier,2]}" "${mbps[tiktoken,2]}")x |
MD
replace_section tokenizer "$body"
rm -f "$body"
sed -n '/<!-- bench:tokenizer -->/,/<!-- \/bench:tokenizer -->/p' docs/perf.md
