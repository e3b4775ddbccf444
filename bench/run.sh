#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: the boot benchmark, then the statistics benchmark
# (bench/boot.sh runs both), then the PV PMU benchmark (bench/pmu.sh), then
# the host-side profiling benchmark (bench/profile.sh), then the snapshot
# benchmark (bench/snapshot.sh), then the seccomp benchmark
# (bench/seccomp.sh), then the Linux boot benchmark (bench/linux.sh: Debian's
# kernel to /init, perfvisor against QEMU microvm), then the disk benchmark
# (bench/disk.sh: virtio-blk from inside that kernel, perfvisor against QEMU
# microvm on the same image), then the network benchmark (bench/net.sh: TCP
# both ways through virtio-net from inside that kernel, perfvisor against
# QEMU microvm on the same tap setup), then the Linux profiling benchmark
# (bench/linuxprof.sh: a Linux guest's overhead and the host's cost per
# sample with its processes and ORC stacks, and without), then `perf` inside a Linux guest
# (bench/guestperf.sh: its overhead, and the exits per sample and per counting read of the
# PV PMU's Linux driver), then live migration (bench/migrate.sh: the pause and the whole
# migration of a 256 MiB and a 1 GiB guest, idle and dirtying memory, over a unix socket on this
# machine, against snapshot + restore through a file) on KVM, in one session. Where this machine
# has no usable /dev/kvm, it runs inside the test VM (tests/testhost/run.sh),
# i.e. on KVM nested in QEMU TCG, and the table says so. Env: BENCH_RUNS
# (default 20), BENCH_PMU_RUNS (default 5, bench/pmu.sh), BENCH_TESTHOST=1 to
# use the test VM even with /dev/kvm, BENCH_LINUX_RUNS (3, bench/linux.sh),
# BENCH_DISK_RUNS (3), BENCH_DISK_MB (256), BENCH_DISK_RAND (2000, bench/disk.sh),
# BENCH_NET_RUNS (3), BENCH_NET_MB (4 on a nested host, else 256, bench/net.sh),
# BENCH_LXPROF_RUNS (2, bench/linuxprof.sh), BENCH_GPERF_RUNS (3), BENCH_GPERF_WORK (12000, bench/guestperf.sh),
# BENCH_MIGRATE_RUNS (3), BENCH_MIGRATE_SIZES ("256M 1G", bench/migrate.sh), BUILD,
# BENCH_ONLY (names from boot pmu profile snapshot seccomp linux disk net linuxprof guestperf migrate, separated by
# commas or spaces: only those benchmarks; default all).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${BUILD:-build}
build=${build#"$root"/}
runs=${BENCH_RUNS:-20}
case "$runs" in '' | *[!0-9]*) echo "bench: BENCH_RUNS must be a number" >&2; exit 2 ;; esac
[ "$runs" -ge 20 ] || echo "bench: note: BENCH_RUNS=$runs is below the 20 runs the numbers are meant for" >&2

for f in perfvisor bench/spawn bench/min64.elf bench/minbios.bin bench/minmb.elf bench/stats_bench; do
	[ -e "$build/$f" ] || { echo "bench: $build/$f is missing; run 'make bench'" >&2; exit 1; }
done
[ -e "$build/guests/hello.elf" ] || echo "bench: hello guest not built ($build/guests/hello.elf; make guests): it is left out" >&2
[ -e "$build/guests/pmu-bench.elf" ] || { echo "bench: $build/guests/pmu-bench.elf is missing; run 'make bench'" >&2; exit 1; }
[ -e "$build/guests/ring3-compute.elf" ] || { echo "bench: $build/guests/ring3-compute.elf is missing; run 'make bench'" >&2; exit 1; }
[ -e "$build/guests/snap.elf" ] || { echo "bench: $build/guests/snap.elf is missing; run 'make bench'" >&2; exit 1; }
pmu_runs=${BENCH_PMU_RUNS:-5}
case "$pmu_runs" in '' | *[!0-9]* | 0) echo "bench: BENCH_PMU_RUNS must be a positive number" >&2; exit 2 ;; esac
bash scripts/deps.sh bench
# The Linux benchmark's kernel and initramfs, those of the Linux tests (cached).
bash tests/integration/debian-kernel.sh "$build" >/dev/null
bash tests/integration/linux-initramfs.sh "$build" >/dev/null
linux_runs=${BENCH_LINUX_RUNS:-3}
disk_runs=${BENCH_DISK_RUNS:-3}
disk_mb=${BENCH_DISK_MB:-256}
disk_rand=${BENCH_DISK_RAND:-2000}
net_runs=${BENCH_NET_RUNS:-3}
net_mb=${BENCH_NET_MB:-}
qemu=$(command -v qemu-system-x86_64)
lxprof_runs=${BENCH_LXPROF_RUNS:-2}
migrate_runs=${BENCH_MIGRATE_RUNS:-3}
case "$migrate_runs" in '' | *[!0-9]* | 0) echo "bench: BENCH_MIGRATE_RUNS must be a positive number" >&2; exit 2 ;; esac
migrate_sizes=${BENCH_MIGRATE_SIZES:-256M 1G}
only=" $(echo "${BENCH_ONLY:-boot pmu profile snapshot seccomp linux disk net linuxprof guestperf migrate}" | tr ',' ' ') "
for b in $only; do
	case "$b" in boot | pmu | profile | snapshot | seccomp | linux | disk | net | linuxprof | guestperf | migrate) ;;
	*) echo "bench: BENCH_ONLY: unknown benchmark '$b' (boot pmu profile snapshot seccomp linux disk net linuxprof guestperf migrate)" >&2; exit 2 ;; esac
