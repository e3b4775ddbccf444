/* SPDX-License-Identifier: MIT */
/*
 * behave: misbehaviour on demand, for the VMM's integration tests. The
 * command line picks one mode (mode=NAME plus its parameters); see
 * docs/testing.md for the list and the exit status each should produce.
 */
#include "guest.h"

#define UNMAPPED_MMIO 0xd0000000UL
#define I8042_CMD 0x64
#define I8042_RESET 0xfe
#define POST_PORT 0x80
#define COM1 0x3f8
#define UART_LSR 5
#define UART_LSR_DR 0x01
#define UART_SCR 7

static int debugexit(void)
{
	outl(PV_DEBUG_EXIT_PORT, (uint32_t)cmdline_get_u64("code", 0));
	return 1; /* not reached if the VMM honours the port */
}

static int reset(void)
{
	outb(I8042_CMD, I8042_RESET);
	return 1;
}

static __noreturn void triplefault(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) empty = { 0, 0 };

	/* #UD -> no gate (#GP) -> no gate (#DF) -> shutdown. */
	asm volatile("lidt %0\n\tud2" : : "m"(empty));
	__builtin_unreachable();
}

static __noreturn void hang(void)
{
	for (;;)
		asm volatile("cli; hlt");
}

static long spin_forever(void *arg)
{
	(void)arg;
	for (;;)
		asm volatile("pause");
	return 0;
}

static int badports(void)
{
	static const uint16_t ports[] = { 0x100, 0x2f0, 0x1234, 0xfffe };
	volatile uint32_t *mmio = (volatile uint32_t *)UNMAPPED_MMIO;
	uint32_t v;

	/* MMIO first: the VMM's log of unhandled accesses is rate-limited. */
	*mmio = 0xdeadbeef;
	v = *mmio;
	printf("behave: unmapped MMIO 0x%lx read 0x%x\n", UNMAPPED_MMIO, v);
	report(true, "survived unmapped MMIO writes and reads");
	for (uint32_t i = 0; i < ARRAY_SIZE(ports); i++) {
		uint16_t p = ports[i];

		outb(p, 0x5a);
		outw(p, 0x5a5a);
		outl(p, 0x5a5a5a5a);
		report(inb(p) == 0xff, "inb(0x%x) reads 0xff", p);
		report(inw(p) == 0xffff, "inw(0x%x) reads 0xffff", p);
		report(inl(p) == 0xffffffff, "inl(0x%x) reads 0xffffffff", p);
	}
	return report_summary();
}

/* A ucall block outside our normal per-CPU ones, for malformed requests. */
static struct pv_ucall bad_ucall;

static int baducall(void)
{
	uint64_t mem = rt_mem_size();
	uint32_t outside = mem < 0xfffff000ULL ? (uint32_t)(mem + 0x1000) : 0xfffff000u;
	uint32_t straddle = mem <= 0xffffffffULL ? (uint32_t)(mem - 100) : 0;

	printf("behave: ucall at gpa 0x%x (outside RAM)\n", outside);
	outl(PV_TESTDEV_PORT, outside);
	if (straddle) {
		printf("behave: ucall at gpa 0x%x (crosses the end of RAM)\n", straddle);
		outl(PV_TESTDEV_PORT, straddle);
	}
	printf("behave: ucall with a bad magic\n");
	bad_ucall.magic = 0x12345678;
	bad_ucall.cmd = PV_UCALL_DONE;
	bad_ucall.status = 99;
	outl(PV_TESTDEV_PORT, (uint32_t)(uintptr_t)&bad_ucall);
	printf("behave: ucall with unknown command 99\n");
	bad_ucall.magic = PV_UCALL_MAGIC;
	bad_ucall.cmd = 99;
	outl(PV_TESTDEV_PORT, (uint32_t)(uintptr_t)&bad_ucall);
	printf("behave: PRINT without a NUL in text[]\n");
	bad_ucall.cmd = PV_UCALL_PRINT;
	memset(bad_ucall.text, 'x', sizeof(bad_ucall.text));
	outl(PV_TESTDEV_PORT, (uint32_t)(uintptr_t)&bad_ucall);
	printf("\nbehave: 1- and 2-byte writes to the test device\n");
	outb(PV_TESTDEV_PORT, 0x10);
	outw(PV_TESTDEV_PORT, 0x1000);
	printf("behave: still running after bad ucalls\n");
	return 0;
}

