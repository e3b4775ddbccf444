#!/bin/sh
# SPDX-License-Identifier: MIT
# The CMOS RTC through a snapshot (docs/devices.md): the rtc guest sets the year 2030 and is
# snapshotted in its phases; snapshot-info shows the RTC's offset (about 4 years ahead of the
# host), and the restored guest, a few seconds later, still reads 2030, its CMOS RAM byte and a
# clock that went on.
# cases: snap-rtc snap-rtc-end
. "$(dirname "$0")/../lib.sh"

cur=snap-rtc; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm snap-rtc-a 300 run --kernel "$G/rtc.elf" --cmdline "phases=12" --api-socket "$T/rtc.sock" --timeout 280
wait_sock "$T/rtc.sock" 20
wait_for "$T/snap-rtc-a.out" 'rtc: phase 2/' || bad "the guest never printed 'rtc: phase 2/'"
snapshot "$T/rtc.sock" "$T/rtc.snap" stop
stop_vm
grep -q '^FAIL' "$T/snap-rtc-a.out" && bad "the guest failed before the snapshot: $(grep '^FAIL' "$T/snap-rtc-a.out" | head -n 3)"
"$PV" snapshot-info "$T/rtc.snap" >"$T/rtc.info" 2>&1
off=$(sed -n 's/.*CMOS RTC (guest time = host time +\([0-9]*\) s.*/\1/p' "$T/rtc.info")
# 2030 minus this year, the same day and time: 4 years are 1460 or 1461 days; more years, more.
if [ -z "$off" ] || [ "$off" -lt $((1460 * 86400 - 10)) ]; then
	bad "snapshot-info shows no RTC offset of years: $(grep devices "$T/rtc.info")"
else
	echo "  (snap-rtc: the RTC in the snapshot: guest time = host time + $off s)"
fi
done_test
sleep 2
run snap-rtc-end 300 "$PV" run --restore "$T/rtc.snap" --timeout 280
expect_status 0; expect_out '^SUMMARY:'; expect_clean
expect_out 'PASS: after the phases: still 2030, RAM 0x5a'
expect_out 'PASS: the clock went on'
done_test
