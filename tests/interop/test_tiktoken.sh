#!/usr/bin/env bash
# tests/interop/test_tiktoken.sh — a tokenizer trained by frontier (default settings: vocab 8192
# on the whole training corpus), loaded by the real tiktoken (npm package, OpenAI's Rust core in
# WASM), must encode the whole validation set to exactly the ids frontier produces.
# The npm package is pinned by tests/interop/package-lock.json and installed with `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=tests/interop
DATA=${FRONTIER_DATA:-../shared/data}
command -v node >/dev/null || { echo "node is missing: run scripts/setup.sh"; exit 1; }
if [ ! -d "$here/node_modules/tiktoken" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

./frontier tokenizer train --out "$tmp/tok" 2>/dev/null
VAL=("$DATA/text/val/val_openstax_000.jsonl" "$DATA/text/val/val_standardebooks_000.jsonl")
./frontier tokenizer encode --tokenizer "$tmp/tok" --out "$tmp/frontier.bin" --input "${VAL[0]}" --input "${VAL[1]}"
node "$here/tiktoken_encode.mjs" "$tmp/tok" --out "$tmp/tiktoken.bin" "${VAL[@]}"

n_f=$(( $(stat -c %s "$tmp/frontier.bin") / 4 )); n_t=$(( $(stat -c %s "$tmp/tiktoken.bin") / 4 ))
if cmp -s "$tmp/frontier.bin" "$tmp/tiktoken.bin"; then
  echo "ok: frontier and tiktoken agree on all $n_f validation tokens"
else
  echo "FAIL: ids differ (frontier $n_f tokens, tiktoken $n_t); first difference:"
  cmp "$tmp/frontier.bin" "$tmp/tiktoken.bin" | head -1
  exit 1
fi
