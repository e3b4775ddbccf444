// SPDX-License-Identifier: MIT
/*
 * Per-thread seccomp filters (libseccomp), as Firecracker has them: one
 * allowlist for the vCPU threads, one for the main thread (event loop,
 * control socket, snapshots), each system call with the reason it is
 * there; ioctl request numbers, mmap/mprotect protections and fcntl
 * commands filtered by argument. Installed on each thread before the first
 * KVM_RUN (vm.c). A denied call ends the VM with a message naming the call
 * and the thread (docs/security.md).
 */
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/perf_event.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the lists ------------------------------------------------------------------ */

/* Calls either kind of thread makes, with the reason. */
static const int common_calls[] = {
	SCMP_SYS(read),		   /* eventfds, signalfd, perf counters, control clients */
	SCMP_SYS(write),	   /* the console, stderr, the stop eventfd */
	SCMP_SYS(writev),	   /* stdio's stderr */
	SCMP_SYS(pread64),	   /* KVM's binary stats fds */
	SCMP_SYS(close),	   /* perf fds, clients, snapshot files */
	SCMP_SYS(futex),	   /* mutexes, condition variables, joins */
	SCMP_SYS(clock_gettime),   /* thread CPU clocks (others are vDSO) */
	SCMP_SYS(clock_nanosleep), /* short backoffs */
	SCMP_SYS(nanosleep),	   /* short backoffs */
	SCMP_SYS(sched_yield),	   /* the stats hand-over and reader backoff */
	SCMP_SYS(brk),		   /* malloc */
	SCMP_SYS(munmap),	   /* free, thread stacks */
	SCMP_SYS(mremap),	   /* realloc */
	SCMP_SYS(madvise),	   /* free, thread exit */
	SCMP_SYS(rt_sigreturn),	   /* signal handlers (kick, PMU, SIGSYS) */
	SCMP_SYS(rt_sigprocmask),  /* pthread internals */
	SCMP_SYS(restart_syscall), /* a call interrupted by a handled signal */
	SCMP_SYS(getpid),	   /* messages, tgkill */
	SCMP_SYS(gettid),	   /* perf owner, messages */
	SCMP_SYS(tgkill),	   /* pthread_kill: the vCPU kick */
	SCMP_SYS(exit),		   /* a thread ends */
	SCMP_SYS(exit_group),	   /* the process ends */
};

/* The vCPU threads: run the guest, its PV PMU, its statistics. */
static const int vcpu_calls[] = {
	SCMP_SYS(perf_event_open), /* PV PMU host counters, opened when the guest enables one */
	SCMP_SYS(timer_settime),   /* the PV PMU's counter-page refresh timer */
	SCMP_SYS(timer_delete),	   /* ... deleted when the thread ends */
	SCMP_SYS(timer_gettime),   /* ... (glibc) */
};

