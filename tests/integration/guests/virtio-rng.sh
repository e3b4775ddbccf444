#!/bin/sh
# SPDX-License-Identifier: MIT
# virtio-rng (docs/devices.md): the guest finds the device at 0xd0000000, negotiates, asks for
# random bytes six times and gets each answer with its interrupt; perfvisor counts what it served.
# Without --rng there is no device: no window, no I/O thread. Where KVM has no ioeventfd and
# irqfd (forced here), notifications exit to perfvisor and interrupts are KVM_IRQ_LINE pulses.
# cases: virtio-rng virtio-rng-absent virtio-rng-fallback
. "$(dirname "$0")/../lib.sh"

run virtio-rng 120 "$PV" run --kernel "$G/virtio-rng.elf" --rng --verbose --timeout 100
expect_status 0; expect_out 'virtio-rng: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_err 'virtio-rng: virtio-mmio at 0xd0000000-0xd0000fff, GSI 5'
expect_err 'virtio-rng: 6 requests, [0-9]* bytes, [0-9]* notifications, [0-9]* interrupts, 0 dropped, 0 resets needed'
expect_clean
grep 'virtio-rng: virtio-mmio at\|virtio-rng: 6 requests' "$T/$cur.err" | sed 's/^/  /'
done_test

run virtio-rng-absent 120 "$PV" run --kernel "$G/virtio-rng.elf" --cmdline expect_absent --verbose --timeout 100
expect_status 0; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'; expect_clean
! grep -q 'virtio-mmio\|virtio-rng:' "$T/$cur.err" || bad "a virtio device without --rng: $(grep virtio "$T/$cur.err")"
done_test

export PERFVISOR_VIRTIO_FALLBACK=1
run virtio-rng-fallback 120 "$PV" run --kernel "$G/virtio-rng.elf" --rng --verbose --timeout 100
unset PERFVISOR_VIRTIO_FALLBACK
expect_status 0; expect_out 'virtio-rng: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_err 'virtio-rng: virtio-mmio at 0xd0000000-0xd0000fff, GSI 5; notify by MMIO exit, interrupt by KVM_IRQ_LINE'
expect_err 'virtio-rng: 6 requests'
expect_clean; done_test
