#!/bin/sh
# SPDX-License-Identifier: MIT
# A real Debian kernel (tests/integration/debian-kernel.sh fetched it into $B/debian-kernel): its banner,
# its command-line echo and its e820 lines on the serial console, within a bound. On kvm_pvm its
# decompressor alone would run for minutes in emulated ring 0: there the same kernel's vmlinux boots
# through PVH, with XSAVE and CMPXCHG16B hidden, until it dies (at int3_selftest's int3); the test
# checks the lines before that and shows the last one.
# cases: debian-kernel-pvh
. "$(dirname "$0")/../lib.sh"

DK=$B/debian-kernel
kver=$(cat "$DK/package" 2>/dev/null)
if [ ! -s "$DK/vmlinuz" ]; then
	cur=debian-kernel; ok=1; st=0
	bad "no Debian kernel in $DK: tests/integration/debian-kernel.sh could not fetch it (see its line above)"
	done_test
elif [ "$("$PV" host --kind)" = kvm_pvm ]; then
	run debian-kernel-pvh 300 "$PV" run --kernel "$DK/vmlinux" --memory 512M --cpuid-hide xsave,cmpxchg16b \
		--cmdline "earlyprintk=ttyS0 console=ttyS0 noxsave panic=-1 perfvisor-test" --timeout 240 --verbose
	expect_out '\] Linux version [0-9]'; expect_out '\] Command line: earlyprintk=ttyS0 .*perfvisor-test'
	expect_out 'BIOS-e820: \[mem 0x0000000000000000-0x000000000009fbff\] usable'
	expect_out 'BIOS-e820: \[mem 0x0000000000100000-0x000000001fffffff\] usable'
	expect_out 'ACPI: RSDP 0x00000000000E0000'
	# It dies (123: KVM internal error) or, on a kvm_pvm that emulates more, gets to its panic and reboots (0).
	case $st in 0 | 123) ;; *) bad "exit status $st: neither the emulator's stop (123) nor a reboot (0)" ;; esac
	echo "  (kvm_pvm, $kver via PVH: status $st after $(grep -c '^\[' "$T/$cur.out") kernel lines; the last: $(grep '^\[' "$T/$cur.out" | tail -n 1 | cut -c 1-100))"
	echo "  (perfvisor: $(grep -v 'unhandled' "$T/$cur.err" | tail -n 1))"
	done_test
else
	boot_inputs
	run debian-kernel 300 "$PV" run --kernel "$DK/vmlinuz" --initrd "$T/initrd" --memory 256M \
		--cmdline "console=ttyS0 earlyprintk=ttyS0 nokaslr panic=-1 perfvisor-test" --timeout 240 --verbose
	expect_out '\] Linux version [0-9]'; expect_out '\] Command line: console=ttyS0 .*perfvisor-test'
	expect_out 'BIOS-e820: \[mem 0x0000000000000000-0x000000000009fbff\] usable'
	expect_out 'BIOS-e820: \[mem 0x0000000000100000-0x000000000fffffff\] usable'
	# With no root file system it panics and reboots through the i8042 (0), unless the bound stops it (124).
	case $st in 0 | 124) ;; *) bad "exit status $st: neither a reboot (0) nor the bound (124)" ;; esac
	echo "  ($("$PV" host --kind), $kver bzImage: status $st after $(grep -c '^\[' "$T/$cur.out") kernel lines; the last: $(grep '^\[' "$T/$cur.out" | tail -n 1 | cut -c 1-100))"
	echo "  (perfvisor: $(grep -v 'unhandled' "$T/$cur.err" | tail -n 1))"
	done_test
fi
