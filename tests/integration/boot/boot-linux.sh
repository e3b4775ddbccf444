#!/bin/sh
# SPDX-License-Identifier: MIT
# The Linux 64-bit boot protocol (a bzImage), with an initrd.
. "$(dirname "$0")/../lib.sh"

boot_inputs
run boot-linux 120 "$PV" run --kernel "$G/linux.bzimage" --cpus 2 --cmdline "initrd_size=$isize quiet" --initrd "$T/initrd" --timeout 100 --verbose
boot_guest 14 linux; expect_out "command line 'initrd_size=$isize quiet'"; expect_out 'linux: 2 CPUs online'; done_test
