#!/bin/sh
# SPDX-License-Identifier: MIT
# Out of file descriptors: a client is refused with a reply, and the main thread does not spin.
# (A first VM counts the fds a VM with a control socket holds.)
. "$(dirname "$0")/../lib.sh"

start_vm fd-count 60 run --kernel "$G/behave.elf" --cmdline "mode=hang" --api-socket "$T/f.sock" --timeout 50
wait_sock "$T/f.sock" 20; sleep 0.5
nfd=$(ls /proc/$vmpid/fd | wc -l)
stop_vm TERM
cur=api-out-of-fds; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
(ulimit -n $((nfd + 2)) && exec "$PV" run --kernel "$G/behave.elf" --cmdline "mode=hang" --api-socket "$T/f.sock" \
	--timeout 100) >"$T/fd-vm.out" 2>"$T/fd-vm.err" </dev/null &
vmpid=$!; watchdog $vmpid 120
wait_sock "$T/f.sock" 20; sleep 0.5
"$AC" "$T/f.sock" 6 3 >"$T/$cur.out" 2>&1 &
acpid=$!
sleep 1
t0=$(awk '{ print $14 + $15 }' /proc/$vmpid/stat); sleep 2; t1=$(awk '{ print $14 + $15 }' /proc/$vmpid/stat)
wait $acpid
grep -q 'out of file descriptors' "$T/$cur.out" || bad "no client was told about the fds: $(cat "$T/$cur.out")"
echo "  (perfvisor with $nfd fds + 2: $((t1 - t0)) CPU ticks in 2 s with clients queued)"
[ $((t1 - t0)) -lt 50 ] || bad "the main thread spun: $((t1 - t0)) ticks of CPU in 2 s"
"$PV" api "$T/f.sock" '{"cmd":"query"}' | grep -q '"state":"running"' || bad "no service once fds were free"
stop_vm TERM; st=0
done_test
