#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build, once, the initramfs the Linux boot tests (tests/integration/linux/linux-boot.sh)
# hand Debian's kernel, into BUILD/linux-initramfs/: a static busybox (Debian's
# busybox-static package, fetched with `apt-get download` and unpacked with
# dpkg-deb, like tests/integration/debian-kernel.sh fetches the kernel) and an
# /init that prints what the tests check (the time from the system clock, the
# RTC and hwclock) and then powers off or reboots, as `pvinit=` on the kernel
# command line says (poweroff, the default, or reboot). It also carries the
# kernel package's virtio and ext4 modules (BUILD/debian-kernel/modules, from
# tests/integration/debian-kernel.sh): `pvinit.mods=1` loads them all, in
# order, before anything else; `pvinit=rng` then reads /dev/hwrng;
# `pvinit.work=profile` first runs a workload the host profiles (/bin/spin,
# tests/integration/spin.c); `pvinit=disk` mounts /dev/vda on /mnt and runs /mnt/pvtest.sh (a script a
# test put in the image) before powering off; `pvinit=idle` idles for 600 s
# (bench/linux.sh reads the VMM's memory meanwhile); `pvinit=script` runs /pvtest.sh, which a
# test's own cpio archive appended to this one brings; `pvinit=net` gives eth0
# 10.0.2.15/24 and sends then receives `pvinit.netmb` MiB over TCP (busybox
# nc) to and from 10.0.2.1, printing each stream's md5 (with `pvinit.netdiag=S`,
# eth0's, TCP's and the CPUs' counters every S seconds meanwhile); `pvinit=devices` checks two
# disks, two NICs and the hwrng in one boot (tests/integration/linux/linux-devices.sh);
# `pvinit=diskbench` times, by the guest's clock, sequential writes and reads and random
# 4 KiB reads of /dev/vda, a raw image, with O_DIRECT, at queue depth 1 and 32 (bench/disk.sh;
# /bin/randread, tests/integration/randread.c, built static here with the host's cc). The cpio (newc) is
# written by `cpio -o -H newc`, which GNU cpio and busybox's both do.
# Prints what it has; exit 1 with one line saying why if it cannot.
# Usage: tests/integration/linux-initramfs.sh [BUILD]
set -euo pipefail
build=${1:-build}
dir=$build/linux-initramfs
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"

if [ ! -s "$dir/busybox" ]; then
	rm -rf "$dir/cache" && mkdir -p "$dir/cache"
	(cd "$dir/cache" && timeout 600 apt-get download -q busybox-static >/dev/null 2>"$PWD/apt.err") || {
		apt-get update -qq >/dev/null 2>&1 || true
		(cd "$dir/cache" && timeout 600 apt-get download -q busybox-static >/dev/null 2>"$PWD/apt.err")
	} || { echo "linux-initramfs: apt-get download busybox-static failed: $(tail -n 1 "$dir/cache/apt.err")" >&2; exit 1; }
	rm -rf "$dir/cache/root"
	dpkg-deb -x "$dir/cache/"*.deb "$dir/cache/root"
	cp "$dir/cache/root/bin/busybox" "$dir/busybox.tmp" && mv "$dir/busybox.tmp" "$dir/busybox"
	basename "$(ls "$dir/cache/"*.deb)" >"$dir/package"
	rm -rf "$dir/cache"
fi
# The init changes with this script: rebuild the archive when the script is newer.
mods=$build/debian-kernel/modules
if [ ! -s "$dir/initramfs.cpio" ] || [ "$here/linux-initramfs.sh" -nt "$dir/initramfs.cpio" ] ||
	[ "$here/randread.c" -nt "$dir/initramfs.cpio" ] || [ "$here/spin.c" -nt "$dir/initramfs.cpio" ] ||
	[ "$mods/order" -nt "$dir/initramfs.cpio" ]; then
	r=$dir/root
	rm -rf "$r" && mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/mnt" "$r/lib/modules"
	cp "$dir/busybox" "$r/bin/busybox"
	[ -s "$mods/order" ] && cp "$mods/"*.ko "$mods/order" "$r/lib/modules/"
	# The disk bench's random reads; the tests do not need it, so a host that cannot link
	# statically (no libc.a) still gets its initramfs, and says what is missing.
	if ! "${CC:-cc}" -static -O2 -pthread -o "$r/bin/randread" "$here/randread.c" 2>"$dir/randread.err"; then
		echo "linux-initramfs: randread not built (the disk bench's random reads will fail): $(tail -n 1 "$dir/randread.err")" >&2
	fi
	# The profiled workload (pvinit.work=profile): the Linux boot test needs it.
	if ! "${CC:-cc}" -static -O2 -o "$r/bin/spin" "$here/spin.c" 2>"$dir/spin.err"; then
		echo "linux-initramfs: spin not built (linux-boot's profile checks will fail): $(tail -n 1 "$dir/spin.err")" >&2
	fi
	cat >"$r/init" <<'INIT'
