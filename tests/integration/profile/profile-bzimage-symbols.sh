#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of other boot protocols: the bzImage with its ELF given as --symbols.
. "$(dirname "$0")/../lib.sh"

run profile-bzimage-symbols 120 "$PV" run --kernel "$G/linux.bzimage" --profile task-clock:200us \
	--profile-output "$T/prof-lx2" --symbols "$G/linux.elf64" --timeout 100
expect_status 0
"$JC" symbols="ELF .symtab" <"$T/prof-lx2/profile.json" >/dev/null || bad "bzImage --symbols: not the ELF's symbols"
awk '$NF == "format" || $NF == "emit" { f = 1 } END { exit !f }' "$T/prof-lx2/symbols.txt" || bad "bzImage --symbols: no printf internals in the table"
done_test
