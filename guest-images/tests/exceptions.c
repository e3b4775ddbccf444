/* SPDX-License-Identifier: MIT */
/*
 * exceptions: raise #DE, #UD, #GP and #PF in ring 0 (rt_catch) and #DE,
 * #BP, #UD, #GP and #PF in ring 3 (rt_run_user), and check vector, error
 * code, RIP and CR2; #GP from privileged instructions in ring 3; execution
 * resumes cleanly after each. No software interrupt except int3 in ring 3,
 * the one that works on every KVM host (tests/guest-check/allow).
 */
#include "guest.h"

#define NONCANONICAL 0x8000000000000000ULL
#define UNMAPPED 0x00007ff000000000ULL /* beyond the identity map */

/*
 * Faulting instructions at known addresses, so the reported RIP can be
 * checked. Each label has a ring-0 and a ring-3 C prototype.
 */
asm(".text\n"
    ".globl ex_ud2_k, ex_ud2_u, ex_hlt_u, ex_cli_u, ex_int3_u, ex_int3_u_after\n"
    "ex_ud2_k:\n"
    "ex_ud2_u:\n"
    "	ud2\n"
    "	ret\n"
    "ex_hlt_u:\n"
    "	hlt\n"
    "	ret\n"
    "ex_cli_u:\n"
    "	cli\n"
    "	ret\n"
    "ex_int3_u:\n"
    "	int3\n"
    "ex_int3_u_after:\n"
    "	ret\n");
void ex_ud2_k(void *arg);
long ex_ud2_u(void *arg);
long ex_hlt_u(void *arg);
long ex_cli_u(void *arg);
long ex_int3_u(void *arg);
extern char ex_int3_u_after[];

static void read_k(void *addr)
{
	(void)*(volatile uint64_t *)addr;
}

static void write_k(void *addr)
{
	*(volatile uint64_t *)addr = 1;
}

static long read_u(void *addr)
{
	return (long)*(volatile uint64_t *)addr;
}

static long write_u(void *addr)
{
	*(volatile uint64_t *)addr = 1;
	return 0;
}

static volatile uint64_t divisor;

static void div_k(void *arg)
{
	(void)arg;
	divisor = 100 / divisor;
}

static long div_u(void *arg)
{
	(void)arg;
	return (long)(100 / divisor);
}

static long add_u(void *arg)
{
	return (long)(uintptr_t)arg + 42;
}

/* One expected exception: vector, and if given, error code / CR2 / RIP. */
struct expect {
	const char *what;
	int vector;
	int64_t error; /* -1: don't check */
	uint64_t cr2;  /* checked for #PF */
	uint64_t rip;  /* 0: don't check */
};

static void check(const struct expect *e, int got, const struct rt_fault *f, bool user)
{
	bool ok = got == e->vector && (f->cs & 3) == (user ? 3u : 0u) && f->cpu == 0;

	if (ok && e->error >= 0)
		ok = f->error_code == (uint64_t)e->error;
	if (ok && e->vector == 14)
		ok = f->cr2 == e->cr2;
	if (ok && e->rip)
		ok = f->rip == e->rip;
	report(ok, "ring %d %s: %s (want %s) error 0x%lx rip 0x%lx cr2 0x%lx", user ? 3 : 0, e->what,
	       got < 0 ? "no exception" : rt_vector_name((uint32_t)got), rt_vector_name((uint32_t)e->vector),
	       f->error_code, f->rip, f->cr2);
}

static void kernel(const char *what, void (*fn)(void *), void *arg, int vector, int64_t error, uint64_t rip)
{
	struct rt_fault f = { 0 };
	struct expect e = { what, vector, error, (uint64_t)(uintptr_t)arg, rip };

	check(&e, rt_catch(fn, arg, &f), &f, false);
}

static void user(const char *what, long (*fn)(void *), void *arg, int vector, int64_t error, uint64_t rip)
{
	struct rt_fault f = { 0 };
	struct expect e = { what, vector, error, (uint64_t)(uintptr_t)arg, rip };

	check(&e, rt_run_user(fn, arg, NULL, &f), &f, true);
}

static volatile uint32_t handler_calls;

static bool count_handler(struct rt_regs *regs)
{
	(void)regs;
	handler_calls++;
	apic_eoi(); /* the vector came from the LAPIC */
	return true;
}