#!/bin/busybox sh
# perfvisor's Linux boot test: what the guest sees, then poweroff -f or reboot -f.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "pvinit: reached /init"
case " $(cat /proc/cmdline) " in
*" pvinit.mods=1 "*)
	n=0
	for m in $(cat /lib/modules/order 2>/dev/null); do
		insmod "/lib/modules/$m.ko" && n=$((n + 1)) || echo "pvinit: insmod $m failed"
	done
	echo "pvinit: $n modules loaded"
	mdev -s 2>/dev/null
	;;
esac
echo "pvinit: date $(date -u +%s) ($(date -u))"
echo "pvinit: rtc0 $(cat /sys/class/rtc/rtc0/name 2>/dev/null) since_epoch $(cat /sys/class/rtc/rtc0/since_epoch 2>/dev/null)"
echo "pvinit: hwclock $(hwclock -r -u 2>&1)"
echo "pvinit: date $(date -u +%s) again"
case " $(cat /proc/cmdline) " in
*" pvinit.work=profile "*)
	# What the host's profile of this boot must name (linux-boot, docs/profiling.md): spinsys
	# in system calls for 3 s; then spinA at nice 0 and spinB at nice 5 sharing CPU 1 for 6 s
	# (CFS weights 1024 and 335: 75% and 25%).
	spin spinsys sys 3
	taskset 2 spin spinA 0 6 & a=$!
	taskset 2 spin spinB 5 6 & b=$!
	echo "pvinit: profile work: spinA $a, spinB $b started"
	wait
	echo "pvinit: profile work done: spinA $a, spinB $b" ;;
esac
case " $(cat /proc/cmdline) " in
*" pvinit=rng "*)
	echo "pvinit: rng_available $(cat /sys/class/misc/hw_random/rng_available 2>&1)"
	echo "pvinit: rng_current $(cat /sys/class/misc/hw_random/rng_current 2>&1)"
	echo "pvinit: hwrng $(dd if=/dev/hwrng bs=32 count=1 2>/dev/null | od -An -tx1 | tr -d ' \n')"
	echo "pvinit: entropy_avail $(cat /proc/sys/kernel/random/entropy_avail)"
	# /dev/random blocks until the kernel's generator is seeded: bounded here, so a block shows.
	echo "pvinit: random $(timeout 10 dd if=/dev/random bs=16 count=1 2>/dev/null | od -An -tx1 | tr -d ' \n')"
	echo "pvinit: poweroff -f"; poweroff -f ;;
*" pvinit=disk "*)
	if mount -t ext4 /dev/vda /mnt; then
		echo "pvinit: mounted /dev/vda"
		[ -f /mnt/pvtest.sh ] && sh /mnt/pvtest.sh
		umount /mnt && echo "pvinit: unmounted /dev/vda"
	else
		echo "pvinit: mount /dev/vda failed"
	fi
	sync
	echo "pvinit: poweroff -f"; poweroff -f ;;
