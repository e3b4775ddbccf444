/* SPDX-License-Identifier: MIT */
/*
 * ucalls: fill this CPU's struct pv_ucall and write its guest-physical
 * address (identity map: its address, below 4 GiB) to the test device with
 * one 4-byte OUT. The block's text[] is also the printf line buffer, so
 * every ucall sends the pending printf line first.
 */
#include "rt_internal.h"

#define TEXT_MAX (sizeof(((struct pv_ucall *)0)->text) - 1)

void ucall_send(struct rt_cpu *c, uint32_t cmd)
{
	c->ucall.magic = PV_UCALL_MAGIC;
	c->ucall.cmd = cmd;
	outl(PV_TESTDEV_PORT, (uint32_t)(uintptr_t)&c->ucall);
}

void ucall_print(const char *s)
{
	struct rt_cpu *c = rt_this_cpu();

	rt_line_flush(c);
	while (*s) {
		size_t n = strnlen(s, TEXT_MAX);

		memcpy(c->ucall.text, s, n);
		c->ucall.text[n] = '\0';
		ucall_send(c, PV_UCALL_PRINT);
		s += n;
	}
}

void ucall_sync(uint32_t stage, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	struct rt_cpu *cpu = rt_this_cpu();

	rt_line_flush(cpu);
	cpu->ucall.line = stage;
	cpu->ucall.args[0] = a;
	cpu->ucall.args[1] = b;
	cpu->ucall.args[2] = c;
	cpu->ucall.args[3] = d;
	ucall_send(cpu, PV_UCALL_SYNC);
}

/*
 * If the VMM did not stop us (another monitor, e.g. QEMU with
 * isa-debug-exit), try the debug-exit port, then park.
 */
static __noreturn void fallback_exit(uint32_t status)
{
	outl(PV_DEBUG_EXIT_PORT, status);
	rt_park();
}

void ucall_done(uint32_t status)
{
	struct rt_cpu *c = rt_this_cpu();

	rt_line_flush(c);
	c->ucall.status = status;
	ucall_send(c, PV_UCALL_DONE);
	fallback_exit(status);
}

void ucall_assert_fail(const char *expr, const char *file, uint32_t line, uint64_t a, uint64_t b)
{
	struct rt_cpu *c = rt_this_cpu();
	size_t flen = strlen(file);
	size_t fmax = sizeof(c->ucall.file) - 1;

	rt_line_flush(c);
	strlcpy(c->ucall.text, expr, sizeof(c->ucall.text));
	/* Keep the end of a long path: the file name matters most. */
	strlcpy(c->ucall.file, flen > fmax ? file + flen - fmax : file, sizeof(c->ucall.file));
	c->ucall.line = line;
	c->ucall.args[0] = a;
	c->ucall.args[1] = b;
	c->ucall.args[2] = 0;
	c->ucall.args[3] = 0;
	ucall_send(c, PV_UCALL_ASSERT);
	fallback_exit(PV_STATUS_ASSERT);
}
