#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a command on a real KVM when this machine has no /dev/kvm.
#
# Boots Debian's kernel under QEMU TCG with emulated AMD SVM, loads kvm-amd
# there, and runs COMMAND (busybox sh) in /work, a copy of the repo's build/
# and tests/ trees. Prints what COMMAND prints and exits with its status.
# Usage: tests/testhost/run.sh 'COMMAND'   (env: BUILD, TESTHOST_TIMEOUT,
# TESTHOST_MEM, TESTHOST_CPUS (default 1: with 2, both TCG vCPUs have been seen
# to wedge in the kernel, and one is faster for these tests), TESTHOST_KEEP=1 keeps the work directory,
# TESTHOST_DEBUG=' ' shows the kernel log, TESTHOST_EXTRA: host files to copy in at the
# same path, e.g. /usr/bin/qemu-system-x86_64, with their shared libraries,
# TESTHOST_USERLAND=gnu puts this machine's GNU coreutils, grep, sed, awk,
# findutils and dash (as sh) first on PATH instead of busybox's applets).
# docs/testing.md explains why this exists.
set -euo pipefail

cmd=${1:?usage: tests/testhost/run.sh COMMAND}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
timeout_s=${TESTHOST_TIMEOUT:-2400}

bash "$root/scripts/deps.sh" testhost

# Two test VMs at once on two cores starve each other into soft lockups:
# concurrent callers wait here for their turn.
exec 9>"${TMPDIR:-/tmp}/perfvisor-testhost.lock"
flock 9

kernel=$(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$kernel" ]; then
	echo "testhost: no kernel in /boot (package linux-image-amd64)" >&2
	exit 1
fi
kver=${kernel#/boot/vmlinuz-}
mods="/lib/modules/$kver/kernel"
for m in virt/lib/irqbypass.ko drivers/crypto/ccp/ccp.ko arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko; do
	[ -f "$mods/$m" ] || { echo "testhost: module $m missing for kernel $kver" >&2; exit 1; }
done

# Assemble the initramfs: busybox, the KVM modules, the build outputs and
# tests, and every shared library the ELF binaries need (found with ldd).
# One directory per run, so concurrent runs do not disturb each other.
mkdir -p "$build/testhost"
work=$(mktemp -d "$build/testhost/run.XXXXXX")
[ -n "${TESTHOST_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root"/{bin,dev,proc,sys,tmp,mod,work}
r="$work/root"
cp /bin/busybox "$r/bin/busybox"
for m in virt/lib/irqbypass.ko drivers/crypto/ccp/ccp.ko arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko; do
	cp "$mods/$m" "$r/mod/"
done
# tun, for the virtio-net tests' taps (built in on some kernels: then there is no module).
[ ! -f "$mods/drivers/net/tun.ko" ] || cp "$mods/drivers/net/tun.ko" "$r/mod/"
# veth, for the migration tests' two network namespaces (likewise).
[ ! -f "$mods/drivers/net/veth.ko" ] || cp "$mods/drivers/net/veth.ko" "$r/mod/"
# Of the Debian kernel (tests/integration/debian-kernel.sh) only the bzImage goes in; a user's
# root file system image (scripts/linux-rootfs.sh, make run-linux) stays out: no test boots it.
(cd "$root" && tar cf - --exclude="${build#"$root"/}/testhost" --exclude='*.o' --exclude='*.d' --exclude='*.a' \
	--exclude="${build#"$root"/}/debian-kernel/cache" --exclude="${build#"$root"/}/debian-kernel/vmlinux" \
	--exclude="${build#"$root"/}/linux-rootfs" \
	"${build#"$root"/}" tests bench scripts) | tar xf - -C "$r/work"
for f in ${TESTHOST_EXTRA:-}; do
	mkdir -p "$r$(dirname "$f")"
	cp -a "$f" "$r$f"
done
userland=${TESTHOST_USERLAND:-busybox}
case "$userland" in
busybox) ;;
gnu)
	# A GNU userland like a Debian host's: every coreutils program, and the
	# other tools the tests use, in /gnu/bin, which the init puts first on PATH.
	mkdir -p "$r/gnu/bin"
	for p in coreutils grep sed findutils; do
		dpkg -L "$p" | grep -E '^(/usr)?/s?bin/[^/]+$'
	done | while read -r f; do
		[ -f "$f" ] && cp -L "$f" "$r/gnu/bin/$(basename "$f")"
	done
	cp -L "$(command -v awk)" "$r/gnu/bin/awk"
	cp -L /bin/dash "$r/gnu/bin/sh"
	[ -x "$r/gnu/bin/timeout" ] || { echo "testhost: GNU coreutils' timeout not found" >&2; exit 1; }
	;;
*) echo "testhost: TESTHOST_USERLAND must be busybox or gnu, not '$userland'" >&2; exit 2 ;;
esac
find "$r/work" $([ -d "$r/gnu" ] && echo "$r/gnu") ${TESTHOST_EXTRA:+$(for f in $TESTHOST_EXTRA; do echo "$r$f"; done)} -type f -perm -u+x | while read -r f; do
	ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true
done | sort -u | while read -r lib; do
	[ -e "$lib" ] || continue
	mkdir -p "$r$(dirname "$lib")"
	cp -L "$lib" "$r$lib"