*" pvinit=net "*)
	# eth0 10.0.2.15/24 to the tap's host end 10.0.2.1: pvinit.netmb=N MiB (default 100) sent
	# to port 5001, then N MiB received from port 5002, each with its md5 and its time.
	mb=$(sed -n 's/.*pvinit.netmb=\([0-9]*\).*/\1/p' /proc/cmdline); mb=${mb:-100}
	stream() { i=0; while [ $i -lt "$mb" ]; do cat /tmp/blk; i=$((i + 1)); done; }
	now() { cut -d' ' -f1 /proc/uptime; }
	ip link set lo up; ip addr add 10.0.2.15/24 dev eth0; ip link set eth0 up
	# pvinit.netdiag=S: every S seconds, eth0's counters, TCP's (retransmissions, timeouts,
	# drops), the device's interrupts and the transfer's sockets (/proc/net/tcp), for a stall.
	diag=$(sed -n 's/.*pvinit.netdiag=\([0-9]*\).*/\1/p' /proc/cmdline)
	if [ -n "$diag" ]; then
		(
			s=/sys/class/net/eth0/statistics
			echo "pvdiag: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
			while sleep "$diag"; do
				echo "pvdiag: $(now) eth0 rx $(cat $s/rx_packets) $(cat $s/rx_bytes) drop $(cat $s/rx_dropped) err $(cat $s/rx_errors) tx $(cat $s/tx_packets) $(cat $s/tx_bytes) drop $(cat $s/tx_dropped) err $(cat $s/tx_errors)"
				echo "pvdiag: $(now) irq $(grep -i virtio /proc/interrupts | tr -s ' ' | head -n 2 | tr '\n' '|') $(head -n 1 /proc/stat)"
				echo "pvdiag: $(now) $(awk '/^Tcp:/ { if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1; next } for (i = 2; i <= NF; i++) if (k[i] ~ /^(InSegs|OutSegs|RetransSegs|InErrs|InCsumErrors)$/) printf "%s=%s ", k[i], $i }' /proc/net/snmp)"
				echo "pvdiag: $(now) $(awk '/^TcpExt:/ { if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1; next } for (i = 2; i <= NF; i++) if ($i != 0 && k[i] ~ /^(TCPTimeouts|TCPSpuriousRTOs|TCPLossProbes|TCPFastRetrans|TCPSlowStartRetrans|TCPLostRetransmit|TCPDSACKRecv|TCPDSACKOldSent|TCPSackRecovery|TCPRenoRecovery|TCPBacklogDrop|TCPRcvQDrop|TCPOFOQueue|TCPOFODrop|TCPZeroWindowDrop|PruneCalled|RcvPruned|TCPWantZeroWindowAdv|TCPHPHits|TCPPureAcks|TCPSpuriousRtxHostQueues|TCPTimeoutRehash|TCPAbortOnTimeout)$/) printf "%s=%s ", k[i], $i }' /proc/net/netstat)"
				echo "pvdiag: $(now) tcp $(awk '$2 ~ /:138[9A]$/ || $3 ~ /:138[9A]$/ { printf "%s %s st %s q %s tr %s rtx %s | ", $2, $3, $4, $5, $6, $7 }' /proc/net/tcp)"
			done
		) &
	fi
	# features: the virtio feature bits the driver took, bit 0 first (15: MRG_RXBUF)
	echo "pvinit: eth0 $(cat /sys/class/net/eth0/address) driver $(basename "$(readlink /sys/class/net/eth0/device/driver)") $(cat /sys/class/net/eth0/operstate) features $(cat /sys/class/net/eth0/device/features 2>/dev/null)"
	dd if=/dev/urandom of=/tmp/blk bs=1048576 count=1 2>/dev/null
	i=0; while ! ping -c 1 -W 1 10.0.2.1 >/dev/null 2>&1 && [ $i -lt 30 ]; do i=$((i + 1)); done
	echo "pvinit: ping 10.0.2.1 after $i tries"
	echo "pvinit: net sent md5 $(stream | md5sum | cut -d' ' -f1)"
	# eth0's frames and bytes so far, each way: before and after each direction (bench/net.sh).
	# And TCP's own counts (/proc/net/snmp, /proc/net/netstat): segments each way, the writes
	# TCP corked (TCPAutoCorking), the ACKs it delayed and the pure ACKs it got.
	frames() {
		fs=/sys/class/net/eth0/statistics
		echo "pvinit: net frames $1 tx $(cat $fs/tx_packets) $(cat $fs/tx_bytes) rx $(cat $fs/rx_packets) $(cat $fs/rx_bytes)"
		echo "pvinit: net tcp $1 $(cat /proc/net/snmp /proc/net/netstat | awk '$1 ~ /^(Tcp|TcpExt):$/ {
			if (!(($1) in h)) { h[$1] = 1; for (i = 2; i <= NF; i++) k[$1, i] = $i; next }
			for (i = 2; i <= NF; i++) if (k[$1, i] ~ /^(OutSegs|InSegs|TCPAutoCorking|DelayedACKs|TCPPureAcks|TCPHPAcks|TCPOrigDataSent|TCPDelivered|TCPWantZeroWindowAdv|TCPFromZeroWindowAdv|TCPToZeroWindowAdv|RetransSegs)$/) printf "%s=%s ", k[$1, i], $i }')"
	}
	frames start
	t0=$(now); stream | nc 10.0.2.1 5001; t1=$(now)
	echo "pvinit: net sent $mb MiB in $t0 $t1"
	frames sent
	# busybox nc ends when the other side closes, and closes its side when its input ends: the
	# receiver's input is a fifo that never ends (the shell holds it open), so the sender's end
	# of the stream is what ends the connection.
	mkfifo /tmp/idle && exec 3<>/tmp/idle
	t0=$(now); got=$(nc 10.0.2.1 5002 <&3 | md5sum | cut -d' ' -f1); t1=$(now)
	echo "pvinit: net received md5 $got, $mb MiB in $t0 $t1"
	frames received
	echo "pvinit: poweroff -f"; poweroff -f ;;
