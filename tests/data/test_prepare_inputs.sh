#!/usr/bin/env bash
# tests/data/test_prepare_inputs.sh — what `frontier prepare` (and the commands that read corpus
# files) refuse before doing any work, with exit 2 and a message naming the file:
#   - a file that is both a training and a validation input, however it is reached: the same
#     path, another spelling of it, a symbolic or hard link, or a folder holding it (compared by
#     device and inode after the folders are expanded);
#   - a document with a NUL byte (raw, or a \u0000 escape in "text"), named file:line with its
#     byte offset: refused, never cut short (tokenizer train, tokenizer encode, prepare).
# Tiny inputs: seconds. Runs from the project root.
set -uo pipefail
F=./frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
V=${FRONTIER_DATA:-../shared/data}/text/val/val_openstax_000.jsonl
[ -r "$V" ] || { bad "no validation corpus at $V (FRONTIER_DATA?)"; exit 1; }
mkdir -p "$tmp/tr" "$tmp/va"
head -n 2 "$V" > "$tmp/tr/a.jsonl"
sed -n 3p "$V" > "$tmp/tr/b.jsonl"
tail -n 1 "$V" > "$tmp/va/c.jsonl"
P=(--cache "$tmp/cache" --vocab-size 300 --quiet)

check "same file as --train and --val"       2 "$tmp/tr/a.jsonl is both a training and a validation input" \
  $F prepare --train "$tmp/tr/a.jsonl" --val "$tmp/tr/a.jsonl" "${P[@]}"
check "another spelling of the same path"    2 "are the same file" \
  $F prepare --train "$tmp/tr/a.jsonl" --val "$tmp/tr/../tr/a.jsonl" "${P[@]}"
ln -s "$tmp/tr/a.jsonl" "$tmp/va/sym.jsonl"
check "a symbolic link in the val folder"    2 "$tmp/tr/a.jsonl (training input) and $tmp/va/sym.jsonl (validation input) are the same file" \
  $F prepare --train "$tmp/tr" --val "$tmp/va" "${P[@]}"
rm "$tmp/va/sym.jsonl"
ln "$tmp/tr/b.jsonl" "$tmp/va/hard.jsonl"
check "a hard link in the val folder"        2 "$tmp/tr/b.jsonl (training input) and $tmp/va/hard.jsonl (validation input) are the same file" \
  $F prepare --train "$tmp/tr" --val "$tmp/va" "${P[@]}"
rm "$tmp/va/hard.jsonl"
check "a val file inside the train folder"   2 "$tmp/tr/b.jsonl is both a training and a validation input" \
  $F prepare --train "$tmp/tr" --val "$tmp/va" --val "$tmp/tr/b.jsonl" "${P[@]}"
check "the default train set as --val"       2 "is both a training and a validation input" \
  $F prepare --val "${FRONTIER_DATA:-../shared/data}/text/train" "${P[@]}"
[ ! -e "$tmp/cache" ] && ok "nothing was written for the refused inputs" || bad "a refused prepare wrote $tmp/cache"
check "disjoint inputs work"                 0 "bytes/token" $F prepare --train "$tmp/tr" --val "$tmp/va" "${P[@]}"

# NUL bytes
printf '{"text": "fine"}\n{"id": 2, "text": "cut\\u0000here"}\n' > "$tmp/nul.jsonl"
printf 'line one\nab\0cd\n' > "$tmp/nul.txt"
printf '{"text": "a\0b"}\n' > "$tmp/raw.jsonl"
printf '{"title": "t\\u0000", "text": "fine", "x": ["\\u0000"]}\n{"text": "a backslash: \\\\u0000"}\n' > "$tmp/ok.jsonl"
tok=$(ls -d "$tmp"/cache/shards/*/tokenizer | head -1)
check "\\u0000 in text: tokenizer encode"    2 "nul.jsonl:2: a \\u0000 escape in \"text\" at byte offset 39 (column 23)" \
  $F tokenizer encode --tokenizer "$tok" --input "$tmp/nul.jsonl"
check "NUL in a .txt: tokenizer encode"      2 "nul.txt:2: a NUL byte at byte offset 11 (column 3)" \
  $F tokenizer encode --tokenizer "$tok" --input "$tmp/nul.txt"
check "raw NUL in a .jsonl line"             2 "raw.jsonl:1: a raw NUL byte at byte offset 11" \
  $F tokenizer encode --tokenizer "$tok" --input "$tmp/raw.jsonl"
check "NUL: tokenizer train"                 2 "nul.jsonl:2: a \\u0000 escape" \
  $F tokenizer train --input "$tmp/nul.jsonl" --vocab-size 300 --out "$tmp/t"
[ ! -e "$tmp/t" ] && ok "tokenizer train wrote nothing" || bad "tokenizer train left $tmp/t"
cp "$tmp/nul.jsonl" "$tmp/va/"
check "NUL: prepare"                         2 "nul.jsonl:2: a \\u0000 escape" \
  $F prepare --train "$tmp/tr" --val "$tmp/va" "${P[@]}"
rm "$tmp/va/nul.jsonl"
out=$($F tokenizer encode --tokenizer "$tok" --input "$tmp/ok.jsonl" 2>"$tmp/err"); rc=$?
[ $rc = 0 ] && [ "$(grep -c '^[0-9]' <<<"$out")" = 2 ] && ok "NUL escapes outside \"text\" and an escaped backslash pass (2 documents)" \
  || bad "ok.jsonl: exit $rc: $out $(cat "$tmp/err")"
want=$(printf 'a backslash: \\u0000' | $F tokenizer encode --tokenizer "$tok" 2>/dev/null)
[ "$(sed -n 2p <<<"$out")" = "$want" ] && ok "the escaped backslash is kept as text" || bad "document 2 encodes differently"
# Standard input to encode is taken byte for byte: a NUL is encoded as the byte 0, not cut.
ids=$(printf 'a\0b' | $F tokenizer encode --tokenizer "$tok" 2>/dev/null)
back=$($F tokenizer decode --tokenizer "$tok" $ids | od -An -c | tr -s ' ')
[ "$back" = " a \\0 b" ] && ok "stdin: a NUL byte is encoded and decoded back" || bad "stdin NUL round trip: '$back'"
echo "prepare inputs: $fails failed"
[ "$fails" -eq 0 ]
