// SPDX-License-Identifier: MIT
/*
 * The main thread's loop while the guest runs (mainloop.h): one poll over
 * the stop eventfd, the stop signals, standard input and the control
 * socket, woken at least every VM_STATS_VM_PERIOD_MS (or faster while
 * the profiler's rings need draining); each wake-up also serves the port
 * writes KVM coalesced.
 */
#include "mainloop.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "vmm.h"

/* The main thread refreshes the VM record (uptime, totals) this often. */
#define VM_STATS_VM_PERIOD_MS 100
/* The main thread drains the profiler's rings this often (PROF_RING_SIZE / PROF_MAX_RATE = 100 ms). */
#define VM_PROFILE_DRAIN_MS 50

static void feed_stdin(struct serial *uart, struct pollfd *p)
{
	uint8_t buf[256];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));

	if (n > 0)
		serial_push_input(uart, buf, (size_t)n);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		p->fd = -1; /* EOF: stop polling stdin */
}

void vm_main_loop(const struct main_loop_env *e)
{
	uint64_t deadline = e->timeout_ms ? util_now_ns() + e->timeout_ms * 1000000ULL : 0;
	struct pollfd p[3 + 1 + API_MAX_CLIENTS] = {
		{ .fd = vmctl_stop_fd(e->ctl), .events = POLLIN },
		{ .fd = e->signal_fd, .events = POLLIN },
		{ .fd = e->input ? STDIN_FILENO : -1, .events = POLLIN },
	};

	while (!vmctl_stopping(e->ctl)) {
		/* Profiling: drained often enough that a ring at the rate cap never fills. */
		int wait_ms = vm_profile_on(e->prof) ? VM_PROFILE_DRAIN_MS : VM_STATS_VM_PERIOD_MS;
		int napi = api_pollfds(e->api, &p[3], 1 + API_MAX_CLIENTS);

		if (deadline) {
			uint64_t now = util_now_ns();

			if (now >= deadline) {
				vmctl_request_stop(e->ctl, PV_EXIT_TIMEOUT,
						   "timeout: the guest ran longer than %" PRIu64 " s",
						   e->timeout_ms / 1000);
				break;
			}
			if ((deadline - now) / 1000000 < (uint64_t)wait_ms)
				wait_ms = (int)((deadline - now + 999999) / 1000000);
		}
		if (poll(p, (nfds_t)(3 + napi), wait_ms) < 0 && errno != EINTR)
			break;
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(e->signal_fd, &si, sizeof(si)) == sizeof(si))
				vmctl_request_stop(e->ctl, PV_EXIT_SIGNAL_BASE + (int)si.ssi_signo,
						   "stopped by signal %s", strsignal((int)si.ssi_signo));
		}
		if (p[2].revents & (POLLIN | POLLHUP))
			feed_stdin(e->input, &p[2]);
		/* Output a guest left in KVM's ring and did not exit after (vcpu.h). */
		pio_ring_drain(e->pio_ring);
		api_service(e->api, e->api_env, &p[3], napi);
		vm_profile_drain(e->prof);
		vm_stats_refresh_running(e->stats);
		vm_stats_update_vm(e->stats);
	}
}
