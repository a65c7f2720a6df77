# bench/lib.sh — helpers for benchmark scripts (sourced).

# The commit the binary under test was built from (`frontier info`'s build line; +dirty when its
# sources differed): what a result row names, not the checkout's HEAD at the time.
bench_build() { "${1:-${FRONTIER:-./frontier}}" info | sed -n 's/^build: *//p'; }

# "2026-11-30, AMD EPYC (2 logical CPUs), Linux 6.x"
bench_machine() {
  local cpu; cpu=$(./frontier info | sed -n 's/^cpu: *//p')
  echo "$(date -u +%Y-%m-%d), $cpu ($(nproc) logical CPUs), $(uname -sr)"
}

# "_amx" where frontier's bf16 kernels run on AMX tiles, else "": a bf16 benchmark writes such a
# machine's figures to a section of their own (bench:gemm_amx), so the AVX512_BF16 tables stay
bench_isa_suffix() { [ "$(./frontier info | sed -n 's/^kernels: *\([a-z0-9_]*\).*/\1/p')" != amx ] || echo _amx; }

# replace_section NAME FILE: put FILE's content between <!-- bench:NAME --> markers in docs/perf.md
replace_section() {
  local name=$1 body=$2 perf=docs/perf.md
  [ -f "$perf" ] || printf '# Measured performance\n\nWritten by `make bench` (bench/run.sh); each section by one benchmark, with its date, machine and command.\n' > "$perf"
  local begin="<!-- bench:$name -->" end="<!-- /bench:$name -->"
  if grep -qF "$begin" "$perf"; then replace_doc_section "$name" "$body" "$perf"; return; fi
  { echo; echo "$begin"; cat "$body"; echo "$end"; } >> "$perf"
}

# replace_doc_section NAME FILE DOC: put FILE's content between the <!-- bench:NAME --> markers of
# DOC (a docs page whose section a benchmark owns); without the markers, say so and leave DOC as it is
replace_doc_section() {
  local name=$1 body=$2 doc=$3
  local begin="<!-- bench:$name -->" end="<!-- /bench:$name -->"
  if ! grep -qF "$begin" "$doc"; then echo "$doc has no $begin markers: the table is above" >&2; return 0; fi
  local tmp; tmp=$(mktemp)
  awk -v b="$begin" -v e="$end" -v f="$body" '
    $0 == b { print; while ((getline line < f) > 0) print line; skip = 1; next }
    $0 == e { skip = 0 }
    !skip { print }' "$doc" > "$tmp"
  mv "$tmp" "$doc"
}

# ratio A B -> "A/B" with two decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# duration_s 90s|2m|1h|45 -> seconds (frontier's --budget forms)
duration_s() {
  case $1 in
    *s) echo "${1%s}" ;; *m) echo $(( ${1%m} * 60 )) ;; *h) echo $(( ${1%h} * 3600 )) ;; *) echo "$1" ;;
  esac
}

# seed_fits WHO SEED NEED_S T_END ARM...: 0 when every ARM of SEED is recorded (the caller's
# `recorded ARM SEED`) or the time left until T_END (epoch seconds) holds NEED_S for each missing one;
# else says so and returns 1. A seed's arms are paired: an arm finished in another sitting, often on
# another machine (up to 1.5x faster or slower at the same wall clock), is no pair.
seed_fits() {
  local who=$1 s=$2 need=$3 t_end=$4 missing=0 arm
  shift 4
  for arm in "$@"; do recorded "$arm" "$s" || missing=$((missing + 1)); done
  { [ "$missing" = 0 ] || [ $(( t_end - $(date +%s) )) -gt $(( missing * need )) ]; } && return 0
  echo "$who: MAX_MINUTES=${MAX_MINUTES:-?} leaves too little for seed $s's $missing arms; run again to continue"
  return 1
}

# bench_commit STATE MSG: commit the folder STATE (a resumable benchmark's recorded state) and
# nothing else, when COMMIT=1 (the default) and this is a checkout; a no-op when nothing changed.
bench_commit() {
  [ "${COMMIT:-1}" = 1 ] && git rev-parse --git-dir > /dev/null 2>&1 || return 0
  git add -A -- "$1" && git diff --cached --quiet -- "$1" && return 0
  git commit -q -m "$1: $2" -- "$1" && echo "$(basename "$0"): committed $1 ($2)"
}
