#!/bin/sh
# SPDX-License-Identifier: MIT
# Without permission on /dev/kvm (an unprivileged user; root bypasses modes).
. "$(dirname "$0")/../lib.sh"

if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && [ -c /dev/kvm ] &&
	! su nobody -s /bin/sh -c 'test -r /dev/kvm && test -w /dev/kvm' 2>/dev/null; then
	cur=kvm-no-permission; ok=1
	su nobody -s /bin/sh -c "$PV run --kernel $G/hello.elf" >"$T/$cur.out" 2>"$T/$cur.err" </dev/null
	st=$?
	expect_status 125; expect_err 'no permission to open /dev/kvm'; done_test
else
	echo "SKIP kvm-no-permission: needs root, a 'nobody' user and a /dev/kvm that nobody cannot open (the test host has them)"
fi
