#!/bin/sh
# SPDX-License-Identifier: MIT
# perfvisor host: on a KVM host the kind is known (hello checks the guest sees the same one).
# cases: host-kind host-bad-arg
. "$(dirname "$0")/../lib.sh"

run host-kind 10 "$PV" host
expect_status 0; expect_no_out '^unknown'; done_test
run host-bad-arg 10 "$PV" host --frobnicate
expect_status 2; expect_err "unknown argument '--frobnicate'"; done_test