static bool handler_ran(void *arg)
{
	return handler_calls >= (uint32_t)(uintptr_t)arg;
}

/* rt_set_handler: the handler runs and the interrupted code resumes (iretq), for a self-IPI. */
static void installed_handler(void)
{
	bool arrived;

	rt_set_handler(0x22, count_handler);
	apic_self_ipi(0x22);
	arrived = rt_wait_irq(handler_ran, (void *)1, 1000000);
	report(arrived && handler_calls == 1,
	       "rt_set_handler: self-IPI on vector 0x22 handled, execution resumed (%u call)", handler_calls);
	rt_set_handler(0x22, NULL);
}

/* On an AP: its own TSS (RSP0) and catch state must work too. */
static void on_ap(uint32_t cpu, void *arg)
{
	struct rt_fault f = { 0 };
	int v0, v3;

	(void)arg;
	v0 = rt_catch(ex_ud2_k, NULL, &f);
	v3 = rt_run_user(ex_ud2_u, NULL, NULL, &f);
	report(v0 == 6 && v3 == 6 && f.cpu == cpu && (f.cs & 3) == 3,
	       "cpu %u: #UD caught in ring 0 and ring 3", cpu);
}

int main(const struct pv_bootinfo *bi)
{
	void *nc = (void *)NONCANONICAL, *unmapped = (void *)UNMAPPED;
	uint64_t supervisor = PV_IDENTITY_MAP_END - 0x200000; /* mapped, no U bit */
	long ret = 0;
	int v;

	(void)bi;
	/* Ring 0, through rt_catch. */
	kernel("divide by zero", div_k, NULL, 0, -1, 0);
	kernel("ud2", ex_ud2_k, NULL, 6, -1, (uintptr_t)ex_ud2_k);
	kernel("non-canonical load", read_k, nc, 13, 0, 0);
	kernel("unmapped load", read_k, unmapped, 14, 0, 0);
	kernel("unmapped store", write_k, unmapped, 14, PF_ERR_WRITE, 0);
	v = rt_catch(read_k, (void *)&divisor, NULL);
	report(v == RT_NO_FAULT, "ring 0 mapped load: no exception");

	/* Ring 3, through rt_run_user. */
	v = rt_run_user(add_u, (void *)8, &ret, NULL);
	report(v == RT_NO_FAULT && ret == 50, "ring 3 function returns 50 (got %ld)", ret);
	user("divide by zero", div_u, NULL, 0, -1, 0);
	user("ud2", ex_ud2_u, NULL, 6, -1, (uintptr_t)ex_ud2_u);
	user("int3", ex_int3_u, NULL, 3, -1, (uintptr_t)ex_int3_u_after);
	user("non-canonical load", read_u, nc, 13, 0, 0);
	user("hlt (privileged)", ex_hlt_u, NULL, 13, 0, (uintptr_t)ex_hlt_u);
	user("cli (IOPL 0)", ex_cli_u, NULL, 13, 0, (uintptr_t)ex_cli_u);
	user("unmapped load", read_u, unmapped, 14, PF_ERR_USER, 0);
	user("unmapped store", write_u, unmapped, 14, PF_ERR_USER | PF_ERR_WRITE, 0);
	if (rt_mem_size() <= supervisor)
		user("supervisor page load", read_u, (void *)supervisor, 14, PF_ERR_USER | PF_ERR_PRESENT, 0);
	else
		report_skip("ring 3 supervisor page: RAM reaches 0x%lx", supervisor);

	installed_handler();

	if (rt_nr_cpus() > 1) {
		uint32_t started = smp_start_aps(on_ap, NULL);

		report(started == rt_nr_cpus() - 1 && smp_wait_aps(60000) == 0, "APs ran their checks");
	} else {
		report_skip("exceptions on APs: only one CPU");
	}

	/* Still sane after all that: both rings work again. */
	ret = 0;
	v = rt_run_user(add_u, (void *)1, &ret, NULL);
	report(v == RT_NO_FAULT && ret == 43, "ring 3 works after faults (got %ld)", ret);
	v = rt_catch(read_k, (void *)&divisor, NULL);
	report(v == RT_NO_FAULT, "ring 0 works after faults");
	return report_summary();
}
