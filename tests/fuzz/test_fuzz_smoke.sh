#!/usr/bin/env bash
# tests/fuzz/test_fuzz_smoke.sh — a short run of every fuzz harness (part of `make test`): builds
# them if needed (make fuzz-build: clang, libFuzzer, ASan + UBSan, in build/fuzz/), then runs each
# over its committed seeds and ~1 s of new inputs (FUZZ_SMOKE_SECONDS). Any crash, sanitizer
# report or broken property fails it. Without clang's libFuzzer runtime (Debian: libclang-rt-14-dev,
# installed by scripts/setup.sh) it cannot run: exit 77 (skip), or 1 under CI=true.
set -uo pipefail
cd "$(dirname "$0")/../.."
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' > "$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" > "$probe/log" 2>&1; then
  echo "SKIP: clang cannot build a libFuzzer harness (is libclang-rt-14-dev installed?):"
  head -3 "$probe/log"
  [ "${CI:-}" = true ] && { echo "FAIL: the fuzz smoke test cannot run under CI"; exit 1; }
  exit 77
fi
if ! make --no-print-directory -j2 fuzz-build > "$probe/build.log" 2>&1; then
  echo "FAIL: make fuzz-build"; tail -20 "$probe/build.log"; exit 1
fi
FUZZ_SECONDS=${FUZZ_SMOKE_SECONDS:-1} FUZZ_WORK="$probe/corpus" bash tests/fuzz/run.sh
