#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a command on a real KVM when this machine has no /dev/kvm.
#
# Boots Debian's kernel under QEMU TCG with emulated AMD SVM, loads kvm-amd
# there, and runs COMMAND (busybox sh) in /work, a copy of the repo's build/
# and tests/ trees. Prints what COMMAND prints and exits with its status.
# A stalled VM (docs/testing.md) is stopped and the command run again, resuming
# where tests/integration/tests.sh left off.
# Usage: tests/testhost/run.sh 'COMMAND'   (env: BUILD, TESTHOST_TIMEOUT,
# TESTHOST_MEM, TESTHOST_CPUS (default 1: with 2 under QEMU 7.2, both TCG vCPUs were
# seen to wedge in soft lockups; docs/testing.md), TESTHOST_KEEP=1 keeps the work directory,
# TESTHOST_DEBUG=' ' shows the kernel log, TESTHOST_EXTRA: host files to copy in at the
# same path, e.g. /usr/bin/qemu-system-x86_64, with their shared libraries,
# TESTHOST_USERLAND=gnu puts this machine's GNU coreutils, grep, sed, awk,
# findutils and dash (as sh) first on PATH instead of busybox's applets,
# TESTHOST_IDLE_TIMEOUT and TESTHOST_HEARTBEAT_TIMEOUT: the stall bounds).
# docs/testing.md explains why this exists.
set -euo pipefail

cmd=${1:?usage: tests/testhost/run.sh COMMAND}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case "$build" in /*) ;; *) build="$root/$build" ;; esac
timeout_s=${TESTHOST_TIMEOUT:-2400}

# (QEMU 10 or newer among them: Debian 12's 7.2 freezes nested guests; docs/testing.md.)
bash "$root/scripts/deps.sh" testhost
echo "testhost: $(qemu-system-x86_64 --version | head -n 1)" >&2

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
	# The heartbeat (@@HB, every 10 s) tells the harness this kernel still
	# runs; when the console has carried nothing else for 240 s, what every
	# process is doing (@@DIAG lines), to tell a hung test from a hung VM.
	# The console's byte count (the UART's tx) is the progress it watches.
	diag() {
		echo "@@DIAG the console carried nothing for ${1}s; every process but the kernel's threads (pid (comm) state ppid wchan: command; an exiting one has none), and the kernel stacks of perfvisor's threads and of any thread in D state:"
		for p in /proc/[0-9]*; do
			# A process that ended meanwhile: its files are gone (a subshell, so a
			# failed redirection ends only it). The kernel's threads: kthreadd's children.
			st=$( (cut -d' ' -f1-4 <"$p/stat") 2>/dev/null) || continue
			case " $st " in *" 2 " | " 2 "*) continue ;; esac
			c=$( (tr '\0' ' ' <"$p/cmdline") 2>/dev/null)
			echo "@@DIAG $st $(cat "$p/wchan" 2>/dev/null): $c" | cut -c1-220
			for t in "$p"/task/*; do
				ts=$(cut -d' ' -f2,3 "$t/stat" 2>/dev/null)
				case "$ts $c" in *" D "* | *perfvisor*) ;; *) continue ;; esac
				echo "@@DIAG   thread ${t##*/} $ts"
				sed 's/^/@@DIAG     /' "$t/stack" 2>/dev/null | head -n 8
			done
		done
	}
	(
		last=0 idle=0
		while sleep 10; do
			tx=$(sed -n 's/^0:.* tx:\([0-9]*\).*/\1/p' /proc/tty/driver/serial)
			# More than this heartbeat line's own bytes went out: progress.
			if [ $((${tx:-0} - last)) -gt 16 ]; then idle=0; else idle=$((idle + 10)); fi
			last=${tx:-0}
			echo "@@HB $idle"
			[ $idle -eq 240 ] && diag $idle
		done
	) &
	hb=$!
	# A rerun after a stalled VM (/carry: the verdicts of the test files the
	# earlier attempts finished) resumes: tests/integration/tests.sh reads it.
	[ -f /carry ] && export PVT_CARRY=/carry
	export PVT_RECORD=1
	# The tests' knowledge of where they run: a few cases are skipped here, each saying why.
	export PVT_TESTHOST=qemu-tcg
	# busybox sh prefers its own applets over PATH: with GNU tools, run the
	# command under dash, which looks every name up on PATH.
	if [ -d /gnu/bin ]; then cd /work && /gnu/bin/sh /cmd; else cd /work && sh /cmd; fi
	rc=$?
	kill $hb 2>/dev/null
	echo "@@TESTHOST_EXIT=$rc"
