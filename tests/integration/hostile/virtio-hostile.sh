#!/bin/sh
# SPDX-License-Identifier: MIT
# A hostile virtio driver (docs/devices.md, docs/security.md): descriptor loops, chains longer
# than the queue, buffers outside RAM, overflowing lengths, a queue size not a power of two,
# rings outside RAM, avail idx jumping ahead, notifications of queues never set up, a reset in
# the middle, and a flood of bad chains. perfvisor neither crashes nor hangs; bad chains come back
# empty and are counted, broken queues set DEVICE_NEEDS_RESET; the log is rate-limited.
# cases: virtio-hostile
. "$(dirname "$0")/../lib.sh"

run virtio-hostile 200 "$PV" run --kernel "$G/virtio-hostile.elf" --rng --verbose --timeout 180 --cmdline flood=400
expect_status 0; expect_out 'virtio-hostile: done'; expect_out '^SUMMARY: [0-9]* tests, 0 unexpected failures'
expect_clean
expect_err 'virtio-rng: queue 0: request 0 dropped: descriptor loop'
expect_err 'virtio-rng: queue 0: queue size not a power of two, zero or too large; the device needs a reset'
expect_err 'virtio-rng: queue 0: avail idx more than the queue size ahead; the device needs a reset'
expect_err 'virtio-rng: notify of queue 1, which is absent'
counters=$(grep 'virtio-rng: [0-9]* requests' "$T/$cur.err")
dropped=$(echo "$counters" | sed -n 's/.* \([0-9]*\) dropped.*/\1/p')
lines=$(grep -c '^perfvisor: virtio-rng: ' "$T/$cur.err")
echo "  ($counters; $lines log lines)"
[ "${dropped:-0}" -ge 410 ] || bad "fewer bad chains counted than given: ${dropped:-none}"
[ "$lines" -lt 200 ] || bad "$lines log lines for ${dropped:-?} bad chains: not rate-limited"
grep -q 'similar lines suppressed' "$T/$cur.err" || bad "no line says how many were suppressed"
done_test
