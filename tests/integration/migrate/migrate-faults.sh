#!/bin/sh
# SPDX-License-Identifier: MIT
# Live migration's faults lose nothing (docs/migration.md). The destination dies (the
# PERFVISOR_MIGRATE_FAULT hook) after HELLO, in the memory, with all of the state, and after GO; the
# source is killed in the middle; the destination offers fewer vCPUs or less memory; a stream
# that is not perfvisor's; a guest that dirties memory faster than the rounds (held to
# --max-bandwidth) converge, given up and then forced with --stop-copy; a paused VM; and usage errors. Each time
# the side that keeps the guest runs it to its end with every count exact.
# cases: migrate-fault-hello migrate-fault-memory migrate-fault-state migrate-fault-go
# cases: migrate-source-killed migrate-fewer-cpus migrate-less-memory migrate-not-a-stream
# cases: migrate-no-converge migrate-stop-copy migrate-paused
# cases: migrate-usage migrate-bad-to migrate-bad-downtime migrate-bad-bandwidth incoming-bad-addr incoming-and-kernel
# cases: incoming-timeout-alone incoming-timeout incoming-signal incoming-stale-socket
. "$(dirname "$0")/../lib.sh"

# src NAME CMDLINE [ARGS]: the snap guest on 2 vCPUs at socket $T/NAME.sock, past phase 2 ($spid, $swd).
src() {
	n=$1; c=$2; shift 2
	rm -f "$T/$n.sock"
	start_vm "$n" 300 run --kernel "$SNAP" --cpus 2 --cmdline "$c" --api-socket "$T/$n.sock" --timeout 280 "$@"
	spid=$vmpid; swd=$wdpid
	wait_sock "$T/$n.sock" 20 || bad "$n: no control socket"
	wait_for "$T/$n.out" 'cpu 1 phase 2/' || bad "$n: CPU 1 never reached phase 2"
}
# dst NAME ADDR [ARGS]: a destination waiting at ADDR ($dpid, $dwd); env for it in $DENV.
dst() {
	n=$1; a=$2; shift 2
	env ${DENV:-} ASAN_OPTIONS=detect_leaks=1 "$PV" run --incoming "$a" --timeout 280 --verbose "$@" \
		>"$T/$n.out" 2>"$T/$n.err" </dev/null &
	dpid=$!
	watchdog $dpid 300; dwd=$wdpid
	wait_for "$T/$n.err" 'waiting for a migration on' || bad "$n: the destination never listened"
}
# migrate SOCK ADDR [ARGS]: perfvisor migrate into the case's files; $mst its status.
migrate() {
	s=$1; a=$2; shift 2
	"$PV" migrate "$s" --to "$a" --timeout 60s "$@" >>"$T/$cur.out" 2>>"$T/$cur.err"
	mst=$?
}
# said FILE: its last line, for the log (what a user sees in this case).
said() { echo "  ($cur: $(tail -n 1 "$1"))"; }
# end_dst: wait for the destination; its status in $dst_st.
end_dst() { vmpid=$dpid; wdpid=$dwd; stop_vm; dst_st=$st; }
# src_finishes NAME: the source ran its guest to the end, every count exact (after a failed migration).
src_finishes() {
	vmpid=$spid; wdpid=$swd; stop_vm
	[ "$st" -eq 0 ] || bad "the source exited $st: it should have run its guest to the end"
	grep -q 'snap: done' "$T/$1.out" && grep -q '^SUMMARY:' "$T/$1.out" && ! grep -q '^FAIL' "$T/$1.out" ||
		bad "the source's guest did not finish clean: $(grep -m1 '^FAIL' "$T/$1.out")"
}

