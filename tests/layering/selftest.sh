#!/bin/sh
# SPDX-License-Identifier: MIT
# The layering check must see a cycle when there is one and pass when the
# calls flow one way: two tiny components of two files each, built here.
set -eu
t=$(mktemp -d /tmp/pvlayer.XXXXXX)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/loop" "$t/oneway"
printf 'int b(void);\nint a(void) { return b(); }\n' >"$t/loop/a.c"
printf 'int a(void);\nint b(void) { return a() + 1; }\n' >"$t/loop/b.c"
printf 'int b(void);\nint a(void) { return b(); }\n' >"$t/oneway/a.c"
printf 'int b(void) { return 1; }\n' >"$t/oneway/b.c"
for d in loop oneway; do
	for f in a b; do ${CC:-cc} -c "$t/$d/$f.c" -o "$t/$d/$f.o"; done
done
dir=$(cd "$(dirname "$0")" && pwd)
cd "$t"
if out=$(sh "$dir/check.sh" . loop 2>&1); then
	echo "layering selftest: FAIL: a cycle a -> b -> a was not seen: $out"
	exit 1
fi
echo "$out" | grep -q 'a call cycle: a -> b -> a' || { echo "layering selftest: FAIL: $out"; exit 1; }
out=$(sh "$dir/check.sh" . oneway) || { echo "layering selftest: FAIL: one-way calls refused: $out"; exit 1; }
echo "$out" | grep -q 'no cycle; bottom up: b a' || { echo "layering selftest: FAIL: $out"; exit 1; }
echo "layering selftest: a cycle is refused, one-way calls pass"
