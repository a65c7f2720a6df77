#!/usr/bin/env bash
# tests/cli/test_cli.sh — the command line: help, exit codes, flag errors naming the flag,
# and a tokenizer round trip through the CLI. Runs from the project root with ./frontier built.
set -uo pipefail
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

check "no command"              2 "usage: frontier"            $F
check "help"                    0 "commands:"                  $F help
check "unknown command"         2 "unknown command 'bogus'"    $F bogus
check "info"                    0 "avx512f:"                   $F info
check "info --help"             0 "usage: frontier info"       $F info --help
check "prepare --help"          0 "--shard-tokens"             $F prepare --help
check "unknown flag"            2 "unknown flag --nope"        $F prepare --nope
check "single-dash flag"        2 "unknown flag '-x'"          $F prepare -x
check "missing value"           2 "--vocab-size needs a value" $F tokenizer train --out "$tmp/t" --vocab-size
check "bad integer"             2 "--vocab-size expects an integer" $F tokenizer train --out "$tmp/t" --vocab-size abc
check "vocab below 256+9"       2 "--vocab-size must be between 265" $F tokenizer train --out "$tmp/t" --vocab-size 264
check "train needs --out"       2 "--out DIR is required"     $F tokenizer train
check "tokenizer subcommand"    2 "unknown command 'x'"        $F tokenizer x
check "missing tokenizer dir"   2 "--tokenizer $tmp/none: no such folder"           $F tokenizer encode --tokenizer "$tmp/none" --text hi
check "missing input file"      2 "$tmp/none.jsonl"            $F tokenizer train --out "$tmp/t" --input "$tmp/none.jsonl"
[ -e "$tmp/t" ] && { echo "FAIL: a failed train left $tmp/t behind"; fails=$((fails+1)); }

# A small tokenizer through the CLI, then encode -> decode is the identity.
V=${FRONTIER_DATA:-../shared/data}/text/val/val_openstax_000.jsonl
check "tokenizer train"         0 "trained vocab 512"          $F tokenizer train --input "$V" --vocab-size 512 --out "$tmp/tok"
check "tokenizer stats"         0 "bytes/token"                $F tokenizer stats --tokenizer "$tmp/tok" --input "$V"
text=$'Hello, world! It\'s 2026.\n\tTabs, ümlauts, 日本語 and emoji 😀.'
ids=$($F tokenizer encode --tokenizer "$tmp/tok" --text "$text" 2>/dev/null)
back=$($F tokenizer decode --tokenizer "$tmp/tok" $ids)
if [ "$back" == "$text" ]; then echo "ok: encode/decode round trip via CLI"; else echo "FAIL: round trip gave '$back'"; fails=$((fails+1)); fi
back=$(printf '%s' "$text" | $F tokenizer encode --tokenizer "$tmp/tok" 2>/dev/null | $F tokenizer decode --tokenizer "$tmp/tok")
if [ "$back" == "$text" ]; then echo "ok: stdin round trip"; else echo "FAIL: stdin round trip gave '$back'"; fails=$((fails+1)); fi
check "decode bad id"           2 "outside the vocabulary"     $F tokenizer decode --tokenizer "$tmp/tok" 99999
check "decode garbage"          2 "expected a token id"        $F tokenizer decode --tokenizer "$tmp/tok" 12 abc

# prepare on a tiny corpus: works, then says it is cached; bad JSON names file:line.
mkdir -p "$tmp/tr" "$tmp/va"
head -c 200000 "$V" | head -n 3 > "$tmp/tr/a.jsonl"
tail -n 1 "$V" > "$tmp/va/b.jsonl"
check "prepare"                 0 "bytes/token"                $F prepare --train "$tmp/tr" --val "$tmp/va" --cache "$tmp/cache" --vocab-size 400
check "prepare again is cached" 0 "(cached)"                   $F prepare --train "$tmp/tr" --val "$tmp/va" --cache "$tmp/cache" --vocab-size 400
printf '{"text": "ok"}\n{"text": oops}\n' > "$tmp/va/c.jsonl"
check "prepare bad json"        2 "c.jsonl:2: not valid JSON"  $F prepare --train "$tmp/tr" --val "$tmp/va" --cache "$tmp/cache" --vocab-size 400
n=$(ls "$tmp/cache/shards" | wc -l)
[ "$n" = 1 ] && echo "ok: failed prepare left no extra folder" || { echo "FAIL: $n folders in cache/shards"; fails=$((fails+1)); }

echo "cli: $fails failed"
[ "$fails" -eq 0 ]
