#!/bin/sh
# SPDX-License-Identifier: MIT
# Unhandled ports and MMIO: logged, and the guest goes on.
. "$(dirname "$0")/../lib.sh"

run badports 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=badports" --timeout 50
expect_status 0; expect_err 'unhandled I/O port'; expect_err 'unhandled MMIO'; expect_clean; done_test
