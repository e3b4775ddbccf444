# SPDX-License-Identifier: MIT
# perfvisor build. `make` builds everything, `make check` runs every test,
# `make run` boots the demo guest, `make bench` measures. Missing Debian
# packages are installed by scripts/deps.sh (quiet when all are present).

BUILD ?= build
CC ?= gcc
Q ?= @

# Components: each is a static library with one public header. DEPS_<c>
# names the libraries a component may use; its unit tests link only those.
# A component's DEPS are every library it links, in link order (each before
# those it uses).
COMPONENTS := util elf machine snapfile devices stats pmu vmm
DEPS_util :=
DEPS_elf := util
DEPS_machine := elf util
LIBS_machine := -llzma -lz -lzstd -lxxhash
DEPS_snapfile := machine elf util
DEPS_devices := snapfile machine elf util
DEPS_stats := util
LIBS_stats := -ljansson
DEPS_pmu := snapfile machine elf util
LIBS_pmu := -ljansson -lbpf
DEPS_vmm := devices pmu snapfile machine elf stats util
# System libraries a component's code needs (its unit tests link them too):
# liblzma, zlib and libzstd for a bzImage's compressed payload (machine's
# loader decompresses it on the host; xxhash checks the kernel cache's
# files, machine/kcache.c), libfdt for the snapshot state file,
# xxhash for its checksums, liburing for snapshot memory I/O, jansson for the
# control socket, libseccomp for the per-thread filters, libbpf for a Linux
# guest kernel's BTF (the profiler's process attribution).
LIBS_snapfile := -lfdt -lxxhash -luring
LIBS_vmm := $(LIBS_snapfile) $(LIBS_machine) -ljansson -lseccomp -lbpf

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-missing-field-initializers
CFLAGS_BASE := -std=gnu11 -O2 -g $(WARN) -Iinclude -I. -D_GNU_SOURCE -pthread -MMD -MP
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDLIBS := -pthread
CRITERION_LIBS := -lcriterion
# The perfvisor binary's libraries, each before those it uses.
LINK_ORDER := vmm $(DEPS_vmm)

all: deps-check host guests linux-module

# ---------------------------------------------------------------- deps
DEPS_STAMP := $(BUILD)/.deps-ok
deps:
	$(Q)bash scripts/deps.sh build
deps-check: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/deps.sh
	$(Q)bash scripts/deps.sh build
	$(Q)mkdir -p $(BUILD) && touch $@

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_NAMES := $(patsubst tests/unit/%.c,%,$(UNIT_SRCS))

# ---------------------------------------------------------------- host code
# $(1) = variant dir (build or build/asan), $(2) = extra flags
define host_variant
$(1)/obj/%.o: %.c | $(DEPS_STAMP)
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)echo "  CC      $$@"
	$$(Q)$$(CC) $$(CFLAGS_BASE) $(2) -c $$< -o $$@

