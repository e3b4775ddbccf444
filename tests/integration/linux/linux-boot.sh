#!/bin/sh
# SPDX-License-Identifier: MIT
# Debian's stock kernel (tests/integration/debian-kernel.sh) booted into a userland: a busybox
# initramfs (tests/integration/linux-initramfs.sh) whose /init prints the time from the system
# clock, the RTC and hwclock, then powers off (linux-poweroff) or reboots (linux-reboot). Checks
# the PC pieces such a kernel uses: the CMOS RTC (its time within 2 s of the host's, rtc_cmos
# probes it), the ACPI FADT/DSDT (accepted without ACPI errors or warnings, no i8042 probe, since
# the FADT says there is none), `poweroff -f` through ACPI S5 and `reboot -f` through the FADT's
# reset register, each ending the VM with status 0, and no unhandled I/O port on the way; the
# LAPIC timer's TSC-deadline mode in CPUID, which Linux takes instead of calibrating the timer.
# The two boots also take the two ways a bzImage's payload is decompressed (docs/boot.md, "Linux
# bzImage"): linux-poweroff with --kernel-decompress guest (the kernel's own decompressor at the
# bzImage's 64-bit entry, the protected-mode part loaded at 1 MiB), linux-reboot with the default
# (perfvisor decompresses the xz payload and enters the vmlinux's startup_64); --verbose names the
# path and what was loaded. Both boots are profiled (--profile task-clock:1ms; docs/profiling.md,
# "Symbols of a Linux guest"): the symbols come from the kallsyms tables inside Debian's vmlinux
# (no System.map), and the KASLR boot (guest decompression) is named through the slide MSR_LSTAR
# shows: at least 90% of the kernel-mode samples have a named leaf (of vCPU 1 on the KASLR boot:
# vCPU 0 also ran the kernel's decompressor, which is not in the kernel's tables), and the top
# three functions of the boot without KASLR are among the top ten of the one with. The KASLR boot
# runs a workload first (pvinit.work=profile) whose processes and kernel stacks the profile must
# name (work_checks below). Prints the guest time at which the kernel ran /init, and the wall time. On kvm_pvm a Linux kernel cannot run
# (its ring 0 is emulated and dies on XSAVE; DESIGN §11): skipped there, by knowledge.
# cases: linux-poweroff linux-reboot
. "$(dirname "$0")/../lib.sh"

DK=$LXK
IR=$LXI
CMD="console=ttyS0 printk.time=1 panic=-1"

# linux_checks: what every boot must show (after the run, $cur set).
linux_checks() {
	expect_out 'pvinit: reached /init'
	t=$(sed -n 's/^\[ *\([0-9.]*\)\] Run \/init as init process.*/\1/p' "$T/$cur.out" | head -n 1)
	echo "  ($cur: the kernel ran /init at ${t:-?} s of guest time; $(($(date +%s) - t0)) s wall in all)"
	if grep -q 'unhandled' "$T/$cur.err"; then
		bad "unhandled port accesses: $(grep 'unhandled' "$T/$cur.err" | sort | uniq -c | head -n 5 | tr '\n' ';')"
	fi
	expect_out 'rtc_cmos .*registered as rtc0'
	expect_no_out 'rtc_cmos.*broken or not accessible'
	expect_out 'i8042: PNP: No PS/2 controller found'
	expect_no_out 'Probing ports directly'
	expect_no_out 'serio: i8042 KBD port'
	expect_out 'ACPI: Interpreter enabled'
	expect_out 'ACPI: PM-Timer IO Port: 0x608'
	# CPUID offers the LAPIC's TSC-deadline mode (docs/boot.md): no LAPIC timer calibration.
	expect_out 'TSC deadline timer available'
	if grep -E -i 'ACPI (BIOS )?(Error|Warning)|ACPI:.*(error|failed|bug)' "$T/$cur.out" >"$T/$cur.acpi"; then
		bad "ACPI complains: $(head -n 3 "$T/$cur.acpi" | tr '\n' ';')"
	fi
}