done
# want NAME: BENCH_ONLY names it.
want() { case "$only" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# The guest-perf bench's initramfs (Debian's perf and the project's driver), made here: the test VM has no network.
! want guestperf || bash tests/integration/linux-perfinit.sh "$build" >/dev/null

if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ -z "${BENCH_TESTHOST:-}" ]; then
	status=0
	h="KVM on this machine"
	! want boot || { BUILD=$build BENCH_RUNS=$runs BENCH_HOST="$h" sh bench/boot.sh || status=$?; echo; }
	! want pmu || { BUILD=$build BENCH_PMU_RUNS=$pmu_runs BENCH_HOST="$h" sh bench/pmu.sh || status=1; echo; }
	! want profile || { BUILD=$build BENCH_HOST="$h" sh bench/profile.sh || status=1; echo; }
	! want snapshot || { BUILD=$build BENCH_HOST="$h" sh bench/snapshot.sh || status=1; echo; }
	! want seccomp || { BUILD=$build BENCH_HOST="$h" sh bench/seccomp.sh || status=1; echo; }
	! want linux || { BUILD=$build BENCH_LINUX_RUNS=$linux_runs BENCH_HOST="$h" sh bench/linux.sh || status=1; echo; }
	! want disk || { BUILD=$build BENCH_DISK_RUNS=$disk_runs BENCH_DISK_MB=$disk_mb BENCH_DISK_RAND=$disk_rand \
		BENCH_HOST="$h" sh bench/disk.sh || status=1; echo; }
	! want net || { BUILD=$build BENCH_NET_RUNS=$net_runs BENCH_NET_MB=$net_mb BENCH_HOST="$h" sh bench/net.sh || status=1; echo; }
	! want linuxprof || { BUILD=$build BENCH_LXPROF_RUNS=$lxprof_runs BENCH_HOST="$h" sh bench/linuxprof.sh || status=1; echo; }
	! want guestperf || { BUILD=$build BENCH_HOST="$h" sh bench/guestperf.sh || status=1; echo; }
	! want migrate || { BUILD=$build BENCH_MIGRATE_RUNS=$migrate_runs BENCH_MIGRATE_SIZES="$migrate_sizes" \
		BENCH_HOST="$h" sh bench/migrate.sh || status=1; }
	exit "$status"
