#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the integration tests on a real KVM: directly when /dev/kvm exists,
# otherwise (or with PERFVISOR_FORCE_TESTHOST=1) inside the test host VM
# (tests/testhost/run.sh), once per userland (USERLAND=busybox or gnu: that
# one only). With neither, fail: CI treats a missing KVM as a failure, never
# as a skip.
# Usage: tests/integration/run.sh [NAME...]: every test, or only the sections,
# tests and cases named (commas or spaces between them; tests/integration/tests.sh
# BUILD --list lists them); an unknown name is an error (exit 2).
set -euo pipefail
set -f # the names are words, never patterns
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
sel=$(echo "$*" | tr ' ' ',')
userlands=${USERLAND:-busybox gnu}
case "$userlands" in busybox | gnu | "busybox gnu") ;; *)
	echo "integration: USERLAND must be busybox or gnu (or unset: both), not '$userlands'" >&2; exit 2 ;;
esac
# The test files the selection names (all without one); unknown names end it here.
files=$(sh tests/integration/tests.sh "$build" -n $(echo "$sel" | tr ',' ' ')) || exit 2

# The Debian kernel the Linux tests boot, their busybox initramfs and the disk
# test's ext4 image: made on this machine (the test host has no network and no
# mke2fs), cached in $build/debian-kernel, $build/linux-initramfs and $build/linux-disk, and
# the guest-perf test's root file system with Debian's perf in $build/linux-perf. If this fails, the tests fail and say so.
if grep -q '/linux/' <<<"$files"; then
	bash tests/integration/debian-kernel.sh "$build" || true
	bash tests/integration/linux-initramfs.sh "$build" || true
	bash tests/integration/linux-disk.sh "$build" || true
	if grep -q '/linux/linux-perf\.sh' <<<"$files"; then bash tests/integration/linux-perfinit.sh "$build" || true; fi
fi

if [ -c /dev/kvm ] && [ -z "${PERFVISOR_FORCE_TESTHOST:-}" ]; then
	exec sh tests/integration/tests.sh "$build" ${sel:+"$sel"}
fi

if [ -c /dev/kvm ]; then
	echo "integration: PERFVISOR_FORCE_TESTHOST is set; running the tests on the KVM inside the test host VM"
else
	echo "integration: /dev/kvm is missing on this machine; running the tests on the KVM inside the test host VM"
fi
if [ ! -e /dev/kvm ] && [ -z "$sel" ]; then
	# On this machine itself, perfvisor must say clearly that KVM is missing.
	set +e
	out=$("$build/perfvisor" run --kernel "$build/guests/hello.elf" 2>&1)
	st=$?
	set -e
	if [ "$st" -ne 125 ] || ! grep -q '/dev/kvm does not exist' <<<"$out"; then
		echo "FAIL no-kvm-message: status $st, output: $out"
		exit 1
	fi
	echo "PASS no-kvm-message (host without /dev/kvm: '$out')"
fi
# The exporter's test runs Debian's Prometheus server and promtool in there too.
for b in prometheus promtool; do
	p=$(command -v "$b" || true)
	[ -n "$p" ] && TESTHOST_EXTRA="$p${TESTHOST_EXTRA:+ $TESTHOST_EXTRA}"
done
export TESTHOST_EXTRA
# With busybox's tools and with GNU coreutils first on PATH (as on a Debian
# host), so the harness never depends on one of them.
# The tests' own knobs (numbers only) go along: the test host does not inherit this environment.
knobs=
for v in PVT_NET_MB PVT_NET_DIAG; do
	val=$(printenv "$v" || true)
	case "$val" in "" | *[!0-9]*) ;; *) knobs="$knobs$v=$val " ;; esac
done
# With both userlands, each test file runs in one pass (PVT_SPLIT, tests/integration/tests.sh):
# the Linux guests (the linux section, half of the suite's time in the test host) in the GNU pass,
# a Debian host's userland, as on the bare-metal KVM hosts that run them; every other section in
# the busybox pass. A pass with no file of the selection is not booted. docs/testing.md says why.
for userland in $userlands; do
	split=
	if [ "$userlands" = "busybox gnu" ]; then
		split="PVT_SPLIT=$userland "
		mine=$(if [ "$userland" = gnu ]; then grep '/linux/'; else grep -v '/linux/'; fi <<<"$files" || true)
		if [ -z "$mine" ]; then
			echo "integration: no test host with the $userland userland: the selection has no test file of its pass"
			continue
		fi
	fi
	echo "integration: test host with the $userland userland"
	TESTHOST_USERLAND=$userland bash tests/testhost/run.sh "${knobs}${split}sh tests/integration/tests.sh $build${sel:+ $sel}" || {
		echo "integration: FAILED in the test host with the $userland userland"
		exit 1
	}
done
