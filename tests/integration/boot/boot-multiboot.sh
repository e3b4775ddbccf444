#!/bin/sh
# SPDX-License-Identifier: MIT
# Boot protocols (docs/boot.md): multiboot v1, as an ELF32 and as a flat binary with the a.out
# kludge, with two modules. The guest checks every field it receives (PASS/FAIL lines).
# cases: boot-multiboot.elf boot-multiboot-aout.bin
. "$(dirname "$0")/../lib.sh"

boot_inputs
for k in multiboot.elf multiboot-aout.bin; do
	run "boot-$k" 120 "$PV" run --kernel "$G/$k" --cpus 4 --cmdline "path=$G/$k mods=2" \
		--initrd "$T/mod0 first arg=1" --initrd "$T/mod1" --timeout 100 --verbose
	boot_guest 17 multiboot
	expect_out "module 0: .* string '$T/mod0 first arg=1' data 'perfvisor module 0'"
	expect_out "module 1: .* string '$T/mod1' data 'perfvisor module 1'"
	expect_out "command line '$G/$k path=$G/$k mods=2'"; expect_out 'multiboot: fw_cfg: 4 CPUs, 64 MiB'
	expect_out 'multiboot: 4 CPUs online'
	case $k in *aout*) expect_err 'a.out kludge' ;; *) expect_err 'load addresses from the ELF program headers' ;; esac
	done_test
done
