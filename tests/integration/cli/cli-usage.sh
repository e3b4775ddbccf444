#!/bin/sh
# SPDX-License-Identifier: MIT
# Bad command lines: one clear line, exit status 2, no crash; and run --help.
# cases: cli-unknown cli-no-kernel cli-cpus0 cli-cpus-many cli-mem-small cli-mem-bad cli-command cli-twice help
. "$(dirname "$0")/../lib.sh"

run cli-unknown 10 "$PV" run --kernel "$G/hello.elf" --frobnicate
expect_status 2; expect_err "unknown option '--frobnicate'"; done_test
run cli-no-kernel 10 "$PV" run --cpus 2
expect_status 2; expect_err '--kernel FILE is required'; done_test
run cli-cpus0 10 "$PV" run --kernel "$G/hello.elf" --cpus 0
expect_status 2; expect_err '--cpus must be a number from 1 to 64'; done_test
run cli-cpus-many 10 "$PV" run --kernel "$G/hello.elf" --cpus 65
expect_status 2; expect_err '--cpus must be a number from 1 to 64'; done_test
run cli-mem-small 10 "$PV" run --kernel "$G/hello.elf" --memory 1M
expect_status 2; expect_err 'below the minimum'; done_test
run cli-mem-bad 10 "$PV" run --kernel "$G/hello.elf" --memory lots
expect_status 2; expect_err "is not a size"; done_test
run cli-command 10 "$PV" frobnicate
expect_status 2; expect_err "unknown command 'frobnicate'"; done_test
run cli-twice 10 "$PV" run --kernel "$G/hello.elf" --cpus 2 --cpus 4
expect_status 2; expect_err '--cpus is given twice'; done_test
run help 10 "$PV" run --help
expect_status 0; expect_out 'Usage: perfvisor run'; done_test
