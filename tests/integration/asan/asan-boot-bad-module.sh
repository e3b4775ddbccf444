#!/bin/sh
# SPDX-License-Identifier: MIT
# The same paths under ASan + UBSan (leaks included): a module that does not fit in guest memory.
. "$(dirname "$0")/../lib.sh"

need_asan
dd if=/dev/zero of="$T/big-module" bs=1M count=5 2>/dev/null
run asan-boot-bad-module 60 "$ASAN" run --kernel "$G/multiboot.elf" --memory 8M --initrd "$T/big-module"
expect_status 125; expect_clean; done_test