/* The main thread: the event loop, the control socket, snapshots, the end of the VM. */
static const int main_calls[] = {
	SCMP_SYS(poll),		     /* the event loop */
	SCMP_SYS(ppoll),	     /* the event loop (some libcs) */
	SCMP_SYS(accept4),	     /* control socket clients */
	SCMP_SYS(sendmsg),	     /* replies, with the stats fd (SCM_RIGHTS) */
	SCMP_SYS(shutdown),	     /* a client that does not read its replies */
	SCMP_SYS(openat),	     /* the read-only stats fd; snapshot files; /dev/null reserve */
	SCMP_SYS(mkdir),	     /* the snapshot's temporary directory (mkdtemp) */
	SCMP_SYS(mkdirat),	     /* ... */
	SCMP_SYS(getrandom),	     /* ... its name: glibc's mkdtemp draws from it, not on every call */
	SCMP_SYS(rename),	     /* ... renamed into place */
	SCMP_SYS(renameat),	     /* ... */
	SCMP_SYS(renameat2),	     /* ... */
	SCMP_SYS(unlink),	     /* a failed snapshot's files; the socket at exit */
	SCMP_SYS(unlinkat),	     /* ... */
	SCMP_SYS(rmdir),	     /* a failed snapshot's directory */
	SCMP_SYS(fsync),	     /* snapshot files and directories */
	SCMP_SYS(fdatasync),	     /* ... */
	SCMP_SYS(ftruncate),	     /* the snapshot's memory file: its full size, holes */
	SCMP_SYS(lseek),	     /* SEEK_DATA/SEEK_HOLE: the guest RAM that holds data */
	SCMP_SYS(mincore),	     /* a restored guest's resident pages; --verbose's RSS */
	SCMP_SYS(fstat),	     /* snapshot paths */
	SCMP_SYS(newfstatat),	     /* ... */
	SCMP_SYS(stat),		     /* ... */
	SCMP_SYS(lstat),	     /* ... */
	SCMP_SYS(statx),	     /* ... */
	SCMP_SYS(io_uring_setup),    /* snapshot memory I/O */
	SCMP_SYS(io_uring_enter),    /* ... */
	SCMP_SYS(io_uring_register), /* ... (liburing) */
	SCMP_SYS(pwrite64),	     /* snapshot memory, without io_uring */
	SCMP_SYS(getcwd),	     /* messages */
	SCMP_SYS(sysinfo),    /* glibc's qsort of a large array asks the RAM size: the profile at exit */
	SCMP_SYS(socket),     /* a migration's connection to its destination (docs/migration.md) */
	SCMP_SYS(connect),    /* ... */
	SCMP_SYS(setsockopt), /* ... TCP_NODELAY, buffer sizes */
	SCMP_SYS(getsockopt), /* ... SO_ERROR of a non-blocking connect */
	SCMP_SYS(flock),      /* ... the disks' image locks handed over, or taken back */
	SCMP_SYS(epoll_ctl),  /* ... the taps detached from the I/O thread, or attached again */
};

/* The virtio I/O thread: waits on the queues' eventfds, serves them, interrupts through an irqfd. */
static const int io_calls[] = {
	SCMP_SYS(epoll_wait),	/* the queues' eventfds */
	SCMP_SYS(epoll_pwait),	/* ... (some libcs) */
	SCMP_SYS(epoll_pwait2), /* ... with a coalesced interrupt's timeout */
	SCMP_SYS(getrandom),	/* virtio-rng's bytes */
	/*
	 * virtio-blk: submit the disks' requests and reap (or, for a drain,
	 * wait for) their completions on the rings made at setup. The reads,
	 * writes, fsyncs and fallocates themselves run in the kernel (and its
	 * io-wq workers, which this filter does not see): docs/security.md.
	 */
	SCMP_SYS(io_uring_enter),
	SCMP_SYS(readv), /* virtio-net: a frame from the tap into the guest's receive chain */
	/* (write and writev, common: a transmit chain's frame to the tap; read: the eventfds) */
};

/* ioctl requests by thread: everything else (a TIOCSTI, a new VM) is denied. */
static const unsigned long vcpu_ioctls[] = {
	KVM_RUN,	       /* the guest */
	KVM_GET_REGS,	       /* RIP for a crash message; snapshot; a profile sample without SYNC_REGS */
	KVM_GET_SREGS,	       /* snapshot; a profile sample without KVM_CAP_SYNC_REGS (CPL, CR3) */
	KVM_GET_XCRS,	       /* ... */
	KVM_GET_DEBUGREGS,     /* ... */
	KVM_GET_LAPIC,	       /* ... */
	KVM_GET_VCPU_EVENTS,   /* ... */
	KVM_GET_MP_STATE,      /* ... */
	KVM_GET_XSAVE,	       /* ... */
	KVM_GET_XSAVE2,	       /* ... */
	KVM_GET_MSRS,	       /* snapshot; a Linux guest's MSR_LSTAR for a profile (KASLR) */
	KVM_NMI,	       /* a PMI as NMI */
	KVM_SIGNAL_MSI,	       /* a PMI as a vector */
	KVM_IRQ_LINE,	       /* the UART's interrupt line */
	KVM_IRQ_LINE_STATUS,   /* ... */
	PERF_EVENT_IOC_PERIOD, /* re-arm a sampling host counter */
};

