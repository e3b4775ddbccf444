#!/bin/sh
# SPDX-License-Identifier: MIT
# The paravirtual PMU (docs/pvpmu.md): no fd leak: the VMM's open fds before fuzzing (guest waiting for a byte on
# the UART) and after (everything disabled, guest waiting again) are the same.
. "$(dirname "$0")/../lib.sh"

cur=pmu-fuzz-fds; ok=1
mkfifo "$T/fuzz.in"
# Not start_vm: stdin is the FIFO. The open blocks in the child until the
# writer below opens it; then the child execs perfvisor, with the same PID.
"$PV" run --kernel "$G/pmu-fuzz.elf" --cmdline "wait_input iters=5000 seed=99" --stdin \
	--timeout 380 <"$T/fuzz.in" >"$T/$cur.out" 2>"$T/$cur.err" &
vmpid=$!
watchdog $vmpid 400
exec 3>"$T/fuzz.in"
fd0=x; fd1=y
if wait_out 'waiting for input (start)' && is_perfvisor $vmpid; then
	fd0=$(ls /proc/$vmpid/fd | wc -l); feed g
	if wait_out 'waiting for input (end)'; then fd1=$(ls /proc/$vmpid/fd | wc -l); else bad "guest never finished fuzzing"; fi
else
	bad "guest never waited at the start (or pid $vmpid is not perfvisor)"
fi
feed g; exec 3>&-
stop_vm
expect_status 0; expect_out '^SUMMARY:'; expect_clean
[ "$fd0" -gt 3 ] 2>/dev/null || bad "could not count perfvisor's fds (pid $vmpid, $fd0)"
[ "$fd0" = "$fd1" ] || bad "perfvisor had $fd0 fds before fuzzing, $fd1 after"
echo "  (perfvisor fds before and after fuzzing: $fd0, $fd1)"
done_test