*" pvinit=reboot "*) echo "pvinit: reboot -f"; reboot -f ;;
*" pvinit=idle "*) echo "pvinit: idle"; sleep 600; poweroff -f ;;
*" pvinit=script "*)
	# A test's own script, /pvtest.sh, from a cpio archive the test appended to this one
	# (tests/integration/linux-perfinit.sh: the guest-perf test).
	if [ -f /pvtest.sh ]; then sh /pvtest.sh; else echo "pvinit: no /pvtest.sh in the initramfs"; fi
	echo "pvinit: poweroff -f"; poweroff -f ;;
*" pvinit=diskbench "*)
	# bench/disk.sh: /dev/vda is a raw image the bench made (no file system). By the guest's
	# own clock (ktime, ns, from /proc/timer_list; /proc/uptime, 10 ms, without it): a
	# sequential write of pvinit.diskmb MiB (default 256) with O_DIRECT and a flush at the end,
	# a sequential read of it with O_DIRECT, both 1 MiB at a time; then pvinit.diskrand 4 KiB
	# O_DIRECT reads (default 2000; 0: none) at random offsets, at queue depth 1 and then 32
	# (/bin/randread, which times them by CLOCK_MONOTONIC).
	mb=$(sed -n 's/.*pvinit.diskmb=\([0-9]*\).*/\1/p' /proc/cmdline); mb=${mb:-256}
	nr=$(sed -n 's/.*pvinit.diskrand=\([0-9]*\).*/\1/p' /proc/cmdline); nr=${nr:-2000}
	if [ -n "$(sed -n '3s/^now at \([0-9]*\) nsecs$/\1/p;3q' /proc/timer_list 2>/dev/null)" ]; then
		now() { sed -n '3s/^now at \([0-9]*\) nsecs$/\1/p;3q' /proc/timer_list; }; clk=ktime
	else
		now() { awk '{ printf "%.0f", $1 * 1e9 }' /proc/uptime; }; clk=uptime
	fi
	secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", (b - a) / 1e9 }'; }
	dev=/sys/block/vda/device
	echo "pvinit: diskbench vda sectors $(cat /sys/block/vda/size 2>&1) driver $(basename "$(readlink $dev/driver)") transport $(basename "$(readlink $dev/../driver)") $(basename "$(readlink -f $dev/..)") clock $clk"
	if [ ! -b /dev/vda ]; then
		echo "pvinit: diskbench failed: no /dev/vda"
	elif [ "$(cat /sys/block/vda/size)" -lt $((mb * 2048)) ]; then
		echo "pvinit: diskbench failed: /dev/vda is smaller than $mb MiB"
	else
		t0=$(now)
		if dd if=/dev/zero of=/dev/vda bs=1048576 count="$mb" oflag=direct conv=fsync 2>/tmp/dd.err; then
			echo "pvinit: diskbench write $mb $(secs "$t0" "$(now)")"
		else
			echo "pvinit: diskbench failed: write: $(tail -n 1 /tmp/dd.err)"
		fi
		t0=$(now)
		if dd if=/dev/vda of=/dev/null bs=1048576 count="$mb" iflag=direct 2>/tmp/dd.err; then
			echo "pvinit: diskbench read $mb $(secs "$t0" "$(now)")"
		else
			echo "pvinit: diskbench failed: read: $(tail -n 1 /tmp/dd.err)"
		fi
		# "randread QD N SECONDS": the same offsets in every boot, 4 KiB blocks of the first mb MiB.
		for qd in 1 32; do
			[ "$nr" -gt 0 ] || break
			if out=$(randread /dev/vda "$mb" "$nr" "$qd" 2>&1); then
				echo "pvinit: diskbench $out"
			else
				echo "pvinit: diskbench failed: queue depth $qd: $out"
			fi
		done
	fi
	echo "pvinit: diskbench done"
	echo "pvinit: poweroff -f"; poweroff -f ;;