# named DIR VCPU_RE: the named of the ring-0 samples of the vCPUs matching VCPU_RE in a
# profile's stacks.folded, and fails under 90%.
named() {
	awk -v re="^$2\$" '{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
		r = f[2] ~ /^ring[0-9]$/ ? f[2] : f[3]  # after the process frame, if there is one
		if (f[1] ~ re && r == "ring0") { t += c; if (f[n] != "[unknown]") k += c } }
		END { printf "%d %d\n", k, t }' "$1/stacks.folded" >"$T/$cur.named"
	read -r k t <"$T/$cur.named"
	echo "  ($cur: $k of $t kernel-mode samples of $2 named by the kernel's own kallsyms)"
	[ "${t:-0}" -ge 100 ] && [ $((k * 100)) -ge $((t * 90)) ] || bad "only $k of $t kernel-mode samples named"
}
# work_checks DIR: what the host's profile says of the guest's workload (pvinit.work=profile): its
# processes by the guest's pid and command (docs/profiling.md, "Processes and kernel stacks of a
# Linux guest"): spinA and spinB, nice 0 and 5 on one CPU, share it 75:25 (within 5 points);
# spinsys's kernel-mode samples are named (90%), unwound by the kernel's ORC tables up to the
# system call's entry (80%), and its stacks go through do_syscall_64 and read or write.
work_checks() {
	pa=$(sed -n 's/^pvinit: profile work done: spinA \([0-9]*\), spinB \([0-9]*\).*/\1/p' "$T/$cur.out")
	pb=$(sed -n 's/^pvinit: profile work done: spinA \([0-9]*\), spinB \([0-9]*\).*/\2/p' "$T/$cur.out")
	[ -n "$pa" ] || { bad "the guest's workload did not finish"; return; }
	grep -q '^linux guest: processes from its BTF; kernel stacks by its ORC tables$' "$1/symbols.txt" ||
		bad "the report does not say the processes and stacks came from the BTF and ORC tables"
	spin_split "$1" "$pa" "$pb"
	awk '{ c = $NF; s = $0; sub(/ [0-9]+$/, "", s); n = split(s, f, ";")
		if (f[2] !~ /^spinsys\[/ || f[3] != "ring0") next
		t += c; if (f[n] != "[unknown]") k += c; if (f[4] ~ /^entry_SYSCALL_64/) e += c
		if (s ~ /;do_syscall_64;/) d += c; if (s ~ /;ksys_(read|write);/) r += c }
		END { printf "%d %d %d %d %d\n", t, k, e, d, r }' "$1/stacks.folded" >"$T/$cur.sys"
	read -r t k e d r <"$T/$cur.sys"
	echo "  ($cur: spinsys: $t kernel-mode samples, $k named, $e from entry_SYSCALL_64, $d through do_syscall_64, $r through ksys_read or ksys_write)"
	[ "${t:-0}" -ge 100 ] || bad "spinsys has $t kernel-mode samples"
	[ $((k * 100)) -ge $((t * 90)) ] || bad "only $k of spinsys's $t kernel-mode samples named"
	[ $((e * 100)) -ge $((t * 80)) ] || bad "only $e of spinsys's $t kernel stacks reach entry_SYSCALL_64"
	[ $((d * 100)) -ge $((t * 50)) ] && [ "${r:-0}" -gt 0 ] || bad "spinsys's stacks do not go through do_syscall_64 ($d) and ksys_read/write ($r)"
}
# top N DIR: the profile's N hottest symbols, one a line.
top() { awk 'rows && $NF != "[unknown]" { print $NF } $NF == "symbol" { rows = 1 }' "$2/symbols.txt" | head -n "$1"; }

# near NAME GUEST HOST: the guest's time (seconds since the epoch) is within 2 s of the host's.
near() {
	if [ -z "$2" ]; then
		bad "the guest printed no $1 time"
	elif [ $(($2 - $3)) -gt 2 ] || [ $(($3 - $2)) -gt 2 ]; then
		bad "$1 says $2, the host said $3: more than 2 s apart"
	else
		echo "  ($cur: $1 $2, host $3)"
	fi
}

