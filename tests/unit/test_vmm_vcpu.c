// SPDX-License-Identifier: MIT
/*
 * Unit tests for the vCPU loop (vmm/vcpu.c) with injected exits and no
 * KVM, as Firecracker tests its run_emulation: a fake KVM_RUN plays a
 * script of exits into a kvm_run buffer. Each exit's outcome (handled,
 * interrupted, stop with its status and reason), the bus dispatch and its
 * counts in the real statistics region, every stop path, and the loop's
 * states: running, paused (parked, park work on its own thread, the
 * pending exit completed first, then resumed) and stopping.
 */
#include "vmm/vcpu.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PORT 0x100
#define MMIO 0xd0000000ULL
#define MSR 0x4b564e00u

/* ---- a machine of one vCPU, one fake device in each bus space ------------------------- */

struct fake_dev {
	unsigned writes, reads;
	uint64_t last;	  /* the last value written */
	uint64_t log[16]; /* the first values written, in order */
};

static int fake_access(void *opaque, struct bus_access *a)
{
	struct fake_dev *d = opaque;

	if (a->is_write) {
		d->writes++;
		d->last = 0;
		memcpy(&d->last, a->data, a->len < 8 ? a->len : 8);
		if (d->writes <= 16)
			d->log[d->writes - 1] = d->last;
	} else {
		d->reads++;
		memset(a->data, 0x5a, a->len);
	}
	return 0;
}

/* One scripted return of KVM_RUN: the exit it leaves in kvm_run, or an error. */
struct step {
	uint32_t reason;
	int err; /* non-zero: KVM_RUN fails with this errno */
};

static struct {
	struct vmctl ctl;
	struct bus bus;
	struct vm_stats *stats;
	struct vcpu_env env;
	struct vcpu v;
	struct fake_dev pio, mmio, msr;
	struct kvm_run *run;
	/* the script */
	const struct step *steps;
	unsigned nr_steps, next, calls, completions;
	bool endless_io; /* after the script: port writes forever, until immediate_exit */
} m;

static void io_exit(struct kvm_run *run, uint16_t port, bool out, uint32_t count)
{
	run->io.direction = out ? KVM_EXIT_IO_OUT : KVM_EXIT_IO_IN;
	run->io.size = 1;
	run->io.port = port;
	run->io.count = count;
	run->io.data_offset = 1024;
	memset((uint8_t *)run + 1024, 0x11, 16);
}

static int fake_run(struct vcpu *v)
{
	const struct step *s;

	m.calls++;
	if (__atomic_load_n(&v->run->immediate_exit, __ATOMIC_SEQ_CST)) {
		m.completions++; /* as KVM: completes a pending I/O, runs no guest code */
		errno = EINTR;
		return -1;
	}
	if (m.next >= m.nr_steps) {
		cr_assert(m.endless_io, "KVM_RUN called %u times, the script has %u steps", m.calls,
			  m.nr_steps);
		usleep(100);
		v->run->exit_reason = KVM_EXIT_IO;
		io_exit(v->run, PORT, true, 1);
		return 0;
	}
	s = &m.steps[m.next++];
	if (s->err) {
		errno = s->err;
		return -1;
	}
	v->run->exit_reason = s->reason;
	switch (s->reason) {
	case KVM_EXIT_IO:
		io_exit(v->run, PORT, true, 1);
		break;
	case KVM_EXIT_MMIO:
		v->run->mmio.phys_addr = MMIO;
		v->run->mmio.len = 4;
		v->run->mmio.is_write = 0;
		break;
	default:
		break;
	}
	return 0;
}

static uint64_t fake_rip = 0x1234;

static int fake_get_regs(struct vcpu *v, struct kvm_regs *regs)
{
	(void)v;
	memset(regs, 0, sizeof(*regs));
	regs->rip = fake_rip;
	return 0;
}

static const struct vcpu_ops fake_ops = { fake_run, fake_get_regs };

