#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of other boot protocols: the bzImage with its ELF given as --symbols.
# Whether a sample lands in printf's internals is a matter of how many there are: a run the nested
# test host gave so little CPU that it sampled fewer than 100 times (37 once, against 240-590 usually)
# is run again, up to 3 times, and says so; the checks are those of the last run.
. "$(dirname "$0")/../lib.sh"

try=1
while :; do
	rm -rf "$T/prof-lx2"
	run profile-bzimage-symbols 120 "$PV" run --kernel "$G/linux.bzimage" --profile task-clock:200us \
		--profile-output "$T/prof-lx2" --symbols "$G/linux.elf64" --timeout 100
	n=$("$JC" samples <"$T/prof-lx2/profile.json" 2>/dev/null)
	[ "${n:-0}" -ge 100 ] 2>/dev/null || [ $try -ge 3 ] || [ "$st" -ne 0 ] || {
		echo "  (profile-bzimage-symbols: run $try sampled only ${n:-no} times: running it again)"
		try=$((try + 1))
		continue
	}
	break
done
expect_status 0
"$JC" symbols="ELF .symtab" <"$T/prof-lx2/profile.json" >/dev/null || bad "bzImage --symbols: not the ELF's symbols"
awk '$NF == "format" || $NF == "emit" { f = 1 } END { exit !f }' "$T/prof-lx2/symbols.txt" || bad "bzImage --symbols: no printf internals in the table"
done_test