else
	echo "bench: no usable /dev/kvm here: running in the test VM (tests/testhost/run.sh), KVM nested in QEMU TCG"
	host="KVM nested in QEMU TCG: absolute numbers are not those of bare metal; read the ratios"
	# QEMU in the test VM needs its firmware too, at the same paths: qboot.rom
	# (the -kernel baselines name it, bench/linux.sh), microvm's default
	# bios-microvm.bin (QEMU 10's Debian package has SeaBIOS's, in
	# /usr/share/seabios, where QEMU also looks) and the -kernel option ROM.
	# Only these: the test VM's root file system is an initramfs in its RAM.
	fw=
	fwdir=$(cd "$(dirname "$qemu")/../share/qemu" 2>/dev/null && pwd || true)
	for f in ${fwdir:+"$fwdir/qboot.rom" "$fwdir/bios-microvm.bin" "$fwdir/linuxboot_dma.bin"} \
		/usr/share/seabios/bios-microvm.bin; do
		[ -e "$f" ] && fw="$fw $f"
	done
	case "$fw" in *qboot.rom*) ;; *) echo "bench: QEMU's microvm firmware qboot.rom not found: its -kernel baselines will fail" >&2 ;; esac
	# The snapshot bench keeps its guest and files in the test VM's RAM; there
	# it measures the 256 MiB guest only (BENCH_SNAP_SIZES): under TCG a copy
	# of a 1 GiB file takes one to two minutes while that guest runs, and its
	# three rounds of snapshot, copy and copy + fsync alone would take ~15.
	# The Linux boot bench's virtio-rng pair boots once (BENCH_LINUX_RNG_RUNS).
	cmds="s=0;"
	! want boot || cmds="$cmds BUILD='$build' BENCH_RUNS=$runs BENCH_HOST='$host' sh bench/boot.sh || s=\$?; echo;"
	! want pmu || cmds="$cmds BUILD='$build' BENCH_PMU_RUNS=$pmu_runs BENCH_HOST='$host' sh bench/pmu.sh || s=1; echo;"
	! want profile || cmds="$cmds BUILD='$build' BENCH_PROF_RUNS=3 BENCH_PROF_ITERS=100000000 BENCH_HOST='$host' sh bench/profile.sh || s=1; echo;"
	! want snapshot || cmds="$cmds BUILD='$build' BENCH_SNAP_KEEP=0 BENCH_SNAP_RUNS=3 BENCH_SNAP_SIZES='${BENCH_SNAP_SIZES:-256M}' BENCH_HOST='$host' sh bench/snapshot.sh || s=1; echo;"
	! want seccomp || cmds="$cmds BUILD='$build' BENCH_SECCOMP_RUNS=4 BENCH_HOST='$host' sh bench/seccomp.sh || s=1; echo;"
	! want linux || cmds="$cmds BUILD='$build' BENCH_LINUX_RUNS=$linux_runs BENCH_LINUX_RNG_RUNS=${BENCH_LINUX_RNG_RUNS:-1} BENCH_HOST='$host' sh bench/linux.sh || s=1; echo;"
	! want disk || cmds="$cmds BUILD='$build' BENCH_DISK_RUNS=$disk_runs BENCH_DISK_MB=$disk_mb BENCH_DISK_RAND=$disk_rand BENCH_HOST='$host' sh bench/disk.sh || s=1; echo;"
	! want net || cmds="$cmds BUILD='$build' BENCH_NET_RUNS=$net_runs BENCH_NET_MB=$net_mb BENCH_HOST='$host' sh bench/net.sh || s=1; echo;"
	! want linuxprof || cmds="$cmds BUILD='$build' BENCH_LXPROF_RUNS=$lxprof_runs BENCH_HOST='$host' sh bench/linuxprof.sh || s=1; echo;"
	! want guestperf || cmds="$cmds BUILD='$build' BENCH_HOST='$host' sh bench/guestperf.sh || s=1; echo;"
	# The migration bench has a source and a destination of up to 1 GiB at once, and a snapshot's
	# 1 GiB memory file in the VM's /tmp (a tmpfs of half its RAM): the 6 GiB below hold them.
	# Under TCG the link moves some 20-30 MiB/s, so a round of its three cases takes about ten
	# minutes: the test VM's time limit grows with BENCH_MIGRATE_RUNS.
	! want migrate || cmds="$cmds BUILD='$build' BENCH_MIGRATE_RUNS=$migrate_runs BENCH_MIGRATE_SIZES='$migrate_sizes' BENCH_HOST='$host' sh bench/migrate.sh || s=1;"
	vm_timeout=2400
	! want migrate || vm_timeout=$((vm_timeout + 900 * migrate_runs))
	# The Linux bench's spawn prints nothing until its three cases have booted
	# BENCH_LINUX_RUNS times each (30 s a boot there): more than the test VM's
	# default 300 s without output, after which it is deemed stuck.
	TESTHOST_IDLE_TIMEOUT=${TESTHOST_IDLE_TIMEOUT:-1200} TESTHOST_MEM=${TESTHOST_MEM:-6144} \
		TESTHOST_TIMEOUT=${TESTHOST_TIMEOUT:-$vm_timeout} \
		TESTHOST_EXTRA="$qemu$fw${TESTHOST_EXTRA:+ $TESTHOST_EXTRA}" \
		bash tests/testhost/run.sh "$cmds exit \$s"
fi
