#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run every Criterion unit test binary, plain and under ASan+UBSan.
# Usage: tests/run-unit.sh BUILD_DIR TEST_NAME...
set -uo pipefail
build=$1; shift
fail=0; pass=0
for t in "$@"; do
	for bin in "$build/tests/$t" "$build/asan/tests/$t"; do
		if out=$(ASAN_OPTIONS=detect_leaks=1 timeout 120 "$bin" 2>&1); then
			pass=$((pass + 1))
			echo "ok   $bin: $(echo "$out" | grep -a 'Synthesis' | tail -n1)"
		else
			fail=$((fail + 1))
			# The failed assertions first: a sanitizer's leak report after them can be long.
			echo "FAIL $bin"; echo "$out" | grep -a -E '^\[(----|FAIL)\]' | head -n 40
			echo "$out" | grep -a -v -E '^\[(----|FAIL)\]' | tail -n 20
		fi
	done
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