static const unsigned long main_ioctls[] = {
	KVM_CHECK_EXTENSION,	    /* snapshot: the XSAVE size */
	KVM_GET_MSR_INDEX_LIST,	    /* snapshot: which MSRs to save */
	KVM_GET_IRQCHIP,	    /* snapshot */
	KVM_GET_PIT2,		    /* snapshot */
	KVM_GET_CLOCK,		    /* snapshot */
	KVM_SET_USER_MEMORY_REGION, /* a migration: KVM's dirty log of guest RAM on and off */
	KVM_GET_DIRTY_LOG,	    /* ... the pages written since the last round */
	SIOCGIFINDEX,		    /* ... a failed one attaches its taps again: the tap is there */
	TUNSETIFF,		    /* ... attached */
	TUNSETVNETHDRSZ,	    /* ... its virtio_net_hdr */
	TUNSETOFFLOAD,		    /* ... its offloads probed */
	KVM_IRQ_LINE,		    /* stdin input raises the UART's line */
	KVM_IRQ_LINE_STATUS,	    /* ... */
};

static const unsigned long io_ioctls[] = {
	KVM_IRQ_LINE,  /* a virtio interrupt where KVM has no irqfd */
	TUNSETOFFLOAD, /* virtio-net: the checksum/TSO offloads the guest took, on its tap */
};

/* fcntl commands: the perf counters' owner and signal (vCPU), plain flags (both). */
static const int vcpu_fcntls[] = { F_SETOWN_EX, F_SETSIG, F_GETFL, F_SETFL, F_GETFD, F_SETFD };
static const int main_fcntls[] = { F_GETFL, F_SETFL, F_GETFD, F_SETFD, F_DUPFD_CLOEXEC };

/*
 * ASan/UBSan/LSan builds (the tests' second build) cannot run under a
 * strict filter: LSan's leak check at exit stops the world from a helper
 * thread with clone and ptrace. There, every filter is loaded in log mode;
 * the plain build, which users run, is the one the lists are tested on.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SECCOMP_SANITIZERS 1
#else
#define SECCOMP_SANITIZERS 0
#endif

/* ---- reporting a denied call ---------------------------------------------------- */

#define NAMES 512
static const char *call_names[NAMES]; /* filled once, before any filter, read by the SIGSYS handler */
static __thread char thread_name[24];

/* Async-signal-safe: append a decimal number. */
static size_t put_num(char *buf, size_t at, long v)
{
	char tmp[24];
	size_t n = 0;

	if (v < 0) {
		buf[at++] = '-';
		v = -v;
	}
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(tmp));
	while (n)
		buf[at++] = tmp[--n];
	return at;
}

static size_t put_str(char *buf, size_t at, size_t cap, const char *s)
{
	while (*s && at < cap)
		buf[at++] = *s++;
	return at;
}

static void sigsys_handler(int sig, siginfo_t *si, void *uc)
{
	char msg[256];
	size_t n = 0;
	int nr = si->si_syscall;

	(void)sig;
	(void)uc;
	n = put_str(msg, n, sizeof(msg), "perfvisor: seccomp: the ");
	n = put_str(msg, n, sizeof(msg), thread_name[0] ? thread_name : "?");
	n = put_str(msg, n, sizeof(msg), " thread made system call ");
	n = put_str(msg, n, sizeof(msg), nr >= 0 && nr < NAMES && call_names[nr] ? call_names[nr] : "?");
	n = put_str(msg, n, sizeof(msg), " (");
	n = put_num(msg, n, nr);
	n = put_str(msg, n, 120 + n,
		    "), which its filter denies; the VM is stopped (--seccomp log finds "
		    "what is missing; docs/security.md)\n");
	(void)!write(STDERR_FILENO, msg, n < sizeof(msg) ? n : sizeof(msg));
	_exit(PV_EXIT_VMM_ERROR);
}

int seccomp_prepare(struct errbuf *err)
{
	struct sigaction sa;

	for (int i = 0; i < NAMES; i++)
		if (!call_names[i])
			call_names[i] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, i);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigsys_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0)
		return errbuf_set(err, -errno, "sigaction(SIGSYS): %s", strerror(errno));
	return 0;
}

/* ---- building and loading ------------------------------------------------------- */

static int allow_all(scmp_filter_ctx ctx, const int *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i], 0);

		/* A call this architecture lacks, or one already allowed: nothing to add. */
		if (rc && rc != -EDOM && rc != -EINVAL && rc != -EEXIST)
			return rc;
	}
	return 0;
}

static int allow_arg(scmp_filter_ctx ctx, int call, unsigned arg, const unsigned long *vals, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, call, 1, SCMP_CMP(arg, SCMP_CMP_EQ, vals[i]));

		if (rc)
			return rc;
	}
	return 0;
}