static void setup(void)
{
	struct errbuf err;
	int fd = -1;

	memset(&m, 0, sizeof(m));
	cr_assert_eq(vmctl_init(&m.ctl, 1, &err), 0, "%s", err.msg);
	bus_init(&m.bus);
	cr_assert_eq(bus_register(&m.bus, BUS_PIO, PORT, 4, fake_access, &m.pio, "fake", &err), 0);
	cr_assert_eq(bus_register(&m.bus, BUS_MMIO, MMIO, 4096, fake_access, &m.mmio, "fake", &err), 0);
	cr_assert_eq(bus_register(&m.bus, BUS_MSR, MSR, 16, fake_access, &m.msr, "fake", &err), 0);
	bus_freeze(&m.bus);
	cr_assert_eq(vm_stats_create(&m.stats,
				     &(struct vm_stats_config){ 1, "", &m.bus, &fd, 64 << 20, { 0, 0 } },
				     &err),
		     0, "%s", err.msg);
	m.env = (struct vcpu_env){ .ctl = &m.ctl, .bus = &m.bus, .stats = m.stats };
	for (int s = 0; s < BUS_NR_SPACES; s++)
		m.env.unhandled_rl[s] = (struct ratelimit)RATELIMIT_INIT(1000000000ULL, 10);
	m.run = calloc(1, 4096);
	cr_assert(m.run);
	m.v = (struct vcpu){ .index = 0, .fd = -1, .run = m.run, .env = &m.env, .ops = &fake_ops };
	vmctl_attach(&m.ctl, 0, m.run, &m.v);
	vm_stats_vcpu_online(m.stats, 0);
}

static void teardown(void)
{
	vm_stats_destroy(m.stats);
	bus_fini(&m.bus);
	vmctl_fini(&m.ctl);
	free(m.run);
}

/* vCPU 0's statistics field `name`. */
static uint64_t stat(const char *name)
{
	struct stats_region *r = vm_stats_region(m.stats);

	for (unsigned i = 0; i < sb_nr_fields(r); i++) {
		struct sb_field f;
		const struct pv_stats_desc *d = sb_field_at(r, i, &f);

		if (d->record == PV_STATS_RECORD_VCPU && !strcmp(d->name, name))
			return sb_get(r, 0, f);
	}
	cr_assert_fail("no field %s", name);
	return 0;
}

TestSuite(vcpu, .init = setup, .fini = teardown);

/* ---- one exit at a time --------------------------------------------------------------- */

Test(vcpu, port_write_goes_to_its_device)
{
	struct vcpu_stop stop;

	m.run->exit_reason = KVM_EXIT_IO;
	io_exit(m.run, PORT + 2, true, 3); /* rep outsb: three items */
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.pio.writes, 3);
	cr_assert_eq(m.pio.last, 0x11);
	cr_assert_eq(stat("io.fake"), 3, "each item counted against its device");
	cr_assert_eq(stat("unhandled.io"), 0);
}

/* ---- the coalesced-PIO ring ---------------------------------------------------------- */

#define RING_MAX ((4096 - sizeof(struct kvm_coalesced_mmio_ring)) / sizeof(struct kvm_coalesced_mmio))

/* A ring page in m's machine: entries `first`..`last` (indices mod RING_MAX) hold port writes of `base`+i. */
static struct kvm_coalesced_mmio_ring *ring_with(struct pio_ring *r, uint32_t first, uint32_t last,
						 uint8_t base)
{
	struct kvm_coalesced_mmio_ring *ring = calloc(1, 4096);

	cr_assert(ring);
	for (uint32_t i = first, k = 0; i != last; i = (i + 1) % RING_MAX, k++)
		ring->coalesced_mmio[i] = (struct kvm_coalesced_mmio){
			.phys_addr = PORT, .len = 1, .pio = 1, .data = { (uint8_t)(base + k) }
		};
	ring->first = first;
	ring->last = last;
	*r = (struct pio_ring){ .ring = ring, .bus = &m.bus };
	pthread_mutex_init(&r->lock, NULL);
	m.env.pio_ring = r;
	return ring;
}

