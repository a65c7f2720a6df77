#!/usr/bin/env bash
# tests/train/test_mix.sh — training on a mixture of sources (--mix), end to end, on a tiny model
# with one thread: the default corpus (its prepared folder) plus a small extra source made here (a
# folder with a .jsonl of a few documents), prepared with the run's tokenizer into a cache of the
# test's own and found there the second time; the
# summary's "sources" say each source's weight, tokens trained (their shares follow the weights)
# and epochs (the small source is read many times, the corpus not once); a run stopped and
# resumed ends bit for bit as the run that never stopped; natural shares go by token count;
# `--mix train` is the run without --mix; a resume cannot change the mixture; bad specs exit 2
# naming the problem.
set -uo pipefail
cd "$(dirname "$0")/../.."
F=./frontier
source tests/lib.sh
[ -x "$F" ] || { echo "FAIL: $F not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 512
      --eval-tokens 2000 --threads 1 --steps 40)
mkdir -p "$tmp/extra"
/usr/bin/python3 - "$tmp/extra/notes.jsonl" <<'PY'
import json, sys
docs = ["The tide comes in twice a day, and the harbour fills with small boats waiting for it. " * 3,
        "A recipe for bread: flour, water, salt and time. Knead, rest, shape, bake.",
        "Lighthouses were once kept by families who lived at the foot of the tower. " * 2,
        "Prime numbers below thirty: two, three, five, seven, eleven, thirteen, seventeen, nineteen, twenty-three, twenty-nine.",
        "The committee met on Tuesday and agreed to meet again on Thursday to agree on the agenda. " * 2]
open(sys.argv[1], "w").write("".join(json.dumps({"text": d}) + "\n" for d in docs))
PY
EXTRA=$tmp/extra
# The default corpus's prepared folder (made once, or found cached) as --data, so that --cache can
# keep this test's extra shards out of ./cache.
DATA=$($F prepare 2>&1 | sed -n 's/^data \(.*\) (cached)$/\1/p; s/^data \([^ ]*\)$/\1/p' | head -1)
[ -d "$DATA" ] || { bad "the default corpus's prepared folder: '$DATA'"; exit 1; }
TINY+=(--data "$DATA" --cache "$tmp/cache")

# ---- a mixture trains, and its summary says the shares and epochs -----------------------------
$F train "${TINY[@]}" --mix "$EXTRA=0.25" --run-dir "$tmp/a" > "$tmp/a.out" 2>&1 \
  || { bad "--mix $EXTRA=0.25: train"; tail -5 "$tmp/a.out"; exit 1; }
grep -q "mix: source $EXTRA" "$tmp/a.out" && grep -q "prepare train" "$tmp/a.out" \
  && ok "the extra source is prepared with the run's tokenizer, and says so" || { bad "no preparing line"; head -5 "$tmp/a.out"; }
/usr/bin/python3 - "$tmp/a/summary.json" "$EXTRA" <<'PY' && ok "summary.json: sources train 0.75 / extra 0.25 of the tokens trained, the extra source read many times" || bad "summary.json's sources"
import json, sys
s = json.load(open(sys.argv[1]))
src = s["sources"]
names = [x["name"] for x in src]
if names != ["train", sys.argv[2]]: sys.exit(print("names", names))
total = sum(x["tokens_trained"] for x in src)
if total != s["tokens_trained"]: sys.exit(print("tokens_trained", total, s["tokens_trained"]))
if s["unique_tokens"] != sum(x["unique_tokens"] for x in src): sys.exit(print("unique_tokens"))
for x, w in zip(src, (0.75, 0.25)):
    share = x["tokens_trained"] / total
    print(f'{x["name"]}: weight {x["weight"]}, share {share:.4f}, epochs {x["epochs"]:.3g}, stream epoch {x["stream_epoch"]}')
    if abs(x["weight"] - w) > 1e-12 or abs(share - w) > 0.01: sys.exit(print("share off"))
    if abs(x["epochs"] - x["tokens_trained"] / x["unique_tokens"]) > 1e-9: sys.exit(print("epochs"))
    pulled = x["tokens_pulled"] / sum(y["tokens_pulled"] for y in src)
    if abs(pulled - w) > 0.01: sys.exit(print("pulled share", pulled))
train, extra = src
if not (extra["epochs"] > 5 and extra["stream_epoch"] > 5 and train["epochs"] < 0.01 and train["stream_epoch"] == 1):
    sys.exit(print("epochs: extra", extra["epochs"], extra["stream_epoch"], "train", train["epochs"], train["stream_epoch"]))
