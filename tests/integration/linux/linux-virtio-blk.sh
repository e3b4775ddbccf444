#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's stock kernel on a virtio-blk disk (--disk): the initramfs loads the kernel package's
# virtio and ext4 modules (pvinit.mods=1), virtio_blk binds the disk the DSDT lists, /dev/vda
# mounts as ext4 (pvinit=disk) and its pvtest.sh writes a 64 MiB file of random bytes and its
# checksum, syncs, and the VM powers off; a second boot on the same image reads the file back
# and the checksum is equal. Skipped on kvm_pvm by knowledge, as every Linux test (DESIGN §11).
# cases: linux-virtio-blk linux-virtio-blk-again
. "$(dirname "$0")/../lib.sh"

DK=$LXK
IR=$LXI
DISK=$B/linux-disk/disk.ext4

linux_ready "linux-virtio-blk linux-virtio-blk-again" "$DISK" || exit 0
cp "$DISK" "$T/disk.ext4"

run linux-virtio-blk 400 "$PV" run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 2 \
	--disk path="$T/disk.ext4" --cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=disk" \
	--timeout 360 --verbose
expect_status 0
expect_out 'pvinit: reached /init'
expect_out 'pvinit: mounted /dev/vda'
expect_out 'pvtest: wrote 64 MiB'
expect_out 'pvinit: unmounted /dev/vda'
expect_no_out 'pvinit: insmod virtio'
expect_err 'virtio-blk0: [1-9][0-9]* requests, [0-9]* bytes, [0-9]* notifications, [0-9]* interrupts, 0 dropped, 0 resets needed'
grep 'pvtest:\|virtio_blk\|vda\|virtio-blk0: [0-9]' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /' | head -n 10
done_test

run linux-virtio-blk-again 400 "$PV" run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 2 \
	--disk path="$T/disk.ext4" --cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=disk" \
	--timeout 360 --verbose
expect_status 0
expect_out 'pvtest: second boot'
expect_out 'pvtest: read back, checksum equal'
expect_no_out 'checksum differs'
grep 'pvtest:\|/mnt/big\|virtio-blk0: [0-9]' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /' | head -n 10
done_test
