// SPDX-License-Identifier: MIT
/*
 * VM control (control.h): stop, pause and park, the start gate, the vCPU
 * kick and the log, under one lock and one condition variable. The kick
 * is a signal whose handler does nothing: KVM_RUN returns -EINTR.
 */
#include "control.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vmm.h"

/* The kick signal only interrupts KVM_RUN; its handler does nothing. */
#define VMCTL_KICK_SIGNAL SIGUSR1

int vmctl_init(struct vmctl *c, unsigned nr_vcpus, struct errbuf *err)
{
	memset(c, 0, sizeof(*c));
	c->stop_efd = -1;
	if (pthread_mutex_init(&c->lock, NULL))
		return errbuf_set(err, -ENOMEM, "out of memory");
	if (pthread_cond_init(&c->cond, NULL)) {
		pthread_mutex_destroy(&c->lock);
		return errbuf_set(err, -ENOMEM, "out of memory");
	}
	c->locks_ok = true;
	c->nr_vcpus = nr_vcpus;
	c->vcpu = calloc(nr_vcpus ? nr_vcpus : 1, sizeof(*c->vcpu));
	if (!c->vcpu)
		return errbuf_set(err, -ENOMEM, "out of memory");
	c->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->stop_efd < 0)
		return errbuf_set(err, -errno, "eventfd: %s", strerror(errno));
	return 0;
}

void vmctl_fini(struct vmctl *c)
{
	free(c->vcpu);
	c->vcpu = NULL;
	if (c->stop_efd >= 0)
		close(c->stop_efd);
	c->stop_efd = -1;
	if (c->locks_ok) {
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
	}
	c->locks_ok = false;
}

void vm_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "perfvisor: %s\n", line);
}

void vmctl_request_stop(struct vmctl *c, int status, const char *fmt, ...)
{
	uint64_t one = 1;
	va_list ap;

	pthread_mutex_lock(&c->lock);
	if (!atomic_load(&c->stopping)) {
		c->stop_status = status;
		va_start(ap, fmt);
		vsnprintf(c->stop_why, sizeof(c->stop_why), fmt, ap);
		va_end(ap);
		atomic_store(&c->stopping, true);
		pthread_cond_broadcast(&c->cond);
		/* One write cannot overflow the eventfd; nothing to handle. */
		if (c->stop_efd >= 0)
			(void)!write(c->stop_efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&c->lock);
}

bool vmctl_stopping(const struct vmctl *c)
{
	return atomic_load(&c->stopping);
}

int vmctl_stop_status(struct vmctl *c, char *why, size_t len)
{
	int rc;

	pthread_mutex_lock(&c->lock);
	snprintf(why, len, "%s", c->stop_why);
	rc = c->stop_status;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int vmctl_stop_fd(const struct vmctl *c)
{
	return c->stop_efd;
}

enum vcpu_state vmctl_vcpu_state(const struct vmctl *c)
{
	if (atomic_load(&c->stopping))
		return VCPU_STOPPING;
	return atomic_load(&c->paused) ? VCPU_PAUSED : VCPU_RUNNING;
}

static void kick_handler(int sig)
{
	(void)sig;
}

int vmctl_signal_setup(struct errbuf *err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler; /* no SA_RESTART: KVM_RUN returns -EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(VMCTL_KICK_SIGNAL, &sa, NULL) < 0)
		return errbuf_set(err, -errno, "sigaction: %s", strerror(errno));
	return 0;
}

int vmctl_kick_signal(void)
{
	return VMCTL_KICK_SIGNAL;
}

void vmctl_attach(struct vmctl *c, unsigned i, struct kvm_run *run, struct vcpu *owner)
{
	c->vcpu[i].run = run;
	c->vcpu[i].owner = owner;
}

void vmctl_started(struct vmctl *c, unsigned i, pthread_t thread)
{
	c->vcpu[i].thread = thread;
	c->vcpu[i].started = true;
}

void vmctl_joined(struct vmctl *c, unsigned i)
{
	c->vcpu[i].started = false;
}

void vmctl_kick(struct vmctl *c, unsigned i)
{
	struct vmctl_vcpu *v = &c->vcpu[i];

	/*
	 * immediate_exit covers a thread about to enter KVM_RUN; the signal
	 * covers one already inside it (including an AP waiting for a SIPI).
	 */
	if (v->run)
		__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (v->started)
		pthread_kill(v->thread, VMCTL_KICK_SIGNAL);
}

void vmctl_stop_all(struct vmctl *c)
{
	atomic_store(&c->stopping, true);
	pthread_mutex_lock(&c->lock);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < c->nr_vcpus; i++)
		vmctl_kick(c, i);
}

void vmctl_pause(struct vmctl *c)
{
	unsigned started = 0;

	if (atomic_exchange(&c->paused, true))
		return;
	for (unsigned i = 0; i < c->nr_vcpus; i++) {
		started += c->vcpu[i].started;
		vmctl_kick(c, i);
	}
	pthread_mutex_lock(&c->lock);
	while (c->nr_parked < started && !atomic_load(&c->stopping))
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

void vmctl_resume(struct vmctl *c)
{
	pthread_mutex_lock(&c->lock);
	atomic_store(&c->paused, false);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

bool vmctl_paused(const struct vmctl *c)
{
	return atomic_load(&c->paused);
}

void vmctl_park(struct vmctl *c, unsigned i)
{
	struct vmctl_vcpu *v = &c->vcpu[i];

	pthread_mutex_lock(&c->lock);
	c->nr_parked++;
	pthread_cond_broadcast(&c->cond);
	while (atomic_load(&c->paused) && !atomic_load(&c->stopping)) {
		if (v->park_work) {
			void (*fn)(struct vcpu *, void *) = v->park_work;

			pthread_mutex_unlock(&c->lock);
			fn(v->owner, v->park_arg);
			pthread_mutex_lock(&c->lock);
			v->park_work = NULL;
			pthread_cond_broadcast(&c->cond);
			continue;
		}
		pthread_cond_wait(&c->cond, &c->lock);
	}
	c->nr_parked--;
	pthread_mutex_unlock(&c->lock);
}

void vmctl_on_parked(struct vmctl *c, void (*fn)(struct vcpu *v, void *arg), void *arg)
{
	bool busy = true;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->nr_vcpus; i++) {
		if (!c->vcpu[i].started)
			continue; /* no thread to run it */
		c->vcpu[i].park_work = fn;
		c->vcpu[i].park_arg = arg;
	}
	pthread_cond_broadcast(&c->cond);
	while (busy && !atomic_load(&c->stopping)) {
		busy = false;
		for (unsigned i = 0; i < c->nr_vcpus; i++)
			busy |= c->vcpu[i].park_work != NULL;
		if (busy)
			pthread_cond_wait(&c->cond, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
}

void vmctl_open_gate(struct vmctl *c)
{
	pthread_mutex_lock(&c->lock);
	c->start_gate = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void vmctl_wait_gate(struct vmctl *c)
{
	pthread_mutex_lock(&c->lock);
	while (!c->start_gate && !atomic_load(&c->stopping))
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);
}

void vm_stop_signals(sigset_t *s)
{
	static const int stop[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR2 };

	sigemptyset(s);
	for (size_t i = 0; i < sizeof(stop) / sizeof(stop[0]); i++)
		sigaddset(s, stop[i]);
}
