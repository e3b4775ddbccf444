#!/bin/sh
# SPDX-License-Identifier: MIT
# seccomp (docs/security.md): every other test runs with --seccomp on, the default. Each thread's
# filter denies what it does not need: a test-only switch makes the thread try execve; with
# --seccomp log the VM runs on. The virtio I/O thread's (io) exists with --rng.
# cases: seccomp-deny-main seccomp-log-main seccomp-deny-vcpu seccomp-log-vcpu seccomp-deny-io seccomp-log-io
. "$(dirname "$0")/../lib.sh"

for th in main vcpu io; do
	export PERFVISOR_SECCOMP_SELFTEST=$th
	rng=; [ $th = io ] && rng=--rng
	run seccomp-deny-$th 60 "$PV" run --kernel "$G/hello.elf" --cpus 2 --timeout 50 $rng
	expect_status 125
	[ $th = main ] && expect_err 'seccomp: the main thread made system call execve (59), which its filter denies'
	[ $th = vcpu ] && expect_err 'seccomp: the vCPU 0 thread made system call execve (59), which its filter denies'
	[ $th = io ] && expect_err 'seccomp: the virtio I/O thread made system call execve (59), which its filter denies'
	done_test
	run seccomp-log-$th 60 "$PV" run --kernel "$G/hello.elf" --cpus 2 --timeout 50 --seccomp log $rng
	expect_status 0; expect_out '^SUMMARY:'; expect_no_out '^FAIL'; done_test
	unset PERFVISOR_SECCOMP_SELFTEST
done
