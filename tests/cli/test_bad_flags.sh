#!/usr/bin/env bash
# tests/cli/test_bad_flags.sh — every flag of every subcommand, fed bad values: each must exit 2
# with a message that names the flag, before doing any work.
#
# The flags come from each command's --help (`frontier help` lists the commands; tokenizer,
# kernels and research have sub-commands), so a new flag is covered without editing this file:
#   - a flag without a value: --flag=x;
#   - a numeric flag (the probe "abc" says "expects an integer" / "expects a finite number"):
#     abc, empty, nan, inf, 1e999, -1, 9e18, and 1.5 for integers; -1 and 9e18 are left out only
#     where the table NUMBER_OK below says the value means something (a seed, a cap);
#   - any other flag must have a class in STRING_CLASS (else the test fails, so that a new one is
#     classified): enum (an unknown word, empty), duration, input file / folder / path (missing,
#     empty, the wrong kind), output file / folder (empty, the wrong kind), and a few of their own.
# Probes that fail today for reasons in files owned elsewhere are listed in XFAIL with the owner;
# they are reported as xfail (and a probe in XFAIL that starts passing fails the test, so the list
# stays true). Every probe, its exit code and message go to build/test-artefacts/cli/bad_flags.tsv.
# Fixtures: a tiny corpus, tokenizer and 1-step run (a few seconds). Each probe is bounded by a
# timeout: one that does not fail at once is doing work, a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
F=$ROOT/frontier
source tests/lib.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ART=$ROOT/build/test-artefacts/cli
mkdir -p "$ART"
TSV=$ART/bad_flags.tsv
printf 'command\tflag\tvalue\texit\tverdict\tmessage\n' > "$TSV"
export FRONTIER_DATA; FRONTIER_DATA=$(realpath "${FRONTIER_DATA:-../shared/data}")
TO=30

# ---- fixtures -----------------------------------------------------------------------------------
V=$FRONTIER_DATA/text/val/val_openstax_000.jsonl
mkdir -p "$tmp/tr" "$tmp/va" "$tmp/adir" "$tmp/work"
head -n 2 "$V" > "$tmp/tr/a.jsonl"; tail -n 1 "$V" > "$tmp/va/b.jsonl"
echo "not a folder" > "$tmp/afile"
$F prepare --train "$tmp/tr" --val "$tmp/va" --cache "$tmp/cache" --vocab-size 300 --quiet > "$tmp/prep.log" 2>&1 \
  || { cat "$tmp/prep.log"; bad "fixture: prepare"; exit 1; }
