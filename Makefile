# frontier — build, test, benchmark.
#
#   make            build ./frontier
#   make test       install missing packages, build, run every test (unit + interop; the AVX-512
#                   kernels also in an emulation build, build/emu512/, on CPUs without them)
#   make sanitize   unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      benchmarks; results go to docs/perf.md
#   make fuzz       the libFuzzer harnesses (tests/fuzz/), FUZZ_SECONDS each (default 60)
#   make run        install missing packages, build, run the main job
#   make clean
#   make test-nosetup (and run-, sanitize-, bench-, fuzz-nosetup): the same without scripts/setup.sh
#
# CC=clang works too. Objects go to build/<variant>/ with header dependencies tracked.

# Every core builds by default (`make test` and CI run plain make; a fresh build of the binary, ~45
# test binaries and the AVX-512 emulation build took 108 s on one of 2 cores, 57 s on both); a -j
# on the command line still wins. Top level only: sub-makes share its jobserver.
ifeq (0,$(MAKELEVEL))
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

CC       ?= gcc
OPT      ?= -O2 -g
# The reference kernels are plain C; letting the compiler target this CPU (AVX-512 where present)
# makes them ~3x faster. `make ARCH=` builds a portable binary.
ARCH     ?= -march=native
SANITIZE ?=
# MPI (data-parallel training, src/dist/) when its development files are installed; `make MPI=0`
# builds the one-process binary. The MPI package's pkg-config names: OpenMPI, then MPICH.
MPI      ?= 1
MPI_PC   := $(if $(filter 1,$(MPI)),$(firstword $(foreach p,ompi-c mpich,$(shell pkg-config --exists $(p) 2>/dev/null && echo $(p)))))
MPI_CFLAGS := $(if $(MPI_PC),-DFRONTIER_MPI $(shell pkg-config --cflags $(MPI_PC)))
MPI_LIBS   := $(if $(MPI_PC),$(shell pkg-config --libs $(MPI_PC)))
# -fno-math-errno: nothing reads errno after sqrt/exp, and keeping it alive stops loops with
# sqrtf from vectorising (AdamW's `omp simd` update stayed scalar). Results are unchanged.
ALL_CFLAGS = $(OPT) $(ARCH) $(SANITIZE) -std=gnu17 -Wall -Wextra -fopenmp -fno-math-errno -Isrc -D_GNU_SOURCE $(MPI_CFLAGS) $(CFLAGS)
ALL_LIBS   = $(SANITIZE) -fopenmp -lpcre2-8 -lcjson -lyaml -lcsv -lcrypto -lm $(MPI_LIBS) $(LDLIBS)
TEST_LIBS  = -lcmocka

SRC      := $(shell find src -name '*.c' | sort)
LIB_SRC  := $(filter-out src/main.c,$(SRC))
TEST_SRC := $(shell find tests -name 'test_*.c' | sort)
BENCH_SRC := $(shell find bench -name '*.c' | sort)
TOOL_SRC := $(shell find tests -name 'tool_*.c' | sort)

BUILD    ?= build/release
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:%.c=$(BUILD)/%)
BENCH_BIN := $(BENCH_SRC:%.c=$(BUILD)/%)
TOOL_BIN := $(TOOL_SRC:%.c=$(BUILD)/%)

.PHONY: all unit-tests setup clean fuzz-build fuzz-bins
all: frontier

# Everything built depends on the flags it was built with (FLAGS_STAMP holds them and changes only
# when they do): objects compiled before MPI was installed, or for another ARCH, are rebuilt
# rather than linked into a binary that silently lacks what the flags now ask for.
FLAGS_STAMP := $(BUILD)/.flags
BUILD_FLAGS := $(CC) $(ALL_CFLAGS) $(ALL_LIBS)
$(shell mkdir -p $(BUILD) && { printf '%s\n' '$(BUILD_FLAGS)' | cmp -s - $(FLAGS_STAMP) || printf '%s\n' '$(BUILD_FLAGS)' > $(FLAGS_STAMP); })

# The commit the binary is built from (+dirty when src/ or the Makefile differ from it), in a
# header rewritten only when it changes: summary.json and a research's command.sh name the code
# that ran, not whatever the working directory holds when it runs.
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell git rev-parse --git-dir > /dev/null 2>&1 && { git diff --quiet HEAD -- src Makefile || echo +dirty; })
$(shell printf '#define FRONTIER_GIT_COMMIT "%s"\n' '$(GIT_COMMIT)' | cmp -s - $(BUILD)/git_commit.h || printf '#define FRONTIER_GIT_COMMIT "%s"\n' '$(GIT_COMMIT)' > $(BUILD)/git_commit.h)
$(BUILD)/src/train/summary.o: ALL_CFLAGS += -I$(BUILD)

frontier: $(BUILD)/src/main.o $(LIB_OBJ) $(FLAGS_STAMP)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(ALL_LIBS)

# The same binary inside a build folder (the sanitizer build's end-to-end run uses it).
$(BUILD)/frontier: $(BUILD)/src/main.o $(LIB_OBJ) $(FLAGS_STAMP)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(ALL_LIBS)

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(LIB_OBJ) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests -MMD -MP -o $@ $< $(LIB_OBJ) $(ALL_LIBS) $(TEST_LIBS)

