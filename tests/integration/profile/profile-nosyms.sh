#!/bin/sh
# SPDX-License-Identifier: MIT
# Host-side profiling (docs/profiling.md) of the profile guest (lib.sh: prof_*): without symbols: addresses, counted as unknown, still in the right ring.
. "$(dirname "$0")/../lib.sh"

run profile-nosyms 120 "$PV" run --kernel "$G/profile.stripped" --profile task-clock:1ms --profile-output "$T/prof4" \
	--cmdline "ms=500 r0ms=100" --timeout 100
expect_status 0; expect_clean
grep -q '^vcpu0;ring3;0x[0-9a-f]*;0x[0-9a-f]*;0x[0-9a-f]*;0x[0-9a-f]* [0-9]*$' "$T/prof4/stacks.folded" || bad "no address-only ring-3 stacks"
"$JC" symbols=none <"$T/prof4/profile.json" >/dev/null || bad "symbols is not 'none'"
[ "$("$JC" unknown <"$T/prof4/profile.json")" -eq "$("$JC" samples <"$T/prof4/profile.json")" ] || bad "not every sample counted unknown"
done_test
