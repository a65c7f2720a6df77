#!/usr/bin/env bash
# tests/fuzz/gen_seeds.sh — regenerate tests/fuzz/corpus/ (the committed seed corpora) from real
# outputs: the prepared default corpus in cache/ (its validation shard and tokenizer), the CORE
# bundle, and frontier's own writers (tool_fuzz_seeds). Run from anywhere after `make unit-tests`;
# the result is deterministic, so a rerun shows no diff unless a format changed.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=$(ls -d cache/shards/*/ | head -1)
[ -n "$data" ] || { echo "gen_seeds: no prepared data in cache/shards (run frontier prepare)" >&2; exit 1; }
core=${FRONTIER_DATA:-../shared/data}/core
out=tests/fuzz/corpus
rm -rf "$out"
mkdir -p "$out"
build/release/tests/fuzz/tool_fuzz_seeds "$data/tokenizer" "$out"
python3 tests/fuzz/gen_seeds.py "$data/val_000000.bin" "$core" "$out"
# Hand-made broken variants of the generated files.
tok=$out/tokenizer/real_260_ranks
sed "s/\"vocab_size\":[[:space:]]*269/\"vocab_size\": 270/" "$tok" > "$out/tokenizer/wrong_vocab_size"
python3 - "$tok" "$out/tokenizer" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
meta, ranks = d.split(b"\0", 1)
open(sys.argv[2] + "/rank_out_of_order", "wb").write(meta + b"\0" + ranks.replace(b" 3\n", b" 4\n", 1))
open(sys.argv[2] + "/bad_base64", "wb").write(meta + b"\0" + b"A= 0\n" + ranks)
open(sys.argv[2] + "/huge_training_count", "wb").write(meta.replace(b'"docs_used":\t0', b'"docs_used":\t1e300') + b"\0" + ranks)
PY
find "$out" -type f | sort | xargs wc -c | tail -1