/* An exception nobody expects: the runtime reports it and ends the VM (3). */
static void fault_ud(uint32_t cpu, void *arg)
{
	(void)cpu;
	(void)arg;
	asm volatile("ud2");
}

static long fault_ud_user(void *arg)
{
	fault_ud(0, arg);
	return 0;
}

static int fault(void)
{
	const char *where = cmdline_get("where");

	if (where && !strcmp(where, "ring3")) {
		rt_user_call(fault_ud_user, NULL);
	} else if (where && !strcmp(where, "ap") && rt_nr_cpus() > 1) {
		smp_start_aps(fault_ud, NULL);
		smp_wait_aps(60000);
	} else {
		fault_ud(0, NULL);
	}
	return 1; /* not reached */
}

static int ports(void)
{
	uint64_t count = cmdline_get_u64("count", 0);

	for (uint64_t i = 0; i < count; i++)
		outb(POST_PORT, (uint8_t)i);
	/* hold=1: stay alive (halted) so a test can read the VM's statistics. */
	if (cmdline_get_u64("hold", 0))
		hang();
	return 0;
}

/* The APs halt with interrupts off for good; CPU 0 spins in ring 3: no exits at all from then on. */
static void halt_forever(uint32_t cpu, void *arg)
{
	(void)cpu;
	(void)arg;
	hang();
}

static int spinhalt(void)
{
	if (rt_nr_cpus() > 1 && smp_start_aps(halt_forever, NULL) != rt_nr_cpus() - 1)
		return 1;
	return (int)rt_user_call(spin_forever, NULL);
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

/* One port write (the UART's scratch register) every period_ms (default 10), halted in between, forever. */
static int tick(void)
{
	uint64_t period_us = cmdline_get_u64("period_ms", 10) * 1000;

	for (uint8_t i = 0;; i++) {
		rt_wait_irq(never, NULL, period_us);
		outb(COM1 + UART_SCR, i);
	}
	return 1;
}

/* Read one line from the UART (perfvisor --stdin) and print it back. */
static int serial_echo(void)
{
	uint64_t deadline = tsc_deadline_us(cmdline_get_u64("wait_ms", 20000) * 1000);
	char line[128];
	size_t n = 0;

	while (n < sizeof(line) - 1) {
		if (!(inb(COM1 + UART_LSR) & UART_LSR_DR)) {
			if (rdtsc() > deadline)
				break;
			udelay(1000);
			continue;
		}
		line[n] = (char)inb(COM1);
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	printf("serial-echo: [%s]\n", line);
	return n ? 0 : 1;
}

int main(const struct pv_bootinfo *bi)
{
	const char *mode = cmdline_get("mode");

	(void)bi;
	if (!mode)
		mode = "";
	if (!strcmp(mode, "debugexit"))
		return debugexit();
	if (!strcmp(mode, "reset"))
		return reset();
	if (!strcmp(mode, "triplefault"))
		triplefault();
	if (!strcmp(mode, "hang"))
		hang();
	if (!strcmp(mode, "spin"))
		return (int)rt_user_call(spin_forever, NULL);
	if (!strcmp(mode, "badports"))
		return badports();
	if (!strcmp(mode, "baducall"))
		return baducall();
	if (!strcmp(mode, "assert"))
		GUEST_ASSERT(1 == 2);
	if (!strcmp(mode, "fault"))
		return fault();
	if (!strcmp(mode, "ports"))
		return ports();
	if (!strcmp(mode, "spinhalt"))
		return spinhalt();
	if (!strcmp(mode, "tick"))
		return tick();
	if (!strcmp(mode, "done"))
		ucall_done((uint32_t)cmdline_get_u64("status", 0));
	if (!strcmp(mode, "echo")) {
		printf("%s\n", cmdline_raw());
		return 0;
	}
	if (!strcmp(mode, "noap"))
		return 0;
	if (!strcmp(mode, "serial-echo"))
		return serial_echo();
	printf("behave: unknown mode \"%s\"; modes: debugexit code=N, reset, triplefault, hang, "
	       "spin, badports, baducall, assert, fault [where=ring3|ap], ports count=K [hold=1], spinhalt, "
	       "tick [period_ms=N], done status=N, echo, noap, serial-echo [wait_ms=N]\n",
	       mode);
	report(false, "mode=%s", mode);
	return report_summary();
}
