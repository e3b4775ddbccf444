#!/bin/sh
# SPDX-License-Identifier: MIT
# The control socket (docs/api.md), on one VM: owner-only, requests and replies, bad
# requests, a second VM refused, the socket removed at the end.
# cases: api api-bad-requests api-still-alive api-second-vm api-cleanup
. "$(dirname "$0")/../lib.sh"

SOCK=$T/api.sock
cur=api; ok=1
start_vm api-vm 120 run --kernel "$G/behave.elf" --cmdline "mode=hang" --cpus 2 --api-socket "$SOCK" --timeout 100
wait_sock "$SOCK" 10
case "$(stat -c %a "$SOCK" 2>/dev/null)" in ?00) ;; *) bad "socket mode $(stat -c %a "$SOCK" 2>/dev/null) is not owner-only" ;; esac
timeout 30 "$PV" api "$SOCK" '{"cmd":"query"}' '{"cmd":"stats-fd"}' '{"cmd":"pause"}' '{"cmd":"query"}' \
	'{"cmd":"resume"}' '{"cmd":"query"}' >"$T/api.out" 2>"$T/api.err"
st=$?
expect_status 0
expect_out '"vcpus":2'; expect_out '"memory_bytes":67108864'; expect_out 'received a file descriptor'
expect_out "\"host\":\"$("$PV" host --kind)\""
[ "$(grep -c '"state":"paused"' "$T/api.out")" -eq 2 ] || bad "pause not reported twice (reply + query)"
[ "$(grep -c '"state":"running"' "$T/api.out")" -eq 3 ] || bad "running not reported three times"
done_test

run api-bad-requests 30 "$PV" api "$SOCK" '{bad' '[]' '{"cmd":42}' '{"cmd":"nope"}' "$(head -c 5000 /dev/zero | tr '\0' x)"
expect_status 1; expect_out 'invalid JSON'; expect_out 'a JSON object with a string'
expect_out "unknown command 'nope'"; expect_out 'longer than 4095 bytes'; done_test
run api-still-alive 30 "$PV" api "$SOCK" '{"cmd":"query"}'
expect_status 0; expect_out '"state":"running"'; done_test

run api-second-vm 30 "$PV" run --kernel "$G/hello.elf" --api-socket "$SOCK" --timeout 20
expect_status 125; expect_err 'another VM is already serving the API socket'; done_test

stop_vm TERM
cur=api-cleanup; ok=1; st=0
[ ! -e "$SOCK" ] || bad "socket file left behind"
! grep -q -e 'AddressSanitizer' -e 'runtime error' "$T/api-vm.err" || bad "sanitizer report"
done_test