fi
# No ACPI (acpi=off below): the kernel's triple-fault reset (reboot=t) ends QEMU (-no-reboot).
reboot -f
INIT
chmod +x "$r/init"
(cd "$r" && find . | cpio -o -H newc --quiet) | gzip -1 > "$work/initramfs.gz"

log="$work/console.log"
boot_s=${TESTHOST_BOOT_TIMEOUT:-180}
# microvm has no HPET or PM timer, and a loaded TCG often fails the PIT
# calibration of the TSC; the kernel then stalls. Hand it the host's TSC
# rate (TCG's TSC runs at the host's) and a preset delay loop instead.
# nokaslr: a frozen VM's kernel RIP is then the same address in every boot.
tsc_khz=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
# reboot=t: the init's reboot triple-faults, and -no-reboot ends QEMU. The VM has no ACPI
# (microvm,acpi=off): under QEMU 10 its ACPI tables left about 1 boot in 4 summing a table
# forever (docs/testing.md); without it microvm boots with qboot, whose MP table has the IOAPIC.
timing="no_timer_check lpj=4000000 tsc=reliable nokaslr reboot=t${tsc_khz:+ tsc_early_khz=$tsc_khz}"

idle_s=${TESTHOST_IDLE_TIMEOUT:-300}
hb_s=${TESTHOST_HEARTBEAT_TIMEOUT:-120}
# QEMU's monitor on two FIFOs, to ask a frozen VM where its CPU is.
mon="$work/monitor"
mkfifo "$mon.in" "$mon.out"

# where_cpu: three readings, a second apart, of where the test VM's CPU is,
# from QEMU's monitor: RIP, and whose code that is, the interrupt flag, and
# whether it is halted. The test VM's kernel runs at its link address
# (nokaslr): 0xffffffff81000000 up for its text, 0xffffffffc0000000 up for
# its modules (kvm-amd); other kernel addresses are a Linux guest's in the
# nested VM (its KASLR). A Linux guest of the same kernel without KASLR (host
# decompression) runs at the same text addresses: the register dump cannot
# tell the two apart. /proc/kallsyms in any test VM names the addresses.
where_cpu() {
	local i regs rip fl hlt whose
	for i in 1 2 3; do
		echo "info registers" >"$mon.in"
		regs=$(timeout 2 cat "$mon.out" | tr -d '\r')
		rip=$(grep -o 'RIP=[0-9a-f]*' <<<"$regs" | head -n 1 | cut -d= -f2)
		fl=$(grep -o 'RFL=[0-9a-f]*' <<<"$regs" | head -n 1 | cut -d= -f2)
		hlt=$(grep -o 'HLT=[01]' <<<"$regs" | head -n 1 | cut -d= -f2)
		[ -n "$rip" ] || { echo "testhost: QEMU's monitor did not answer"; return; }
		case "$rip" in
		ffffffff8[12]*) whose="kernel text: the test VM's, or a Linux guest's without KASLR" ;;
		ffffffff[cdef]*) whose="a module of the test VM's kernel" ;;
		ffffffff*) whose="not the test VM's kernel: a Linux guest's in the nested VM" ;;
		*) whose="not kernel text: user space, the nested guest, or firmware and early boot" ;;
		esac
		echo "testhost: the test VM's CPU: RIP $rip ($whose), interrupts $([ $((0x${fl:-0} & 0x200)) -ne 0 ] && echo on || echo off)$([ "$hlt" = 1 ] && echo ", halted")"
		sleep 1
	done
}

