#!/bin/sh
# SPDX-License-Identifier: MIT
# Self-test of the guest instruction check: an image with every refused
# instruction must fail with each one named (guest, function, address), an
# allowlisted one must pass, a stale allowlist entry must fail, and a clean
# image must pass. Usage: selftest.sh   (from the repo root)
set -u
d=$(mktemp -d /tmp/guest-check-selftest.XXXXXX)
trap 'rm -rf "$d"' EXIT
chk=tests/guest-check/check.sh
fail=0
bad() { echo "FAIL guest-check self-test: $*"; fail=1; }

cat >"$d/bad.S" <<'ASM'
	.text
	.globl _start, soft_int, soft_int3, fast_call, xstate, cx16, clean
_start:
clean:	movq $1, %rax
	ret
soft_int:	nop
	int $0x80
	ret
soft_int3:	int3
	ret
fast_call:	syscall
	sysenter
	ret
xstate:	xsave (%rdi)
	xrstor (%rdi)
	ret
cx16:	lock cmpxchg16b (%rdi)
	ret
ASM
printf '\t.text\n\t.globl _start\n_start:\tmovq $1, %%rax\n\tret\n' >"$d/good.S"
for n in bad good; do
	gcc -c "$d/$n.S" -o "$d/$n.o" && ld -static -nostdlib -Ttext=0x100000 -o "$d/$n.elf" "$d/$n.o" ||
		{ echo "FAIL guest-check self-test: cannot build $n.elf"; exit 1; }
done
: >"$d/empty"

sh $chk "$d/empty" "$d/bad.elf" >"$d/out" 2>&1
[ $? -eq 1 ] || bad "an image with refused instructions passed"
for want in 'bad.elf: soft_int+0x1 (0x100009): int    $0x80' 'soft_int3+0x0' 'fast_call+0x0 .*syscall' \
	'fast_call+0x2 .*sysenter' 'xstate+0x0 .*xsave' 'xstate+0x3 .*xrstor' 'cx16+0x0 .*cmpxchg16b'; do
	grep -q -- "$want" "$d/out" || bad "no line matching '$want' in: $(cat "$d/out")"
done
grep -q 'clean' "$d/out" && bad "the clean function was reported"

printf 'bad soft_int int\nbad soft_int3 int3\nbad fast_call syscall\nbad fast_call sysenter\nbad xstate xsave\nbad xstate xrstor\nbad cx16 cmpxchg16b\n' >"$d/allow"
sh $chk "$d/allow" "$d/bad.elf" >"$d/out" 2>&1 || bad "allowlisted instructions still refused: $(cat "$d/out")"

printf 'bad soft_int int\nbad nowhere int3\n' >"$d/stale"
sh $chk "$d/stale" "$d/bad.elf" >"$d/out" 2>&1
[ $? -eq 1 ] && grep -q "'bad nowhere int3' matches nothing" "$d/out" || bad "a stale allowlist entry went unnoticed"

sh $chk "$d/empty" "$d/good.elf" >"$d/out" 2>&1 || bad "a clean image failed: $(cat "$d/out")"
sh $chk "$d/empty" >/dev/null 2>&1
[ $? -eq 2 ] || bad "no image given: not a usage error"

[ $fail -eq 0 ] && echo "guest-check self-test: ok (refuses 7 instruction kinds, honours and audits the allowlist)"
exit $fail
