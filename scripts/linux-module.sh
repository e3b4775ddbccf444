#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the guest's perf driver, guest-drivers/linux/perfvisor_pmu.c, into
# BUILD/guest-drivers/linux/perfvisor_pmu.ko for the Debian kernel the Linux tests
# boot (scripts/debian-kernel-abi.sh), against that kernel's linux-headers package
# (scripts/deps.sh build installs it). Kbuild builds in the folder of the sources,
# so they are copied there first. Exit 1 with one line saying why if it cannot.
# Usage: scripts/linux-module.sh [BUILD]
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
abi=$(bash "$src/scripts/debian-kernel-abi.sh" "$build")
kdir=/usr/src/linux-headers-$abi
[ -f "$kdir/Makefile" ] || {
	echo "linux-module: no headers for the guest kernel $abi in $kdir (Debian package linux-headers-$abi; scripts/deps.sh build installs it)" >&2
	exit 1
}
out=$build/guest-drivers/linux
mkdir -p "$out"
out=$(cd "$out" && pwd)
cp "$src/guest-drivers/linux/perfvisor_pmu.c" "$src/guest-drivers/linux/Kbuild" "$out/"
# A make of its own (not the calling make's jobs: Kbuild would warn it has no jobserver).
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$kdir" M="$out" PVINC="$src/include" modules >"$out/build.log" 2>&1; then
	echo "linux-module: building perfvisor_pmu.ko for $abi failed:" >&2
	grep -E 'error|Error' "$out/build.log" | head -n 20 >&2
	exit 1
fi
# The compiler's warnings fail the build, as for the rest of the project.
if grep -q '\.[ch]:[0-9]*:[0-9]*: warning:' "$out/build.log"; then
	echo "linux-module: perfvisor_pmu.c has compiler warnings:" >&2
	grep -A3 '\.[ch]:[0-9]*:[0-9]*: warning:' "$out/build.log" | head -n 20 >&2
	rm -f "$out/perfvisor_pmu.ko"
	exit 1
fi
echo "$abi" >"$out/kernel"
echo "  KMOD    $out/perfvisor_pmu.ko ($abi)"
