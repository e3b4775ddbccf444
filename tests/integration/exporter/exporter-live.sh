#!/bin/sh
# SPDX-License-Identifier: MIT
# Prometheus: one perfvisor exporter over a socket directory, VMs coming and going, scraped by
# Debian's prometheus; bad requests; its address in use; its stop.
# cases: exporter-start exporter-vms exporter-prometheus exporter-vm-gone exporter-bad-requests
# cases: exporter-in-use exporter-stop
. "$(dirname "$0")/../lib.sh"

SD=$T/socks
mkdir -p "$SD"

cur=exporter-start; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
"$PV" exporter --listen 127.0.0.1:0 --socket-dir "$SD" >"$T/exporter.out" 2>"$T/exporter.err" </dev/null &
expid=$!
watchdog $expid 900; exwd=$wdpid
i=0; while ! grep -q 'serving http' "$T/exporter.err" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
eport=$(sed -n 's|.*serving http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$T/exporter.err")
[ -n "$eport" ] || bad "the exporter did not say where it listens: $(cat "$T/exporter.err")"
http_get "http://127.0.0.1:$eport/metrics" >"$T/ex-empty.prom" || bad "GET /metrics failed"
grep -q '^perfvisor_exporter_vms 0$' "$T/ex-empty.prom" || bad "an empty socket dir is not 0 VMs"
done_test

# VMs come and go: two appear without a restart, with their names; the text passes promtool.
cur=exporter-vms; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
start_vm exporter-alpha 300 run --kernel "$G/behave.elf" --cmdline "mode=tick" --name alpha --api-socket "$SD/alpha.sock" --timeout 280
alpha=$vmpid; alphawd=$wdpid
start_vm exporter-beta 300 run --kernel "$G/behave.elf" --cmdline "mode=tick period_ms=5" --cpus 2 --name beta --api-socket "$SD/beta.sock" --timeout 280
beta=$vmpid; betawd=$wdpid
wait_sock "$SD/alpha.sock" && wait_sock "$SD/beta.sock" || bad "the VMs' control sockets did not appear"
sleep 1
http_get "http://127.0.0.1:$eport/metrics" >"$T/ex-two.prom" || bad "GET /metrics failed"
grep -q '^perfvisor_exporter_vms 2$' "$T/ex-two.prom" || bad "not 2 VMs"
grep -q "^perfvisor_io_serial_total{vm=\"$alpha\",name=\"alpha\",vcpu=\"0\"} [1-9]" "$T/ex-two.prom" || bad "no alpha io_serial sample"
grep -q "^perfvisor_exits_total{vm=\"$beta\",name=\"beta\",vcpu=\"1\"} " "$T/ex-two.prom" || bad "no beta vCPU 1 sample"
grep -q "^perfvisor_vm_memory_bytes{vm=\"$beta\",name=\"beta\"} 67108864$" "$T/ex-two.prom" || bad "no beta VM record sample"
[ "$(grep -c '^# TYPE perfvisor_exits_total ' "$T/ex-two.prom")" -eq 1 ] || bad "perfvisor_exits_total not one family for both VMs"
promtool check metrics <"$T/ex-two.prom" >"$T/promtool.out" 2>&1 || bad "promtool check metrics: $(head -n 5 "$T/promtool.out" | tr '\n' ' ')"
# stat --prometheus is the same writer: it passes promtool too, and has the name label.
"$PV" stat "$SD/beta.sock" --prometheus >"$T/stat-beta.prom" 2>>"$T/$cur.err" || bad "stat --prometheus failed"
promtool check metrics <"$T/stat-beta.prom" >"$T/promtool2.out" 2>&1 || bad "promtool on stat --prometheus: $(head -n 5 "$T/promtool2.out" | tr '\n' ' ')"
grep -q "^perfvisor_exits_total{vm=\"$beta\",name=\"beta\",vcpu=\"0\"} " "$T/stat-beta.prom" || bad "stat --prometheus lacks the name label"
"$PV" stat $beta --json --fields exits | "$JC" name=beta 2>>"$T/$cur.err" || bad "stat --json lacks the name"
"$PV" api "$SD/beta.sock" '{"cmd":"query"}' | grep -q '"name":"beta"' || bad "query lacks the name"
done_test

# Debian's Prometheus server scrapes the exporter; its HTTP API shows a counter that moved.
cur=exporter-prometheus; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	bad "prometheus and promtool are not installed (scripts/deps.sh build installs package prometheus)"
else
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: perfvisor\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' \
		"$eport" >"$T/prom.yml"
	promtool check config "$T/prom.yml" >/dev/null 2>&1 || bad "promtool check config refuses $T/prom.yml"
	ppid_=""
	for try in 1 2 3 4 5; do
		pport=$((20000 + ($$ * 7 + try * 131) % 20000))
		prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/prom-data" \
			--web.listen-address="127.0.0.1:$pport" --log.level=warn >"$T/prometheus.log" 2>&1 </dev/null &
		ppid_=$!
		i=0; while kill -0 $ppid_ 2>/dev/null && ! timeout 10 promtool query instant "http://127.0.0.1:$pport" 'vector(1)' >/dev/null 2>&1 &&
			[ $i -lt 300 ]; do
			sleep 1; i=$((i + 1))
			[ $((i % 30)) -eq 0 ] && echo "  (waiting for prometheus to answer on 127.0.0.1:$pport: ${i} s)"
		done
		kill -0 $ppid_ 2>/dev/null && break
		ppid_=""
	done
	[ -n "$ppid_" ] || bad "prometheus did not start: $(tail -n 3 "$T/prometheus.log" | tr '\n' ' ')"
	watchdog "${ppid_:-1}" 900; pwd_=$wdpid
	q='max_over_time(perfvisor_io_serial_total{name="beta",vcpu="0"}[5m]) - min_over_time(perfvisor_io_serial_total{name="beta",vcpu="0"}[5m])'
	up=""; moved=""; i=0
	while [ -n "$ppid_" ] && [ $i -lt 300 ]; do
		up=$(prom_query 'up{job="perfvisor"}'); moved=$(prom_query "$q")
		[ "$up" = 1 ] && [ -n "$moved" ] && [ "${moved%%.*}" -gt 0 ] 2>/dev/null && break
		sleep 1; i=$((i + 1))
		[ $((i % 30)) -eq 0 ] && echo "  (waiting for prometheus to scrape a moving counter: ${i} s; up = $up)"
	done
	echo "  (prometheus on 127.0.0.1:$pport: up{job=\"perfvisor\"} = $up; $q = $moved)"
	[ "$up" = 1 ] || bad "prometheus does not see the exporter up"
	[ -n "$moved" ] && [ "${moved%%.*}" -gt 0 ] 2>/dev/null || bad "the counter did not move in prometheus"
	[ -n "$ppid_" ] && { kill $ppid_; wait $ppid_ 2>/dev/null; kill $pwd_ 2>/dev/null; wait $pwd_ 2>/dev/null; }
fi
done_test

# A VM that ends is gone at the next scrape; one killed leaves a stale socket: an error, not a crash.
cur=exporter-vm-gone; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
kill -TERM $alpha; wait $alpha; kill $alphawd 2>/dev/null; wait $alphawd 2>/dev/null
http_get "http://127.0.0.1:$eport/metrics" >"$T/ex-one.prom" || bad "GET /metrics failed"
grep -q '^perfvisor_exporter_vms 1$' "$T/ex-one.prom" || bad "not 1 VM after alpha stopped"
! grep -q 'name="alpha"' "$T/ex-one.prom" || bad "alpha still exported"
grep -q 'name="beta"' "$T/ex-one.prom" || bad "beta not exported"
{ kill -KILL $beta; wait $beta; } 2>/dev/null; kill $betawd 2>/dev/null; wait $betawd 2>/dev/null
[ -S "$SD/beta.sock" ] || bad "no stale socket left by the killed VM (the test needs one)"
http_get "http://127.0.0.1:$eport/metrics" >"$T/ex-stale.prom" || bad "GET /metrics failed"
grep -q '^perfvisor_exporter_vms 0$' "$T/ex-stale.prom" && grep -q '^perfvisor_exporter_errors 1$' "$T/ex-stale.prom" ||
	bad "a stale socket is not 0 VMs and 1 error"
grep -q '^# perfvisor exporter: beta.sock: cannot connect' "$T/ex-stale.prom" || bad "no comment naming the stale socket"
done_test

# Bad requests: another path, another method; the exporter goes on.
cur=exporter-bad-requests; ok=1; st=0; : >"$T/$cur.out"; : >"$T/$cur.err"
http_raw "$eport" /nope >"$T/ex-404.txt"
grep -q '^HTTP/1.[01] 404' "$T/ex-404.txt" && grep -q "no page '/nope' here: the metrics are at /metrics" "$T/ex-404.txt" ||
	bad "GET /nope: $(head -n 1 "$T/ex-404.txt")"
http_raw "$eport" /metrics POST >"$T/ex-405.txt"
grep -q '^HTTP/1.[01] 405' "$T/ex-405.txt" && grep -q 'Allow: GET, HEAD' "$T/ex-405.txt" ||
	bad "POST /metrics: $(head -n 1 "$T/ex-405.txt")"
http_get "http://127.0.0.1:$eport/metrics" | grep -q '^perfvisor_exporter_vms' || bad "the exporter did not survive them"
done_test

# An address in use.
run exporter-in-use 10 "$PV" exporter --listen "127.0.0.1:$eport" --socket-dir "$SD"
expect_status 1; expect_err "cannot listen on 127.0.0.1:$eport: Address already in use"; done_test

cur=exporter-stop; ok=1
kill -TERM $expid; wait $expid; st=$?
kill $exwd 2>/dev/null; wait $exwd 2>/dev/null
expect_status 0
grep -q 'stopped by signal' "$T/exporter.err" || bad "no stop message"
done_test
