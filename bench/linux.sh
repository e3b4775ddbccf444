#!/bin/sh
# SPDX-License-Identifier: MIT
# Linux boot benchmark (POSIX sh: it also runs in the busybox test VM).
# Debian's stock kernel (BUILD/debian-kernel/vmlinuz) with the Linux tests'
# busybox initramfs (BUILD/linux-initramfs/initramfs.cpio: its /init prints
# "pvinit: reached /init" and powers off), booted by QEMU microvm (-kernel,
# -initrd: the baseline) and by perfvisor, interleaved, same kernel,
# initramfs, command line, memory and vCPUs: the guest's printk time of "Run
# /init as init process" and the wall time from exec to "pvinit: reached
# /init" (perfvisor three times: the kernel decompressed on the host at every
# boot (--kernel-cache none), the same read from the kernel cache a first
# untimed boot filled, and --kernel-decompress guest, the kernel's own
# decompressor as under QEMU); then the same with a virtio-rng device on both
# sides (perfvisor with the kernel cache
# --rng, QEMU -device virtio-rng-device; pvinit.mods=1 loads the virtio
# modules). Then the VMM's resident memory beyond the guest RAM it holds
# (/proc/PID/smaps, while the --rng guest idles), against Firecracker's
# published 5 MiB; again with a disk (a sparse 64 MiB image) besides, and
# with a net too (a tap in a network namespace of its own: where root,
# /dev/net/tun, busybox ip and unshare and BUILD/tests/mktap are), on both sides. Env: BUILD, BENCH_LINUX_RUNS (3), BENCH_LINUX_RNG_RUNS
# (= BENCH_LINUX_RUNS; 0 leaves the virtio-rng pair out), BENCH_LINUX_CPUS (2),
# BENCH_LINUX_MEM (256M), BENCH_HOST. Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_LINUX_RUNS:-3}
rng_runs=${BENCH_LINUX_RNG_RUNS:-$runs}
cpus=${BENCH_LINUX_CPUS:-2}
mem=${BENCH_LINUX_MEM:-256M}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
spawn=$build/bench/spawn
kernel=$build/debian-kernel/vmlinuz
initrd=$build/linux-initramfs/initramfs.cpio
cmd="console=ttyS0 printk.time=1 panic=-1"
bench_positive BENCH_LINUX_RUNS "$runs"
bench_positive BENCH_LINUX_CPUS "$cpus"
case "$rng_runs" in '' | *[!0-9]*) echo "bench: BENCH_LINUX_RNG_RUNS must be a number" >&2; exit 2 ;; esac
case "$mem" in *M) mem_kib=$((${mem%M} * 1024)) ;; *G) mem_kib=$((${mem%G} * 1048576)) ;;
*) echo "bench: BENCH_LINUX_MEM must be a size in M or G (e.g. 256M)" >&2; exit 2 ;; esac
bench_need "$pv" "$spawn" "$kernel" "$initrd"
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "bench: qemu-system-x86_64 not found (bash scripts/deps.sh bench)" >&2; exit 1; }
bench_tmpdir
vmpid=
trap '[ -n "$vmpid" ] && kill -KILL $vmpid 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM

# QEMU's microvm as it boots a kernel: its defaults (ACPI, PIT, PIC; no RTC
# under KVM, rtc=auto: its guest waits for rtc_cmos until "broken or not
# accessible", 12 s of guest time in the test host; a second row has rtc=on,
# the RTC perfvisor has too), its fastest firmware, qboot, named (QEMU 10's default for microvm is SeaBIOS's
# bios-microvm.bin, which took 6-7 s longer to /init in the test host; QEMU
# 7.2's was qboot), no default devices, the serial port on stdout. The CPU is
# the host's without IA32_ARCH_CAPABILITIES, as in bench/boot.sh.
qemu="qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities -smp $cpus -m $mem -M microvm
	-nodefaults -no-user-config -display none -monitor none -serial stdio -no-reboot -bios qboot.rom
	-kernel $kernel -initrd $initrd"
pvrun="$pv run --kernel $kernel --initrd $initrd --cpus $cpus --memory $mem --console stdio"
mark='pvinit: reached /init'
init='Run /init as init process'

