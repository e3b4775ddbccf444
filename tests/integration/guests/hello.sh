#!/bin/sh
# SPDX-License-Identifier: MIT
# hello: the boot information, serial and printf output, the command line, the host kind.
. "$(dirname "$0")/../lib.sh"

run hello 120 "$PV" run --kernel "$G/hello.elf" --cpus 1 --memory 64M --cmdline "answer=42 mode=test" --timeout 100
expect_status 0; expect_out 'Hello from perfvisor guest'; expect_out 'answer=42 mode=test'; expect_out '^SUMMARY:'; expect_clean
expect_out "host=$("$PV" host --kind)"
done_test