Test(vcpu, coalesced_writes_are_served_in_order_before_the_exit)
{
	static const struct step steps[] = { { KVM_EXIT_IO, 0 } };
	struct pio_ring r;
	struct kvm_coalesced_mmio_ring *ring = ring_with(&r, 0, 5, 1);
	struct vcpu_stop stop;

	m.steps = steps;
	m.nr_steps = 1;
	cr_assert_eq(vcpu_run_once(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.pio.writes, 6, "five from the ring, then the exit's");
	for (unsigned i = 0; i < 5; i++)
		cr_assert_eq(m.pio.log[i], 1 + i, "ring write %u out of order", i);
	cr_assert_eq(m.pio.log[5], 0x11, "the exit's write comes after the ring's");
	cr_assert_eq(ring->first, 5, "the ring is given back");
	cr_assert_eq(r.served, 5);
	cr_assert_eq(stat("io.fake"), 1, "coalesced writes are not exits");
	cr_assert_eq(stat("exit.io"), 1);
	free(ring);
}

Test(vcpu, coalesced_ring_wraps_and_skips_mmio_entries)
{
	struct pio_ring r;
	struct kvm_coalesced_mmio_ring *ring = ring_with(&r, RING_MAX - 2, 2, 10);

	ring->coalesced_mmio[RING_MAX - 1].pio = 0; /* an MMIO entry: no port device serves it */
	pio_ring_drain(&r);
	cr_assert_eq(m.pio.writes, 3);
	cr_assert_eq(m.pio.log[0], 10);
	cr_assert_eq(m.pio.log[1], 12, "the MMIO entry (11) is skipped");
	cr_assert_eq(m.pio.log[2], 13);
	cr_assert_eq(ring->first, 2, "first wraps to meet last");
	cr_assert_eq(r.served, 4);
	pio_ring_drain(&r); /* empty now */
	cr_assert_eq(m.pio.writes, 3);
	pio_ring_drain(NULL); /* no ring */
	free(ring);
}

Test(vcpu, unhandled_port_read_is_all_ones_and_counted)
{
	struct vcpu_stop stop;
	uint8_t *data = (uint8_t *)m.run + 1024;

	m.run->exit_reason = KVM_EXIT_IO;
	io_exit(m.run, 0x2f0, false, 1);
	m.run->io.size = 2;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(data[0], 0xff);
	cr_assert_eq(data[1], 0xff);
	cr_assert_eq(stat("unhandled.io"), 1);
	cr_assert_eq(m.pio.reads + m.pio.writes, 0);
}

Test(vcpu, mmio_read_of_a_device_and_of_nothing)
{
	struct vcpu_stop stop;

	m.run->exit_reason = KVM_EXIT_MMIO;
	m.run->mmio.phys_addr = MMIO + 8;
	m.run->mmio.len = 4;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.mmio.reads, 1);
	cr_assert_eq(m.run->mmio.data[3], 0x5a);
	m.run->mmio.phys_addr = 0xe0000000ULL;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.run->mmio.data[0], 0xff);
	cr_assert_eq(stat("unhandled.mmio"), 1);
}

Test(vcpu, msr_read_and_a_write_nobody_takes_is_a_gp)
{
	struct vcpu_stop stop;

	m.run->exit_reason = KVM_EXIT_X86_RDMSR;
	m.run->msr.index = MSR + 3;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.run->msr.error, 0);
	cr_assert_eq(m.run->msr.data, 0x5a5a5a5a5a5a5a5aULL);
	m.run->exit_reason = KVM_EXIT_X86_WRMSR;
	m.run->msr.index = 0x12345678;
	m.run->msr.data = 7;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.run->msr.error, 1, "an MSR no device handles is a #GP");
	m.run->msr.index = MSR;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(m.run->msr.error, 0);
	cr_assert_eq(m.msr.last, 7);
}

