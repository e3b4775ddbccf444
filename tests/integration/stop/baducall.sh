#!/bin/sh
# SPDX-License-Identifier: MIT
# Malformed ucalls: logged and ignored, and the guest goes on.
. "$(dirname "$0")/../lib.sh"

run baducall 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=baducall" --timeout 50
expect_status 0; expect_err 'testdev:'; expect_clean; done_test
