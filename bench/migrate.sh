#!/bin/sh
# SPDX-License-Identifier: MIT
# Live migration benchmark (POSIX sh: it also runs in the busybox test VM). For a guest of 256 MiB
# and one of 1 GiB, 2 vCPUs, its RAM filled (the snap guest's `fill`, so RAM is not holes and zero
# pages), on this machine over a unix socket: `perfvisor migrate --json` of the guest idle (phases
# of 1 s of ring-3 work, 10 port writes each) and of the same guest while each vCPU rewrites
# pages of its own BENCH_MIGRATE_DIRTY MiB at BENCH_MIGRATE_RATE pages per ms (dirty=,
# dirty_rate=; with --stop-copy, so a rate the link cannot keep up with still gives numbers, and
# the table says whether the rounds converged); against snapshot + restore of the same idle guest
# through a file (perfvisor snapshot --stop, then perfvisor run --restore with its defaults: the
# memory file mapped, its checksum checked). Per case: the guest's pause (migrate's downtime_ns:
# from the pause to the destination's word that the guest runs there; for the baseline, the pause
# perfvisor snapshot prints plus the restore's time to vCPU 0's first KVM_RUN, --verbose), the
# whole migration (total_ns), its rounds and the bytes sent against guest RAM; medians of
# BENCH_MIGRATE_RUNS rounds, the three cases in an order that rotates from round to round; ratios
# against the baseline of the same run. A migration counts only if perfvisor migrate exits 0 with
# "ok":true, the source exits 0 and the destination's guest prints a new phase; anything else is
# a FAILED case in the table (with the reason after it) and the bench exits 1.
# Every perfvisor runs under its own --timeout and `timeout -s KILL`.
# Env: BUILD, BENCH_MIGRATE_RUNS (3), BENCH_MIGRATE_SIZES ("256M 1G"), BENCH_MIGRATE_RATE (20 pages
# per ms per vCPU), BENCH_MIGRATE_DIRTY (64 MiB per vCPU), BENCH_MIGRATE_MAX_DOWNTIME (20, ms:
# migrate --max-downtime), BENCH_MIGRATE_TIMEOUT (600, s: migrate --timeout, and each wait),
# BENCH_MIGRATE_DIR (/var/tmp, else /tmp: the sockets and the snapshot), BENCH_HOST.
set -eu
. "$(dirname "$0")/lib.sh"

build=${BUILD:-build}
runs=${BENCH_MIGRATE_RUNS:-3}
sizes=${BENCH_MIGRATE_SIZES:-256M 1G}
rate=${BENCH_MIGRATE_RATE:-20}
dirty=${BENCH_MIGRATE_DIRTY:-64}
maxdown=${BENCH_MIGRATE_MAX_DOWNTIME:-20}
mt=${BENCH_MIGRATE_TIMEOUT:-600}
host=$(bench_host "$build/perfvisor")
pv=$build/perfvisor
guest=$build/guests/snap.elf
bench_positive BENCH_MIGRATE_RUNS "$runs"
bench_positive BENCH_MIGRATE_RATE "$rate"
bench_positive BENCH_MIGRATE_DIRTY "$dirty"
bench_positive BENCH_MIGRATE_MAX_DOWNTIME "$maxdown"
bench_positive BENCH_MIGRATE_TIMEOUT "$mt"
bench_need "$pv" "$guest"
# A VM lives at most through its boot, one migration and the checks after it.
vmt=$((mt * 2 + 120))
tmp=$(mktemp -d "${BENCH_MIGRATE_DIR:-/var/tmp}/pvmig.XXXXXX" 2>/dev/null || mktemp -d)
pids=
# The VMs this bench started, by their PIDs: TERM (a clean stop), up to 10 s, then KILL.
stop_all() {
	[ -n "$pids" ] || return 0
	for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
	sa_i=0
	while [ "$sa_i" -lt 50 ]; do
		sa_live=
		for p in $pids; do kill -0 "$p" 2>/dev/null && sa_live=1; done
		[ -n "$sa_live" ] || break
		sleep 0.2
		sa_i=$((sa_i + 1))
	done
	for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
	pids=
}
trap 'stop_all; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

