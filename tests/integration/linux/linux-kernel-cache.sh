#!/bin/sh
# SPDX-License-Identifier: MIT
# The kernel cache (--kernel-cache, docs/boot.md): the first boot of Debian's kernel decodes its xz
# payload on the host and keeps the vmlinux in the cache; the second reads it back (and says so) and
# loads the same vmlinux (a guest too small for it is refused as before, the file kept); a damaged cache file is removed and replaced by a fresh decode; a
# directory that cannot be made costs only the cache; --kernel-cache none and --kernel-decompress
# guest leave it alone; a fifth kernel removes the least recently used of four. Everything here
# happens before the guest runs (each VM is stopped by --timeout 1), so it runs on every host,
# kvm_pvm included: the guest's progress does not matter.
# cases: kcache-keep kcache-hit kcache-damaged kcache-unusable kcache-none kcache-evict
. "$(dirname "$0")/../lib.sh"

# boot NAME CACHE [ARGS...]: Debian's kernel, its VM stopped after 1 s (status 124), --verbose;
# a case of several boots keeps the failures of the earlier ones (run starts each with ok=1).
boot() {
	n=$1 c=$2 keep=1
	shift 2
	[ "${cur:-}" = "$n" ] && keep=$ok
	run "$n" 120 "$PV" run --kernel "$LXK/vmlinuz" --memory 256M --timeout 1 --verbose --kernel-cache "$c" "$@"
	[ "$keep" -eq 1 ] || ok=0
	expect_status 124
}
# files DIR: how many cache files DIR holds.
files() { ls "$1" 2>/dev/null | grep -c '^vmlinux-[0-9a-f]*-[0-9a-f]*$'; }

if [ ! -s "$LXK/vmlinuz" ]; then
	for c in kcache-keep kcache-hit kcache-damaged kcache-unusable kcache-none kcache-evict; do
		cur=$c; ok=1; st=0
		bad "missing: $LXK/vmlinuz (tests/integration/debian-kernel.sh makes it: see its lines above)"
		done_test
	done
	exit 0
fi

C=$T/cache/perfvisor
boot kcache-keep "$C"
expect_err 'xz payload decompressed on the host: vmlinux ([0-9]* bytes)'
expect_err "kernel cache: no cache yet ($C: No such file or directory); kept in the kernel cache $C/vmlinux-"
[ "$(files "$C")" -eq 1 ] || bad "the cache holds $(files "$C") files, not 1: $(ls "$C")"
size=$(sed -n 's/.*decompressed on the host: vmlinux (\([0-9]*\) bytes).*/\1/p' "$T/$cur.err")
done_test

boot kcache-hit "$C"
expect_err "kernel cache: read from the kernel cache $C/vmlinux-"
expect_err "xz payload decompressed on the host in an earlier boot: vmlinux ($size bytes), entry 0x[0-9a-f]* (startup_64)"
[ "$(files "$C")" -eq 1 ] || bad "the cache holds $(files "$C") files, not 1"
# A guest too small for this kernel: refused as without the cache, and the cached file stays.
keep=$ok
run kcache-hit 120 "$PV" run --kernel "$LXK/vmlinuz" --memory 32M --timeout 1 --kernel-cache "$C"
[ "$keep" -eq 1 ] || ok=0
expect_status 125
expect_err 'guest memory'
[ "$(files "$C")" -eq 1 ] || bad "the cache holds $(files "$C") files after the small guest, not 1"
done_test

# One byte of the cached vmlinux changed: its checksum no longer matches.
f=$(ls "$C"/vmlinux-* | head -n 1)
printf 'X' | dd of="$f" bs=1 seek=5000000 conv=notrunc 2>/dev/null
boot kcache-damaged "$C"
expect_err "kernel cache: $f was damaged (removed): decoding again; kept in the kernel cache $f"
expect_err "xz payload decompressed on the host: vmlinux ($size bytes)"
boot kcache-damaged "$C"
expect_err "kernel cache: read from the kernel cache $f"
done_test

# Under a regular file no directory can be made: the boot goes on without the cache.
: >"$T/afile"
boot kcache-unusable "$T/afile/cache"
expect_err "kernel cache: no cache yet ($T/afile/cache: Not a directory); not kept: the kernel cache $T/afile/cache: Not a directory"
expect_err "xz payload decompressed on the host: vmlinux ($size bytes)"
done_test

for how in "none" "$C --kernel-decompress guest"; do
	# shellcheck disable=SC2086 # $how is the cache and, for the second, an option
	boot kcache-none $how
	! grep -q 'kernel cache:' "$T/$cur.err" || bad "--kernel-cache $how: $(grep 'kernel cache:' "$T/$cur.err")"
done
done_test

# Four files already (older than the new one): keeping a fifth removes the oldest of them.
D=$T/evict
mkdir -p "$D"
for k in 1 2 3 4; do echo "$k" >"$D/vmlinux-000000000000000$k-1"; sleep 1; done
boot kcache-evict "$D"
expect_err "kept in the kernel cache $D/vmlinux-"
[ "$(files "$D")" -eq 4 ] || bad "the cache holds $(files "$D") files, not 4: $(ls "$D" | tr '\n' ' ')"
[ ! -e "$D/vmlinux-0000000000000001-1" ] || bad "the least recently used file was not the one removed: $(ls "$D" | tr '\n' ' ')"
[ -e "$D/vmlinux-0000000000000002-1" ] || bad "a file other than the least recently used was removed: $(ls "$D" | tr '\n' ' ')"
done_test
