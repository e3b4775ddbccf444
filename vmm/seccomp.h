/* SPDX-License-Identifier: MIT */
/*
 * Per-thread seccomp filters (docs/security.md): one allowlist for the
 * vCPU threads, one for the main thread, one for the virtio I/O thread.
 * Calls nothing else in vmm/.
 */
#ifndef PERFVISOR_VMM_SECCOMP_H
#define PERFVISOR_VMM_SECCOMP_H

#include "util/util.h"
#include "vmm.h"

enum seccomp_thread {
	SECCOMP_THREAD_MAIN,
	SECCOMP_THREAD_VCPU,
	SECCOMP_THREAD_IO, /* the virtio devices' I/O thread (vm_virtio.c) */
};

/* Before any filter: the SIGSYS handler that reports a denied call, and its table of names. */
int seccomp_prepare(struct errbuf *err);
/* Load the calling thread's filter (SECCOMP_OFF: only name the thread). 0 or -errno with a message. */
int seccomp_install(enum seccomp_mode mode, enum seccomp_thread which, unsigned index, struct errbuf *err);
/* How many system calls (and ioctl requests) a thread's list allows: for docs and the bench. */
unsigned seccomp_allowed_count(enum seccomp_thread which, unsigned *ioctls);

#endif
