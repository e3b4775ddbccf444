#!/bin/sh
# SPDX-License-Identifier: MIT
# Live migration over TCP between two network namespaces joined by a veth pair, so the destination
# really listens on another address: one vCPU dirtying 16 MiB at a fixed rate moves there and back
# four times (root -> netns -> root -> netns), each hop a new perfvisor; the listener takes one
# migration and closes; at the end the guest finds every count exact and every page as last written.
# cases: migrate-netns migrate-netns-dest
. "$(dirname "$0")/../lib.sh"

cur=migrate-netns; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
if [ "$(id -u)" -ne 0 ] || ! ip link add pvmig0 type veth peer name pvmig1 2>"$T/veth.err"; then
	echo "SKIP: migrate-netns: cannot make a veth pair here ($(id -u) is not root, or: $(cat "$T/veth.err"))" >"$T/$cur.out"
	done_test; cur=migrate-netns-dest; ok=1; cp "$T/migrate-netns.out" "$T/$cur.out"; done_test; exit 0
fi
# busybox's ip ignores "peer name": the peer is whichever link is pvmig0's other end.
peer=$(ip link show | sed -n 's/^[0-9]*: \([^@:]*\)@pvmig0:.*/\1/p' | head -n 1)
[ -n "$peer" ] || bad "cannot find pvmig0's peer: $(ip link show | tr '\n' ' ')"
unshare -n sleep 600 &
nspid=$!
sleep 0.5
cleanup_ns() { ip link del pvmig0 2>/dev/null; kill "$nspid" 2>/dev/null; }
trap cleanup_ns EXIT
ip link set "$peer" netns "$nspid" || bad "cannot move $peer into the namespace"
ip addr add 10.77.0.1/24 dev pvmig0 && ip link set pvmig0 up || bad "cannot set up pvmig0"
ip link set lo up
nsenter -t "$nspid" -n sh -c "ip addr add 10.77.0.2/24 dev $peer && ip link set $peer up && ip link set lo up" ||
	bad "cannot set up $peer in the namespace"
# hop N NS ADDR: a destination in NS (root or ns) listening on ADDR, the VM of socket s(N-1) moved there.
hop() {
	n=$1; where=$2; addr=$3
	if [ "$where" = ns ]; then
		ASAN_OPTIONS=detect_leaks=1 nsenter -t "$nspid" -n "$PV" run --incoming "$addr" --api-socket "$T/s$n.sock" \
			--timeout 280 --verbose >"$T/hop$n.out" 2>"$T/hop$n.err" </dev/null &
	else
		ASAN_OPTIONS=detect_leaks=1 "$PV" run --incoming "$addr" --api-socket "$T/s$n.sock" \
			--timeout 280 --verbose >"$T/hop$n.out" 2>"$T/hop$n.err" </dev/null &
	fi
	eval "pid$n=\$!"
	wait_for "$T/hop$n.err" 'waiting for a migration on' || bad "hop $n: the destination never listened"
	# --stop-copy: converging within 20 ms depends on the host's speed (migrate-basic.sh).
	"$PV" migrate "$T/s$((n - 1)).sock" --to "$addr" --timeout 120s --stop-copy >"$T/migrate$n.out" 2>&1 ||
		bad "hop $n: perfvisor migrate failed: $(tail -n 1 "$T/migrate$n.out")"
	echo "  (hop $n to $addr: $(grep -c '^round' "$T/migrate$n.out") rounds; $(tail -n 1 "$T/migrate$n.out" | sed 's/^perfvisor migrate: //'))"
	wait_sock "$T/s$n.sock" 30 || bad "hop $n: the destination serves no control socket"
}
start_vm hop0 300 run --kernel "$SNAP" --cmdline "phases=60 work_ms=150 dirty=16 dirty_rate=2" --api-socket "$T/s0.sock" --timeout 280
pid0=$vmpid; wd0=$wdpid
wait_sock "$T/s0.sock" 20 || bad "no control socket"
wait_for "$T/hop0.out" 'cpu 0 phase 2/' || bad "the guest never reached phase 2"
hop 1 ns tcp:10.77.0.2:7001
# The listener took one migration: nobody else may connect now.
if echo x | timeout 10 busybox nc 10.77.0.2 7001 >/dev/null 2>&1; then bad "the destination still accepts connections after its migration"; fi
hop 2 root tcp:10.77.0.1:7002
hop 3 ns tcp:10.77.0.2:7003
hop 4 root tcp:10.77.0.1:7004
vmpid=$pid0; wdpid=$wd0; stop_vm
[ "$st" -eq 0 ] || bad "the first source exited $st"
for n in 1 2 3; do
	eval "p=\$pid$n"; wait "$p"; s=$?
	[ "$s" -eq 0 ] || bad "hop $n's perfvisor exited $s after passing the VM on"
	grep -q "migrated to tcp:" "$T/hop$n.err" || bad "hop $n did not say where the VM went"
done
grep -q 'phase 60/60' "$T/hop4.out" || wait_for "$T/hop4.out" 'snap: done' || bad "the guest never finished at the last hop"
done_test
cur=migrate-netns-dest; ok=1
wait "$pid4"; st=$?
cp "$T/hop4.out" "$T/$cur.out"; cp "$T/hop4.err" "$T/$cur.err"
expect_status 0; expect_out 'cpu 0: exits.io counted exactly'; expect_out 'cpu 0: all exits counted exactly'
expect_out 'cpu 0: its 4096 dirtied pages hold their last writes'; expect_out 'LCG state after'
expect_out 'snap: done'; expect_out '^SUMMARY:'; expect_clean
done_test
