#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages perfvisor needs, only those missing; quiet
# when everything is present. Usage: scripts/deps.sh [build|testhost|bench|linux]...
set -euo pipefail

# Build: compiler, KVM API headers, the libraries the components link
# (libmicrohttpd: the HTTP server of `perfvisor exporter`; libxxhash-dev:
# the snapshot checksums, XXH3, far faster than a CRC over GiBs; liblzma-dev,
# zlib1g-dev and libzstd-dev: the loader decompresses a bzImage's xz, gzip or
# zstd payload on the host, so the guest skips its own decompressor), Criterion
# for the unit tests, clang-format for `make format-check`, clang and
# libclang-rt-dev (libFuzzer for the fuzz targets `make check` runs
# briefly); and what `make check`'s integration tests run: Prometheus (the
# server that scrapes the exporter, and promtool) and busybox (its nc and
# wget talk HTTP); xz-utils, which decompresses the Debian kernel's vmlinux
# for the boot-protocol tests (tests/integration/debian-kernel.sh);
# acpica-tools, whose `iasl -d` disassembles the DSDT perfvisor writes in
# the ACPI unit tests (an independent reading of the AML); cpio, which packs
# the Linux tests' initramfs (tests/integration/linux-initramfs.sh);
# libbpf-dev, whose BTF reader gives the profiler the offsets of a Linux
# guest's task_struct and current task (docs/profiling.md); the linux-headers
# package of the Debian kernel the Linux tests boot (scripts/debian-kernel-abi.sh),
# which builds the guest's perf driver guest-drivers/linux/ (docs/guest-perf.md).
build_pkgs=(gcc make pkg-config linux-libc-dev libc6-dev libfdt-dev libseccomp-dev
	liburing-dev libjansson-dev libmicrohttpd-dev libcriterion-dev clang-format libxxhash-dev clang
	libclang-rt-dev prometheus busybox-static xz-utils acpica-tools cpio liblzma-dev zlib1g-dev libzstd-dev
	libbpf-dev)
abi=$(bash "$(dirname "$0")/debian-kernel-abi.sh" 2>/dev/null) && build_pkgs+=("linux-headers-$abi")
# Test host: where /dev/kvm is missing (a kernel that is itself a PVM guest),
# the integration tests boot Debian's kernel under QEMU (TCG, emulated SVM)
# and run on the real KVM (kvm-amd) inside it. See docs/testing.md.
# QEMU itself is installed by testhost_qemu below: it must be 10 or newer.
testhost_pkgs=(linux-image-amd64 busybox-static cpio)
# Bench: QEMU microvm is the baseline the boot benchmark compares against.
bench_pkgs=(qemu-system-x86)
# Linux guests (scripts/linux-rootfs.sh, make run-linux): e2fsprogs's
# `mke2fs -d` makes the ext4 image without root, binutils's objdump finds
# the libraries a packaged binary needs, cpio packs the initramfs; linux-perf
# is the perf the guest-perf test copies into its guest (tests/integration/linux-perfinit.sh).
linux_pkgs=(e2fsprogs binutils cpio xz-utils linux-perf)

want=()
for set in "${@:-build}"; do
	case "$set" in
	build) want+=("${build_pkgs[@]}") ;;
	testhost) want+=("${testhost_pkgs[@]}") ;;
	bench) want+=("${bench_pkgs[@]}") ;;
	linux) want+=("${linux_pkgs[@]}") ;;
	*) echo "deps.sh: unknown package set '$set' (build, testhost, bench, linux)" >&2; exit 2 ;;
	esac
done

sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
# apt_install [APT-GET ARGS] PACKAGE...: quietly, without recommends.
apt_install() {
	"${sudo[@]}" apt-get update -qq >/dev/null
	"${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# testhost_qemu: QEMU 10 or newer for the test host. Debian 12's own QEMU, 7.2,
# freezes the test VM: its TCG, emulating SVM, now and then leaves the test
# VM's CPU in a nested guest, or halted, with the test VM's own timer never
# firing again (docs/testing.md); 10.0 seldom does. Debian 12 has it in
# bookworm-backports, added here from the mirror its own suite comes from;
# Debian 13 has it in its own suite. Returns 1 if no QEMU 10 can be had.
qemu_version() { dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null || true; }
qemu_is_10() { local v; v=$(qemu_version); [ -n "$v" ] && dpkg --compare-versions "$v" ge 1:10; }
testhost_qemu() {
	local mirror from=()
	qemu_is_10 && return 0
	command -v apt-get >/dev/null || {
		echo "deps.sh: the test host needs qemu-system-x86 10 or newer (here: $(qemu_version)) and there is no apt-get" >&2
		return 1
	}
	echo "deps.sh: installing qemu-system-x86 10 or newer for the test host (here: $(qemu_version))"
	# shellcheck disable=SC1091
	. /etc/os-release
	if [ "${VERSION_CODENAME:-}" = bookworm ]; then
		if ! apt-cache policy 2>/dev/null | grep -q ' bookworm-backports/main '; then
			mirror=$(apt-cache policy 2>/dev/null | awk '$3 == "bookworm/main" { print $2; exit }')
			echo "deb ${mirror:-http://deb.debian.org/debian} bookworm-backports main" |
				"${sudo[@]}" tee /etc/apt/sources.list.d/perfvisor-bookworm-backports.list >/dev/null
		fi
		from=(-t bookworm-backports)
	fi
	apt_install "${from[@]}" qemu-system-x86
	qemu_is_10 || {
		echo "deps.sh: the test host needs qemu-system-x86 10 or newer; this system offers $(qemu_version)" >&2
		return 1
	}
}

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
case " $* " in *" testhost "*) testhost_qemu ;; esac
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null; then
	echo "deps.sh: missing packages ${missing[*]} and no apt-get; install them by hand" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}"
apt_install "${missing[@]}"
