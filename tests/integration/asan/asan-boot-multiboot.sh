#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): a multiboot kernel with a module.
. "$(dirname "$0")/../lib.sh"

need_asan
boot_inputs
run asan-boot-multiboot 240 "$ASAN" run --kernel "$G/multiboot.elf" --cpus 2 --cmdline "path=$G/multiboot.elf mods=1" \
	--initrd "$T/mod0 x" --timeout 200
expect_status 0; expect_clean; done_test
