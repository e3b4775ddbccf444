#!/bin/sh
# SPDX-License-Identifier: MIT
# The virtio paths under ASan + UBSan (leaks included): the hostile driver (every bad chain and
# broken queue), then the good one; virtio-blk on io_uring with its hostile requests and a reset
# with requests in flight.
# cases: asan-virtio-hostile asan-virtio-rng asan-virtio-blk
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-virtio-hostile 300 "$ASAN" run --kernel "$G/virtio-hostile.elf" --rng --timeout 280 --cmdline flood=40
expect_status 0; expect_out 'virtio-hostile: done'; expect_clean; done_test
run asan-virtio-rng 240 "$ASAN" run --kernel "$G/virtio-rng.elf" --rng --timeout 200
expect_status 0; expect_out 'virtio-rng: done'; expect_clean; done_test
dd if=/dev/zero of="$T/asan.img" bs=1M count=4 2>/dev/null
run asan-virtio-blk 240 "$ASAN" run --kernel "$G/virtio-blk.elf" --disk path="$T/asan.img" --cmdline "hostile loop=20" \
	--timeout 200
expect_status 0; expect_out '20 rounds of 8 writes and 8 reads, every byte right'; expect_clean; done_test
