#!/bin/sh
# SPDX-License-Identifier: MIT
# seccomp: a bad --seccomp value.
. "$(dirname "$0")/../lib.sh"

run seccomp-bad 10 "$PV" run --kernel "$G/hello.elf" --seccomp maybe
expect_status 2; expect_err '--seccomp must be on, log or off'; done_test
