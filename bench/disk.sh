#!/bin/sh
# SPDX-License-Identifier: MIT
# Disk benchmark (POSIX sh: it also runs in the busybox test VM): perfvisor's
# virtio-blk (--disk, io_uring, docs/devices.md) against QEMU's on the same raw
# image, each measured from inside the guest. Debian's stock kernel
# (BUILD/debian-kernel/vmlinuz) with the Linux tests' busybox initramfs
# (BUILD/linux-initramfs/initramfs.cpio; pvinit.mods=1 loads virtio_mmio and
# virtio_blk, which find the disk in the DSDT on both sides; pvinit=diskbench
# runs the measurement), booted by QEMU microvm (the baseline: -drive
# if=none,format=raw, -device virtio-blk-device) and by perfvisor, interleaved,
# same kernel, initramfs, command line, memory and vCPUs. The guest times with
# its own clock: a sequential write of the image's BENCH_DISK_MB MiB, 1 MiB at a
# time with O_DIRECT and a flush at the end (dd oflag=direct conv=fsync); a
# sequential read of it (dd iflag=direct); BENCH_DISK_RAND 4 KiB O_DIRECT reads
# at random offsets at queue depth 1, then as many at queue depth 32 (the
# initramfs's randread, tests/integration/randread.c: QD threads, one pread
# each in flight), in reads per second. Medians of BENCH_DISK_RUNS boots. The image is written in full
# before the first boot, so no run pays for allocating it.
# QEMU's cache mode is BENCH_DISK_QEMU_CACHE (writeback: the host's page
# cache and a flush on the guest's flush, as perfvisor's backend does; none
# is O_DIRECT, which perfvisor does not do and tmpfs before Linux 6.6 refuses);
# its aio is BENCH_DISK_QEMU_AIO (io_uring, as perfvisor's).
# Env: BUILD, BENCH_DISK_RUNS (3), BENCH_DISK_MB (256), BENCH_DISK_RAND (2000; 0
# leaves the random reads out), BENCH_DISK_CPUS (2), BENCH_DISK_MEM (256M),
# BENCH_DISK_TIMEOUT (240 s a boot: under the test host's 300 s without output, so a
# hung boot fails alone), BENCH_DISK_DIR (where the image goes;
# default a temporary directory), BENCH_HOST. Run by bench/run.sh.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_DISK_RUNS:-3}
mb=${BENCH_DISK_MB:-256}
nrand=${BENCH_DISK_RAND:-2000}
cpus=${BENCH_DISK_CPUS:-2}
mem=${BENCH_DISK_MEM:-256M}
limit=${BENCH_DISK_TIMEOUT:-240}
cache=${BENCH_DISK_QEMU_CACHE:-writeback}
aio=${BENCH_DISK_QEMU_AIO:-io_uring}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
kernel=$build/debian-kernel/vmlinuz
initrd=$build/linux-initramfs/initramfs.cpio
bench_positive BENCH_DISK_RUNS "$runs"
bench_positive BENCH_DISK_MB "$mb"
bench_positive BENCH_DISK_CPUS "$cpus"
bench_positive BENCH_DISK_TIMEOUT "$limit"
case "$nrand" in '' | *[!0-9]*) echo "bench: BENCH_DISK_RAND must be a number" >&2; exit 2 ;; esac
case "$mem" in *M | *G) ;; *) echo "bench: BENCH_DISK_MEM must be a size in M or G (e.g. 256M)" >&2; exit 2 ;; esac
bench_need "$pv" "$kernel" "$initrd"
command -v qemu-system-x86_64 >/dev/null ||
	{ echo "bench: qemu-system-x86_64 not found (bash scripts/deps.sh bench)" >&2; exit 1; }
bench_tmpdir
dir=${BENCH_DISK_DIR:-$tmp}
img=$dir/diskbench.img
vmpid=
trap '[ -n "$vmpid" ] && kill -KILL $vmpid 2>/dev/null; rm -rf "$tmp" "$img"' EXIT INT TERM

# The image: every block written (zeros), so both VMMs overwrite allocated
# blocks. The file system it is on, and whether it takes O_DIRECT, go in the header.
if ! dd if=/dev/zero of="$img" bs=1048576 count="$mb" 2>"$tmp/dd.err"; then
	echo "bench: disk: cannot make the $mb MiB image $img: $(tail -n 1 "$tmp/dd.err")" >&2
	exit 1
