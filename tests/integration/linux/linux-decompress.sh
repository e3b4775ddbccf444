#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's stock kernel (an xz-compressed bzImage) booted to /init both ways (docs/boot.md, "Linux
# bzImage"): --kernel-decompress host (the default for xz: perfvisor decompresses the payload and
# enters the vmlinux's startup_64) and guest (the kernel's own decompressor at the bzImage's 64-bit
# entry). Both reach /init and power off (status 0); perfvisor --verbose names the path it took and
# what it loaded: the vmlinux's segments from 16 MiB and its startup_64 (host), or the bzImage's
# protected-mode part at 1 MiB entered at 0x100200 (guest). (Debian's decompressor prints nothing on
# the serial port, even with earlyprintk: its kernel has no CONFIG_X86_VERBOSE_BOOTUP.) Prints the
# guest time at /init and the wall time of each. Then the same bzImage with bytes of its payload overwritten: refused on the host path with
# one line and status 125, before any guest runs. Skipped on kvm_pvm, by knowledge (DESIGN §11).
# cases: linux-decompress-host linux-decompress-guest linux-decompress-corrupt
. "$(dirname "$0")/../lib.sh"

CMD="console=ttyS0 earlyprintk=ttyS0 printk.time=1 panic=-1 pvinit=poweroff"

linux_ready "linux-decompress-host linux-decompress-guest linux-decompress-corrupt" || exit 0

for how in host guest; do
	t0=$(date +%s)
	run "linux-decompress-$how" 300 "$PV" run --kernel "$LXK/vmlinuz" --initrd "$LXI" --memory 256M \
		--cmdline "$CMD" --kernel-decompress "$how" --timeout 240 --verbose
	t1=$(date +%s)
	expect_status 0
	expect_clean
	expect_out 'pvinit: reached /init'
	expect_err 'guest power-off (ACPI S5)'
	t=$(sed -n 's/^\[ *\([0-9.]*\)\] Run \/init as init process.*/\1/p' "$T/$cur.out" | head -n 1)
	if [ "$how" = host ]; then
		expect_err 'boot protocol linux: .*xz payload decompressed on the host: vmlinux ([0-9]* bytes), entry 0x1000000 (startup_64)'
		expect_err 'kernel .*vmlinuz: entry 0x1000000, [0-9]* segments at 0x1000000-'
	else
		expect_err 'boot protocol linux: .*xz payload decompressed in the guest: entry 0x100200'
		expect_err 'kernel .*vmlinuz: entry 0x100200, 1 segments at 0x100000-'
	fi
	echo "  ($cur: /init at ${t:-?} s of guest time, $((t1 - t0)) s wall)"
	done_test
done

# 16 bytes overwritten 4 MB into the 8 MB xz payload: liblzma's data or CRC32 check refuses it.
cp "$LXK/vmlinuz" "$T/vmlinuz-corrupt"
printf 'perfvisor-breaks' | dd of="$T/vmlinuz-corrupt" bs=1 seek=4000000 conv=notrunc 2>/dev/null
run linux-decompress-corrupt 300 "$PV" run --kernel "$T/vmlinuz-corrupt" --memory 256M --timeout 240
expect_status 125
expect_clean
expect_err "kernel '$T/vmlinuz-corrupt': corrupt xz payload in the bzImage"
done_test
