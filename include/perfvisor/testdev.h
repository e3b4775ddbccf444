/* SPDX-License-Identifier: MIT */
/*
 * perfvisor test device protocol ("ucall"): the guest fills a struct
 * pv_ucall in its memory and writes its guest-physical address (32 bits,
 * below 4 GiB) to PV_TESTDEV_PORT with one 4-byte OUT. Documented in
 * docs/testing.md.
 */
#ifndef PERFVISOR_TESTDEV_H
#define PERFVISOR_TESTDEV_H

#include <stdint.h>

/*
 * 0x520, not QEMU's fw_cfg ports: fw_cfg owns 0x510-0x511 (and its DMA
 * register 0x514-0x51b), and perfvisor offers fw_cfg there (docs/boot.md).
 * Until December 2026 the test device was at 0x510; guests built for that
 * must be rebuilt.
 */
#define PV_TESTDEV_PORT 0x0520	  /* 4-byte OUT: gpa of a struct pv_ucall */
#define PV_DEBUG_EXIT_PORT 0x00f4 /* QEMU isa-debug-exit: status (v<<1)|1 */

#define PV_UCALL_MAGIC 0x4c4c4143u /* "CALL" */

enum pv_ucall_cmd {
	PV_UCALL_PRINT = 1,  /* text[] goes to the console */
	PV_UCALL_SYNC = 2,   /* line = stage, args[] = values; logged, counted */
	PV_UCALL_ASSERT = 3, /* text[] = expression, file[]:line, args[] = values;
				ends the VM with status PV_STATUS_ASSERT */
	PV_UCALL_DONE = 4,   /* ends the VM; status = exit status (0..255) */
};

/* Exit status perfvisor uses when the guest fails an assertion. */
#define PV_STATUS_ASSERT 3

struct pv_ucall {
	uint32_t magic;	  /* PV_UCALL_MAGIC */
	uint32_t cmd;	  /* enum pv_ucall_cmd */
	uint32_t line;	  /* ASSERT: source line; SYNC: stage */
	uint32_t status;  /* DONE: exit status */
	uint64_t args[4]; /* SYNC/ASSERT values */
	char file[64];	  /* ASSERT: source file, NUL-terminated */
	char text[192];	  /* PRINT text / ASSERT expression, NUL-terminated */
};

_Static_assert(sizeof(struct pv_ucall) == 304, "ucall size");
_Static_assert(__builtin_offsetof(struct pv_ucall, args) == 16, "ucall args");
_Static_assert(__builtin_offsetof(struct pv_ucall, file) == 48, "ucall file");
_Static_assert(__builtin_offsetof(struct pv_ucall, text) == 112, "ucall text");

#endif