# One boot of the test VM; its console streams to stdout. Returns 99 if the
# VM printed nothing within boot_s seconds, 98 if the command then printed
# nothing for idle_s seconds while the VM ran (its heartbeats came), 97 if
# the VM itself froze (no heartbeat for hb_s seconds, or a soft lockup: a
# nested-KVM-under-TCG VM has been seen to wedge, and a hung VM must not hold
# CI for the whole timeout), 96 if it ended before the command (its kernel
# panicked, or QEMU died). The caller runs the
# command again in a fresh VM.
boot_once() {
	: >"$log"
	timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 \
		-accel tcg,thread=multi -cpu max -smp "${TESTHOST_CPUS:-1}" -m "${TESTHOST_MEM:-2048}" \
		-M microvm,acpi=off -no-reboot -display none -monitor "pipe:$mon" -serial stdio \
		-kernel "$kernel" -initrd "$1" \
		-append "console=ttyS0 ${TESTHOST_DEBUG:-quiet loglevel=3} panic=-1 $timing" </dev/null >"$log" 2>&1 &
	local qpid=$!
	# Heartbeats and the verdicts kept for a rerun are the harness's, not the reader's.
	tail -n +1 -f --pid=$qpid "$log" | grep -a --line-buffered -v -e '^@@TESTHOST_EXIT=' -e '^@@HB' -e '^@@PVT_R ' -e 'reboot: Restarting system' &
	local tpid=$! t=0 idle=0 size last=-1 beats lastb=-1 hbidle=0 nudged=0 booted=0 verdict=0 ended=0
	while kill -0 $qpid 2>/dev/null; do
		sleep 1
		t=$((t + 1))
		if [ $booted -eq 0 ]; then
			grep -q -a '^testhost: ' "$log" && booted=1
			# Where its CPU is (its console, shown above, has only the kernel's errors: quiet).
			if [ $booted -eq 0 ] && [ $t -ge "$boot_s" ]; then
				where_cpu >&2
				verdict=99
				break
			fi
			continue
		fi
		# The command is done once its status is out: a test VM that then does
		# not end by itself (its reset failed) is stopped 15 s later.
		if grep -q -a '^@@TESTHOST_EXIT=' "$log"; then
			ended=$((ended + 1))
			[ $ended -ge 15 ] && { kill $qpid 2>/dev/null; break; }
			continue
		fi
		# Progress is what the command prints: kernel lines (soft-lockup
		# reports of a wedged VM among them) and the harness's own do not count.
		size=$(grep -a -c -v -e '^\[ *[0-9]*\.[0-9]*\]' -e '^@@' "$log")
		beats=$(grep -a -c '^@@HB' "$log")
		grep -q -a 'soft lockup' "$log" && { verdict=97; break; }
		grep -q -a 'Kernel panic' "$log" && { sleep 2; verdict=96; break; }
		if [ "$size" != "$last" ]; then last=$size idle=0; else idle=$((idle + 1)); fi
		if [ "$beats" != "$lastb" ]; then
			[ $nudged -eq 1 ] && echo "testhost: the test VM's heartbeat came back after the NMI" >&2
			lastb=$beats hbidle=0 nudged=0
		else
			hbidle=$((hbidle + 1))
		fi
		# Halfway to the verdict: where its CPU is, and an NMI (QEMU's monitor), which
		# leaves a nested guest for the test VM's kernel if anything does.
		if [ $hbidle -ge $((hb_s / 2)) ] && [ $nudged -eq 0 ]; then
			echo "testhost: no heartbeat from the test VM for ${hbidle}s; sending it an NMI" >&2
			where_cpu >&2
			echo nmi >"$mon.in"
			nudged=1
		fi
		[ $hbidle -ge "$hb_s" ] && { verdict=97; break; }
		[ $idle -ge "$idle_s" ] && { verdict=98; break; }
	done
	if [ $verdict -ne 0 ]; then
		[ $verdict -eq 97 ] && [ $hbidle -ge "$hb_s" ] && where_cpu >&2
		kill $qpid 2>/dev/null
		wait $qpid $tpid 2>/dev/null
		return $verdict
	fi
	wait $qpid
	local rc=$?
	wait $tpid 2>/dev/null
	# The test VM ended before the command did: its kernel died (panic=-1 and -no-reboot end
	# QEMU), or QEMU did (its timeout: 124).
	if ! grep -q -a '^@@TESTHOST_EXIT=' "$log" && [ "$rc" -ne 124 ]; then
		grep -q -a 'Kernel panic' "$log" || echo "testhost: QEMU ended (status $rc) before the command did" >&2
		return 96
	fi
	return $rc
}

