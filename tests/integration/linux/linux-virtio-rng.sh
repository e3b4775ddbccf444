#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's stock kernel finds virtio-rng (--rng) through the DSDT: the initramfs loads the
# kernel package's virtio modules (pvinit.mods=1), virtio_mmio binds the LNRO0005 device the
# DSDT lists at 0xd0000000 (GSI 5), virtio-rng becomes the current hwrng, /dev/hwrng gives
# bytes, /dev/random does not block (16 bytes within 10 s), and the VM powers off with status 0;
# perfvisor counted the requests, and no request was dropped. Skipped on kvm_pvm by knowledge, as every Linux test (DESIGN §11).
# cases: linux-virtio-rng
. "$(dirname "$0")/../lib.sh"

DK=$LXK
IR=$LXI

linux_ready linux-virtio-rng || exit 0

# One vCPU: entropy needs no SMP, and in the test host a 2-vCPU guest spinning for its
# sibling can freeze the one-CPU test VM (docs/testing.md).
run linux-virtio-rng 300 "$PV" run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 1 --rng \
	--cmdline "console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=rng" --timeout 240 --verbose
expect_status 0
expect_out 'pvinit: reached /init'
expect_out 'pvinit: rng_current virtio_rng'
expect_out 'pvinit: hwrng [0-9a-f]\{64\}'
expect_out 'pvinit: random [0-9a-f]\{32\}'
expect_no_out 'pvinit: insmod virtio'
expect_err 'virtio-rng: [1-9][0-9]* requests, [0-9]* bytes, [0-9]* notifications, [0-9]* interrupts, 0 dropped, 0 resets needed'
grep 'pvinit: rng_\|pvinit: hwrng\|virtio_mmio\|virtio-rng: [0-9]' "$T/$cur.out" "$T/$cur.err" | sed 's/^[^:]*: */  /' | head -n 8
done_test