*" pvinit=devices "*)
	# Every kind of device at once (tests/integration/linux/linux-devices.sh): two disks in
	# order, the second read-only; two NICs, each pinging its tap's host end; the hwrng.
	for d in vda vdb; do
		echo "pvinit: $d sectors $(cat /sys/block/$d/size 2>&1) ro $(cat /sys/block/$d/ro 2>&1)"
	done
	echo "pvinit: vdb md5 $(md5sum </dev/vdb | cut -d' ' -f1)"
	if dd if=/dev/zero of=/dev/vdb bs=4096 count=1 conv=fsync 2>/dev/null; then
		echo "pvinit: vdb write accepted"
	else
		echo "pvinit: vdb write refused"
	fi
	if mount -t ext4 /dev/vda /mnt; then
		dd if=/dev/urandom of=/mnt/devices bs=65536 count=16 2>/dev/null && sync
		echo "pvinit: vda wrote $(md5sum </mnt/devices | cut -d' ' -f1)"
		umount /mnt && echo "pvinit: unmounted /dev/vda"
	else
		echo "pvinit: mount /dev/vda failed"
	fi
	for i in 0 1; do
		ip addr add 10.0.$((4 + i)).15/24 dev eth$i && ip link set eth$i up
		echo "pvinit: eth$i $(cat /sys/class/net/eth$i/address) driver $(basename "$(readlink /sys/class/net/eth$i/device/driver)")"
		t=0; while ! ping -c 1 -W 1 10.0.$((4 + i)).1 >/dev/null 2>&1 && [ $t -lt 30 ]; do t=$((t + 1)); done
		ping -c 3 -W 2 10.0.$((4 + i)).1 >/dev/null 2>&1 && echo "pvinit: eth$i ping 10.0.$((4 + i)).1 ok"
	done
	echo "pvinit: rng_current $(cat /sys/class/misc/hw_random/rng_current 2>&1)"
	echo "pvinit: hwrng $(dd if=/dev/hwrng bs=32 count=1 2>/dev/null | od -An -tx1 | tr -d ' \n')"
	echo "pvinit: poweroff -f"; poweroff -f ;;
*) echo "pvinit: poweroff -f"; poweroff -f ;;
esac
sleep 60
INIT
	chmod +x "$r/init"
	(cd "$r" && find . | cpio -o -H newc --quiet) >"$dir/initramfs.tmp" 2>/dev/null && [ -s "$dir/initramfs.tmp" ] ||
		{ echo "linux-initramfs: cpio -o -H newc failed" >&2; rm -f "$dir/initramfs.tmp"; exit 1; }
	mv "$dir/initramfs.tmp" "$dir/initramfs.cpio"
	rm -rf "$r"
fi
echo "linux-initramfs: $(cat "$dir/package"): $dir/initramfs.cpio ($(wc -c <"$dir/initramfs.cpio") bytes)"