$(BUILD)/bench/%: bench/%.c $(LIB_OBJ) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $< $(LIB_OBJ) $(ALL_LIBS)

# bench_gemm compares the matmuls with oneDNN's (libdnnl-dev: a benchmark-only dependency).
$(BUILD)/bench/bench_gemm: bench/bench_gemm.c $(LIB_OBJ) $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $< $(LIB_OBJ) $(ALL_LIBS) -ldnnl

-include $(shell find build -name '*.d' 2>/dev/null)

setup:
	@bash scripts/setup.sh

# Entry points that install missing packages first. Each runs scripts/setup.sh and then a new
# make for NAME-nosetup: that make reads this Makefile afresh, so what it detects when parsed
# (MPI_PC, through pkg-config) sees the packages setup has just installed; on a fresh machine the
# first `make run` builds with MPI. To add an entry point NAME: list it here and write its recipe
# as NAME-nosetup.
SETUP_TARGETS := run test sanitize bench fuzz
.PHONY: $(SETUP_TARGETS) $(SETUP_TARGETS:%=%-nosetup)
$(SETUP_TARGETS): setup
	@$(MAKE) --no-print-directory $@-nosetup

unit-tests: $(TEST_BIN) $(TOOL_BIN)

# The AVX-512 emulation build (kernels/simd/isa_avx512.h): the AVX-512, AVX512_BF16 and emulated
# AMX kernels on SIMDe's portable intrinsics, so that tests/kernels/test_avx512_emulated.sh checks
# their logic on any AVX2 machine. Its own build folder; the binary and the kernel tests only.
# -Wno-psabi: SIMDe's out-of-line functions take 64-byte vectors by value, which gcc notes (an ABI
# remark, not a defect) at every one.
EMU512 := build/emu512
EMU512_TESTS := $(patsubst %.c,$(EMU512)/%,$(filter tests/kernels/%,$(TEST_SRC)))
.PHONY: emulated-avx512
emulated-avx512:
	@$(MAKE) --no-print-directory BUILD=$(EMU512) CFLAGS="$(CFLAGS) -DFRONTIER_EMULATE_AVX512 -Wno-psabi" \
	  $(EMU512)/frontier $(EMU512_TESTS)

# Every test: the cmocka unit tests, then the end-to-end checks (CLI, interop with tiktoken).
test-nosetup: frontier unit-tests emulated-avx512
	@bash tests/run.sh $(TEST_BIN)

# The unit tests under ASan + UBSan, in their own build folder, then the whole path end to end
# (train with checkpoints, a kill, resume, eval, CORE, sample, profile) with the sanitized binary.
sanitize-nosetup:
	@$(MAKE) --no-print-directory BUILD=build/sanitize OPT="-O1 -g -fno-omit-frame-pointer" \
	  SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined" unit-tests build/sanitize/frontier
	@ASAN_OPTIONS=detect_leaks=1 FRONTIER_UNIT_ONLY=1 bash tests/run.sh \
	  $(patsubst $(BUILD)/%,build/sanitize/%,$(TEST_BIN))
	@FRONTIER_BIN=build/sanitize/frontier bash tests/train/sanitize_e2e.sh

# Fuzzing (tests/fuzz/README.md): clang's libFuzzer with ASan + UBSan, in build/fuzz/; the
# library is built with coverage instrumentation (fuzzer-no-link), each harness links the driver.
FUZZ_SRC := $(shell find tests/fuzz -name 'fuzz_*.c' | sort)
FUZZ_BIN := $(FUZZ_SRC:%.c=$(BUILD)/%)
FUZZ_SECONDS ?= 60
# Only what the readers and the models they load need (the commands are not built).
FUZZ_LIB := $(filter $(addprefix src/,data/shard.c data/loader.c tokenizer/% util/% model/% optim/% kernels/% \
  dist/% profile/% train/checkpoint.c train/settings.c data/mix.c data/prepare.c data/corpus.c cli/args.c research/ledger.c \
  eval/core_tasks.c),$(LIB_SRC))
FUZZ_OBJ := $(FUZZ_LIB:%.c=$(BUILD)/%.o)
$(BUILD)/tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -Itests -MMD -MP -o $@ $< $(FUZZ_OBJ) $(ALL_LIBS)
fuzz-bins: $(FUZZ_BIN)
fuzz-build:
	@$(MAKE) --no-print-directory CC=clang BUILD=build/fuzz MPI=0 OPT="-O1 -g -fno-omit-frame-pointer -Wno-pass-failed" FUZZ=1 fuzz-bins
ifeq ($(FUZZ),1)
SANITIZE := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
# The kernels never see fuzz input (the harnesses only load weights) and instrumenting them costs
# minutes (~50 s for the AVX-512 GEMMs alone): they are built plain.
$(BUILD)/src/kernels/%.o: SANITIZE :=
$(BUILD)/src/kernels/%.o: OPT := -O2 -g
endif
fuzz-nosetup:
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh

bench-nosetup: frontier $(BENCH_BIN)
	@BUILD=$(BUILD) bash bench/run.sh

run-nosetup: frontier
	./frontier run

clean:
	rm -rf build frontier
