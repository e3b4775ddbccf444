#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Print the ABI name of the Debian kernel the Linux tests boot (e.g. 6.1.0-57-amd64):
# the one BUILD/debian-kernel/ holds once tests/integration/debian-kernel.sh fetched it,
# else the one Debian's linux-image-amd64 depends on now (what that script will fetch).
# The module's headers (scripts/linux-module.sh, scripts/deps.sh) must be that kernel's.
# With --apt, only the latter (tests/integration/debian-kernel.sh asks it what to fetch).
# Exit 1 with one line saying why if neither is known. Usage: scripts/debian-kernel-abi.sh [--apt | BUILD]
set -euo pipefail
build=${1:-build}
if [ "$build" != --apt ] && [ -s "$build/debian-kernel/package" ]; then
	abi=$(sed -n 's/^linux-image-\([0-9][^_]*-amd64\)_.*/\1/p' "$build/debian-kernel/package")
	[ -n "$abi" ] && { echo "$abi"; exit 0; }
fi
depends() { apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1; }
abi=$(depends)
if [ -z "$abi" ]; then
	apt-get update -qq >/dev/null 2>&1 || true
	abi=$(depends)
fi
[ -n "$abi" ] || { echo "debian-kernel-abi: apt-cache knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
echo "$abi"
