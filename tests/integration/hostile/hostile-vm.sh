#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile clients of one VM's control socket (docs/security.md), and signals it ignores.
# cases: api-utf8-cut api-idle-clients api-never-reads api-permission signals-ignored
. "$(dirname "$0")/../lib.sh"

start_vm hostile-vm 200 run --kernel "$G/behave.elf" --cmdline "mode=hang" --api-socket "$T/h.sock" --timeout 180
wait_sock "$T/h.sock" 20
# An unknown command whose two-byte UTF-8 character the 100-byte quote cuts in half: still a reply.
long=$(printf 'a%.0s' $(seq 99))$(printf '\303\251')
run api-utf8-cut 30 "$PV" api "$T/h.sock" "{\"cmd\":\"$long\"}" '{"cmd":"query"}'
expect_status 1; expect_out 'unknown command'; expect_out '"state":"running"'; done_test
# Eight silent clients hold every slot: a ninth is told so; after the idle time they are closed.
cur=api-idle-clients; ok=1; st=0
"$AC" "$T/h.sock" 8 14 >"$T/$cur.out" 2>"$T/$cur.err" &
acpid=$!
sleep 2
"$PV" api "$T/h.sock" '{"cmd":"query"}' >"$T/ninth.out" 2>&1
grep -q 'too many clients' "$T/ninth.out" || bad "a ninth client was not told: $(cat "$T/ninth.out")"
wait $acpid
[ "$(grep -c 'closed: .*no request for 10 s' "$T/$cur.out")" -eq 8 ] || bad "the idle clients were not all closed after 10 s"
"$PV" api "$T/h.sock" '{"cmd":"query"}' | grep -q '"state":"running"' || bad "no service after the idle clients went"
done_test
# A client that sends and never reads: the server does not block on it, sends no half reply,
# closes it once a reply does not fit, and serves everyone else meanwhile.
cur=api-never-reads; ok=1; st=0
"$AC" "$T/h.sock" --flood >"$T/$cur.out" 2>"$T/$cur.err" &
acpid=$!
"$PV" api "$T/h.sock" '{"cmd":"query"}' | grep -q '"state":"running"' || bad "no service while a client floods"
wait $acpid
echo "  ($(cat "$T/$cur.out"))"
grep -q '^flood: sent [0-9]*, got [1-9][0-9]* whole replies, 0 broken lines, closed$' "$T/$cur.out" ||
	bad "the flooding client: $(cat "$T/$cur.out" "$T/$cur.err")"
"$PV" api "$T/h.sock" '{"cmd":"query"}' | grep -q '"state":"running"' || bad "no service after the flood"
done_test
# Permission denied is not "is a VM running?".
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	cur=api-permission; ok=1
	su nobody -s /bin/sh -c "$PV api $T/h.sock '{\"cmd\":\"query\"}'" >"$T/$cur.out" 2>"$T/$cur.err" </dev/null
	st=$?
	expect_status 2; expect_err 'Permission denied'; expect_err "owner's only"; done_test
else
	echo "SKIP api-permission: needs root and a 'nobody' user"
fi
# SIGPIPE and an outside SIGUSR1 change nothing; the VM runs on.
cur=signals-ignored; ok=1; st=0
kill -PIPE $vmpid; kill -USR1 $vmpid; sleep 1
"$PV" api "$T/h.sock" '{"cmd":"query"}' | grep -q '"state":"running"' || bad "SIGPIPE or SIGUSR1 stopped the VM"
done_test
stop_vm TERM