DATA=$(ls -d "$tmp"/cache/shards/*/ | head -1); DATA=${DATA%/}; TOK=$DATA/tokenizer
TINY=(--depth 1 --n-embd 64 --n-head 2 --head-dim 32 --seq-len 64 --device-batch 4 --batch-tokens 256 --vocab-size 300
      --data "$DATA" --eval-tokens 256 --quiet)
RUN=$tmp/run
$F train "${TINY[@]}" --steps 1 --run-dir "$RUN" > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; bad "fixture: train"; exit 1; }
echo '{"depth": 0}' > "$tmp/badbase.json"       # research: any accepted probe then fails at once
mkdir -p "$tmp/ledger"
printf 'trial\tparent\tkind\tbudget_s\tchange\tval_bpb\ttokens\ttok_per_s\tmfu\tpeak_mb\twall_s\tstatus\tdescription\n' \
  > "$tmp/ledger/results.tsv"

# ---- commands: name -> arguments that are valid (the probe goes after them) ---------------------
declare -A BASE=(
  [info]=""
  ["tokenizer train"]="--out $tmp/tokout --input $tmp/tr --vocab-size 300"
  ["tokenizer encode"]="--tokenizer $TOK"
  ["tokenizer decode"]="--tokenizer $TOK"
  ["tokenizer stats"]="--tokenizer $TOK"
  [prepare]="--train $tmp/tr --val $tmp/va --cache $tmp/pcache --vocab-size 300 --quiet"
  [train]="${TINY[*]} --steps 1 --run-dir $tmp/runs/t"
  [run]="${TINY[*]} --steps 1 --run-dir $tmp/runs/r"
  [profile]="${TINY[*]} --steps 1 --run-dir $tmp/runs/p"
  [eval]="--ckpt $RUN --eval-tokens 64"
  [sample]="--ckpt $RUN -n 1"
  [report]="$RUN --out $tmp/r.html"
  [score]="$RUN"
  ["kernels check"]="--quick --op relu2_fwd --variant ref"
  ["kernels bench"]="--op relu2_fwd --variant ref --seconds 0.01 --cache $tmp/kc"
  [research]="--budget-per-trial 1s --trials 1 --out $tmp/res --base $tmp/badbase.json"
  ["research report"]="$tmp/ledger --out $tmp/rr.html --md $tmp/rr.md"
  [plan]="--data $DATA --cache $tmp/plancache --out $tmp/plan.json"
)
# Extra arguments a flag needs to be looked at (eval's CORE flags only apply with --core).
declare -A CONTEXT=(
  ["eval --tasks"]="--core --max-per-task 11" ["eval --max-per-task"]="--core --tasks copa"
  ["eval --core-dir"]="--core --tasks copa --max-per-task 11"
)

# ---- string flags: their class --------------------------------------------------------------------
# enum: a closed set of words; duration: 90s/5m/1h; infile / indir / inpath: must exist (a file, a
# folder, either); ckpt: a run folder or a .safetensors file; outfile / outdir: written (must not
# be empty or the wrong kind); text: any string; mix: a --mix spec (an unknown source, a bad or
# missing weight, a source twice, weights past 1, val); and tasks, threads, threshold, hours.
declare -A STRING_CLASS=(
  ["info --cache"]=outdir
  ["tokenizer train --input"]=inpath ["tokenizer train --out"]=outdir
  ["tokenizer encode --tokenizer"]=indir ["tokenizer encode --text"]=text ["tokenizer encode --input"]=inpath
  ["tokenizer encode --out"]=outfile
  ["tokenizer decode --tokenizer"]=indir ["tokenizer decode --ids-file"]=infile
  ["tokenizer stats --tokenizer"]=indir ["tokenizer stats --input"]=inpath
  ["prepare --train"]=inpath ["prepare --val"]=inpath ["prepare --tokenizer"]=indir ["prepare --cache"]=outdir
  ["eval --tasks"]=tasks ["eval --core-dir"]=indir ["eval --ckpt"]=ckpt ["eval --input"]=inpath ["eval --precision"]=enum
  ["sample --ckpt"]=ckpt ["sample --prompt"]=text ["sample --weights"]=enum ["eval --weights"]=enum
  ["report --out"]=outfile ["score --json"]=outfile
  ["kernels check --variant"]=enum ["kernels check --op"]=enum ["kernels check --threads"]=threads
  ["kernels bench --preset"]=enum ["kernels bench --variant"]=enum ["kernels bench --op"]=enum ["kernels bench --cache"]=outdir
  ["research --budget-per-trial"]=duration ["research --hours"]=hours ["research --space"]=infile
  ["research --strategy"]=enum ["research --out"]=outdir ["research --base"]=infile ["research --proposer"]=text
  ["research --proposer-timeout"]=duration ["research --program"]=infile ["research --threshold"]=threshold
  ["research --eval-margin"]=duration ["research --alpha"]=alpha ["research --trainer"]=command
  ["research --launcher"]=launcher ["research --promote-budget"]=duration
  ["research report --out"]=outfile ["research report --md"]=outfile
  ["plan --budget"]=duration ["plan --precision"]=enum ["plan --data"]=indir ["plan --cache"]=outdir
  ["plan --out"]=outfile ["plan --reuse"]=indir ["plan --launcher"]=launcher ["plan --mix"]=mix
  ["plan --worth-budget"]=duration
)
for c in train run profile; do
  STRING_CLASS["$c --config"]=infile; STRING_CLASS["$c --preset"]=enum; STRING_CLASS["$c --budget"]=duration
  STRING_CLASS["$c --window-pattern"]=enum; STRING_CLASS["$c --ortho"]=enum; STRING_CLASS["$c --precision"]=enum
  STRING_CLASS["$c --run-dir"]=outdir; STRING_CLASS["$c --data"]=indir; STRING_CLASS["$c --cache"]=outdir
  STRING_CLASS["$c --resume"]=indir; STRING_CLASS["$c --save-every"]=saveevery
  STRING_CLASS["$c --data-order"]=enum; STRING_CLASS["$c --epoch-order"]=enum; STRING_CLASS["$c --crop-rest"]=enum; STRING_CLASS["$c --train-subset"]=enum
  STRING_CLASS["$c --mix"]=mix
done
# Numbers whose -1 or 9e18 is a meaningful value: a seed is any 63-bit number; a cap (tokens,
# characters) of 9e18 means no cap.
declare -A NUMBER_OK=(
  ["train --seed 9e18"]=1 ["run --seed 9e18"]=1 ["profile --seed 9e18"]=1 ["sample --seed 9e18"]=1
  ["research --seed 9e18"]=1
  ["train --eval-tokens 9e18"]=1 ["run --eval-tokens 9e18"]=1 ["profile --eval-tokens 9e18"]=1
  ["eval --eval-tokens 9e18"]=1
  ["train --train-tokens 9e18"]=1 ["run --train-tokens 9e18"]=1 ["profile --train-tokens 9e18"]=1
  ["tokenizer train --doc-cap 9e18"]=1 ["tokenizer train --max-chars 9e18"]=1
  ["prepare --doc-cap 9e18"]=1 ["prepare --max-chars 9e18"]=1
)
# Known failures in code this test's owner may not change (src/cli/cmd_research.c, src/research/,
# src/cli/cmd_train.c's apply_resume): "command flag value" -> owner and what to do.
# Known failures: "command flag value" -> what to do (none: every probe must pass).
declare -A XFAIL=()
n_probes=0; n_xfail=0
declare -A XSEEN=()

# the line of a probe's output that says what is wrong (the first that matches, any case)
MSG_RE='error|must|expect|unknown|invalid|no such|not a|needs|empty|only applies|is a folder'
# probe KEY COMMAND FLAG VALUE [ARGS...]: KEY names the probe in XFAIL (command flag VALUE or a
# word for it); the command runs with its BASE, the flag's CONTEXT, then ARGS (or FLAG VALUE).
probe() {
  local key=$1 cmd=$2 flag=$3 value=$4; shift 4
  local -a args=()
  read -r -a base <<<"${BASE[$cmd]}"
  read -r -a ctx <<<"${CONTEXT["$cmd $flag"]:-}"
  if [ $# -gt 0 ]; then args=("$@"); else args=("$flag" "$value"); fi
  local out rc
  out=$(timeout $TO $F $cmd "${base[@]}" "${ctx[@]}" "${args[@]}" </dev/null 2>&1); rc=$?
  # bash's own matching, not grep: the 1,600 probes forked ~6 helpers each, 30 of their 46 ms
  local msg="" line
  shopt -s nocasematch
  while IFS= read -r line; do [[ $line =~ $MSG_RE ]] && { msg=${line:0:300}; break; }; done <<<"$out"
  shopt -u nocasematch
  [ -z "$msg" ] && { msg=${out%%$'\n'*}; msg=${msg:0:300}; }
  local named=0; [[ $out == *"${MUST_NAME:-$flag}"* ]] && named=1
  local verdict=ok
  if [ "$rc" != 2 ] || [ $named = 0 ]; then verdict=FAIL; fi
  local xf=${XFAIL["$cmd $flag $key"]:-}
  n_probes=$((n_probes + 1))
  if [ -n "$xf" ]; then
    XSEEN["$cmd $flag $key"]=1
    if [ $verdict = ok ]; then verdict=XPASS; bad "$cmd $flag '$value' now exits 2 naming the flag: remove it from XFAIL"
    else verdict=xfail; n_xfail=$((n_xfail + 1)); echo "xfail: $cmd $flag '$value': exit $rc ($xf)"; fi
  elif [ $verdict = FAIL ]; then
    bad "$cmd ${args[*]}: exit $rc (want 2)$([ $named = 0 ] && echo ", message does not name ${MUST_NAME:-$flag}"): $msg"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$cmd" "$flag" "$value" "$rc" "$verdict" "${msg//$'\t'/ }" >> "$TSV"
}

# ---- the flags of a command, from its --help ----------------------------------------------------
# print_help writes "  --name METAVAR   help": one space between a flag and its metavar, then
# padding; a flag without a value is followed by the padding (two or more spaces) at once.
flags_of() {
  $F $1 --help | python3 -c '
import re, sys
lines = sys.stdin.read().split("\n")
start = next((i for i, l in enumerate(lines) if l == "options:"), len(lines))
for l in lines[start + 1:]:
    m = re.match(r"^  (-\S+)(?: (\S+))?(?:\s|$)", l)
    if m and m.group(1) != "--help":
        print(m.group(1), m.group(2) or "-")
'
}

commands=$($F help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && $1 != "help" { print $1 }')
[ -n "$commands" ] || { bad "frontier help lists no commands"; exit 1; }
list=()
for c in $commands; do
  case $c in
    tokenizer) for s in train encode decode stats; do list+=("tokenizer $s"); done;;
    kernels) for s in check bench; do list+=("kernels $s"); done;;
    research) list+=("research" "research report");;
    *) list+=("$c");;
  esac
done
# the sub-commands each parent lists in its own help must all be here
for p in tokenizer kernels; do
  for s in $($F $p --help | awk '/^  [a-z]+ +/ { print $1 }'); do
    printf '%s\n' "${list[@]}" | grep -qxF "$p $s" || bad "$p $s is in '$p --help' but not probed"
  done
done

cd "$tmp/work"  # every probe runs here (paths are absolute): nothing may be written into it
for cmd in "${list[@]}"; do
  [ -n "${BASE[$cmd]+x}" ] || { bad "no BASE arguments for '$cmd': add them"; continue; }
  fl=$(flags_of "$cmd")
  [ -n "$fl" ] || { bad "$cmd --help lists no options"; continue; }
  while read -r flag meta; do
    if [ "$meta" = - ]; then probe "=x" "$cmd" "$flag" "=x" "$flag=x"; continue; fi
    class=${STRING_CLASS["$cmd $flag"]:-}
    if [ -z "$class" ]; then  # numeric, or unclassified
      out=$(timeout $TO $F $cmd $flag abc </dev/null 2>&1)
      if [[ $out == *"$flag expects an integer"* ]]; then class=int
      elif [[ $out == *"$flag expects a finite number"* ]]; then class=number
      else bad "$cmd $flag $meta: not numeric and not in STRING_CLASS: classify it"; continue; fi
    fi
    case $class in
      int|number)
        vals=(abc "" nan inf 1e999 -1 9e18); [ $class = int ] && vals+=(1.5)
        for v in "${vals[@]}"; do
          [ -n "${NUMBER_OK["$cmd $flag $v"]:-}" ] && continue
          probe "$v" "$cmd" "$flag" "$v"
        done;;
      enum) for v in no-such-word ""; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      duration) for v in abc "" -1 0 nan inf 9e18 5parsecs; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      saveevery) for v in abc "" -1 nan inf 9e18 5parsecs 0steps -3steps 1.5steps; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      hours) for v in abc "" -1 0 nan inf; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      threshold) for v in abc "" -1 nan inf 9e18; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      threads) for v in abc "" 0 -1 1,,2 9e18 2000; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      tasks) probe EMPTY "$cmd" "$flag" ""; probe "," "$cmd" "$flag" ","; probe nosuch "$cmd" "$flag" "copa,nosuch";;
      infile) probe MISSING "$cmd" "$flag" "$tmp/missing.json"; probe EMPTY "$cmd" "$flag" ""; probe DIR "$cmd" "$flag" "$tmp/adir";;
      indir) probe MISSING "$cmd" "$flag" "$tmp/missing"; probe EMPTY "$cmd" "$flag" ""; probe FILE "$cmd" "$flag" "$tmp/afile";;
      inpath) probe MISSING "$cmd" "$flag" "$tmp/missing.jsonl"; probe EMPTY "$cmd" "$flag" "";;
      ckpt) probe MISSING "$cmd" "$flag" "$tmp/missing"; probe EMPTY "$cmd" "$flag" ""; probe FILE "$cmd" "$flag" "$tmp/afile"
            probe NOTRUN "$cmd" "$flag" "$tmp/adir";;
      outdir) probe EMPTY "$cmd" "$flag" ""; probe FILE "$cmd" "$flag" "$tmp/afile";;
      outfile) probe EMPTY "$cmd" "$flag" ""; probe DIR "$cmd" "$flag" "$tmp/adir";;
      alpha) for v in abc "" 0 0.5 -1 nan inf; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      command) probe EMPTY "$cmd" "$flag" "";;
      launcher) for v in "" "mpirun -np 1" "srun -w {host} {cmd}"; do probe "${v:-EMPTY}" "$cmd" "$flag" "$v"; done;;
      mix) for v in nosuch extra_wiki=2 extra_wiki=abc train,train extra_wiki=0.5,extra_books extra_wiki=1 \
                    train=0.5,extra_wiki=0.6 , val extra_wiki,; do probe "$v" "$cmd" "$flag" "$v"; done;;
      text) ;;
      *) bad "unknown class '$class' for $cmd $flag";;
    esac
  done <<<"$fl"
done

# ---- positional arguments, and combinations -----------------------------------------------------
# (MUST_NAME: what the message must name when it is not a flag)
BASE[report]=""; BASE[score]=""; BASE["research report"]=""; BASE[train]=""
for c in report score "research report"; do
  for what in MISSING FILE NOTRUN; do
    case $what in MISSING) p=$tmp/missing;; FILE) p=$tmp/afile;; NOTRUN) p=$tmp/adir;; esac
    MUST_NAME=$p probe "DIR $what" "$c" DIR "$p" "$p"
  done
done
MUST_NAME=abc probe abc "tokenizer decode" ID abc abc
MUST_NAME="outside the vocabulary" probe 99999 "tokenizer decode" ID 99999 99999
MUST_NAME=-1 probe -1 "tokenizer decode" ID -1 -- -1
# train: a flag that contradicts the run being resumed; batches whose rows do not fit or split
probe CONFLICT train --resume "$RUN --depth 3" --resume "$RUN" --depth 3
probe "2^40 with T 1" train --batch-tokens "2^40 --seq-len 1" --batch-tokens 1099511627776 --seq-len 1
probe "not a multiple" train --batch-tokens 1000 --batch-tokens 1000 --device-batch 4 --seq-len 64

cd "$ROOT"
for k in "${!XFAIL[@]}"; do [ -n "${XSEEN[$k]:-}" ] || bad "XFAIL entry '$k' was not probed: remove or fix it"; done
[ -z "$(ls -A "$tmp/work")" ] && ok "no probe wrote anything in its working folder" || bad "probes wrote: $(ls "$tmp/work")"
[ ! -e "$tmp/runs" ] && ok "no training run was started" || bad "a probe started a run: $(ls "$tmp/runs")"
echo "bad flags: $n_probes probes over ${#list[@]} commands, $n_xfail known failures (xfail), $fails failed; table in $TSV"
[ "$fails" -eq 0 ]
