#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the integration tests on a real KVM: directly when /dev/kvm exists,
# otherwise inside the test host VM (tests/testhost/run.sh). With neither,
# fail: CI treats a missing KVM as a failure, never as a skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}

if [ -c /dev/kvm ] && [ -z "${PERFVISOR_FORCE_TESTHOST:-}" ]; then
	exec sh tests/integration/tests.sh "$build"
fi

echo "integration: /dev/kvm is missing on this machine; running the tests on the KVM inside the test host VM"
# On this machine itself, perfvisor must say clearly that KVM is missing.
set +e
out=$("$build/perfvisor" run --kernel "$build/guests/hello.elf" 2>&1)
st=$?
set -e
if [ ! -e /dev/kvm ]; then
	if [ "$st" -ne 125 ] || ! grep -q '/dev/kvm does not exist' <<<"$out"; then
		echo "FAIL no-kvm-message: status $st, output: $out"
		exit 1
	fi
	echo "PASS no-kvm-message (host without /dev/kvm: '$out')"
fi
exec bash tests/testhost/run.sh "sh tests/integration/tests.sh $build"
