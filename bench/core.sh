#!/usr/bin/env bash
# bench/core.sh — CORE's cost on a kit-d10-sized model (59.6M parameters): `frontier eval --core`
# over all 21 tasks with --max-per-task N (default 500, nanochat's in-training setting; ~0.8 h
# alone on 2 cores in fp32, ~0.4 h with PRECISION=bf16). The weights do not change the cost, so
# the checkpoint is kit-d10 after one step. Writes the "core" section of docs/perf.md from core.json.
#   bench/core.sh [N]                       train the checkpoint, score it, write the section
#                                           (PRECISION=bf16 scores with bf16 matmul operands)
#   bench/core.sh --from RUN_DIR COMMIT     write the section from a finished run (COMMIT: the
#                                           git commit the frontier that scored it was built from)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
if [ "${1:-}" = "--from" ]; then
  run=$2 commit=$3
else
  n=${1:-500}
  run=$(mktemp -d)/d10 commit=$(git rev-parse --short=12 HEAD)
  ./frontier train --preset kit-d10 --batch-tokens 2048 --device-batch 2 --steps 1 --eval-tokens 4096 \
    --run-dir "$run" --quiet > /dev/null
  ./frontier eval --core --ckpt "$run" --max-per-task "$n" --precision "${PRECISION:-fp32}" > /dev/null
fi
J="$run/core.json"
py() { /usr/bin/python3 - "$J" "$@"; }
body=$(mktemp)
{
cat <<MD
## CORE on a kit-d10-sized model (\`bench/core.sh\`)

$(bench_machine); frontier git $commit; kernels \`$(py <<'PY'
import json, sys; d = json.load(open(sys.argv[1]))
print(f"{d['kernels']}`, {d['threads']} threads, {d['ranks']} rank(s)" if "kernels" in d else "the default` (not recorded in core.json before this script existed)")
PY
)
Checkpoint: \`frontier train --preset kit-d10 --batch-tokens 2048 --device-batch 2 --steps 1\` (59.6M parameters; the
weights do not change the cost). Command: \`frontier eval --core --ckpt RUN --max-per-task $(py <<'PY'
import json, sys; d = json.load(open(sys.argv[1]))
print(f"{d['max_per_task']} --precision {d.get('precision', 'fp32')}")
PY
)\`.
"Tokens" are the tokens through the model: each row's shared prefix once plus every prompt's own
tokens (docs/eval.md); the lm_head runs only at the scored positions.

MD
py <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("| task | type | rows | tokens | tokens/row | seconds | tok/s |")
print("|---|---|---|---|---|---|---|")
for t in d["tasks"]:
    s = t.get("seconds", 0)
    print(f"| {t['label']} | {t['type']} | {t['rows']} | {t.get('tokens', 0):,} | {t.get('tokens', 0) / max(t['rows'], 1):,.0f} | {s:.1f} | {t.get('tokens', 0) / s if s else 0:,.0f} |")
rows = sum(t["rows"] for t in d["tasks"])
print(f"| **all {d['n_tasks']} tasks** | | {rows:,} | {d['tokens']:,} | | **{d['seconds']:.0f} s ({d['seconds'] / 3600:.2f} h)** | **{d['tokens'] / d['seconds']:,.0f}** |")
print()
print(f"CORE of this untrained checkpoint: {d['core']:.4f} (chance level, as expected); coqa is not in the bundle: {', '.join(d['missing']) or 'none'} missing.")
PY
} > "$body"
replace_section core "$body"
echo "wrote the core section of docs/perf.md"
