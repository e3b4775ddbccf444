#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of other boot protocols: a multiboot kernel (an ELF32: its .symtab).
# At 1 ms, as profile-bzimage and for its reason.
. "$(dirname "$0")/../lib.sh"

run profile-multiboot 120 "$PV" run --kernel "$G/multiboot.elf" --cmdline "path=$G/multiboot.elf mods=0" \
	--profile task-clock:1ms --profile-output "$T/prof-mb" --timeout 100
expect_status 0; expect_err "samples written to $T/prof-mb"
"$JC" symbols="ELF .symtab" <"$T/prof-mb/profile.json" >/dev/null || bad "multiboot: no ELF32 symbols"
grep -q '^vcpu0;ring0;.*[a-z_]* [0-9]*$' "$T/prof-mb/stacks.folded" || bad "multiboot: no symbolized stack"
done_test
