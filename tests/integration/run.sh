#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the integration tests on a real KVM: directly when /dev/kvm exists,
# otherwise (or with PERFVISOR_FORCE_TESTHOST=1) inside the test host VM
# (tests/testhost/run.sh), once per userland. With neither, fail: CI treats
# a missing KVM as a failure, never as a skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}

# The Debian kernel the boot-protocol tests boot: fetched on this machine
# (the test host has no network), cached in $build/debian-kernel. If this
# fails, the debian-kernel test fails and says so.
bash tests/integration/debian-kernel.sh "$build" || true

if [ -c /dev/kvm ] && [ -z "${PERFVISOR_FORCE_TESTHOST:-}" ]; then
	exec sh tests/integration/tests.sh "$build"
fi

if [ -c /dev/kvm ]; then
	echo "integration: PERFVISOR_FORCE_TESTHOST is set; running the tests on the KVM inside the test host VM"
else
	echo "integration: /dev/kvm is missing on this machine; running the tests on the KVM inside the test host VM"
fi
if [ ! -e /dev/kvm ]; then
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
# Twice: with busybox's tools and with GNU coreutils first on PATH (as on a
# Debian host), so the harness never depends on one of them.
for userland in busybox gnu; do
	echo "integration: test host with the $userland userland"
	TESTHOST_USERLAND=$userland bash tests/testhost/run.sh "sh tests/integration/tests.sh $build" || {
		echo "integration: FAILED in the test host with the $userland userland"
		exit 1
	}
done