fi
fs=$(stat -f -c %T "$img" 2>/dev/null || echo "unknown file system")
if dd if="$img" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then
	odirect="takes O_DIRECT"
else
	odirect="no O_DIRECT"
fi

cmd="console=ttyS0 printk.time=1 panic=-1 pvinit.mods=1 pvinit=diskbench pvinit.diskmb=$mb pvinit.diskrand=$nrand"
# QEMU's microvm as bench/linux.sh boots it, with the disk on its virtio-mmio
# transport (described in its DSDT, like perfvisor's).
qemu="qemu-system-x86_64 -enable-kvm -cpu host,-arch-capabilities -smp $cpus -m $mem -M microvm
	-nodefaults -no-user-config -display none -monitor none -serial stdio -no-reboot -bios qboot.rom
	-kernel $kernel -initrd $initrd
	-drive file=$img,format=raw,if=none,id=d0,cache=$cache,aio=$aio -device virtio-blk-device,drive=d0"
pvrun="$pv run --kernel $kernel --initrd $initrd --cpus $cpus --memory $mem --console stdio --disk path=$img"

# boot LABEL RUN COMMAND...: one boot, at most $limit s; appends the guest's
# results to results.tsv as "LABEL RUN what MiB-or-reads seconds [seconds]",
# or "LABEL RUN failed reason", and its binding line to bind.tsv.
boot() {
	label=$1 run=$2
	shift 2
	out=$tmp/out.$run.$(echo "$label" | tr -c 'a-z0-9\n' '_')
	"$@" >"$out" 2>"$out.err" &
	vmpid=$!
	t=0
	while kill -0 $vmpid 2>/dev/null && [ $t -lt $((limit * 10)) ]; do
		sleep 0.1
		t=$((t + 1))
	done
	status=0
	if kill -0 $vmpid 2>/dev/null; then
		kill -KILL $vmpid 2>/dev/null || true
		wait $vmpid 2>/dev/null || true
		status=timeout
	else
		wait $vmpid || status=$?
	fi
	vmpid=
	tr -d '\r' <"$out" | awk -F ' ' -v lab="$label" -v run="$run" -v status="$status" -v limit="$limit" -v err="$(tail -n 2 "$out.err" | tr '\t\n' '  ')" '
		/^pvinit: diskbench (write|read) [0-9]+ [0-9.]+$/ { printf "%s\t%s\t%s\t%s\t%s\n", lab, run, $3, $4, $5; next }
		/^pvinit: diskbench randread [0-9]+ [0-9]+ [0-9.]+$/ { printf "%s\t%s\tqd%s\t%s\t%s\n", lab, run, $4, $5, $6; next }
		/^pvinit: diskbench failed: / { sub(/^pvinit: diskbench failed: /, ""); printf "%s\t%s\tfailed\t%s\n", lab, run, $0; next }
		/^pvinit: diskbench vda / { sub(/^pvinit: diskbench /, ""); printf "%s\t%s\n", lab, $0 >"/dev/stderr"; next }
		/^pvinit: diskbench done$/ { done = 1 }
		END {
			if (status == "timeout") printf "%s\t%s\tfailed\tthe boot took longer than %d s\n", lab, run, limit
			else if (status != 0) printf "%s\t%s\tfailed\tthe VMM exited with status %s: %s\n", lab, run, status, err
			else if (!done) printf "%s\t%s\tfailed\tthe guest never ran the benchmark to its end\n", lab, run
		}' >"$tmp/boot.tsv" 2>>"$tmp/bind.tsv"
	cat "$tmp/boot.tsv" >>"$tmp/results.tsv"
	# One line a boot: the test host stops a VM whose command prints nothing for 300 s.
	awk -F '\t' -v lab="$label" -v run="$run" '
		$3 == "failed" { s = s "; failed: " $4; next }
		$3 ~ /^qd/ { s = s sprintf("; %d random reads at queue depth %s %.2f s", $4, substr($3, 3), $5); next }
		{ s = s sprintf("; %s %d MiB %.2f s", $3, $4, $5) }
		END { printf "bench: disk: %s, boot %d%s\n", lab, run, s }' "$tmp/boot.tsv"
}

