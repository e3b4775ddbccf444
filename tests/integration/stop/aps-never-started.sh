#!/bin/sh
# SPDX-License-Identifier: MIT
# A guest that ends without starting its APs: exit status 0.
. "$(dirname "$0")/../lib.sh"

run aps-never-started 60 "$PV" run --kernel "$G/behave.elf" --cmdline "mode=noap" --cpus 8 --timeout 50
expect_status 0; done_test
