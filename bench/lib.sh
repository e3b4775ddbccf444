# SPDX-License-Identifier: MIT
# Shared by the bench scripts (POSIX sh; sourced). bench_awk_med is an awk
# function med(a, n): the median of a[1..n] (-1 for none), for a script to
# put in front of its awk program; bench_median FILE prints the median of a
# file's numbers, one per line. bench_host PERFVISOR: the host kind for a
# table's header (and $BENCH_HOST). bench_positive NAME VALUE: exit 2 unless
# VALUE is a positive number. bench_need FILE...: exit 1 if one is missing.
# bench_tmpdir: a temporary directory in $tmp, removed at exit.
# bench_rotate N FN A B C: N rounds of FN MODE LABEL for the three modes, in
# an order that rotates from round to round (A B C; B C A; C A B; ...), LABEL
# the mode and the round's number (off1, stack1, ...).
# bench_netns_ok: true where a bench can make a tap in a network namespace of
# its own: root, /dev/net/tun, busybox ip and busybox unshare -n.
bench_awk_med='
function med(a, n,    i, j, t, b) {
	for (i = 1; i <= n; i++) b[i] = a[i]
	for (i = 2; i <= n; i++) {
		t = b[i]
		for (j = i - 1; j >= 1 && b[j] > t; j--) b[j + 1] = b[j]
		b[j + 1] = t
	}
	if (n == 0) return -1
	return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}'
bench_median() {
	awk "$bench_awk_med"'
{ v[++n] = $1 }
END { print med(v, n) }' "$1"
}
bench_host() {
	echo "$("$1" host 2>/dev/null || echo "unknown host kind")${BENCH_HOST:+; $BENCH_HOST}"
}
bench_positive() {
	case "$2" in '' | *[!0-9]* | 0) echo "bench: $1 must be a positive number" >&2; exit 2 ;; esac
}
bench_need() {
	for f in "$@"; do
		[ -e "$f" ] || { echo "bench: $f is missing; run 'make bench'" >&2; exit 1; }
	done
}
bench_netns_ok() {
	[ "$(id -u)" -eq 0 ] && [ -c /dev/net/tun ] && busybox ip link >/dev/null 2>&1 &&
		busybox unshare --help 2>&1 | grep -q -- '-n'
}
bench_tmpdir() {
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT INT TERM
}
bench_rotate() {
	br_i=1
	while [ "$br_i" -le "$1" ]; do
		case $((br_i % 3)) in
		1) br_o="$3 $4 $5" ;;
		2) br_o="$4 $5 $3" ;;
		0) br_o="$5 $3 $4" ;;
		esac
		for br_m in $br_o; do "$2" "$br_m" "$br_m$br_i"; done
		br_i=$((br_i + 1))
	done
}