done
printf '%s\n' "$cmd" > "$r/cmd"
# An unprivileged user, for tests of what perfvisor says without access to /dev/kvm.
mkdir -p "$r/etc"
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/tmp:/bin/sh\n' > "$r/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$r/etc/group"
cat > "$r/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
[ -d /gnu/bin ] && export PATH="/gnu/bin:${PATH:-/sbin:/usr/sbin:/bin:/usr/bin}"
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/shm && mount -t tmpfs tmp /dev/shm; mount -t tmpfs tmp /tmp
# Loopback, for tests that talk HTTP on 127.0.0.1 (the exporter and Prometheus).
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
for m in irqbypass ccp kvm kvm-amd; do insmod /mod/$m.ko 2>/dev/null; done
[ ! -f /mod/tun.ko ] || insmod /mod/tun.ko 2>/dev/null
[ ! -f /mod/veth.ko ] || insmod /mod/veth.ko 2>/dev/null
if [ ! -c /dev/kvm ]; then
	echo "testhost: kvm-amd did not load (does this QEMU emulate SVM?)"
	dmesg | grep -i -E 'kvm|svm' | tail -5
	echo "@@TESTHOST_EXIT=1"
else
	echo "testhost: $(uname -r), KVM on emulated SVM, $(grep -c ^processor /proc/cpuinfo) CPUs, $([ -d /gnu/bin ] && echo "GNU userland (/gnu/bin first on PATH)" || echo "busybox userland")"
	# busybox sh prefers its own applets over PATH: with GNU tools, run the
	# command under dash, which looks every name up on PATH.
	if [ -d /gnu/bin ]; then cd /work && /gnu/bin/sh /cmd; else cd /work && sh /cmd; fi
	echo "@@TESTHOST_EXIT=$?"
fi
poweroff -f
INIT
chmod +x "$r/init"
(cd "$r" && find . | cpio -o -H newc --quiet) | gzip -1 > "$work/initramfs.gz"

log="$work/console.log"
boot_s=${TESTHOST_BOOT_TIMEOUT:-180}
# microvm has no HPET or PM timer, and a loaded TCG often fails the PIT
# calibration of the TSC; the kernel then stalls. Hand it the host's TSC
# rate (TCG's TSC runs at the host's) and a preset delay loop instead.
tsc_khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
timing="no_timer_check lpj=4000000 tsc=reliable${tsc_khz:+ tsc_early_khz=$tsc_khz}"

idle_s=${TESTHOST_IDLE_TIMEOUT:-300}

# One boot of the test VM; its console streams to stdout. Returns 99 if the
# VM printed nothing within boot_s seconds, 98 if the command then printed
# nothing for idle_s seconds or the kernel reported a soft lockup (a nested-
# KVM-under-TCG VM has been seen to wedge, both CPUs stuck, and a hung VM
# must not hold CI for the whole timeout); the caller retries the command
# once in a fresh VM and says so.
boot_once() {
	: >"$log"
	timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp "${TESTHOST_CPUS:-1}" -m "${TESTHOST_MEM:-2048}" \
		-M microvm -no-reboot -display none -monitor none -serial stdio \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 ${TESTHOST_DEBUG:-quiet loglevel=3} panic=-1 $timing" </dev/null >"$log" 2>&1 &
	local qpid=$!
	tail -n +1 -f --pid=$qpid "$log" | grep -a --line-buffered -v -e '^@@TESTHOST_EXIT=' -e 'reboot: Power down' &
	local tpid=$! t=0 idle=0 size last=-1 booted=0 verdict=0
	while kill -0 $qpid 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		if [ $booted -eq 0 ]; then
			grep -q -a '^testhost: ' "$log" && booted=1
			[ $booted -eq 0 ] && [ $t -ge "$boot_s" ] && { verdict=99; break; }
		fi
		# Progress is what the command prints: kernel lines (soft-lockup
		# reports of a wedged VM among them) do not count.
		size=$(grep -a -c -v '^\[ *[0-9]*\.[0-9]*\]' "$log")
		grep -q -a 'soft lockup' "$log" && [ $booted -eq 1 ] && { verdict=98; break; }
		if [ "$size" != "$last" ]; then
			last=$size
			idle=0
		else
			idle=$((idle + 1))
		fi
		[ $booted -eq 1 ] && [ $idle -ge "$idle_s" ] && { verdict=98; break; }
	done
	if [ $verdict -ne 0 ]; then
		kill $qpid 2>/dev/null
		wait $qpid $tpid 2>/dev/null
		return $verdict
	fi
	wait $qpid
	local rc=$?
	wait $tpid 2>/dev/null
	return $rc
}

set +e
for attempt in 1 2; do
	boot_once
	qrc=$?
	case $qrc in
	99) echo "testhost: the test VM did not boot within ${boot_s}s (attempt $attempt)" >&2 ;;
	98) echo "testhost: the test VM stopped making progress (no output for ${idle_s}s, or a soft lockup) and was stopped (attempt $attempt)" >&2 ;;
	*) break ;;
	esac
	[ $attempt -eq 1 ] && echo "testhost: running the command again in a fresh test VM" >&2
done
set -e
status=$(grep -a -o '@@TESTHOST_EXIT=[0-9]*' "$log" | tail -n 1 | cut -d= -f2)
if [ -z "$status" ]; then
	tail -n 20 "$log" >&2
	echo "testhost: the test VM ended without a status (qemu exit $qrc; 124 = timeout after ${timeout_s}s)" >&2
	exit 1
fi
exit "$status"
