#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's stock kernel on a virtio-blk disk (--disk): the initramfs loads the kernel package's
# virtio and ext4 modules (pvinit.mods=1), virtio_blk binds the disk the DSDT lists, /dev/vda
# mounts as ext4 (pvinit=disk) and its pvtest.sh writes a 64 MiB file of random bytes and its
# checksum, syncs, and the VM powers off, having moved meanwhile to a second perfvisor (live
# migration, --stop-copy: a Linux writing 64 MiB dirties faster than a nested host copies); a
# second boot on the same image reads the file back and the checksum is equal. Skipped on kvm_pvm by knowledge, as every Linux test (DESIGN §11).
# cases: linux-virtio-blk linux-virtio-blk-again
. "$(dirname "$0")/../lib.sh"

DK=$LXK
IR=$LXI
DISK=$B/linux-disk/disk.ext4

linux_ready "linux-virtio-blk linux-virtio-blk-again" "$DISK" || exit 0
cp "$DISK" "$T/disk.ext4"

# The first boot moves to a second perfvisor while it writes (live migration, docs/migration.md):
# its disk's lock passes over, and what the second boot reads back is what the guest wrote at both.
cur=linux-virtio-blk; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm lx-src 400 run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 2 \
	--disk path="$T/disk.ext4" --cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=disk" \
	--api-socket "$T/lx.sock" --timeout 360 --verbose
spid=$vmpid; swd=$wdpid
ASAN_OPTIONS=detect_leaks=1 "$PV" run --incoming "unix:$T/lxm" --timeout 360 --verbose \
	>"$T/lx-dst.out" 2>"$T/lx-dst.err" </dev/null &
dpid=$!
watchdog $dpid 400; dwd=$wdpid
wait_for "$T/lx-src.out" 'pvinit: mounted /dev/vda' || bad "the guest never mounted /dev/vda"
"$PV" migrate "$T/lx.sock" --to "unix:$T/lxm" --max-downtime 200ms --stop-copy --timeout 300s \
	>"$T/lx-mig.out" 2>&1 || bad "perfvisor migrate failed: $(tail -n 1 "$T/lx-mig.out")"
echo "  (linux-virtio-blk: moved $(grep -c '^round' "$T/lx-mig.out") rounds; $(tail -n 1 "$T/lx-mig.out" | sed 's/^perfvisor migrate: //'))"
vmpid=$spid; wdpid=$swd; stop_vm
[ "$st" -eq 0 ] || bad "the source exited $st"
vmpid=$dpid; wdpid=$dwd; stop_vm
cat "$T/lx-src.out" "$T/lx-dst.out" >"$T/$cur.out"
cat "$T/lx-src.err" "$T/lx-dst.err" >"$T/$cur.err"
expect_status 0
expect_out 'pvinit: reached /init'
expect_out 'pvinit: mounted /dev/vda'
expect_out 'pvtest: wrote 64 MiB'
expect_out 'pvinit: unmounted /dev/vda'
expect_no_out 'pvinit: insmod virtio'
grep -q 'pvinit: unmounted /dev/vda' "$T/lx-dst.out" || bad "the guest did not finish at the destination"
expect_err 'virtio-blk0: [1-9][0-9]* requests, [0-9]* bytes, [0-9]* notifications, [0-9]* interrupts, 0 dropped, 0 resets needed'
grep 'pvtest:\|virtio_blk\|vda\|virtio-blk0: [0-9]' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /' | head -n 10
done_test

# One vCPU: this boot checks what the disk kept, not SMP (the migration above has two). In the
# test host a 2-vCPU guest spinning for its sibling can freeze the one-CPU test VM (docs/testing.md).
run linux-virtio-blk-again 400 "$PV" run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 1 \
	--disk path="$T/disk.ext4" --cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=disk" \
	--timeout 360 --verbose
expect_status 0
expect_out 'pvtest: second boot'
expect_out 'pvtest: read back, checksum equal'
expect_no_out 'checksum differs'
grep 'pvtest:\|/mnt/big\|virtio-blk0: [0-9]' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /' | head -n 10
done_test
