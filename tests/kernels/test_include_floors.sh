#!/usr/bin/env bash
# tests/kernels/test_include_floors.sh — no #include "kernels/..." inside src/kernels goes from a lower
# floor up to a higher one (the floors: src/kernels/README.md, Layout). Lists any that do, and fails.
# With a folder argument, measures that tree instead (e.g. an older checkout) and only reports.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
root=${1:-src/kernels}
floor() {
  case $1 in
    simd/*|cpu/*) echo 0 ;;
    ops.h) echo 1 ;;
    ref.h|ref/*) echo 2 ;;
    rows/*) echo 3 ;;
    gemm/*) echo 4 ;;
    attention/*|head/*) echo 5 ;;
    kernels.h|kernels.c|prof_kernels.*|cost.*) echo 6 ;;
    lab/*) echo 7 ;;
    *) echo "?" ;;
  esac
}
up=0 unknown=0
while IFS= read -r f; do
  rel=${f#"$root"/}; ff=$(floor "$rel")
  while IFS= read -r inc; do
    fi_=$(floor "$inc")
    if [ "$ff" = "?" ] || [ "$fi_" = "?" ]; then echo "no floor: $rel -> $inc"; unknown=$((unknown + 1))
    elif [ "$fi_" -gt "$ff" ]; then echo "up: $rel ($ff) -> $inc ($fi_)"; up=$((up + 1)); fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"kernels\/\([^"]*\)".*/\1/p' "$f")
done < <(find "$root" -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' \) | sort)
echo "$up upward includes, $unknown without a floor"
[ $# -gt 0 ] || [ $((up + unknown)) -eq 0 ]
