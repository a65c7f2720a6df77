#!/usr/bin/env bash
# scripts/setup.sh — install what frontier needs to build, test and run on Debian 12.
#
# Idempotent: checks each package first and calls apt-get only for the missing ones, so the
# second run is a no-op that takes well under a second. `make run`, `make test` and .ci/run
# call it first (and then start a new make, so that the Makefile's detection of MPI sees what was
# installed here). Set FRONTIER_SKIP_SETUP=1 to skip it (e.g. on a non-Debian machine where you
# installed the equivalents yourself).
set -euo pipefail

[ "${FRONTIER_SKIP_SETUP:-0}" = 1 ] && exit 0

# Build: compilers, OpenMP, PCRE2 (pre-split regex), cJSON (JSON), libyaml (CORE task list),
# libcsv (RFC 4180 CSV: profile.csv, read back by `frontier report`), OpenSSL's libcrypto
# (SHA-256 content ids). Benchmarks: oneDNN (bench/bench_gemm only, the
# matmul comparison). Tests: cmocka; Python's `regex` for the split fixtures' generator; numpy
# + PyTorch (Debian's, for /usr/bin/python3) for the PyTorch parity test; Node.js + npm for
# the tiktoken interop test and the report's screenshot check; Chromium (headless) and a font for rendering `frontier report`'s page in tests/report/test_report.sh.
# The PyTorch peer of bench/train_throughput.sh, set up as PyTorch's CPU guides say: OpenBLAS
# as the system BLAS (python3-torch links the generic libblas.so.3; the reference one runs its
# fp32 matmuls at ~4 GFLOP/s) and tcmalloc for LD_PRELOAD (glibc's malloc makes PyTorch fault its
# large tensors in again every step).
# OpenMPI: data-parallel training (`mpirun -np N ./frontier train`) and its tests.
# libclang-rt-14-dev: clang's libFuzzer and sanitizer runtimes (`make fuzz`, tests/fuzz/).
# libsimde-dev: SIMDe's portable AVX-512, for the build that runs the AVX-512 kernels' tests on
# a CPU without AVX-512 (kernels/simd/isa_avx512.h, tests/kernels/test_avx512_emulated.sh).
PACKAGES=(
  build-essential clang libomp-dev pkg-config libclang-rt-14-dev
  libpcre2-dev libcjson-dev libyaml-dev libcsv-dev libssl-dev
  openmpi-bin libopenmpi-dev
  libcmocka-dev libsimde-dev
  libdnnl-dev
  python3 python3-regex python3-numpy python3-torch
  libopenblas0-openmp libtcmalloc-minimal4
  nodejs npm
  chromium fonts-dejavu-core
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# nodejs/npm may come from elsewhere (nvm, a newer distribution): a working node+npm is enough.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]:-}"
[ "${#missing[@]}" -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "setup: missing packages: ${missing[*]}; no apt-get here — install them by hand" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
