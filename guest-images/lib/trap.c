/* SPDX-License-Identifier: MIT */
/*
 * Exception and interrupt dispatch: installed handlers first, then the
 * runtime's own interrupts, then expected exceptions (rt_catch in ring 0,
 * rt_run_user in ring 3); anything else is reported and ends the VM.
 */
#include "rt_internal.h"

static rt_handler_t rt_handlers[RT_VEC_LAST_STUB + 1];

static const char *const vector_names[32] = {
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM", "#DF", "#CSO", "#TS",
	"#NP", "#SS", "#GP", "#PF", "#15", "#MF", "#AC", "#MC", "#XM", "#VE",  "#CP",
	"#22", "#23", "#24", "#25", "#26", "#27", "#HV", "#VC", "#SX", "#31",
};

const char *rt_vector_name(uint32_t vector)
{
	return vector < 32 ? vector_names[vector] : "INT";
}

void rt_set_handler(uint32_t vector, rt_handler_t fn)
{
	if (vector < ARRAY_SIZE(rt_handlers))
		__atomic_store_n(&rt_handlers[vector], fn, __ATOMIC_RELEASE);
}

static void fill_fault(struct rt_fault *f, const struct rt_regs *r, uint32_t cpu)
{
	if (!f)
		return;
	f->vector = (uint32_t)r->vector;
	f->cpu = cpu;
	f->error_code = r->error_code;
	f->rip = r->rip;
	f->cr2 = r->vector == 14 ? read_cr2() : 0;
	f->rsp = r->rsp;
	f->rflags = r->rflags;
	f->cs = (uint32_t)r->cs;
	f->reserved = 0;
}

static __noreturn void unexpected(const struct rt_regs *r, uint32_t cpu)
{
	uint64_t cr2 = r->vector == 14 ? read_cr2() : 0;
	char text[96];

	printf("EXCEPTION: unexpected %s (vector %lu) on cpu %u in ring %lu: "
	       "error 0x%lx rip 0x%lx rsp 0x%lx cr2 0x%lx\n",
	       rt_vector_name((uint32_t)r->vector), r->vector, cpu, r->cs & 3, r->error_code, r->rip, r->rsp,
	       cr2);
	printf_flush();
	snprintf(text, sizeof(text), "unexpected exception %s on cpu %u at rip 0x%lx",
		 rt_vector_name((uint32_t)r->vector), cpu, r->rip);
	/* file "exception", line = vector; args: error code, CR2. */
	ucall_assert_fail(text, "exception", (uint32_t)r->vector, r->error_code, cr2);
}

/* Called by rt_isr_common (vectors.S) with interrupts off. */
void rt_trap(struct rt_regs *r);
void rt_trap(struct rt_regs *r)
{
	uint32_t v = (uint32_t)r->vector;
	struct rt_cpu *c = rt_this_cpu();
	bool from_user = (r->cs & 3) == 3;

	if (v < ARRAY_SIZE(rt_handlers)) {
		rt_handler_t h = __atomic_load_n(&rt_handlers[v], __ATOMIC_ACQUIRE);

		if (h && h(r))
			return;
	}
	if (v == RT_VEC_TIMER || v == RT_VEC_WAKE) {
		apic_eoi();
		return;
	}
	if (v == RT_VEC_SPURIOUS)
		return;
	if (from_user && c->user_jb) {
		struct rt_jmp *jb = c->user_jb;

		if (v == 6 && r->rip == (uintptr_t)rt_user_return) {
			c->user_ret = r->rax;
			rt_longjmp(jb, 1);
		}
		fill_fault(c->user_fault, r, c->index);
		rt_longjmp(jb, (int)v + 2);
	}
	if (!from_user && v < 32 && c->catch_jb) {
		fill_fault(c->catch_fault, r, c->index);
		rt_longjmp(c->catch_jb, (int)v + 1);
	}
	unexpected(r, c->index);
}

int rt_catch(void (*fn)(void *), void *arg, struct rt_fault *f)
{
	struct rt_jmp jb;
	int v;

	/* No locals live across rt_setjmp: the trap path clobbers registers. */
	rt_this_cpu()->catch_fault = f;
	rt_this_cpu()->catch_jb = &jb;
	v = rt_setjmp(&jb);
	if (v == 0)
		fn(arg);
	rt_this_cpu()->catch_jb = NULL;
	return v ? v - 1 : RT_NO_FAULT;
}
