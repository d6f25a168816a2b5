# lbr2prof - build, test and demo.
#
#   make            build build/lbr2prof (and build/liblbr2prof.a)
#   make demo       install deps, build, run the main job on inputs/
#   make check      install deps; -Werror build + all tests; then the same
#                   tests again under AddressSanitizer + UBSan (build-asan/)
#   make fuzz       build the libFuzzer targets (clang-19) into build-fuzz/
#
# Sources are found by wildcard: a new module is a new folder under src/,
# a new command a new src/builtin/cmd_*.c, a new test a new tests/unit/test_*.c
# or tests/e2e/test_*.sh. Nothing here needs editing for those.

CC      ?= cc
BUILD   ?= build
SAN     ?=
OPT     ?= -O2

PKGS_CFLAGS := $(shell pkg-config --cflags capstone libdw libelf libzstd 2>/dev/null)
CFLAGS_ALL  = -std=gnu11 $(OPT) -g -Wall -Wextra -Werror -Wno-missing-field-initializers \
              -D_GNU_SOURCE -Iinclude -Isrc $(PKGS_CFLAGS) $(SANFLAGS) $(CFLAGS)
# libpfm4, libmicrohttpd and libstdc++ are not linked: record, serve and
# the demangler dlopen them at first use (src/util/dynlib.h,
# docs/dependencies.md), so the other commands do not load them.
LDLIBS_ALL  = -ldw -lelf -lcapstone -lipt -lzstd -ljansson -lxxhash -lz -lpthread -lm $(LDLIBS)

ifeq ($(SAN),1)
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
endif

LIB_SRCS   := $(filter-out src/cli/% src/builtin/%,$(wildcard src/*/*.c))
CLI_SRCS   := $(wildcard src/cli/*.c) $(wildcard src/builtin/*.c)
UNIT_SRCS  := $(wildcard tests/unit/test_*.c)
HELPER_SRCS:= $(wildcard tests/unit/helpers/*.c)
HEADERS    := $(wildcard include/lbr2prof/*.h) $(wildcard src/*/*.h) $(wildcard tests/unit/helpers/*.h)

LIB_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
CLI_OBJS   := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
HELPER_OBJS:= $(patsubst %.c,$(BUILD)/obj/%.o,$(HELPER_SRCS))
UNIT_BINS  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

.PHONY: all deps demo check test unit e2e fuzz clean print-ldlibs
all: $(BUILD)/lbr2prof

deps:
	@./scripts/install-deps.sh

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/gen/builtins.inc: $(wildcard src/builtin/*.c)
	@mkdir -p $(dir $@)
	@grep -h 'LP_BUILTIN[_A-Z]*(' $^ /dev/null | sed 's/.*\(LP_BUILTIN[_A-Z]*(.*)\).*/\1/' | sort > $@.tmp
	@mv $@.tmp $@

$(BUILD)/obj/src/cli/main.o: $(BUILD)/gen/builtins.inc
$(BUILD)/obj/src/cli/main.o: CFLAGS_ALL += -I$(BUILD)/gen
# lp_digest_inline's AVX2 code (util/hash.h calls it only where the CPU has AVX2)
ifeq ($(shell uname -m),x86_64)
$(BUILD)/obj/src/util/digest_avx2.o: CFLAGS_ALL += -mavx2
build-fuzz/obj/src/util/digest_avx2.o: FUZZ_CFLAGS += -mavx2
endif

$(BUILD)/liblbr2prof.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/lbr2prof: $(CLI_OBJS) $(BUILD)/liblbr2prof.a
	$(CC) $(CFLAGS_ALL) -o $@ $(CLI_OBJS) $(BUILD)/liblbr2prof.a $(LDLIBS_ALL)

$(BUILD)/tests/%: tests/unit/%.c $(HELPER_OBJS) $(BUILD)/liblbr2prof.a $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Itests/unit -o $@ $< $(HELPER_OBJS) $(BUILD)/liblbr2prof.a -lcmocka $(LDLIBS_ALL)

# The in-process unwinder tests walk their own frames.
$(BUILD)/tests/test_fpunwind: private CFLAGS_ALL += -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer

unit: $(UNIT_BINS)
e2e: $(BUILD)/lbr2prof

# Run every test of one build (BUILD=..., SAN=...).
test: $(BUILD)/lbr2prof $(UNIT_BINS)
	@./tests/run.sh $(BUILD)

# the builds that demo and check start use every core
JOBS := -j$(shell nproc 2>/dev/null || echo 2)

demo: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@./scripts/demo.sh $(BUILD)

check: deps
	@$(MAKE) --no-print-directory $(JOBS) all unit BUILD=build
	@$(MAKE) --no-print-directory $(JOBS) all unit BUILD=build-asan SAN=1 OPT=-O1
	@./tests/check.sh build build-asan

# The library is compiled once for all fuzz targets (instrumented, without
# libFuzzer's main), in parallel; each target then links against it.
FUZZ_SRCS   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_CFLAGS  = -std=gnu11 -O1 -g -D_GNU_SOURCE -Iinclude -Isrc $(PKGS_CFLAGS)
FUZZ_OBJS   := $(patsubst %.c,build-fuzz/obj/%.o,$(LIB_SRCS))
FUZZ_BINS   := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(FUZZ_SRCS))
fuzz: deps
	@$(MAKE) --no-print-directory $(JOBS) $(FUZZ_BINS)
.SECONDARY: $(FUZZ_OBJS)

build-fuzz/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	clang-19 $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS) $(HEADERS)
	@echo "  FUZZ $(notdir $@)"
	@clang-19 $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< tests/fuzz/common/artifact_dir.c $(FUZZ_OBJS) -o $@ $(LDLIBS_ALL)

clean:
	rm -rf build build-asan build-fuzz

# The libraries a program linking liblbr2prof.a needs (test helpers).
print-ldlibs:
	@echo $(LDLIBS_ALL)
