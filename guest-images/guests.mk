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
	-Iinclude -I$(GUEST_SRC)/lib $(WARN) -MMD -MP
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

$(GUEST_OUT)/%.elf: $(GUEST_OUT)/obj/tests/%.o $(GUEST_LIB_OBJS) $(GUEST_LDS)
	$(Q)echo "  LD      $@"
	$(Q)$(CC) $(GUEST_LDFLAGS) -o $@ $< $(GUEST_LIB_OBJS)

guests: $(GUEST_ELFS)

.PHONY: guests