linux_ready "linux-poweroff linux-reboot" || exit 0

# poweroff -f: ACPI S5, status 0; the RTC's time is compared with the host's as the guest prints it.
# The kernel decompresses itself.
cur=linux-poweroff; : >"$T/$cur.out"
t0=$(date +%s)
start_vm linux-poweroff 300 run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 2 \
	--cmdline "$CMD pvinit=poweroff pvinit.work=profile" --timeout 240 --verbose --kernel-decompress guest \
	--profile task-clock:1ms --profile-output "$T/prof-kaslr"
ok=1
# Each time against the host's when its line shows: a profiled guest on a slow host takes
# seconds from one line to the next.
if wait_out 'pvinit: date [0-9]* ('; then
	host=$(date -u +%s)
	guest_date=$(sed -n 's/^pvinit: date \([0-9]*\) (.*/\1/p' "$T/$cur.out" | head -n 1)
	near "the system clock (date)" "$guest_date" "$host"
fi
if wait_out 'pvinit: rtc0 .*since_epoch [0-9]'; then
	host=$(date -u +%s)
	guest_rtc=$(sed -n 's/^pvinit: rtc0 .*since_epoch \([0-9]*\).*/\1/p' "$T/$cur.out" | head -n 1)
	near "the RTC (/sys/class/rtc/rtc0/since_epoch)" "$guest_rtc" "$host"
else
	bad "the guest never printed its RTC's time"
fi
stop_vm
expect_status 0
linux_checks
expect_out 'pvinit: hwclock .*20[0-9][0-9]'
expect_out 'rtc_cmos .*setting system clock to 20'
expect_err 'guest power-off (ACPI S5)'
expect_err 'boot protocol linux: .*xz payload decompressed in the guest: entry 0x100200'
expect_err 'kernel .*vmlinuz: entry 0x100200, 1 segments at 0x100000-'
expect_err 'profile: task-clock:1000000ns, [0-9]\{5,\} symbols (kallsyms)'
expect_err 'profile: the guest kernel runs at [-+][0-9]* MiB from its link address (KASLR; entry_SYSCALL_64 at 0x'
named "$T/prof-kaslr" vcpu1
expect_err 'profile: Linux 6\.[0-9]* guest: processes from its BTF, kernel stacks by its ORC tables'
work_checks "$T/prof-kaslr"
done_test

# reboot -f: Linux's first reboot method is the FADT's reset register, status 0. perfvisor
# decompresses the kernel (the default for xz).
t0=$(date +%s)
run linux-reboot 300 "$PV" run --kernel "$DK/vmlinuz" --initrd "$IR" --memory 256M --cpus 2 \
	--cmdline "$CMD pvinit=reboot" --timeout 240 --verbose --profile task-clock:1ms \
	--profile-output "$T/prof-nokaslr"
expect_status 0
linux_checks
expect_out 'pvinit: reboot -f'
expect_err 'guest reset (ACPI reset register)'
# (Decoded now, or, if an earlier test of this run booted the same kernel, in an earlier boot:
# the runner's kernel cache, docs/boot.md.)
expect_err 'boot protocol linux: .*xz payload decompressed on the host\( in an earlier boot\)\{0,1\}: vmlinux ([0-9]* bytes), entry 0x1000000 (startup_64)'
expect_err 'kernel .*vmlinuz: entry 0x1000000, [0-9]* segments at 0x1000000-'
expect_err 'profile: the guest kernel runs at +0 MiB from its link address'
named "$T/prof-nokaslr" 'vcpu[0-9]*'
top 3 "$T/prof-nokaslr" >"$T/top3"
top 10 "$T/prof-kaslr" >"$T/top10"
echo "  ($cur: the top three without KASLR: $(tr '\n' ' ' <"$T/top3"); with: $(head -n 3 "$T/top10" | tr '\n' ' '))"
while read -r f; do
	grep -qx "$f" "$T/top10" || bad "$f is in the top three without KASLR but not in the top ten with it"
done <"$T/top3"
[ -s "$T/top3" ] || bad "the profile without KASLR names no function"
done_test
