#!/bin/sh
# SPDX-License-Identifier: MIT
# perfvisor api without a VM at the socket path, and without a request.
# cases: api-no-vm api-usage
. "$(dirname "$0")/../lib.sh"

SOCK=$T/api.sock
run api-no-vm 10 "$PV" api "$SOCK" '{"cmd":"query"}'
expect_status 2; expect_err 'cannot connect'; done_test
run api-usage 10 "$PV" api "$SOCK"
expect_status 2; expect_err 'needs a socket path and at least one request'; done_test