# The kernel cache's row reads the vmlinux a first boot kept (docs/boot.md): that boot is not timed.
kc=$tmp/kernel-cache
$pvrun --kernel-cache "$kc" --timeout 1 --cmdline "$cmd" >/dev/null 2>&1 || true
ls "$kc"/vmlinux-* >/dev/null 2>&1 || { echo "bench: linux: the first boot left nothing in the kernel cache $kc" >&2; exit 1; }
echo "bench: linux: $runs interleaved boots of each case$([ "$rng_runs" -gt 0 ] && echo ", $rng_runs with virtio-rng") ..."
# shellcheck disable=SC2086 # $qemu and $pvrun are word lists (no path here has a space)
set -- -n "$runs" -w 0 -d "$tmp" -t 280 -p 1 \
	-l "qemu microvm" -m "$mark" -e "$mark" -g "$init" -- $qemu -append "$cmd" \
	:: -l "qemu microvm, rtc=on" -m "$mark" -e "$mark" -g "$init" -- $qemu -machine rtc=on -append "$cmd" \
	:: -l "perfvisor" -m "$mark" -e "$mark" -g "$init" -- $pvrun --kernel-cache none --cmdline "$cmd" \
	:: -l "perfvisor (kernel cache)" -m "$mark" -e "$mark" -g "$init" -- $pvrun --kernel-cache "$kc" --cmdline "$cmd" \
	:: -l "perfvisor (guest decomp)" -m "$mark" -e "$mark" -g "$init" -- \
	$pvrun --kernel-decompress guest --cmdline "$cmd"
"$spawn" "$@" >"$tmp/boot.tsv"
if [ "$rng_runs" -gt 0 ]; then
	# shellcheck disable=SC2086
	set -- -n "$rng_runs" -w 0 -d "$tmp" -t 280 -p 1 \
		-l "qemu microvm, virtio-rng" -m "$mark" -e "$mark" -g "$init" -- \
		$qemu -device virtio-rng-device -append "$cmd pvinit.mods=1" \
		:: -l "perfvisor --rng" -m "$mark" -e "$mark" -g "$init" -- $pvrun --rng --kernel-cache "$kc" --cmdline "$cmd pvinit.mods=1"
	"$spawn" "$@" >>"$tmp/boot.tsv"
fi

