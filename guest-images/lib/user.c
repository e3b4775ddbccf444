/* SPDX-License-Identifier: MIT */
/*
 * Running C functions in ring 3. rt_user_enter (entry.S) irets to ring 3;
 * the function's return (a ud2 at rt_user_return) or any exception traps
 * back to ring 0, where rt_trap rt_longjmp's to the rt_setjmp below.
 */
#include "rt_internal.h"

static void enter(long (*fn)(void *), void *arg)
{
	struct rt_cpu *c = rt_this_cpu();

	rt_user_enter(fn, arg, (uintptr_t)rt_stacks[c->index].user + RT_USTACK_SIZE,
		      (void *)((uintptr_t)&c->tss + offsetof(struct rt_tss, rsp0)));
}

int rt_run_user(long (*fn)(void *), void *arg, long *ret, struct rt_fault *f)
{
	struct rt_jmp jb;
	int v;

	/* No locals live across rt_setjmp: the trap path clobbers registers. */
	rt_this_cpu()->user_fault = f;
	rt_this_cpu()->user_jb = &jb;
	v = rt_setjmp(&jb);
	if (v == 0)
		enter(fn, arg);
	rt_this_cpu()->user_jb = NULL;
	if (v == 1) {
		if (ret)
			*ret = (long)rt_this_cpu()->user_ret;
		return RT_NO_FAULT;
	}
	return v - 2;
}

long rt_user_call(long (*fn)(void *), void *arg)
{
	struct rt_fault f;
	long ret = 0;
	char text[96];

	if (rt_run_user(fn, arg, &ret, &f) == RT_NO_FAULT)
		return ret;
	printf("EXCEPTION: unexpected %s (vector %u) on cpu %u in ring 3: error 0x%lx rip 0x%lx rsp 0x%lx cr2 0x%lx\n",
	       rt_vector_name(f.vector), f.vector, f.cpu, f.error_code, f.rip, f.rsp, f.cr2);
	snprintf(text, sizeof(text), "unexpected exception %s on cpu %u at rip 0x%lx (ring 3)",
		 rt_vector_name(f.vector), f.cpu, f.rip);
	/* Same report as an unexpected ring-0 exception (trap.c). */
	ucall_assert_fail(text, "exception", f.vector, f.error_code, f.cr2);
}
