#!/bin/sh
# SPDX-License-Identifier: MIT
# --net's bad inputs: one line naming the mistake, before the guest starts (exit status 2 for
# usage, 125 for a tap perfvisor cannot attach to). Taps need root, /dev/net/tun and busybox
# mktap (the test host); the option's syntax is checked anywhere.
# cases: net-bad-syntax net-no-such-tap net-not-a-tap net-not-permitted net-tap-busy
. "$(dirname "$0")/../lib.sh"

cur=net-bad-syntax; ok=1; st=0
for args in "tap=a,mac=53:54:00:12:34:56|is a multicast address" "tap=a,mac=52:54:00:12:34|is not a MAC address" \
	"tap=a,mac=52:54:00:12:34:56:78|is not a MAC address" "tap=a,model=e1000|unknown key 'model'" \
	"mac=52:54:00:12:34:56|needs tap=NAME" "tap=waytoolongname16|is not an interface name" \
	"tap=a,mrg=yes|mrg= must be on or off" "tap=a,tx-usecs=20000|tx-usecs=20000: microseconds, 0 to 10000" \
	"tap=a,rx-usecs=1.5|rx-usecs=1.5: microseconds, 0 to 10000"; do
	"$PV" run --kernel "$G/hello.elf" --net "${args%%|*}" --timeout 30 >"$T/o" 2>"$T/e" </dev/null
	s=$?
	[ "$s" -eq 2 ] || bad "--net ${args%%|*}: exit status $s, expected 2"
	grep -q -- "${args#*|}" "$T/e" || bad "--net ${args%%|*}: stderr lacks '${args#*|}': $(cat "$T/e")"
	[ "$(wc -l <"$T/e")" -eq 1 ] || bad "--net ${args%%|*}: more than one line: $(cat "$T/e")"
	! grep -q . "$T/o" || bad "--net ${args%%|*}: the guest ran"
done
"$PV" run --kernel "$G/hello.elf" --net tap=a --net tap=b --net tap=c --net tap=d --net tap=e >"$T/o" 2>"$T/e" </dev/null
s=$?
[ "$s" -eq 2 ] && grep -q 'at most 4 --net options' "$T/e" || bad "five --net: status $s, $(cat "$T/e")"
head -n 1 "$T/e" | sed 's/^/  /'
done_test

if ! can_tap || [ ! -c /dev/kvm ]; then
	echo "SKIP net-no-such-tap net-not-a-tap net-not-permitted net-tap-busy: need root, /dev/kvm, /dev/net/tun, $MKTAP and busybox ip (the test host has them)"
	exit 0
fi

run net-no-such-tap 60 "$PV" run --kernel "$G/hello.elf" --net tap=pvnosuch0 --timeout 30
expect_status 125
expect_err '--net tap=pvnosuch0: no such interface; create it first, e.g. ip tuntap add pvnosuch0 mode tap'
expect_no_out 'Hello'
[ ! -e /sys/class/net/pvnosuch0 ] || bad "perfvisor made the interface"
head -n 1 "$T/$cur.err" | sed 's/^/  /'
done_test

run net-not-a-tap 60 "$PV" run --kernel "$G/hello.elf" --net tap=lo --timeout 30
expect_status 125; expect_err '--net tap=lo: not a tap interface'; expect_no_out 'Hello'
done_test

tap=pvtest-perm0
need_tap $tap "" 0

# As nobody (as_nobody opens /dev/kvm and /dev/net/tun up for the moment): a tap owned by root
# is not nobody's (one with no owner and no group is anyone's).
cur=net-not-permitted; ok=1
if as_nobody $cur "timeout 60 $PV run --kernel $G/hello.elf --net tap=$tap --timeout 30"; then
	expect_status 125
	expect_err "--net tap=$tap: not permitted (TUNSETIFF: EPERM): perfvisor has no CAP_NET_ADMIN"
	expect_no_out 'Hello'
	# The tap's owner may attach.
	tap_make $tap "$(id -u nobody)" || bad "cannot make tap $tap for nobody"
	nst=$st
	as_nobody own "timeout 60 $PV run --kernel $G/hello.elf --net tap=$tap --timeout 30"
	[ "$st" -eq 0 ] || bad "nobody's own tap: status $st: $(cat "$T/own.err")"
	st=$nst
	head -n 1 "$T/$cur.err" | sed 's/^/  /'
else
	bad "no user nobody"
fi
done_test

# A tap without multi_queue has one user: a second VM on it is refused.
"$PV" run --kernel "$G/virtio-net.elf" --net tap=$tap --timeout 60 --cmdline hostile >"$T/first.out" 2>"$T/first.err" </dev/null &
first=$!
watchdog $first 90
sleep 2
run net-tap-busy 60 "$PV" run --kernel "$G/hello.elf" --net tap=$tap --timeout 30
expect_status 125; expect_err "--net tap=$tap: in use by another process"
kill $first 2>/dev/null; wait $first 2>/dev/null
done_test
