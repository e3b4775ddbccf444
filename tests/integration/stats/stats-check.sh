#!/bin/sh
# SPDX-License-Identifier: MIT
# On one live 4-vCPU VM: stats-check (every invariant of docs/stats-abi.md) by PID, by socket
# and with the reader built against the frozen v1 header; perfvisor stat's table, JSON and usage.
# cases: stats-check-pid stats-check-socket stats-check-v1 stat-once stat-live stat-once-json stat-ndjson
# cases: stat-once-count stat-prom-interval stat-json-prom
. "$(dirname "$0")/../lib.sh"

SOCK=$T/api.sock
start_vm check-vm 120 run --kernel "$G/behave.elf" --cpus 4 --cmdline "mode=hang" --api-socket "$SOCK" --timeout 100
wait_sock "$SOCK" 10
run stats-check-pid 60 "$PV" stats-check $vmpid
expect_status 0; expect_out 'invariants hold'; done_test
run stats-check-socket 60 "$PV" stats-check "$SOCK"
expect_status 0; expect_out 'invariants hold'; done_test
if [ -x "$B/stats-check-v1" ]; then
	# A reader built against the frozen v1 header reads the current producer.
	run stats-check-v1 60 "$B/stats-check-v1" $vmpid
	expect_status 0; expect_out 'invariants hold'; done_test
fi
run stat-once 60 "$PV" stat "$SOCK" --once --fields 'exit*'
expect_status 0; expect_out '^TOTAL'; done_test
# The live table: three refreshes, each with a TOTAL row and per-second rates.
run stat-live 60 "$PV" stat $vmpid --interval 0.5 --count 3 --fields 'exits,time.*'
expect_status 0
[ "$(grep -c '^TOTAL' "$T/stat-live.out")" -eq 3 ] || bad "expected 3 refreshes"
grep -q '/s' "$T/stat-live.out" || bad "no rate column"
done_test
# --once goes with a format; JSON with --interval/--count is a stream, one object per line.
run stat-once-json 60 "$PV" stat $vmpid --once --json --fields exits
expect_status 0
[ "$(wc -l <"$T/stat-once-json.out")" -eq 1 ] || bad "--once --json printed more than one line"
"$JC" 'vcpus/3/exits=*' <"$T/stat-once-json.out" 2>>"$T/$cur.err" || bad "--once --json output does not check"
done_test
run stat-ndjson 60 "$PV" stat $vmpid --json --interval 0.2 --count 3 --fields 'exits,time.*'
expect_status 0
[ "$(wc -l <"$T/stat-ndjson.out")" -eq 3 ] || bad "expected 3 JSON lines"
for l in 1 2 3; do
	sed -n "${l}p" "$T/stat-ndjson.out" | "$JC" "pid=$vmpid" 'time_ns=*' 'vcpus/3/exits=*' 'vm/state=online' \
		2>>"$T/$cur.err" || bad "line $l is not one JSON sample"
done
t1=$(sed -n 1p "$T/stat-ndjson.out" | "$JC" time_ns 2>/dev/null)
t3=$(sed -n 3p "$T/stat-ndjson.out" | "$JC" time_ns 2>/dev/null)
[ "${t3:-0}" -gt "${t1:-0}" ] 2>/dev/null || bad "time_ns does not grow: $t1, $t3"
done_test
run stat-once-count 10 "$PV" stat $vmpid --once --count 2
expect_status 2; expect_err '--once takes one sample'; done_test
run stat-prom-interval 10 "$PV" stat $vmpid --prometheus --interval 1
expect_status 2; expect_err '--prometheus prints one sample'; done_test
run stat-json-prom 10 "$PV" stat $vmpid --json --prometheus
expect_status 2; expect_err 'choose one of --json and --prometheus'; done_test
stop_vm TERM
