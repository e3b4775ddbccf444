#!/bin/sh
# SPDX-License-Identifier: MIT
# Running as an ordinary user who may open /dev/kvm (docs/security.md): the VM runs;
# with perf_event_paranoid > 1 the PV PMU reports host software events unavailable, never faked.
# cases: non-root-pmu
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && [ -c /dev/kvm ]; then
	hw=$(pmu_hw_cmdline)
	mode=$(stat -c %a /dev/kvm)
	para=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)
	sw=""; [ "$para" -gt 1 ] && sw="expect_sw=0"
	chmod 666 /dev/kvm
	cur=non-root; ok=1
	su nobody -s /bin/sh -c "$PV run --kernel $G/hello.elf --cpus 2 --timeout 50" >"$T/$cur.out" 2>"$T/$cur.err" </dev/null
	st=$?
	expect_status 0; expect_out '^SUMMARY:'; expect_clean; done_test
	cur=non-root-pmu; ok=1
	su nobody -s /bin/sh -c "$PV run --kernel $G/pmu-discovery.elf --cmdline '$sw $hw' --timeout 50" \
		>"$T/$cur.out" 2>"$T/$cur.err" </dev/null
	st=$?
	chmod "$mode" /dev/kvm
	echo "  (as nobody, perf_event_paranoid $para: ${sw:-software events expected})"
	pmu_guest non-root-pmu 20; done_test
else
	echo "SKIP non-root: needs root (to lend /dev/kvm to 'nobody' for the test) and a 'nobody' user"
fi
