#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run each libFuzzer target for a bounded time on its corpus (build/fuzz/
# corpus-NAME, which grows across runs, seeded from the committed
# fuzz/corpus/NAME, whose every input is replayed first) and report its
# executions; a crash, leak or sanitizer report fails, and leaves the input
# in build/fuzz/NAME-crash-*: add it to fuzz/corpus/NAME as a regression.
# The targets run side by side, one per CPU.
# Usage: tests/run-fuzz.sh FUZZ_DIR SECONDS NAME...
set -uo pipefail
dir=$1; secs=$2; shift 2
# As many targets at once as there are CPUs (each is one process), reported in order.
jobs=$(nproc 2>/dev/null || echo 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# one NAME: run target NAME; its output in $tmp/NAME.out, its status in $tmp/NAME.rc.
one() {
	local t=$1
	mkdir -p "$dir/corpus-$t"
	[ -d "fuzz/corpus/$t" ] && cp -n fuzz/corpus/"$t"/* "$dir/corpus-$t/" 2>/dev/null
	timeout $((secs + 60)) "$dir/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
		-artifact_prefix="$dir/$t-" -print_final_stats=1 "$dir/corpus-$t" >"$tmp/$t.out" 2>&1
	echo $? >"$tmp/$t.rc"
}
running=0
for t in "$@"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
	one "$t" &
	running=$((running + 1))
done
wait
fail=0
for t in "$@"; do
	rc=$(cat "$tmp/$t.rc" 2>/dev/null || echo 1)
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t.out")
	if [ "$rc" -ne 0 ]; then
		fail=1
		echo "FAIL fuzz $t (status $rc):"
		tail -n 40 "$tmp/$t.out"
	else
		echo "ok   fuzz $t: ${runs:-?} inputs in ${secs}s, corpus $(ls "$dir/corpus-$t" | wc -l) files"
	fi
done
exit $fail
