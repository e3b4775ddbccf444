#!/bin/sh
# SPDX-License-Identifier: MIT
# The guest instruction check: disassemble guest images and fail, naming
# guest, function and address, on an instruction that does not work on
# every KVM host (../shared/DESIGN.md section 3, docs/testing.md):
#   int $N, into, int1  software interrupts: #UD in ring 3 on kvm_pvm, and
#                       in ring 0 an emulation failure that kills the VM
#   int3                kills the VM in ring 0 on kvm_pvm (fine in ring 3,
#                       which only the allowlist can say)
#   syscall, sysenter,  kvm_pvm: syscall stays in ring 3, sysenter #UDs; the
#   sysexit, sysret     runtime sets none of them up
#   xsave*, xrstor*,    missing from kvm_pvm's ring-0 emulator
#   cmpxchg16b
# ALLOW lists (guest, function, instruction) exceptions; an entry that
# matches nothing is an error too, so the list stays short and true.
# Usage: check.sh ALLOW IMAGE.elf...     Exit: 0 clean, 1 findings, 2 usage.
set -u
[ $# -ge 2 ] || { echo "usage: $0 ALLOW IMAGE.elf..." >&2; exit 2; }
allow=$1; shift
[ -r "$allow" ] || { echo "guest-check: cannot read allowlist $allow" >&2; exit 2; }
command -v objdump >/dev/null || { echo "guest-check: objdump (binutils) is missing" >&2; exit 2; }
tmp=$(mktemp -d /tmp/guest-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0
grep -v -e '^#' -e '^[[:space:]]*$' "$allow" | awk '{ print $1, $2, $3 }' >"$tmp/allow"
: >"$tmp/used"
for img in "$@"; do
	guest=$(basename "$img" .elf)
	if ! objdump -d --no-show-raw-insn "$img" >"$tmp/dis" 2>"$tmp/err"; then
		echo "guest-check: $img: objdump failed: $(cat "$tmp/err")" >&2
		status=1
		continue
	fi
	# POSIX awk (mawk and busybox have no strtonum).
	awk -v guest="$guest" -v allowf="$tmp/allow" -v usedf="$tmp/used" '
		function hex(s,   v, i) {
			v = 0
			for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		BEGIN {
			while ((getline l < allowf) > 0) { split(l, a, " "); ok[a[1] " " a[2] " " a[3]] = 1 }
		}
		# "0000000000100450 <main>:" starts a function
		/^[0-9a-f]+ <[^>]+>:$/ { fn = $2; gsub(/[<>:]/, "", fn); base = hex($1); next }
		/^ *[0-9a-f]+:\t/ {
			split($0, p, "\t"); addr = p[1]; gsub(/[ :]/, "", addr)
			n = split(p[2], w, " ")
			i = 1
			while (i < n && w[i] ~ /^(lock|rep|repz|repnz|repe|repne|data16|addr32|rex(\.[WRXB]+)?|cs|ds|es|ss|fs|gs|notrack|bnd)$/) i++
			m = w[i]
			why = ""
			if (m == "int") why = "software interrupt: #UD in ring 3, VM killed in ring 0 on kvm_pvm"
			else if (m == "int3") why = "int3 kills the VM in ring 0 on kvm_pvm (allowlist it if it only runs in ring 3)"
			else if (m == "into" || m == "int1" || m == "icebp") why = "software interrupt: does not work on kvm_pvm"
			else if (m ~ /^sys(call|enter|exit|ret)/) why = "the runtime does not set up " m "; on kvm_pvm syscall stays in ring 3 and sysenter raises #UD"
			else if (m ~ /^(xsave|xrstor)/ || m == "cmpxchg16b") why = "not emulated in ring 0 on kvm_pvm"
			if (why == "") next
			key = guest " " fn " " m
			if (key in ok) { print key >> usedf; next }
			printf "guest-check: %s.elf: %s+0x%x (0x%s): %s: %s\n", guest, fn, hex(addr) - base, addr, p[2], why
			bad = 1
		}
		END { exit bad }' "$tmp/dis" || status=1
done
# Every allowlist entry must have matched (for the images given).
while read -r g f m; do
	present=0
	for img in "$@"; do [ "$(basename "$img" .elf)" = "$g" ] && present=1; done
	[ $present -eq 1 ] || continue
	grep -q -x "$g $f $m" "$tmp/used" || {
		echo "guest-check: $allow: '$g $f $m' matches nothing in $g.elf: remove it" >&2
		status=1
	}
done <"$tmp/allow"
[ $status -eq 0 ] && echo "guest-check: $# images, no instruction that fails on some KVM host"
exit $status