guest_cmdline="fill phases=1000000 work_ms=1000 k=10"

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN (1 if it does not in time).
wait_for() {
	wf_i=0
	while ! grep -q -- "$2" "$1" 2>/dev/null; do
		[ "$wf_i" -ge $(($3 * 5)) ] && return 1
		sleep 0.2
		wf_i=$((wf_i + 1))
	done
}
# wait_exit PID SECONDS: the process's exit status once it ends; if it has not ended in time,
# stop it (TERM, then KILL) and return 255.
wait_exit() {
	we_i=0
	while kill -0 "$1" 2>/dev/null && [ "$we_i" -lt $(($2 * 5)) ]; do
		sleep 0.2
		we_i=$((we_i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		kill -TERM "$1" 2>/dev/null || true
		sleep 2
		kill -KILL "$1" 2>/dev/null || true
		wait "$1" 2>/dev/null || true
		return 255
	fi
	we_st=0
	wait "$1" || we_st=$?
	return "$we_st"
}
# stop_vm PID: a clean stop (SIGTERM), bounded; the VM was only to show it runs.
stop_vm() {
	kill -TERM "$1" 2>/dev/null || true
	wait_exit "$1" 30 || true
}
# start_src SIZE CMDLINE: the source VM (its PID in $spid), serving $tmp/vm.sock.
start_src() {
	rm -f "$tmp/vm.sock" "$tmp/src.out" "$tmp/src.err"
	timeout -s KILL $((vmt + 30)) "$pv" run --kernel "$guest" --cpus 2 --memory "$1" --cmdline "$2" \
		--api-socket "$tmp/vm.sock" --console "$tmp/src.out" --timeout "$vmt" 2>"$tmp/src.err" &
	spid=$!
	pids="$pids $spid"
}
# The guest of the source has started its phases (its RAM filled), or why not.
src_ready() {
	wait_for "$tmp/src.out" 'phase 1/' "$mt" && return 0
	why="the guest never started its phases (src: $(tail -n 2 "$tmp/src.err" | tr '\n' ' '))"
	return 1
}
# fail SIZE CASE RUN: record the failure ($why) and print it with the logs' ends.
fail() {
	printf 'fail\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$why" >>"$tmp/results"
	echo "bench: migrate: $1 $2 run $3 FAILED: $why" >&2
	for f in mig.err src.err src.out dst.err dst.out snap.out rst.err rst.out; do
		[ -s "$tmp/$f" ] || continue
		echo "  --- $f (last lines):" >&2
		tail -n 4 "$tmp/$f" | sed 's/^/  /' >&2
	done
	stop_all
}
# no_guest_failure FILE: the guest reported no failed check (a FAIL line) in FILE.
no_guest_failure() {
	! grep -q '^FAIL' "$1" 2>/dev/null
}

# json_fields FILE: migrate --json's reply as "downtime_ms total_ms bytes memory_bytes rounds
# converged": rounds includes the paused one; converged is 1 when the rounds while the guest ran
# ended within --max-downtime by migrate's own estimate (vmm/migrate.c: the last running round's
# dirty pages at the rate of the last round of at least 1 MiB), 0 when --stop-copy paused anyway.
json_fields() {
	awk -v maxdown_ns="$((maxdown * 1000000))" '
	function num(s, k,    t) {
		if (!match(s, "\"" k "\":[0-9]+")) return -1
		t = substr(s, RSTART, RLENGTH); sub(/.*:/, "", t); return t + 0
	}
	{
		j = j $0
	}
	END {
		r = j; sub(/.*"rounds":\[/, "", r)
		top = j; sub(/"rounds":\[.*/, "", top)
		n = split(r, e, "}")
		rounds = 0; rate = 0; dirty = 0
		for (i = 1; i <= n; i++) {
			if (e[i] !~ /"paused"/) continue
			rounds++
			if (e[i] ~ /"paused":true/) continue
			b = num(e[i], "bytes"); ns = num(e[i], "ns"); dirty = num(e[i], "dirty")
			if (b >= 1048576 && ns > 0) rate = b * 1000000 / ns
		}
		left = rate > 0 ? dirty * 4096 * 1000000 / rate : dirty * 1000
		printf "%.3f %.3f %d %d %d %d\n", num(top, "downtime_ns") / 1e6, num(top, "total_ns") / 1e6, \
			num(top, "bytes"), num(top, "memory_bytes"), rounds, (left <= maxdown_ns + 0 ? 1 : 0)
	}' "$1"
}

# one_case MODE LABEL (bench_rotate): MODE snap, idle or dirty; LABEL ends with the round's number.
one_case() {
	m=$1
	r=${2#"$1"}
	why=
	stop_all
	rm -rf "$tmp/snap"
	rm -f "$tmp"/*.out "$tmp"/*.err "$tmp"/*.json "$tmp"/*.sock
	case "$m" in
	snap)
		start_src "$size" "$guest_cmdline"
		src_ready || { fail "$size" "$m" "$r"; return 0; }
		st=0
		timeout -s KILL $((mt + 60)) "$pv" snapshot "$tmp/vm.sock" --output "$tmp/snap" --stop \
			>"$tmp/snap.out" 2>&1 || st=$?
		paused=$(sed -n 's/.*the guest was paused \([0-9.]*\) ms.*/\1/p' "$tmp/snap.out")
		if [ "$st" -ne 0 ] || [ -z "$paused" ]; then
			why="perfvisor snapshot --stop exited $st: $(tail -n 1 "$tmp/snap.out")"
			fail "$size" "$m" "$r"; return 0
		fi
		st=0; wait_exit "$spid" 60 || st=$?
		[ "$st" -eq 0 ] || { why="the snapshotted VM exited $st, not 0"; fail "$size" "$m" "$r"; return 0; }
		mib=$(du -m "$tmp/snap/memory" | cut -f1)
		timeout -s KILL $((vmt + 30)) "$pv" run --restore "$tmp/snap" --verbose --console "$tmp/rst.out" \
			--timeout "$vmt" 2>"$tmp/rst.err" &
		rpid=$!
		pids="$pids $rpid"
		if ! wait_for "$tmp/rst.err" 'first KVM_RUN ' "$mt" || ! wait_for "$tmp/rst.out" 'phase [0-9]*/' 120; then
			why="the restored VM never ran its guest"
			fail "$size" "$m" "$r"; return 0
		fi
		restore_us=$(sed -n 's/.*first KVM_RUN \([0-9]*\) us.*/\1/p' "$tmp/rst.err" | head -n 1)
		stop_vm "$rpid"
		no_guest_failure "$tmp/rst.out" && no_guest_failure "$tmp/src.out" ||
			{ why="the guest reported a failed check"; fail "$size" "$m" "$r"; return 0; }
		printf 'snap\t%s\t%s\t%s\t%s\t%s\n' "$size" "$r" "$paused" "$restore_us" "$mib" >>"$tmp/results"
		echo "bench: migrate: $size snapshot + restore, round $r: the snapshot paused the guest $paused ms," \
			"the restore ran it after $((restore_us / 1000)) ms ($mib MiB file)"
		;;
	idle | dirty)
		cmd=$guest_cmdline
		stopcopy=
		if [ "$m" = dirty ]; then
			cmd="$cmd dirty=$dirty dirty_rate=$rate"
			stopcopy=--stop-copy
		fi
		timeout -s KILL $((vmt + 30)) "$pv" run --incoming "unix:$tmp/in.sock" --incoming-timeout "$vmt" \
			--timeout "$vmt" --verbose --console "$tmp/dst.out" 2>"$tmp/dst.err" &
		dpid=$!
		pids="$pids $dpid"
		start_src "$size" "$cmd"
		if ! wait_for "$tmp/dst.err" 'waiting for a migration on' 60; then
			why="the destination never listened"
			fail "$size" "$m" "$r"; return 0
		fi
		src_ready || { fail "$size" "$m" "$r"; return 0; }
		st=0
		timeout -s KILL $((mt + 60)) "$pv" migrate "$tmp/vm.sock" --to "unix:$tmp/in.sock" \
			--max-downtime "${maxdown}ms" --timeout "${mt}s" $stopcopy --json >"$tmp/mig.json" 2>"$tmp/mig.err" || st=$?
		if [ "$st" -ne 0 ] || ! grep -q '"ok":true' "$tmp/mig.json"; then
			why="perfvisor migrate exited $st: $(tail -n 1 "$tmp/mig.err")"
			fail "$size" "$m" "$r"; return 0
		fi
		st=0; wait_exit "$spid" 60 || st=$?
		[ "$st" -eq 0 ] || { why="the source exited $st after the migration, not 0"; fail "$size" "$m" "$r"; return 0; }
		if ! wait_for "$tmp/dst.out" 'phase [0-9]*/' 120; then
			why="the destination's guest printed no phase after the migration"
			fail "$size" "$m" "$r"; return 0
		fi
		stop_vm "$dpid"
		no_guest_failure "$tmp/dst.out" && no_guest_failure "$tmp/src.out" ||
			{ why="the guest reported a failed check"; fail "$size" "$m" "$r"; return 0; }
		# shellcheck disable=SC2046 # six numbers, split on purpose
		set -- $(json_fields "$tmp/mig.json")
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$m" "$size" "$r" "$1" "$2" "$3" "$4" "$5" "$6" >>"$tmp/results"
		awk -v s="$size" -v m="$m" -v r="$r" -v d="$1" -v t="$2" -v b="$3" -v ram="$4" -v n="$5" -v c="$6" 'BEGIN {
			printf "bench: migrate: %s %s, round %s: paused %.1f ms, took %.1f ms, %d rounds, %.2f of RAM sent%s\n", s, m, r,
				d, t, n, (ram > 0 ? b / ram : 0), (c == 1 ? "" : ", did not converge (--stop-copy)") }'
		;;
	esac
	pids=
}

echo "bench: migrate: $runs rounds for each of $sizes: snapshot + restore, migrate idle, migrate while each vCPU dirties $rate pages/ms of $dirty MiB ..."
: >"$tmp/results"
for size in $sizes; do
	bench_rotate "$runs" one_case snap idle dirty
done

echo
status=0
grep -q '^fail' "$tmp/results" && status=1
awk -F '\t' -v host="$host" -v runs="$runs" -v rate="$rate" -v dirty="$dirty" -v maxdown="$maxdown" \
	-v sizes="$sizes" "$bench_awk_med"'
	$1 == "fail" { kk = $2 SUBSEP $3; nf[kk]++; if (!(kk in why)) why[kk] = $5; next }
	$1 == "snap" {
		k = $2 SUBSEP "snap"; n = ++ok[k]
		sp[$2, n] = $4 + 0; rs[$2, n] = $5 / 1000; dt[k, n] = $4 + $5 / 1000; tt[k, n] = dt[k, n]
		sent[k, n] = $6 * 1048576
		next
	}
	{
		k = $2 SUBSEP $1; n = ++ok[k]
		dt[k, n] = $4 + 0; tt[k, n] = $5 + 0; sent[k, n] = $6 / $7; rd[k, n] = $8 + 0; cv[k] += $9
	}
	function col(a, k,    i, b) { for (i = 1; i <= ok[k]; i++) b[i] = a[k, i]; return med(b, ok[k]) }
	function ram(s) { return s ~ /G$/ ? s * 1073741824 : s * 1048576 }
	function row(s, m, label,    k, d, t, bd, okr, tgt, sr) {
		k = s SUBSEP m
		okr = (ok[k] + 0) "/" (ok[k] + nf[s, m])
		if (nf[s, m]) okr = okr " FAILED"
		if (!ok[k]) {
			printf "%-42s %-10s %10s\n", label, okr, "FAILED"
			return
		}
		d = col(dt, k); t = col(tt, k)
		bd = base[s]
		sr = m == "snap" ? col(sent, k) / ram(s) : col(sent, k)
		tgt = "-"
		if (m == "idle" && s == "256M") tgt = "<= " maxdown " ms: " (d <= maxdown + 0 ? "met" : "MISSED")
		if (m == "dirty") tgt = "converged " cv[k] "/" ok[k] (cv[k] < ok[k] ? " (rest: --stop-copy)" : "")
		printf "%-42s %-10s %10.1f %7s %10.1f %7s %6s %8.2f   %s\n", label, okr, d, \
			(bd > 0 ? sprintf("%.2f", d / bd) : "-"), t, (bd > 0 ? sprintf("%.2f", t / bd) : "-"), \
			(m == "snap" ? "-" : sprintf("%.0f", col(rd, k))), sr, (m == "snap" ? "1.00 (baseline)" : tgt)
	}
	END {
		ns = split(sizes, sz, " ")
		for (i = 1; i <= ns; i++) { k = sz[i] SUBSEP "snap"; base[sz[i]] = ok[k] ? col(dt, k) : 0 }
		printf "perfvisor bench — live migration over unix: on this machine (%s)\n", host
		printf "%-42s %-10s %10s %7s %10s %7s %6s %8s   %s\n", "case", "ok runs", "pause ms", "ratio", \
			"total ms", "ratio", "rounds", "sent/RAM", "target"
		for (i = 1; i <= ns; i++) {
			s = sz[i]
			row(s, "snap", s ": snapshot --stop + restore (a file)")
			row(s, "idle", s ": migrate, idle")
			row(s, "dirty", s ": migrate, dirtying " rate " pages/ms/vCPU")
		}
		for (i = 1; i <= ns; i++) {
			s = sz[i]; k = s SUBSEP "snap"
			if (!ok[k]) continue
			for (j = 1; j <= ok[k]; j++) { a[j] = sp[s, j]; b[j] = rs[s, j] }
			printf "%s baseline: the snapshot paused the guest %.1f ms, the restore ran it %.1f ms after it began (medians)\n", \
				s, med(a, ok[k]), med(b, ok[k])
		}
		printf "each row: median of the runs that worked (of %d); a guest of that size, 2 vCPUs, its RAM filled, phases of 1 s.\n", runs
		printf "pause: migrate'"'"'s downtime (from the pause to the destination'"'"'s word that the guest runs there); baseline:\n"
		printf "the pause perfvisor snapshot --stop prints + the restore'"'"'s start to vCPU 0'"'"'s first KVM_RUN (map, checked; the\n"
		printf "new process'"'"'s exec not included). total: the whole migration; baseline: its pause (the guest is stopped\n"
		printf "throughout). rounds: of memory, the paused one included. sent/RAM: bytes on the socket (the file'"'"'s, for the\n"
		printf "baseline) against guest RAM. dirtying: each vCPU rewrites a page of its %d MiB every 1/%d ms, migrated\n", dirty, rate
		printf "with --stop-copy; converged: the rounds got within --max-downtime %d ms before the pause.\n", maxdown
		for (w in why) {
			split(w, p, SUBSEP)
			printf "FAILED: %s %s (%d of %d runs), e.g.: %s\n", p[1], p[2], nf[w], runs, why[w]
		}
	}' "$tmp/results"
exit "$status"
