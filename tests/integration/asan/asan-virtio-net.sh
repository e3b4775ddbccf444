#!/bin/sh
# SPDX-License-Identifier: MIT
# virtio-net under ASan + UBSan (leaks included): the hostile driver (an 8-byte receive buffer, a
# 70000-byte transmit chain, a reset with frames pending), then the exchange with the host's end of
# the tap; and a tap that cannot be attached (the error path frees what it made).
# cases: asan-virtio-net-hostile asan-virtio-net-no-tap
. "$(dirname "$0")/../lib.sh"

need_asan
tap=pvtest-asan0
need_tap "$tap" 10.0.2.1/24
run asan-virtio-net-hostile 300 "$ASAN" run --kernel "$G/virtio-net.elf" --net tap=$tap --timeout 280 --cmdline hostile
expect_status 0; expect_out 'virtio-net: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_clean; done_test
run asan-virtio-net-no-tap 120 "$ASAN" run --kernel "$G/virtio-net.elf" --rng --net tap=$tap --net tap=pvnosuch1 --timeout 60
expect_status 125; expect_err 'tap=pvnosuch1: no such interface'; expect_clean; done_test