echo "bench: disk: $runs interleaved boots of each VMM, $mb MiB image on $fs ($odirect), $nrand random reads ..."
: >"$tmp/results.tsv"
: >"$tmp/bind.tsv"
i=1
while [ $i -le "$runs" ]; do
	# shellcheck disable=SC2086 # $qemu and $pvrun are word lists (no path here has a space)
	boot "qemu microvm" $i $qemu -append "$cmd"
	# shellcheck disable=SC2086
	boot "perfvisor" $i $pvrun --cmdline "$cmd"
	i=$((i + 1))
done

echo
awk -F '\t' -v host="$host" -v cpus="$cpus" -v mem="$mem" -v mb="$mb" -v nrand="$nrand" -v fs="$fs" \
	-v odirect="$odirect" -v cache="$cache" -v aio="$aio" -v runs="$runs" \
	-v pkg="$(cat "$build/debian-kernel/package" 2>/dev/null)" "$bench_awk_med"'
FILENAME ~ /bind.tsv$/ { bind[$1] = $2; next }
{
	lab = $1
	if (!(lab in seen)) { seen[lab] = ++nl; labs[nl] = lab }
	if ($3 == "failed") { if (!(lab in why)) why[lab] = $4; nfail[lab]++; next }
	if ($5 <= 0) next
	k = ++n[lab, $3]; v[lab, $3, k] = $4 / $5
}
function median(lab, what,    i, a) {
	for (i = 1; i <= n[lab, what]; i++) a[i] = v[lab, what, i]
	return med(a, n[lab, what])
}
function cell(lab, what,    m, b) {
	if (!n[lab, what]) return sprintf("%-24s", "not measured")
	m = median(lab, what)
	if (lab ~ /^qemu/) return sprintf("%10.1f %-13s", m, "1.00 (base)")
	b = n[base, what] ? median(base, what) : 0
	return sprintf("%10.1f %-13s", m, b > 0 ? sprintf("%.2f", m / b) : "-")
}
END {
	base = "qemu microvm"
	printf "perfvisor bench — disk: virtio-blk from inside a Linux guest (%s)\n", host
	printf "%s, busybox initramfs, %s vCPUs, %s; a %s MiB raw image on %s (%s), written in full first\n", pkg, cpus, mem, mb, fs, odirect
	printf "QEMU microvm -drive format=raw,cache=%s,aio=%s -device virtio-blk-device; perfvisor --disk path=IMG (io_uring, page cache)\n", cache, aio
	printf "%-14s %4s  %-24s  %-24s  %-24s  %-24s\n", "case", "runs", "seq write MiB/s  ratio", "seq read MiB/s   ratio", "4K QD1 read/s    ratio", "4K QD32 read/s   ratio"
	for (i = 1; i <= nl; i++) {
		lab = labs[i]
		printf "%-14s %4d  %s  %s  %s  %s\n", lab, n[lab, "write"], cell(lab, "write"), cell(lab, "read"),
			(nrand > 0 ? cell(lab, "qd1") : "left out (BENCH_DISK_RAND=0)"), (nrand > 0 ? cell(lab, "qd32") : "")
	}
	printf "MiB/s by the guest'"'"'s clock; write: dd bs=1M oflag=direct conv=fsync (the flush included); read: dd bs=1M iflag=direct;\n"
	if (nrand > 0) printf "QD1, QD32: %d reads of 4 KiB at random offsets, O_DIRECT, by 1 or 32 threads each with one pread in flight (randread).\n", nrand
	printf "Medians of the runs that measured; each ratio is perfvisor/QEMU (higher is better).\n"
	for (i = 1; i <= nl; i++) {
		lab = labs[i]
		if (n[lab, "qd1"]) printf "%s: a random read at queue depth 1 takes %.0f us (median)\n", lab, 1e6 / median(lab, "qd1")
		if (lab in bind) printf "%s: %s\n", lab, bind[lab]
		if (nfail[lab]) printf "%s: %d failure(s) in %d boots; the first: %s\n", lab, nfail[lab], runs, why[lab]
	}
	if (!nl) print "not measured: no boot printed anything"
}' "$tmp/bind.tsv" "$tmp/results.tsv"
