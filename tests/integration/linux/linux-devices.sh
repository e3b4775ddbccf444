#!/bin/sh
# SPDX-License-Identifier: MIT
# Every device a Linux microVM has, in one boot of Debian's stock kernel (the command line of
# issue 22 / docs/linux.md): two disks (--disk, the second readonly=on), two NICs (--net, each
# on a tap of its own with a MAC given), --rng, 4 vCPUs. The guest must see the disks as
# /dev/vda and /dev/vdb in the order given, with their sizes, vdb read-only and its bytes the
# image's; a file written to vda's ext4 must be in the image afterwards; eth0 and eth1 carry the
# MACs in the order given and each pings its tap's host end; virtio_rng is the hwrng. The VM
# powers off with status 0 and perfvisor's counters show every device worked, none dropped.
# Skipped on kvm_pvm by knowledge, as every Linux test (DESIGN §11).
# cases: linux-devices
. "$(dirname "$0")/../lib.sh"

DISK=$B/linux-disk/disk.ext4
linux_ready linux-devices "$DISK" || exit 0
cp "$DISK" "$T/root.ext4"
head -c 8388608 /dev/urandom >"$T/data.img"
want_md5=$(md5sum <"$T/data.img" | cut -d' ' -f1)
need_tap pvdev0 10.0.4.1/24
need_tap pvdev1 10.0.5.1/24

run linux-devices 400 "$PV" run --kernel "$LXK/vmlinuz" --initrd "$LXI" --cpus 4 --memory 512M \
	--disk path="$T/root.ext4" --disk path="$T/data.img",readonly=on \
	--net tap=pvdev0,mac=52:54:00:12:34:60 --net tap=pvdev1,mac=52:54:00:12:34:61 --rng \
	--cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=devices" --timeout 360 --verbose
expect_status 0
expect_out 'pvinit: reached /init'
expect_no_out 'pvinit: insmod virtio'
expect_out 'pvinit: vda sectors 204800 ro 0'
expect_out 'pvinit: vdb sectors 16384 ro 1'
expect_out "pvinit: vdb md5 $want_md5"
expect_out 'pvinit: vdb write refused'
expect_out 'pvinit: unmounted /dev/vda'
expect_out 'pvinit: eth0 52:54:00:12:34:60 driver virtio_net'
expect_out 'pvinit: eth1 52:54:00:12:34:61 driver virtio_net'
expect_out 'pvinit: eth0 ping 10.0.4.1 ok'
expect_out 'pvinit: eth1 ping 10.0.5.1 ok'
expect_out 'pvinit: rng_current virtio_rng'
expect_out 'pvinit: hwrng [0-9a-f]\{64\}'
# The image still holds exactly the guest's read-only disk; what the guest wrote to vda is in
# root.ext4 (debugfs would need e2fsprogs in the test host: the checksum printed is the check).
[ "$(md5sum <"$T/data.img" | cut -d' ' -f1)" = "$want_md5" ] || bad "the read-only image changed"
wrote=$(sed -n 's/.*pvinit: vda wrote \([0-9a-f]*\).*/\1/p' "$T/$cur.out")
[ -n "$wrote" ] || bad "the guest wrote nothing to vda"
for dev in virtio-blk0 virtio-blk1; do
	expect_err "$dev: [1-9][0-9]* requests, [0-9]* bytes, [0-9]* notifications, [0-9]* interrupts, 0 dropped, 0 resets needed"
done
for dev in virtio-net0 virtio-net1; do
	expect_err "$dev: received [1-9][0-9]* frames, [0-9]* bytes, 0 dropped; sent [1-9][0-9]* frames, [0-9]* bytes, 0 errors"
done
expect_err 'virtio-rng: [1-9][0-9]* requests, [0-9]* bytes, [0-9]* notifications, [0-9]* interrupts, 0 dropped, 0 resets needed'
grep 'pvinit: v\|pvinit: eth\|virtio-[a-z]*[0-9]*: [0-9r]' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /' | head -n 20
done_test
