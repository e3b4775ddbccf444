# SPDX-License-Identifier: MIT
# Test guests: every guest-images/tests/NAME.c becomes $(BUILD)/guests/NAME.elf,
# a static ELF64 linked at 1 MiB with the runtime in guest-images/lib/.
# Built with the host gcc, freestanding. Included by the top-level Makefile.

GUEST_SRC := guest-images
GUEST_OUT := $(BUILD)/guests
GUEST_LDS := $(GUEST_SRC)/guest.ld

GUEST_CFLAGS := -std=gnu11 -O2 -g -ffreestanding -fno-pic -fno-pie \
	-fno-stack-protector -mno-red-zone -mgeneral-regs-only -mno-sse -mno-mmx \
	-fno-asynchronous-unwind-tables -fcf-protection=none \
	-fno-omit-frame-pointer -fno-tree-loop-distribute-patterns \
	-Iinclude -I$(GUEST_SRC)/lib -I$(GUEST_SRC)/boot $(WARN) -MMD -MP
GUEST_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -T $(GUEST_LDS)

GUEST_LIB_OBJS := $(patsubst $(GUEST_SRC)/%.c,$(GUEST_OUT)/obj/%.o,$(wildcard $(GUEST_SRC)/lib/*.c)) \
	$(patsubst $(GUEST_SRC)/%.S,$(GUEST_OUT)/obj/%.o,$(wildcard $(GUEST_SRC)/lib/*.S))
GUEST_NAMES := $(patsubst $(GUEST_SRC)/tests/%.c,%,$(wildcard $(GUEST_SRC)/tests/*.c))
GUEST_ELFS := $(patsubst %,$(GUEST_OUT)/%.elf,$(GUEST_NAMES))

$(GUEST_OUT)/obj/%.o: $(GUEST_SRC)/%.c
	$(Q)mkdir -p $(dir $@)
	$(Q)echo "  CC      $@"
	$(Q)$(CC) $(GUEST_CFLAGS) -c $< -o $@

$(GUEST_OUT)/obj/%.o: $(GUEST_SRC)/%.S
	$(Q)mkdir -p $(dir $@)
	$(Q)echo "  AS      $@"
	$(Q)$(CC) $(GUEST_CFLAGS) -c $< -o $@

# The profiler's test guest keeps every frame (no sibling calls), so its
# expected stacks are exact (docs/profiling.md).
$(GUEST_OUT)/obj/tests/profile.o: GUEST_CFLAGS += -fno-optimize-sibling-calls

# The older-driver guest is built against the PV PMU header as version 1
# published it (tests/abi/pvpmu-v1), ahead of today's include/.
$(GUEST_OUT)/obj/tests/pmu-v1-driver.o: GUEST_CFLAGS := -Itests/abi/pvpmu-v1 $(GUEST_CFLAGS)

$(GUEST_OUT)/%.elf: $(GUEST_OUT)/obj/tests/%.o $(GUEST_LIB_OBJS) $(GUEST_LDS)
	$(Q)echo "  LD      $@"
	$(Q)$(CC) $(GUEST_LDFLAGS) -o $@ $< $(GUEST_LIB_OBJS)

# Boot-protocol guests (docs/testing.md): guest-images/boot-tests/NAME.c with
# the runtime, guest-images/boot/boot.c and an entry.S variant, linked as
# ELF64 (what the guest instruction check reads), then made into the file a
# loader gets: multiboot.elf (ELF32, loaded by its program headers),
# multiboot-aout.bin (flat, loaded by the a.out kludge), pvh.elf (ELF64 with
# a PVH note), linux.bzimage (setup header + the kernel at 1 MiB).
BOOT_ENTRY_mb := -DBOOT_MULTIBOOT
BOOT_ENTRY_mbaout := -DBOOT_MULTIBOOT -DBOOT_MB_AOUT
BOOT_ENTRY_pvh := -DBOOT_PVH
BOOT_ENTRY_linux := -DBOOT_LINUX
$(patsubst %,$(GUEST_OUT)/obj/boot/entry-%.o,mb mbaout pvh linux): $(GUEST_OUT)/obj/boot/entry-%.o: $(GUEST_SRC)/boot/entry.S
	$(Q)mkdir -p $(dir $@)
	$(Q)echo "  AS      $@"
	$(Q)$(CC) $(GUEST_CFLAGS) $(BOOT_ENTRY_$*) -c $< -o $@

# $(1) = output, $(2) = test, $(3) = entry variant, $(4) = ELF entry symbol
define boot_guest
$(1): $(GUEST_OUT)/obj/boot-tests/$(2).o $(GUEST_OUT)/obj/boot/entry-$(3).o $(GUEST_OUT)/obj/boot/boot.o $(GUEST_LIB_OBJS) $(GUEST_LDS)
	$$(Q)echo "  LD      $$@"
	$$(Q)$$(CC) $$(GUEST_LDFLAGS) -Wl,-e,$(4) -o $$@ $$(filter %.o,$$^)
endef
$(eval $(call boot_guest,$(GUEST_OUT)/multiboot.elf64,multiboot,mb,boot_entry32))
$(eval $(call boot_guest,$(GUEST_OUT)/multiboot-aout.elf64,multiboot,mbaout,boot_entry32))
$(eval $(call boot_guest,$(GUEST_OUT)/pvh.elf,pvh,pvh,boot_entry32))
$(eval $(call boot_guest,$(GUEST_OUT)/linux.elf64,linux,linux,boot_linux_entry64))

$(GUEST_OUT)/multiboot.elf: $(GUEST_OUT)/multiboot.elf64
	$(Q)echo "  OBJCOPY $@"
	$(Q)objcopy -O elf32-i386 $< $@
$(GUEST_OUT)/multiboot-aout.bin: $(GUEST_OUT)/multiboot-aout.elf64
	$(Q)echo "  OBJCOPY $@"
	$(Q)objcopy -O binary $< $@
$(GUEST_OUT)/linux.bzimage: $(GUEST_OUT)/linux.elf64 $(GUEST_SRC)/boot/bzsetup.S
	$(Q)echo "  BZIMAGE $@"
	$(Q)init=$$(nm $< | awk '$$3 == "_end" { print "0x" $$1 }') && \
		$(CC) -c -DINIT_SIZE="($$init - 0x100000)" $(GUEST_SRC)/boot/bzsetup.S -o $(GUEST_OUT)/obj/boot/bzsetup.o
	$(Q)objcopy -O binary -j .text $(GUEST_OUT)/obj/boot/bzsetup.o $(GUEST_OUT)/obj/boot/bzsetup.bin
	$(Q)objcopy -O binary $< $(GUEST_OUT)/obj/boot/linux.payload
	$(Q)cat $(GUEST_OUT)/obj/boot/bzsetup.bin $(GUEST_OUT)/obj/boot/linux.payload >$@

BOOT_GUEST_FILES := $(GUEST_OUT)/multiboot.elf $(GUEST_OUT)/multiboot-aout.bin $(GUEST_OUT)/pvh.elf \
	$(GUEST_OUT)/linux.bzimage
BOOT_GUEST_ELFS := $(GUEST_OUT)/multiboot.elf64 $(GUEST_OUT)/multiboot-aout.elf64 $(GUEST_OUT)/pvh.elf \
	$(GUEST_OUT)/linux.elf64

# The profiler's test guest without symbols, and its symbols as nm text
# (what --symbols reads, like a System.map), for the integration tests.
$(GUEST_OUT)/profile.stripped: $(GUEST_OUT)/profile.elf
	$(Q)echo "  STRIP   $@"
	$(Q)objcopy --strip-all $< $@
$(GUEST_OUT)/profile.map: $(GUEST_OUT)/profile.elf
	$(Q)echo "  NM      $@"
	$(Q)nm -n $< >$@

guests: $(GUEST_ELFS) $(BOOT_GUEST_FILES) $(GUEST_OUT)/profile.stripped $(GUEST_OUT)/profile.map

.PHONY: guests