# overhead_kib PID: the process's Rss less that of its guest RAM (its
# largest mapping, at least the guest's size), in KiB: "overhead total guest
# top", top the three most resident other mappings (file name, [heap], or
# anon), NAME:KiB with commas between.
overhead_kib() {
	awk -v want="$mem_kib" '
		/^[0-9a-f]+-[0-9a-f]+ / { k++; name[k] = NF >= 6 ? $6 : "anon"; sub(/.*\//, "", name[k]) }
		/^Size:/ { size = $2 }
		/^Rss:/ { rss[k] = $2; total += $2; if (size >= want && size > max) { max = size; guest = $2; g = k } }
		END {
			if (!max) { print "-1 " total " -1 -"; exit }
			for (j = 1; j <= 3; j++) {
				b = 0; for (i = 1; i <= k; i++) if (i != g && !(i in used) && rss[i] > (b ? rss[b] : 0)) b = i
				if (!b) break
				used[b] = 1; top = top (top == "" ? "" : ",") name[b] ":" rss[b]
			}
			print total - guest, total, guest, top == "" ? "-" : top
		}' "/proc/$1/smaps"
}
# idle_rss LABEL COMMAND...: boots COMMAND with pvinit=idle, its console in a
# file, reads its memory 2 s after the guest idles; appends "LABEL overhead total guest".
idle_rss() {
	label=$1
	shift
	"$@" >"$tmp/idle.out" 2>"$tmp/idle.err" &
	vmpid=$!
	i=0
	while ! grep -q 'pvinit: idle' "$tmp/idle.out" 2>/dev/null && [ $i -lt 2500 ]; do
		kill -0 $vmpid 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	if grep -q 'pvinit: idle' "$tmp/idle.out"; then
		sleep 2
		printf '%s\t%s\n' "$label" "$(overhead_kib $vmpid)" >>"$tmp/rss.tsv"
	else
		echo "bench: linux: $label never idled: $(tail -n 3 "$tmp/idle.err" "$tmp/idle.out" | tr '\n' ' ')" >&2
		printf '%s\t-1 -1 -1\n' "$label" >>"$tmp/rss.tsv"
	fi
	kill -KILL $vmpid 2>/dev/null || true
	wait $vmpid 2>/dev/null || true
	vmpid=
}
echo "bench: linux: the VMMs' memory while the guest idles (--rng) ..."
: >"$tmp/rss.tsv"
# shellcheck disable=SC2086
idle_rss "perfvisor --rng" $pvrun --rng --cmdline "$cmd pvinit.mods=1 pvinit=idle"
# shellcheck disable=SC2086
idle_rss "qemu microvm, virtio-rng" $qemu -device virtio-rng-device -append "$cmd pvinit.mods=1 pvinit=idle"
# With a disk: a sparse image the guest's virtio_blk finds but does not mount.
img=$tmp/idle.img
: >"$img" && truncate -s 64M "$img"
qblk="-drive file=$img,if=none,id=d0,format=raw,cache=writeback,aio=io_uring -device virtio-blk-device,drive=d0"
# shellcheck disable=SC2086
idle_rss "perfvisor --rng --disk" $pvrun --rng --disk path="$img" --cmdline "$cmd pvinit.mods=1 pvinit=idle"
# shellcheck disable=SC2086
idle_rss "qemu microvm, rng, blk" $qemu -device virtio-rng-device $qblk -append "$cmd pvinit.mods=1 pvinit=idle"
# And a net: the tap pvrss0 in a network namespace of its own, gone with the VMM. in_netns
# execs (through busybox unshare, which execs too) so the VMM keeps the pid idle_rss reads.
mktap=$build/tests/mktap
in_netns() {
	exec busybox unshare -n sh -c '"$0" pvrss0 >/dev/null && busybox ip link set pvrss0 up && exec "$@"' "$mktap" "$@"
}
if bench_netns_ok && [ -x "$mktap" ]; then
	# shellcheck disable=SC2086
	idle_rss "perfvisor --rng --disk --net" in_netns $pvrun --rng --disk path="$img" --net tap=pvrss0 \
		--cmdline "$cmd pvinit.mods=1 pvinit=idle"
	# shellcheck disable=SC2086
	idle_rss "qemu microvm, rng, blk, net" in_netns $qemu -device virtio-rng-device $qblk \
		-netdev tap,id=n0,ifname=pvrss0,script=no,downscript=no,vhost=off -device virtio-net-device,netdev=n0 \
		-append "$cmd pvinit.mods=1 pvinit=idle"
else
	echo "bench: linux: the VMMs' memory with a net: not measured (needs root, /dev/net/tun, busybox ip and unshare -n, and $mktap)"
fi

echo
awk -F '\t' -v host="$host" -v cpus="$cpus" -v mem="$mem" -v pkg="$(cat "$build/debian-kernel/package" 2>/dev/null)" '
FILENAME ~ /boot.tsv$/ { n++; lab[n] = $1; runs[n] = $2; wall[n] = $4 / 1e6; mark[n] = $9 / 1e6; g[n] = $10 / 1e6; if ($1 == "qemu microvm, rtc=on") rtc = n }
FILENAME ~ /rss.tsv$/ { split($2, v, " "); m++; rlab[m] = $1; over[m] = v[1]; tot[m] = v[2]; gst[m] = v[3]; top[m] = v[4] }
function ratio(x, base, target) {
	if (base <= 0) return "-"
	if (!target) return sprintf("%.2f", x / base)
	return sprintf("%.2f (%s)", x / base, x / base <= 0.5 ? "met" : "MISSED")
}
END {
	printf "perfvisor bench — Linux boot to /init (%s)\n", host
	printf "%s, busybox initramfs, %s vCPUs, %s, console on the serial port; target: perfvisor <= 0.50x QEMU\n", pkg, cpus, mem
	printf "%-26s %4s %12s  %-16s %12s  %-16s %-10s %7s\n", "case", "runs", "Run /init s", "ratio", "wall /init s", "ratio", "vs rtc=on", "exit s"
	for (i = 1; i <= n; i++) {
		if (lab[i] ~ /^qemu/ && i != rtc) q = i
		base = q
		tg = lab[i] ~ /^qemu/ && i != rtc ? "1.00 (baseline)" : ratio(g[i], g[base], i != rtc)
		tw = lab[i] ~ /^qemu/ && i != rtc ? "1.00 (baseline)" : ratio(mark[i], mark[base], i != rtc)
		tr = rtc && i > rtc && lab[i] !~ /^qemu/ && lab[i] !~ /--rng/ ? ratio(mark[i], mark[rtc], 0) : "-"
		printf "%-26s %4d %12.2f  %-16s %12.2f  %-16s %-10s %7.2f\n", lab[i], runs[i], g[i], tg, mark[i], tw, tr, wall[i]
	}
	printf "Run /init s: the guest'"'"'s printk time of \"Run /init as init process\"; wall /init s: exec to \"pvinit: reached /init\"\n"
	printf "on the console; exit s: exec to the VMM'"'"'s exit (poweroff -f). Medians; each ratio is against the QEMU row above it\n"
	printf "with its defaults (under KVM microvm has no RTC, so its guest waits for rtc_cmos); vs rtc=on: wall /init against QEMU with its RTC.\n"
	for (i = 1; i <= m; i++) {
		if (over[i] < 0) { printf "VMM overhead RSS, Linux guest idle, %s: not measured\n", rlab[i]; continue }
		if (rlab[i] ~ /^perfvisor/) { pvo = over[i]; note = sprintf("bound <= 5120 KiB (Firecracker'"'"'s published): %s", over[i] <= 5120 ? "met" : "MISSED") }
		else note = pvo > 0 ? sprintf("perfvisor/QEMU %.2f", pvo / over[i]) : "-"
		printf "VMM overhead RSS, Linux guest idle, %s: %d KiB (Rss %d - guest RAM resident %d; %s)\n", rlab[i], over[i], tot[i], gst[i], note
		if (rlab[i] ~ /^perfvisor/ && top[i] != "" && top[i] != "-") printf "  its most resident other mappings (KiB): %s\n", top[i]
	}
}' "$tmp/boot.tsv" "$tmp/rss.tsv"
