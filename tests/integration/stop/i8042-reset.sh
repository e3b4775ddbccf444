#!/bin/sh
# SPDX-License-Identifier: MIT
# A reset through the i8042: exit status 0, logged with the host kind.
. "$(dirname "$0")/../lib.sh"

run i8042-reset 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=reset" --timeout 50 --verbose
expect_status 0; expect_err 'reset'; expect_err "host: $("$PV" host --kind)"; done_test
