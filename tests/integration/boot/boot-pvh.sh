#!/bin/sh
# SPDX-License-Identifier: MIT
# PVH (an ELF64 with a PVH note), with two modules.
. "$(dirname "$0")/../lib.sh"

boot_inputs
run boot-pvh 120 "$PV" run --kernel "$G/pvh.elf" --cpus 3 --cmdline "mods=2" --initrd "$T/mod0 a b" --initrd "$T/mod1" --timeout 100 --verbose
boot_guest 14 pvh; expect_out "module 0: .* command line '$T/mod0 a b'"; expect_out 'pvh: 3 CPUs online'; done_test
