#!/bin/sh
# SPDX-License-Identifier: MIT
# The statistics region (docs/stats-abi.md): a guest doing exactly K port writes moves vCPU 0's
# exit.io by exactly K (against the same guest without writes); stat --json and --prometheus of it.
# cases: stats-exact-io-0 stats-exact-io-37
. "$(dirname "$0")/../lib.sh"

base=""
for k in 0 37; do
	cur=stats-exact-io-$k; ok=1
	start_vm $cur 120 run --kernel "$G/behave.elf" --cmdline "mode=ports count=$k hold=1" --cpus 2 --timeout 100
	prev=x; v=y; i=0
	# Settled: the same value twice, 0.5 s apart (the guest halts after its writes).
	# (Two failed reads in a row are not "settled": the VMM may still be starting.)
	while { [ "$v" != "$prev" ] || [ -z "$v" ]; } && [ $i -lt 60 ]; do
		prev=$v; sleep 0.5; v=$(io_exits $vmpid); i=$((i + 1))
	done
	case "$v" in ''|*[!0-9]*) bad "no exit.io value read ($v)"; v=0 ;; esac
	if [ $k -eq 0 ]; then base=$v; else
		[ "$v" -eq $((base + k)) ] || bad "exit.io is $v, expected $base + $k"
	fi
	st=0; [ $k -eq 0 ] && echo "  (baseline exit.io of the guest without writes: $v)"
	if [ $k -ne 0 ]; then
		"$PV" stat $vmpid --json >"$T/stat.json" 2>"$T/stat.err" || bad "stat --json failed"
		"$JC" <"$T/stat.json" "pid=$vmpid" vcpus/0/index=0 vcpus/1/index=1 vcpus/0/state=online \
			vm/memory_bytes=67108864 vm/vcpus_online=2 "vcpus/0/unhandled.io=$k" "fields/0/name=*" \
			"vm/host.kind=$("$PV" host --number)" \
			2>>"$T/$cur.err" || bad "stat --json output does not parse or check (see jsoncheck lines)"
		"$PV" stat $vmpid --prometheus >"$T/stat.prom" 2>>"$T/$cur.err" || bad "stat --prometheus failed"
		# Text exposition format: HELP and TYPE before each metric's samples, samples with labels.
		awk -v pid=$vmpid '
			/^# HELP perfvisor_[a-z0-9_]+ / { help[$3] = 1; next }
			/^# TYPE perfvisor_[a-z0-9_]+ (counter|gauge)$/ { type[$3] = 1; next }
			/^perfvisor_[a-z0-9_]+\{vm="[0-9]+"(,vcpu="[0-9]+")?\} [0-9]+(\.[0-9]+)?$/ {
				name = $1; sub(/\{.*/, "", name)
				if (!help[name] || !type[name]) { print "no HELP/TYPE before " name; bad = 1 }
				if ($0 !~ "vm=\"" pid "\"") { print "wrong vm label: " $0; bad = 1 }
				n++; next }
			/^$/ { next }
			{ print "bad line: " $0; bad = 1 }
			END { if (n == 0) { print "no samples"; bad = 1 } exit bad }' "$T/stat.prom" >>"$T/$cur.err" ||
			bad "stat --prometheus output is not the text exposition format (see stderr)"
		grep -q "^perfvisor_exit_io_total{vm=\"$vmpid\",vcpu=\"0\"} $v\$" "$T/stat.prom" || bad "prometheus exit_io sample missing"
		# Times in base units: nanoseconds become seconds, as exact decimals.
		grep -q "^perfvisor_time_kvm_run_seconds_total{vm=\"$vmpid\",vcpu=\"0\"} [0-9]*\.[0-9]\{9\}\$" "$T/stat.prom" ||
			bad "prometheus time_kvm_run_seconds_total sample missing"
	fi
	stop_vm TERM; st=0
	done_test
done