static int allow_fcntl(scmp_filter_ctx ctx, const int *cmds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
					  SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)cmds[i]));

		if (rc)
			return rc;
	}
	return 0;
}

/* mmap and mprotect, never executable: no thread of perfvisor creates code. */
static int allow_no_exec(scmp_filter_ctx ctx)
{
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				  SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));

	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				      SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	return rc;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The I/O thread's filter: the common calls, its own, one ioctl, no fcntl. */
/* What one kind of thread may call: its lists, the call tested first, its self-test's name. */
struct thread_rules {
	const int *calls;
	size_t nr_calls;
	const unsigned long *ioctls;
	size_t nr_ioctls;
	const int *fcntls; /* NULL: no fcntl at all */
	size_t nr_fcntls;
	int hot; /* the call the filter tests first; 0: none */
	const char *selftest;
};

static const struct thread_rules rules[] = {
	/* The hot call is tested first: a vCPU thread makes one ioctl (KVM_RUN) per exit (bench/seccomp.sh). */
	[SECCOMP_THREAD_VCPU] = { vcpu_calls, N(vcpu_calls), vcpu_ioctls, N(vcpu_ioctls), vcpu_fcntls,
				  N(vcpu_fcntls), SCMP_SYS(ioctl), "vcpu" },
	[SECCOMP_THREAD_MAIN] = { main_calls, N(main_calls), main_ioctls, N(main_ioctls), main_fcntls,
				  N(main_fcntls), SCMP_SYS(poll), "main" },
	[SECCOMP_THREAD_IO] = { io_calls, N(io_calls), io_ioctls, N(io_ioctls), NULL, 0, 0, "io" },
};

int seccomp_install(enum seccomp_mode mode, enum seccomp_thread which, unsigned index, struct errbuf *err)
{
	const struct thread_rules *r = &rules[which];
	const char *test = getenv("PERFVISOR_SECCOMP_SELFTEST");
	scmp_filter_ctx ctx;
	int rc = 0;

	if (which == SECCOMP_THREAD_VCPU)
		snprintf(thread_name, sizeof(thread_name), "vCPU %u", index);
	else
		snprintf(thread_name, sizeof(thread_name),
			 which == SECCOMP_THREAD_IO ? "virtio I/O" : "main");
	if (mode == SECCOMP_OFF)
		return 0;
	ctx = seccomp_init(mode == SECCOMP_LOG || SECCOMP_SANITIZERS ? SCMP_ACT_LOG : SCMP_ACT_TRAP);
	if (!ctx)
		return errbuf_set(err, -ENOMEM, "seccomp: cannot create a filter");
	if (r->hot)
		rc = seccomp_syscall_priority(ctx, r->hot, 255);
	if (!rc)
		rc = allow_all(ctx, common_calls, N(common_calls));
	if (!rc)
		rc = allow_all(ctx, r->calls, r->nr_calls);
	if (!rc)
		rc = allow_arg(ctx, SCMP_SYS(ioctl), 1, r->ioctls, r->nr_ioctls);
	if (!rc && r->fcntls)
		rc = allow_fcntl(ctx, r->fcntls, r->nr_fcntls);
	if (!rc)
		rc = allow_no_exec(ctx);
	if (!rc)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc)
		return errbuf_set(err, rc, "seccomp: cannot install the %s thread's filter: %s", thread_name,
				  strerror(-rc));
	/* PERFVISOR_SECCOMP_SELFTEST=main|vcpu|io: this thread (vCPU 0 of the vCPUs) tries a call it must not make. */
	if (test && !strcmp(test, r->selftest) && index == 0)
		execve("/nonexistent/perfvisor-seccomp-selftest", (char *[]){ NULL }, (char *[]){ NULL });
	return 0;
}

unsigned seccomp_allowed_count(enum seccomp_thread which, unsigned *ioctls)
{
	const struct thread_rules *r = &rules[which];

	*ioctls = (unsigned)r->nr_ioctls;
	/* ioctl, mmap and mprotect (and fcntl where allowed) are counted once each, with their argument filters. */
	return (unsigned)(N(common_calls) + r->nr_calls + (r->fcntls ? 4 : 3));
}
