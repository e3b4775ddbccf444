#!/bin/sh
# SPDX-License-Identifier: MIT
# Every stop signal ends the VM cleanly: a message, 128 + N, the socket file removed.
# cases: sigHUP sigQUIT sigALRM sigUSR2
. "$(dirname "$0")/../lib.sh"

for sig in HUP QUIT ALRM USR2; do
	cur=sig$sig; ok=1
	start_vm $cur 60 run --kernel "$G/behave.elf" --cmdline "mode=hang" --cpus 2 --api-socket "$T/s$sig.sock" --timeout 50
	wait_sock "$T/s$sig.sock" 20
	stop_vm $sig
	case $sig in HUP) want=129 ;; QUIT) want=131 ;; ALRM) want=142 ;; USR2) want=140 ;; esac
	expect_status $want; expect_err 'stopped by signal'
	[ ! -e "$T/s$sig.sock" ] || bad "the socket file was left behind"
	done_test
done