/* Every exit that ends the VM: its status and reason. */
Test(vcpu, every_stop_path)
{
	static const struct {
		uint32_t reason;
		int status;
		const char *why;
	} cases[] = {
		{ KVM_EXIT_HLT, 0, "vCPU 0: guest halted" },
		{ KVM_EXIT_SHUTDOWN, 123, "vCPU 0: guest triple fault (shutdown) at rip 0x1234" },
		{ KVM_EXIT_SYSTEM_EVENT, 0, "vCPU 0: guest system event 2 (reset)" },
		{ KVM_EXIT_INTERNAL_ERROR, 123, "vCPU 0: KVM internal error, suberror 1, at rip 0x1234" },
		{ KVM_EXIT_FAIL_ENTRY, 123, "vCPU 0: KVM entry failed, hardware reason 0x80000021" },
		{ KVM_EXIT_DEBUG, 123, "vCPU 0: unexpected KVM exit reason 4 at rip 0x1234" },
		{ 9999, 123, "vCPU 0: unexpected KVM exit reason 9999 at rip 0x1234" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vcpu_stop stop = { -1, "" };

		memset(m.run, 0, 1024);
		m.run->exit_reason = cases[i].reason;
		/* One union in kvm_run: each exit's own payload. */
		if (cases[i].reason == KVM_EXIT_SYSTEM_EVENT)
			m.run->system_event.type = KVM_SYSTEM_EVENT_RESET;
		if (cases[i].reason == KVM_EXIT_INTERNAL_ERROR)
			m.run->internal.suberror = KVM_INTERNAL_ERROR_EMULATION;
		if (cases[i].reason == KVM_EXIT_FAIL_ENTRY)
			m.run->fail_entry.hardware_entry_failure_reason = 0x80000021;
		cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_STOP, "exit %u", cases[i].reason);
		cr_assert_eq(stop.status, cases[i].status, "exit %u: status %d", cases[i].reason,
			     stop.status);
		cr_assert_str_eq(stop.why, cases[i].why);
	}
}

/* A triple fault on an AMD host: KVM has reset the vCPU, and the message says the RIP is not where it faulted. */
Test(vcpu, triple_fault_at_the_reset_vector_says_the_rip_is_lost)
{
	struct vcpu_stop stop = { -1, "" };

	memset(m.run, 0, 1024);
	m.run->exit_reason = KVM_EXIT_SHUTDOWN;
	fake_rip = 0xfff0;
	cr_assert_eq(vcpu_handle_exit(&m.v, &stop), VCPU_STOP);
	fake_rip = 0x1234;
	cr_assert_eq(stop.status, 123);
	cr_assert_str_eq(stop.why,
			 "vCPU 0: guest triple fault (shutdown) at rip 0xfff0 (the reset vector: AMD's KVM "
			 "resets a vCPU at a triple fault; where it faulted is lost)");
}

Test(vcpu, interrupted_runs_are_not_exits)
{
	static const struct step script[] = {
		{ KVM_EXIT_INTR, 0 }, /* a signal while in the guest */
		{ 0, EINTR },	      /* a kick before the guest ran */
		{ 0, EAGAIN },
		{ KVM_EXIT_IO, 0 },
	};
	struct vcpu_stop stop;

	m.steps = script;
	m.nr_steps = 4;
	m.v.t_user = util_now_ns();
	for (int i = 0; i < 3; i++)
		cr_assert_eq(vcpu_run_once(&m.v, &stop), VCPU_INTERRUPTED, "step %d", i);
	cr_assert_eq(stat("exit.intr"), 3);
	cr_assert_eq(stat("exits"), 0, "an interruption is not an exit");
	cr_assert_eq(vcpu_run_once(&m.v, &stop), VCPU_HANDLED);
	cr_assert_eq(stat("exits"), 1);
	cr_assert_eq(stat("exit.io"), 1);
	cr_assert_eq(stat("time.kvm_run_since_ns"), 0, "not inside KVM_RUN any more");
}

Test(vcpu, kvm_run_failing_stops_the_vm)
{
	static const struct step script[] = { { 0, EFAULT } };
	struct vcpu_stop stop;

	m.steps = script;
	m.nr_steps = 1;
	cr_assert_eq(vcpu_run_once(&m.v, &stop), VCPU_STOP);
	cr_assert_eq(stop.status, 125);
	cr_assert_str_eq(stop.why, "vCPU 0: KVM_RUN failed: Bad address");
}

/* ---- the loop ---------------------------------------------------------------------------- */