# Up to six boots. A rerun resumes: the test files an earlier attempt
# finished (their verdicts, @@PVT_R lines, go in as /carry, an extra cpio
# archive the kernel unpacks over the first) are not run again, and a
# failure in one stays a failure. Two boots in a row that print no
# verdict at all end it.
set +e
initrd="$work/initramfs.gz"
: >"$work/carry"
attempts=6
for attempt in $(seq $attempts); do
	boot_once "$initrd"
	qrc=$?
	case $qrc in
	99) echo "testhost: the test VM did not boot within ${boot_s}s (attempt $attempt)" >&2 ;;
	98) echo "testhost: the command printed nothing for ${idle_s}s while the test VM ran: a test hung (attempt $attempt; the @@DIAG lines above say what ran)" >&2 ;;
	97) echo "testhost: the test VM froze (no heartbeat for ${hb_s}s, or a soft lockup) and was stopped (attempt $attempt)" >&2 ;;
	96) echo "testhost: the test VM ended before the command did (a kernel panic, or QEMU ended: the lines above; attempt $attempt)" >&2 ;;
	*) break ;;
	esac
	done_before=$(grep -c '^@@PVT_R done ' "$work/carry")
	grep -a '^@@PVT_R ' "$log" | tr -d '\r' | grep -E '^@@PVT_R (passed|failed|skips|done) [^ ]' >>"$work/carry"
	done_now=$(grep -c '^@@PVT_R done ' "$work/carry")
	verdicts=$(grep -a -c -E '^(PASS|FAIL) ' "$log")
	# A rerun unless two boots in a row got nowhere (no test file finished, no case of one):
	# a stall is seldom in the same place twice, a test that hangs every time is.
	stuck=$((${stuck:-0} + 1))
	[ $qrc -eq 99 ] || [ "$done_now" -ne "$done_before" ] || [ "$verdicts" -ne 0 ] && stuck=0
	if [ $attempt -eq $attempts ] || [ $stuck -ge 2 ]; then
		[ $attempt -lt $attempts ] && echo "testhost: two boots in a row finished no test case: not trying again" >&2
		break
	fi
	echo "testhost: running the command again in a fresh test VM$([ "$done_now" -gt 0 ] && echo "; the $done_now test files finished so far are not run again")" >&2
	mkdir -p "$work/carrydir"
	cp "$work/carry" "$work/carrydir/carry"
	(cd "$work/carrydir" && echo carry | cpio -o -H newc --quiet) | gzip -1 | cat "$work/initramfs.gz" - >"$work/initramfs-carry.gz"
	initrd="$work/initramfs-carry.gz"
done
set -e
status=$(grep -a -o '@@TESTHOST_EXIT=[0-9]*' "$log" | tail -n 1 | cut -d= -f2)
if [ -z "$status" ]; then
	tail -n 20 "$log" >&2
	echo "testhost: the test VM ended without a status (qemu exit $qrc; 124 = timeout after ${timeout_s}s)" >&2
	exit 1
fi
exit "$status"
