/* SPDX-License-Identifier: MIT */
/*
 * The main thread while the guest runs: it waits for a stop (a request, a
 * stop signal, the --timeout), and meanwhile serves the control socket,
 * feeds standard input to the UART, drains the profiler and keeps the
 * statistics' live values and VM record current. Calls control, the
 * control socket, the profiler and the statistics.
 */
#ifndef PERFVISOR_VMM_MAINLOOP_H
#define PERFVISOR_VMM_MAINLOOP_H

#include <stdint.h>

#include "api.h"
#include "vcpu.h"
#include "control.h"
#include "vm_profile.h"
#include "vm_stats.h"

struct main_loop_env {
	struct vmctl *ctl;
	uint64_t timeout_ms;  /* 0 = none */
	int signal_fd;	      /* a signalfd of the stop signals (vm_stop_signals) */
	struct serial *input; /* standard input goes to this UART; NULL = not read */
	struct api *api;
	const struct api_env *api_env;
	struct vm_profile *prof;
	struct vm_stats *stats;
	struct pio_ring *pio_ring; /* drained on each wake-up (vcpu.h); NULL: none */
};

/* Until a stop is requested (the timeout and the stop signals request one themselves). Main thread. */
void vm_main_loop(const struct main_loop_env *e);

#endif