Test(vcpu, loop_runs_until_an_exit_stops_the_vm)
{
	static const struct step script[] = {
		{ KVM_EXIT_IO, 0 },
		{ KVM_EXIT_MMIO, 0 },
		{ 0, EINTR },
		{ KVM_EXIT_HLT, 0 },
	};
	char why[160];

	m.steps = script;
	m.nr_steps = 4;
	vcpu_loop(&m.v);
	cr_assert_eq(m.next, 4, "the whole script ran");
	cr_assert(vmctl_stopping(&m.ctl));
	cr_assert_eq(vmctl_stop_status(&m.ctl, why, sizeof(why)), 0);
	cr_assert_str_eq(why, "vCPU 0: guest halted");
	cr_assert_eq(stat("exits"), 3);
	cr_assert_eq(stat("exit.io"), 1);
	cr_assert_eq(stat("exit.mmio"), 1);
	cr_assert_eq(stat("exit.hlt"), 1);
	cr_assert_eq(stat("exit.intr"), 1);
}

Test(vcpu, loop_of_a_stopping_vm_does_not_run)
{
	vmctl_request_stop(&m.ctl, 124, "timeout");
	vcpu_loop(&m.v);
	cr_assert_eq(m.calls, 0);
}

/* The first stop request wins: a guest's halt after a timeout does not change the status. */
Test(vcpu, first_stop_request_wins)
{
	char why[160];

	vmctl_request_stop(&m.ctl, 124, "timeout");
	vmctl_request_stop(&m.ctl, 0, "vCPU 0: guest halted");
	cr_assert_eq(vmctl_stop_status(&m.ctl, why, sizeof(why)), 124);
	cr_assert_str_eq(why, "timeout");
}

static void *loop_thread(void *arg)
{
	(void)arg;
	vcpu_loop(&m.v);
	return NULL;
}

static void on_parked(struct vcpu *v, void *arg)
{
	cr_assert_eq(v, &m.v);
	*(pthread_t *)arg = pthread_self();
}

/* Start the loop on a thread of its own, as a vCPU thread, doing port writes for ever. */
static pthread_t start_endless(void)
{
	struct errbuf err;
	pthread_t t;

	m.endless_io = true;
	cr_assert_eq(vmctl_signal_setup(&err), 0);
	cr_assert_eq(pthread_create(&t, NULL, loop_thread, NULL), 0);
	vmctl_started(&m.ctl, 0, t);
	while (__atomic_load_n(&m.calls, __ATOMIC_RELAXED) < 10)
		usleep(100);
	return t;
}

Test(vcpu, pause_parks_runs_work_on_the_vcpu_thread_and_resumes)
{
	pthread_t t = start_endless(), ran_on = 0;
	unsigned calls;

	vmctl_pause(&m.ctl);
	cr_assert_eq(m.ctl.nr_parked, 1, "pause returned before the vCPU parked");
	cr_assert_geq(m.completions, 1, "the pending port exit was not completed before parking");
	vmctl_on_parked(&m.ctl, on_parked, &ran_on);
	cr_assert(pthread_equal(ran_on, t), "park work ran on another thread than the vCPU's");
	calls = __atomic_load_n(&m.calls, __ATOMIC_RELAXED);
	usleep(20000);
	cr_assert_eq(__atomic_load_n(&m.calls, __ATOMIC_RELAXED), calls, "a parked vCPU ran");
	cr_assert_eq(__atomic_load_n(&m.run->immediate_exit, __ATOMIC_RELAXED), 1);
	vmctl_resume(&m.ctl);
	while (__atomic_load_n(&m.calls, __ATOMIC_RELAXED) < calls + 10)
		usleep(100);
	cr_assert_eq(__atomic_load_n(&m.run->immediate_exit, __ATOMIC_RELAXED), 0,
		     "resumed with immediate_exit set");
	vmctl_request_stop(&m.ctl, 0, "done");
	vmctl_stop_all(&m.ctl);
	pthread_join(t, NULL);
	cr_assert_eq(m.ctl.nr_parked, 0);
	cr_assert_gt(stat("exit.io"), 10);
}

Test(vcpu, stop_while_paused_ends_the_loop)
{
	pthread_t t = start_endless();

	vmctl_pause(&m.ctl);
	cr_assert_eq(m.ctl.nr_parked, 1);
	vmctl_request_stop(&m.ctl, 130, "stopped by signal Interrupt");
	pthread_join(t, NULL);
	cr_assert_eq(m.ctl.nr_parked, 0);
	cr_assert_eq(vmctl_vcpu_state(&m.ctl), VCPU_STOPPING);
}
