#!/bin/sh
# SPDX-License-Identifier: MIT
# Bad --disk options: one clear line before the guest starts. The option's syntax gives exit
# status 2; an image that cannot be used (missing, a directory, not a file or block device, no
# permission, too small) gives 125.
# cases: disk-no-path disk-unknown-key disk-bad-readonly disk-too-many disk-missing disk-directory disk-not-file disk-no-permission disk-empty
. "$(dirname "$0")/../lib.sh"

run disk-no-path 10 "$PV" run --kernel "$G/hello.elf" --disk readonly=on
expect_status 2; expect_err '--disk needs path=FILE'; done_test
run disk-unknown-key 10 "$PV" run --kernel "$G/hello.elf" --disk path=x.img,cache=none
expect_status 2; expect_err "--disk: unknown key 'cache'"; done_test
run disk-bad-readonly 10 "$PV" run --kernel "$G/hello.elf" --disk path=x.img,readonly=yes
expect_status 2; expect_err "--disk: readonly must be on or off (got 'yes')"; done_test
run disk-too-many 10 "$PV" run --kernel "$G/hello.elf" --disk path=1 --disk path=2 --disk path=3 --disk path=4 \
	--disk path=5 --disk path=6 --disk path=7 --disk path=8 --disk path=9
expect_status 2; expect_err 'at most 8 --disk options'; done_test
run disk-missing 30 "$PV" run --kernel "$G/hello.elf" --disk path="$T/nonexistent.img"
expect_status 125; expect_err "--disk path=$T/nonexistent.img: no such file"; done_test
run disk-directory 30 "$PV" run --kernel "$G/hello.elf" --disk path="$T"
expect_status 125; expect_err "--disk path=$T: is a directory"; done_test
run disk-not-file 30 "$PV" run --kernel "$G/hello.elf" --disk path=/dev/null
expect_status 125; expect_err '--disk path=/dev/null: is not a regular file or a block device'; done_test
dd if=/dev/zero of="$T/noperm.img" bs=512 count=8 2>/dev/null; chmod 0400 "$T/noperm.img"
if [ "$(id -u)" -ne 0 ]; then
	run disk-no-permission 30 "$PV" run --kernel "$G/hello.elf" --disk path="$T/noperm.img"
	expect_status 125; expect_err 'no permission to open it for writing (readonly=on opens it read-only)'
else
	# Root opens any file: the image (root's, 0400) is given to perfvisor run as nobody.
	cur=disk-no-permission; ok=1
	if as_nobody $cur "timeout 60 $PV run --kernel $G/hello.elf --disk path=$T/noperm.img --timeout 30"; then
		expect_status 125; expect_err 'no permission to open it for writing (readonly=on opens it read-only)'
		expect_no_out 'Hello'
	else
		bad "no user nobody"
	fi
fi
done_test
: >"$T/empty.img"
run disk-empty 30 "$PV" run --kernel "$G/hello.elf" --disk path="$T/empty.img"
expect_status 125; expect_err 'holds no whole 512-byte sector'; done_test
