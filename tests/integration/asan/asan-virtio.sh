#!/bin/sh
# SPDX-License-Identifier: MIT
# The virtio paths under ASan + UBSan (leaks included): the hostile driver (every bad chain and
# broken queue), then the good one.
# cases: asan-virtio-hostile asan-virtio-rng
. "$(dirname "$0")/../lib.sh"

need_asan
run asan-virtio-hostile 300 "$ASAN" run --kernel "$G/virtio-hostile.elf" --rng --timeout 280 --cmdline flood=40
expect_status 0; expect_out 'virtio-hostile: done'; expect_clean; done_test
run asan-virtio-rng 240 "$ASAN" run --kernel "$G/virtio-rng.elf" --rng --timeout 200
expect_status 0; expect_out 'virtio-rng: done'; expect_clean; done_test
