#!/bin/sh
# SPDX-License-Identifier: MIT
# perfvisor exporter's bad command lines: one clear line each.
# cases: exporter-no-listen exporter-bad-listen exporter-bad-port exporter-no-dir exporter-dir-is-file
# cases: exporter-bad-flag
. "$(dirname "$0")/../lib.sh"

SD=$T/socks
mkdir -p "$SD"
echo "a file, not a directory" >"$T/a-file"
run exporter-no-listen 10 "$PV" exporter --socket-dir "$SD"
expect_status 2; expect_err '--listen ADDR:PORT is required'; done_test
run exporter-bad-listen 10 "$PV" exporter --listen localhost --socket-dir "$SD"
expect_status 2; expect_err "--listen 'localhost' is not ADDR:PORT"; done_test
run exporter-bad-port 10 "$PV" exporter --listen 127.0.0.1:70000 --socket-dir "$SD"
expect_status 2; expect_err "--listen '127.0.0.1:70000' is not ADDR:PORT"; done_test
run exporter-no-dir 10 "$PV" exporter --listen 127.0.0.1:0 --socket-dir "$T/nonexistent"
expect_status 2; expect_err "--socket-dir $T/nonexistent: No such file or directory"; done_test
run exporter-dir-is-file 10 "$PV" exporter --listen 127.0.0.1:0 --socket-dir "$T/a-file"
expect_status 2; expect_err 'is not a directory'; done_test
run exporter-bad-flag 10 "$PV" exporter --frobnicate
expect_status 2; expect_err "unknown option '--frobnicate'"; done_test