for f in hello memory state; do
	cur=migrate-fault-$f; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
	# A downtime budget the first round always fits, so the state phase is reached on a slow host
	# too (where 16 MiB/s of dirtying never converges to 20 ms), well before the guest's 6 s end.
	src "s-$f" "phases=40 dirty=4 dirty_rate=2"
	DENV="PERFVISOR_MIGRATE_FAULT=$f" dst "d-$f" "unix:$T/m-$f"
	migrate "$T/s-$f.sock" "unix:$T/m-$f" --max-downtime 30s
	[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
	grep -q 'runs on here' "$T/$cur.err" || bad "migrate did not say the VM runs on: $(tail -n 1 "$T/$cur.err")"
	end_dst; [ "$dst_st" -eq 99 ] || bad "the destination exited $dst_st, not the fault's 99"
	src_finishes "s-$f"
	said "$T/$cur.err"
	done_test
done

cur=migrate-fault-go; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-go "phases=30"
DENV="PERFVISOR_MIGRATE_FAULT=go" dst d-go "unix:$T/m-go"
migrate "$T/s-go.sock" "unix:$T/m-go" --max-downtime 30s
[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
grep -q 'stays paused' "$T/$cur.err" || bad "migrate did not say the VM stays paused: $(tail -n 1 "$T/$cur.err")"
end_dst; [ "$dst_st" -eq 99 ] || bad "the destination exited $dst_st"
"$PV" api "$T/s-go.sock" '{"cmd":"query"}' >"$T/q.out" 2>&1
grep -q '"state":"paused"' "$T/q.out" || bad "the source is not paused after GO: $(cat "$T/q.out")"
# This destination never ran the guest (it died on GO): resuming the source loses nothing.
"$PV" api "$T/s-go.sock" '{"cmd":"resume"}' >/dev/null 2>&1 || bad "resume failed"
src_finishes s-go
said "$T/$cur.err"
done_test

cur=migrate-source-killed; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-k "phases=60 dirty=8"
dst d-k "unix:$T/m-k"
# 32 MiB/s at most: the first round alone takes a second, on any host.
"$PV" migrate "$T/s-k.sock" --to "unix:$T/m-k" --max-downtime 1ms --max-bandwidth 32M --timeout 120s >/dev/null 2>&1 &
mpid=$!
wait_for "$T/d-k.err" 'incoming migration: 2 vCPUs' || bad "the destination never got HELLO"
kill -KILL "$spid"; wait "$spid" 2>/dev/null; kill "$swd" 2>/dev/null
wait "$mpid"
end_dst
cp "$T/d-k.err" "$T/$cur.err"
[ "$dst_st" -eq 125 ] || bad "the destination exited $dst_st, not 125"
expect_err 'closed the connection'
grep -q 'snap:' "$T/d-k.out" && bad "the destination ran the guest"
said "$T/$cur.err"
done_test

cur=migrate-fewer-cpus; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-c "phases=12"
dst d-c "unix:$T/m-c" --cpus 1
migrate "$T/s-c.sock" "unix:$T/m-c"
[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
expect_err 'the VM has 2 vCPUs, this destination offers 1 (--cpus)'
said "$T/$cur.err"
end_dst; [ "$dst_st" -eq 125 ] || bad "the destination exited $dst_st, not 125"
grep -q 'refused the incoming VM' "$T/d-c.err" || bad "the destination did not say it refused"
src_finishes s-c
done_test

cur=migrate-less-memory; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-m "phases=12"
dst d-m "unix:$T/m-m" --memory 32M
migrate "$T/s-m.sock" "unix:$T/m-m"
[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
expect_err 'the VM has 64 MiB of RAM, this destination offers 32 MiB (--memory)'
end_dst; [ "$dst_st" -eq 125 ] || bad "the destination exited $dst_st, not 125"
src_finishes s-m
done_test

cur=migrate-not-a-stream; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
dst d-n "tcp:127.0.0.1:0"
port=$(sed -n 's/.*waiting for a migration on tcp:127.0.0.1:0 (port \([0-9]*\)).*/\1/p' "$T/d-n.err")
printf 'GET / HTTP/1.0\r\nHost: x\r\n\r\n' | timeout 20 busybox nc 127.0.0.1 "$port" >/dev/null 2>&1
end_dst
cp "$T/d-n.err" "$T/$cur.err"
[ "$dst_st" -eq 125 ] || bad "the destination exited $dst_st, not 125"
expect_err 'not a perfvisor migration stream (magic 0x20544547)'
said "$T/$cur.err"
done_test

# Each of these two has a guest of its own, of 45 s or more. Its 2 x 256 pages are rewritten
# every few ms on any host; at --max-bandwidth 1M a round of them takes 2 s (4 ms a page), and
# 1 ms of downtime sends less than a page, so only a round in which the guest wrote nothing at
# all converges. (At 32M the test host's sender, slower than that, ran unthrottled: a round of
# 3 pages took 0.5 ms, the guest did not run in it, and the migration converged.) Five rounds
# without a new low end it: about 20 s.
cur=migrate-no-converge; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-d "phases=300 dirty=1"
dst d-d "unix:$T/m-d"
migrate "$T/s-d.sock" "unix:$T/m-d" --max-downtime 1ms --max-bandwidth 1M
[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
expect_err 'does not converge'; expect_err 'runs on here'
end_dst; [ "$dst_st" -eq 125 ] || bad "the destination exited $dst_st, not 125"
grep -q 'the source gave up' "$T/d-d.err" || bad "the destination did not say the source gave up"
vmpid=$spid; wdpid=$swd; stop_vm TERM
said "$T/$cur.err"
done_test
# A guest that likewise does not converge: --stop-copy pauses and copies the rest anyway.
cur=migrate-stop-copy; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-s "phases=300 dirty=1"
dst d-s "unix:$T/m-s"
migrate "$T/s-s.sock" "unix:$T/m-s" --max-downtime 1ms --max-bandwidth 1M --stop-copy
[ "$mst" -eq 0 ] || bad "perfvisor migrate --stop-copy exited $mst: $(tail -n 1 "$T/$cur.err")"
expect_out 'the rounds did not converge: the guest was paused anyway (--stop-copy)'
echo "  (migrate-stop-copy: $(grep -c '^round' "$T/$cur.out") rounds; $(tail -n 1 "$T/$cur.out" | sed 's/^perfvisor migrate: //'))"
vmpid=$spid; wdpid=$swd; stop_vm; [ "$st" -eq 0 ] || bad "the source exited $st"
end_dst; [ "$dst_st" -eq 0 ] || bad "the destination exited $dst_st"
grep -q 'cpu 1: its 256 dirtied pages hold their last writes' "$T/d-s.out" || bad "dirtied pages came wrong: $(grep -m1 dirtied "$T/d-s.out")"
grep -q '^FAIL' "$T/d-s.out" && bad "the guest failed a check: $(grep -m1 '^FAIL' "$T/d-s.out")"
grep -q 'snap: done' "$T/d-s.out" || bad "the guest did not finish at the destination"
done_test

cur=migrate-paused; ok=1; : >"$T/$cur.out"; : >"$T/$cur.err"
src s-p "phases=40" # 6 s: the pause comes well before the guest's end, however slow the host
"$PV" api "$T/s-p.sock" '{"cmd":"pause"}' >/dev/null 2>&1
migrate "$T/s-p.sock" "unix:$T/m-p"
[ "$mst" -eq 1 ] || bad "perfvisor migrate exited $mst, not 1"
expect_err 'the VM is paused'
"$PV" api "$T/s-p.sock" '{"cmd":"resume"}' >/dev/null 2>&1
src_finishes s-p
done_test

run migrate-usage 10 "$PV" migrate "$T/nosock"
expect_status 2; expect_err 'needs SOCKET and --to ADDR'; done_test
run migrate-bad-to 10 "$PV" migrate "$T/nosock" --to ftp:x
expect_status 2; expect_err 'an address is tcp:HOST:PORT or unix:PATH'; done_test
run migrate-bad-downtime 10 "$PV" migrate "$T/nosock" --to unix:/x --max-downtime 0ms
expect_status 2; expect_err "max-downtime '0ms'"; done_test
run migrate-bad-bandwidth 10 "$PV" migrate "$T/nosock" --to unix:/x --max-bandwidth 512K
expect_status 2; expect_err "max-bandwidth '512K': bytes per second, at least 1M"; done_test
run incoming-bad-addr 10 "$PV" run --incoming tcp:localhost:99999
expect_status 2; expect_err 'the port must be 0 to 65535'; done_test
run incoming-and-kernel 10 "$PV" run --incoming unix:/x --kernel "$SNAP"
expect_status 2; expect_err '--kernel cannot be combined with --incoming'; done_test
run incoming-timeout-alone 10 "$PV" run --kernel "$SNAP" --incoming-timeout 5
expect_status 2; expect_err '--incoming-timeout needs --incoming'; done_test
run incoming-timeout 30 "$PV" run --incoming "unix:$T/never" --incoming-timeout 1
expect_status 125; expect_err 'waiting for a migration on unix:'; expect_err 'timed out'; done_test
# A destination still waiting ends at a stop signal; its socket file, left behind, is no obstacle.
cur=incoming-signal; ok=1
ASAN_OPTIONS=detect_leaks=1 "$PV" run --incoming "unix:$T/sig" >"$T/$cur.out" 2>"$T/$cur.err" </dev/null &
sp=$!
wait_for "$T/$cur.err" 'waiting for a migration on' || bad "the destination never listened"
kill -TERM "$sp"; wait "$sp" 2>/dev/null; st=$? # (the shell would say "Terminated")
expect_status 143
done_test
run incoming-stale-socket 30 "$PV" run --incoming "unix:$T/sig" --incoming-timeout 1
expect_status 125; expect_err 'waiting for a migration on unix:'; expect_err 'timed out'; done_test