$(foreach c,$(COMPONENTS),
$(1)/lib$(c).a: $$(patsubst %.c,$(1)/obj/%.o,$$(filter-out vmm/main.c stats/exporter.c,$$(wildcard $(c)/*.c)))
	$$(Q)echo "  AR      $$@"
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
)

$(1)/perfvisor: $(1)/obj/vmm/main.o $(patsubst %,$(1)/lib%.a,$(COMPONENTS))
	$$(Q)echo "  LD      $$@"
	$$(Q)$$(CC) $(2) -o $$@ $(1)/obj/vmm/main.o -L$(1) $(foreach c,$(LINK_ORDER),-l$(c)) $$(LIBS_vmm) $$(LDLIBS)

# `perfvisor exporter` execs this sibling: only it links libmicrohttpd (and
# the GnuTLS stack that comes with it), so perfvisor run starts without them.
$(1)/perfvisor-exporter: $(1)/obj/stats/exporter.o $(1)/libstats.a $(1)/libutil.a
	$$(Q)echo "  LD      $$@"
	$$(Q)$$(CC) $(2) -o $$@ $(1)/obj/stats/exporter.o -L$(1) -lstats -lutil -lmicrohttpd -ljansson $$(LDLIBS)

# Unit tests: tests/unit/test_<component>[_*].c, linked with that
# component and its declared dependencies only.
$(foreach c,$(COMPONENTS),
$(patsubst %,$(1)/tests/%,$(filter test_$(c) test_$(c)_%,$(UNIT_NAMES))): $(1)/tests/%: $(1)/obj/tests/unit/%.o $(1)/lib$(c).a $(patsubst %,$(1)/lib%.a,$(DEPS_$(c)))
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)echo "  LD      $$@"
	$$(Q)$$(CC) $(2) -o $$@ $$< -L$(1) -l$(c) $(patsubst %,-l%,$(DEPS_$(c))) $$(LIBS_$(c)) $(foreach d,$(DEPS_$(c)),$$(LIBS_$(d))) $$(CRITERION_LIBS) $$(LDLIBS)
)
endef

$(eval $(call host_variant,$(BUILD),))
$(eval $(call host_variant,$(BUILD)/asan,$(SAN_FLAGS)))

host: $(BUILD)/perfvisor $(BUILD)/perfvisor-exporter $(patsubst %,$(BUILD)/tests/%,$(UNIT_NAMES))
asan: $(BUILD)/asan/perfvisor $(BUILD)/asan/perfvisor-exporter $(patsubst %,$(BUILD)/asan/tests/%,$(UNIT_NAMES))

# ---------------------------------------------------------------- guests
-include guest-images/guests.mk

# ---------------------------------------------------------------- the guest's perf driver
# guest-drivers/linux/perfvisor_pmu.ko for the Debian kernel the Linux tests boot, against
# its linux-headers package (docs/guest-perf.md); Kbuild decides what to rebuild.
KMOD := $(BUILD)/guest-drivers/linux/perfvisor_pmu.ko
linux-module: $(KMOD)
$(KMOD): guest-drivers/linux/perfvisor_pmu.c guest-drivers/linux/Kbuild include/perfvisor/pvpmu.h \
		scripts/linux-module.sh | $(DEPS_STAMP)
	$(Q)bash scripts/linux-module.sh $(BUILD)

# ---------------------------------------------------------------- bench
# `make bench` helpers (bench/run.sh uses them): the stopwatch, the
# minimal guest, as a perfvisor ELF and as a QEMU microvm -bios image, and
# the statistics benchmark; the tap maker of the virtio-net tests, for the network benchmark.
BENCH_OUT := $(BUILD)/bench
BENCH_BINS := $(BENCH_OUT)/spawn $(BENCH_OUT)/min64.elf $(BENCH_OUT)/minbios.bin $(BENCH_OUT)/minmb.elf \
	$(BENCH_OUT)/stats_bench $(BUILD)/tests/mktap
$(BENCH_OUT)/spawn: bench/spawn.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) -D_GNU_SOURCE -o $@ $<
$(BENCH_OUT)/stats_bench: bench/stats_bench.c $(BUILD)/libstats.a $(BUILD)/libutil.a | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -o $@ $< -L$(BUILD) -lstats -lutil $(LDLIBS)
$(BENCH_OUT)/min64.elf: bench/min64.S bench/minguest.h
	$(Q)mkdir -p $(dir $@) && echo "  AS      $@"
	$(Q)$(CC) -I. -c $< -o $(BENCH_OUT)/min64.o
	$(Q)ld -static -nostdlib --build-id=none -z max-page-size=4096 -z noseparate-code -Ttext=0x100000 -o $@ $(BENCH_OUT)/min64.o
$(BENCH_OUT)/minmb.elf: bench/minmb.S bench/minguest.h
	$(Q)mkdir -p $(dir $@) && echo "  AS      $@"
	$(Q)$(CC) -m32 -I. -c $< -o $(BENCH_OUT)/minmb.o
	$(Q)ld -m elf_i386 -static -nostdlib --build-id=none -z max-page-size=4096 -z noseparate-code -Ttext-segment=0x100000 \
		-o $@ $(BENCH_OUT)/minmb.o
$(BENCH_OUT)/minbios.bin: bench/minbios.S bench/minguest.h
	$(Q)mkdir -p $(dir $@) && echo "  AS      $@"
	$(Q)$(CC) -m32 -I. -c $< -o $(BENCH_OUT)/minbios.o
	$(Q)ld -m elf_i386 -nostdlib --build-id=none -e 0 -Ttext=0 -o $(BENCH_OUT)/minbios.elf $(BENCH_OUT)/minbios.o
	$(Q)objcopy -O binary -j .text $(BENCH_OUT)/minbios.elf $@
bench: $(BENCH_BINS)

# ---------------------------------------------------------------- tests
unit: host asan
	$(Q)bash tests/run-unit.sh $(BUILD) $(UNIT_NAMES)

# Test helpers the integration tests run inside the (busybox) test host.
$(BUILD)/tests/jsoncheck: tests/integration/jsoncheck.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) -o $@ $< -ljansson

$(BUILD)/tests/apiclients: tests/integration/apiclients.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) -o $@ $<
$(BUILD)/tests/mktap: tests/integration/mktap.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) -o $@ $<
$(BUILD)/tests/kvmcpuid: tests/integration/kvmcpuid.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) -o $@ $<
$(BUILD)/tests/fdtset: tests/integration/fdtset.c | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O2 $(WARN) -o $@ $< -lfdt -lxxhash
$(BUILD)/tests/statsread: tests/integration/statsread.c $(BUILD)/libstats.a $(BUILD)/libutil.a | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -MF /dev/null -o $@ $< -L$(BUILD) -lstats -lutil $(LDLIBS)

# The invariant checker compiled against each frozen stats ABI (tests/abi/vN).
STATS_ABI_VERSIONS := v1
# Each takes the meanings its version's documents state (tests/abi/vN/meanings.c).
$(BUILD)/stats-check-%: tests/abi/%/perfvisor/stats_abi.h tests/abi/%/meanings.c tests/abi/stats_check_main.c stats/check.c stats/reader.c stats/target.c stats/tools_internal.h $(BUILD)/libutil.a
	$(Q)echo "  LD      $@ (frozen stats ABI $*)"
	$(Q)$(CC) -Itests/abi/$* $(CFLAGS_BASE) -MF /dev/null -o $@ tests/abi/stats_check_main.c stats/check.c stats/reader.c stats/target.c tests/abi/$*/meanings.c \
		-L$(BUILD) -lutil $(LDLIBS)

# The stats ABI both ways (tests/abi/test_compat_*.c): today's reader on a
# region of a producer built from the frozen v1 header, and a reader and
# checker built from the v1 header on a region of today's producer.
ABI_COMPAT := $(BUILD)/tests/abi-compat-new-reader $(BUILD)/tests/abi-compat-v1-reader
$(BUILD)/abi/compat_v1_producer.o: tests/abi/compat_v1_producer.c tests/abi/compat.h tests/abi/v1/perfvisor/stats_abi.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@ (frozen stats ABI v1)"
	$(Q)$(CC) -Itests/abi/v1 -Itests/abi $(CFLAGS_BASE) -MF /dev/null -c $< -o $@
$(BUILD)/tests/abi-compat-new-reader: tests/abi/test_compat_new_reader.c tests/abi/compat.h tests/abi/compat_check.h $(BUILD)/abi/compat_v1_producer.o $(BUILD)/libstats.a $(BUILD)/libutil.a
	$(Q)mkdir -p $(dir $@) && echo "  LD      $@"
	$(Q)$(CC) -Itests/abi $(CFLAGS_BASE) -MF /dev/null -o $@ $< $(BUILD)/abi/compat_v1_producer.o -L$(BUILD) -lstats -lutil $(CRITERION_LIBS) $(LDLIBS)
$(BUILD)/abi/region_current.o: stats/region.c include/perfvisor/stats_abi.h | $(DEPS_STAMP)
	$(Q)mkdir -p $(dir $@) && echo "  CC      $@ (today's stats ABI)"
	$(Q)$(CC) $(CFLAGS_BASE) -MF /dev/null -c $< -o $@
$(BUILD)/tests/abi-compat-v1-reader: tests/abi/test_compat_v1_reader.c tests/abi/compat.h tests/abi/compat_check.h tests/abi/v1/perfvisor/stats_abi.h tests/abi/v1/meanings.c stats/check.c stats/reader.c stats/target.c stats/tools_internal.h $(BUILD)/abi/region_current.o $(BUILD)/libutil.a
	$(Q)mkdir -p $(dir $@) && echo "  LD      $@ (frozen stats ABI v1 reader)"
	$(Q)$(CC) -Itests/abi/v1 -Itests/abi $(CFLAGS_BASE) -MF /dev/null -o $@ $< stats/check.c stats/reader.c stats/target.c tests/abi/v1/meanings.c \
		$(BUILD)/abi/region_current.o -L$(BUILD) -lutil $(CRITERION_LIBS) $(LDLIBS)
abi-compat: $(ABI_COMPAT)
	$(Q)for t in $(ABI_COMPAT); do out=$$(timeout 120 $$t 2>&1) || { echo "FAIL $$t"; echo "$$out" | tail -n 20; exit 1; }; \
		echo "ok   $$t: $$(echo "$$out" | grep -a Synthesis | tail -n 1)"; done

INTEGRATION_DEPS := host asan guests $(BUILD)/tests/jsoncheck $(BUILD)/tests/statsread $(BUILD)/tests/fdtset $(BUILD)/tests/mktap $(BUILD)/tests/kvmcpuid $(BUILD)/tests/apiclients $(patsubst %,$(BUILD)/stats-check-%,$(STATS_ABI_VERSIONS))
# T=NAMES (sections, tests or cases, separated by commas or spaces) runs only
# those integration tests; USERLAND=busybox|gnu only that test-host pass
# (docs/testing.md "Running one test or one section").
integration: $(INTEGRATION_DEPS)
	$(Q)bash tests/integration/run.sh $(T)
# What the integration tests use, built (to run one test file by hand).
integration-deps: $(INTEGRATION_DEPS)

# The integration suite in the test host (KVM on emulated AMD SVM) with
# each userland, also on a machine that has /dev/kvm (.ci/run does this).
check-testhost: $(INTEGRATION_DEPS)
	$(Q)PERFVISOR_FORCE_TESTHOST=1 bash tests/integration/run.sh $(T)

# The guest instruction check (docs/testing.md): no guest image may hold an
# instruction that fails on some KVM host, unless tests/guest-check/allow says why.
GUEST_CHECK_IMAGES = $(GUEST_ELFS) $(BOOT_GUEST_ELFS) $(BENCH_OUT)/min64.elf $(BENCH_OUT)/minmb.elf
guest-check: $(GUEST_CHECK_IMAGES)
	$(Q)sh tests/guest-check/selftest.sh
	$(Q)sh tests/guest-check/check.sh tests/guest-check/allow $(GUEST_CHECK_IMAGES)

# The layering check (docs/testing.md): within each component, the files'
# calls flow one way (no file calls back into a file that calls it).
layering: host
	$(Q)sh tests/layering/selftest.sh
	$(Q)sh tests/layering/check.sh $(BUILD)/obj $(COMPONENTS)

# ---------------------------------------------------------------- fuzz
# libFuzzer targets (clang), one per parser; fuzz/NAME.c with its sources
# compiled in, ASan and UBSan on. `make check` runs each for FUZZ_CHECK_SECONDS,
# `make fuzz` for FUZZ_SECONDS. A crash leaves its input in build/fuzz/.
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=gnu11 -g -O1 -Iinclude -I. -D_GNU_SOURCE -pthread \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CHECK_SECONDS ?= 10
FUZZ_SECONDS ?= 120
FUZZ_OUT := $(BUILD)/fuzz
FUZZ_SRCS_snapshot := fuzz/snapshot.c snapfile/parse.c snapfile/state.c vmm/snapschema.c machine/gmem.c pmu/pmu.c pmu/events.c \
	pmu/state.c pmu/perf.c $(wildcard devices/*.c) util/util.c
FUZZ_OPTS_snapshot := -lfdt -lxxhash
FUZZ_SRCS_api := fuzz/api.c vmm/api_parse.c
FUZZ_OPTS_api := -ljansson
FUZZ_SRCS_loaders := fuzz/loaders.c machine/loader.c machine/loader_mb.c machine/loader_linux.c machine/payload.c \
	machine/gmem.c util/util.c pmu/symbols.c pmu/kallsyms.c pmu/linux.c elf/elf.c elf/elf_sym.c
FUZZ_OPTS_loaders := $(LIBS_machine) -lbpf
FUZZ_SRCS_pmu := fuzz/pmu.c pmu/pmu.c pmu/events.c util/util.c
FUZZ_OPTS_pmu :=
FUZZ_SRCS_stats := fuzz/stats.c stats/reader.c util/util.c
FUZZ_OPTS_stats := -DSTATS_READ_TIMEOUT_NS=100000ULL
FUZZ_SRCS_devices := fuzz/devices.c devices/rtc.c devices/acpipm.c devices/port92.c util/util.c
FUZZ_OPTS_devices :=
FUZZ_SRCS_virtqueue := fuzz/virtqueue.c devices/virtqueue.c devices/virtio_mmio.c devices/virtio_rng.c \
	devices/virtio_blk.c devices/virtio_net.c util/util.c
FUZZ_OPTS_virtqueue :=
FUZZ_SRCS_migstream := fuzz/migstream.c snapfile/migstream.c util/util.c
FUZZ_OPTS_migstream := -lxxhash
FUZZ_TARGETS := snapshot api loaders pmu stats devices virtqueue migstream
define fuzz_target
$(FUZZ_OUT)/$(1): $$(FUZZ_SRCS_$(1)) | $(DEPS_STAMP)
	$$(Q)mkdir -p $$(dir $$@) && echo "  FUZZ    $$@"
	$$(Q)$$(FUZZ_CC) $$(FUZZ_FLAGS) -o $$@ $$(FUZZ_SRCS_$(1)) $$(FUZZ_OPTS_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target,$(t))))
$(FUZZ_OUT)/snapshot_seed: fuzz/snapshot_seed.c $(patsubst %,$(BUILD)/lib%.a,vmm $(DEPS_vmm))
	$(Q)mkdir -p $(dir $@) && echo "  LD      $@"
	$(Q)$(CC) $(CFLAGS_BASE) -MF /dev/null -o $@ $< -L$(BUILD) $(patsubst %,-l%,vmm $(DEPS_vmm)) $(LIBS_vmm) $(LDLIBS)
# Each target's working corpus (build/fuzz/corpus-NAME) starts from the
# committed one (fuzz/corpus/NAME: the seeds, and every input that once
# crashed, so it is replayed at every run) plus seeds made here: valid
# state files, and the guest images for the loaders.
$(FUZZ_OUT)/corpus-snapshot/.seeded: $(FUZZ_OUT)/snapshot_seed
	$(Q)mkdir -p $(dir $@) && $< $(dir $@) && touch $@
$(FUZZ_OUT)/corpus-loaders/.seeded: $(BENCH_OUT)/min64.elf $(BOOT_GUEST_FILES) $(GUEST_OUT)/profile.map
	$(Q)mkdir -p $(dir $@) && cp $^ $(dir $@) && touch $@
FUZZ_SEEDS := $(FUZZ_OUT)/corpus-snapshot/.seeded $(FUZZ_OUT)/corpus-loaders/.seeded
fuzz-build: $(patsubst %,$(FUZZ_OUT)/%,$(FUZZ_TARGETS)) $(FUZZ_SEEDS)
fuzz-check: fuzz-build
	$(Q)bash tests/run-fuzz.sh $(FUZZ_OUT) $(FUZZ_CHECK_SECONDS) $(FUZZ_TARGETS)
fuzz: fuzz-build
	$(Q)bash tests/run-fuzz.sh $(FUZZ_OUT) $(FUZZ_SECONDS) $(FUZZ_TARGETS)
# After `make fuzz`: minimize each working corpus into fuzz/corpus/NAME (then commit it).
fuzz-corpus: fuzz-build
	$(Q)for t in $(FUZZ_TARGETS); do mkdir -p fuzz/corpus/$$t; \
		$(FUZZ_OUT)/$$t -merge=1 -max_len=65536 fuzz/corpus/$$t $(FUZZ_OUT)/corpus-$$t >/dev/null 2>&1 || exit 1; \
		echo "fuzz/corpus/$$t: $$(ls fuzz/corpus/$$t | wc -l) inputs"; done

# make check T=NAMES: only those integration tests (and what they need built).
ifeq ($(strip $(T)),)
check: unit abi-compat guest-check layering fuzz-check integration format-check
	$(Q)echo "make check: all test suites passed"
else
check: $(INTEGRATION_DEPS)
	$(Q)echo "make check T=$(T): these integration tests only (unit tests, ABI compatibility, guest check, fuzzing and format check skipped)"
	$(Q)bash tests/integration/run.sh $(T)
	$(Q)echo "make check T=$(T): passed"
endif

run: all
	$(Q)bash scripts/run-demo.sh
# Debian's stock kernel from a virtio disk, with the demo workload (docs/linux.md).
run-linux: all
	$(Q)bash scripts/run-linux.sh

bench: all
	$(Q)bash bench/run.sh

FORMAT_SRCS := $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format-check:
	$(Q)if command -v clang-format >/dev/null; then \
		clang-format --dry-run --Werror $(FORMAT_SRCS) && echo "format-check: ok"; \
	else echo "format-check: SKIP: clang-format not installed"; fi
format:
	$(Q)clang-format -i $(FORMAT_SRCS)

compile_commands.json:
	$(Q)bear -- $(MAKE) -B host

clean:
	rm -rf $(BUILD)

.PHONY: all deps deps-check host asan linux-module unit abi-compat integration integration-deps check-testhost guest-check layering fuzz-build fuzz-check fuzz fuzz-corpus check run run-linux bench format-check format clean
.SECONDARY:
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