PY
grep -q "\"mix\":[[:space:]]*\"$EXTRA=0.25\"" "$tmp/a/config.json" && ok "config.json says the mixture" || bad "config.json lacks mix"

# ---- stopped and resumed = uninterrupted; the second run finds the extra shards cached ----------
$F train "${TINY[@]}" --mix "$EXTRA=0.25" --stop-after 23 --run-dir "$tmp/b" > "$tmp/b.out" 2>&1 || bad "--stop-after 23"
grep -q "shards up to date" "$tmp/b.out" && ! grep -q "prepare train" "$tmp/b.out" \
  && ok "a second run finds the extra source's shards cached" || bad "the extra source was prepared again"
$F train --resume "$tmp/b" --stop-after 0 --threads 1 --quiet > "$tmp/b2.out" 2>&1 || { bad "resume"; tail -5 "$tmp/b2.out"; }
same_tensors "$tmp/a/model.safetensors" "$tmp/b/model.safetensors" \
  && same_tensors "$tmp/a/train_state.safetensors" "$tmp/b/train_state.safetensors" \
  && ok "a mixture stopped at step 23 and resumed = uninterrupted, bit for bit" || bad "the resumed mixture differs"
/usr/bin/python3 -c "
import json, sys
a, b = (json.load(open(f'$tmp/{r}/summary.json'))['sources'] for r in 'ab')
sys.exit(a != b)" && ok "the resumed run's summary counts the same per source" || bad "the resumed run's sources differ"
check "a resume cannot change the mixture" 2 "--mix conflicts" \
  $F train --resume "$tmp/b" --mix "$EXTRA=0.5" --steps 50 --threads 1 --quiet

# ---- natural shares; --mix train is the run without --mix ---------------------------------------
SHORT=("${TINY[@]}" --steps 6)
$F train "${SHORT[@]}" --mix "$EXTRA" --run-dir "$tmp/n" > /dev/null 2>&1 || bad "--mix $EXTRA (natural): train"
/usr/bin/python3 -c "
import json, sys
src = json.load(open('$tmp/n/summary.json'))['sources']
tot = sum(x['unique_tokens'] for x in src)
sys.exit(any(abs(x['weight'] - x['unique_tokens'] / tot) > 1e-9 for x in src) or len(src) != 2)" \
  && ok "no weights: each source's weight is its share of the tokens" || bad "natural shares"
$F train "${SHORT[@]}" --run-dir "$tmp/plain" > /dev/null 2>&1 || bad "plain run"
$F train "${SHORT[@]}" --mix train --run-dir "$tmp/train" > /dev/null 2>&1 || bad "--mix train: train"
same_tensors "$tmp/plain/model.safetensors" "$tmp/train/model.safetensors" && ok "--mix train trains as no --mix" \
  || bad "--mix train differs from the run without it"

# ---- bad specs: exit 2, naming the problem, before any work -------------------------------------
check "an unknown source" 2 "unknown source 'no_such_folder'" $F train "${SHORT[@]}" --mix no_such_folder --run-dir "$tmp/x"
check "weights past 1" 2 "leaves train less than nothing" $F train "${SHORT[@]}" --mix "$EXTRA=0.7,extra_wiki=0.4" --run-dir "$tmp/x"
check "a source twice" 2 "listed twice" $F train "${SHORT[@]}" --mix "extra_wiki=0.1,extra_wiki=0.2" --run-dir "$tmp/x"
check "a weight out of range" 2 "in (0, 1]" $F train "${SHORT[@]}" --mix "$EXTRA=1.5" --run-dir "$tmp/x"
check "weights on some sources only" 2 "give every source a weight, or none" $F train "${SHORT[@]}" --mix "$EXTRA=0.2,extra_wiki" --run-dir "$tmp/x"
check "the validation set" 2 "held out" $F train "${SHORT[@]}" --mix val --run-dir "$tmp/x"
check "--train-tokens with a mixture" 2 "--train-tokens is not supported with --mix" \
  $F train "${SHORT[@]}" --mix "$EXTRA=0.2" --train-tokens 10000 --run-dir "$tmp/x"
[ ! -e "$tmp/x" ] && ok "no refused spec started a run" || bad "a refused spec left $tmp/x"
[ "$fails" -eq 0 ]
