// SPDX-License-Identifier: MIT
/*
 * KVM's own binary stats of each vCPU (KVM_GET_STATS_FD), mirrored by name
 * as kvm.<stat>, and the vCPU thread's CPU time (time.cpu_ns): sampled by
 * the vCPU thread after its exits, or, while it stays inside KVM_RUN, by
 * the main thread, which then takes the entry for the stores only.
 */
#include "vm_stats_internal.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static enum pv_stats_kind kvm_kind(uint32_t flags)
{
	switch (flags & KVM_STATS_TYPE_MASK) {
	case KVM_STATS_TYPE_CUMULATIVE:
		return PV_STATS_CUMULATIVE;
	case KVM_STATS_TYPE_PEAK:
		return PV_STATS_PEAK;
	default:
		return PV_STATS_INSTANT;
	}
}

static enum pv_stats_unit kvm_unit(uint32_t flags)
{
	switch (flags & KVM_STATS_UNIT_MASK) {
	case KVM_STATS_UNIT_BYTES:
		return PV_STATS_UNIT_BYTES;
	case KVM_STATS_UNIT_SECONDS:
		return PV_STATS_UNIT_SECONDS;
	case KVM_STATS_UNIT_CYCLES:
		return PV_STATS_UNIT_CYCLES;
	default:
		return PV_STATS_UNIT_NONE;
	}
}

/*
 * Mirror the scalar (size 1, base-10) values of KVM's per-vCPU binary stats
 * as "kvm.<name>". The descriptors are read once from vCPU 0; every vCPU has
 * the same layout.
 */
int vm_stats_declare_kvm(struct vm_stats *s, struct errbuf *err)
{
	struct vm_kvm_stats *ks = &s->kvm;
	struct kvm_stats_header h;
	int fd = s->v[0].kvm_fd;
	size_t dsz;
	char *descs;
	int rc = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		return errbuf_set(err, -EIO, "KVM stats: cannot read the header");
	dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = calloc(h.num_desc, dsz);
	if (!descs)
		return errbuf_set(err, -ENOMEM, "out of memory");
	if (pread(fd, descs, h.num_desc * dsz, h.desc_offset) != (ssize_t)(h.num_desc * dsz)) {
		rc = errbuf_set(err, -EIO, "KVM stats: cannot read the descriptors");
		goto out;
	}
	ks->data_offset = h.data_offset;
	for (uint32_t i = 0; i < h.num_desc && ks->nr < VM_STATS_MAX_KVM; i++) {
		const struct kvm_stats_desc *d = (const void *)(descs + i * dsz);
		char name[PV_STATS_NAME_MAX];
		size_t end = d->offset + (size_t)d->size * sizeof(uint64_t);

		if (end > ks->data_len)
			ks->data_len = end;
		if (d->size != 1 || (d->flags & KVM_STATS_BASE_MASK) != KVM_STATS_BASE_POW10 ||
		    snprintf(name, sizeof(name), "kvm.%.*s", (int)h.name_size, d->name) >= (int)sizeof(name))
			continue;
		rc = sb_declare(s->region, PV_STATS_RECORD_VCPU, name, kvm_kind(d->flags), kvm_unit(d->flags),
				d->exponent, &ks->field[ks->nr], err);
		if (rc == -EINVAL || rc == -EEXIST) {
			rc = 0; /* a name our charset cannot carry: not mirrored */
			continue;
		}
		if (rc)
			goto out;
		ks->index[ks->nr++] = d->offset / sizeof(uint64_t);
	}
	for (unsigned i = 0; i <= s->nr_vcpus && ks->data_len; i++) {
		uint64_t **buf = i < s->nr_vcpus ? &s->v[i].kvm_buf : &ks->main_buf;

		*buf = calloc(1, ks->data_len);
		if (!*buf) {
			rc = errbuf_set(err, -ENOMEM, "out of memory");
			goto out;
		}
	}
out:
	free(descs);
	return rc;
}

/* CPU time of a thread's clock, 0 if it cannot be read. */
static uint64_t cpu_time_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Sample KVM's stats of vCPU i into buf (if it has them). False if the pread failed. */
static bool kvm_sample(const struct vm_stats *s, unsigned i, uint64_t *buf)
{
	const struct vm_kvm_stats *ks = &s->kvm;

	return !buf ||
	       pread(s->v[i].kvm_fd, buf, ks->data_len, (off_t)ks->data_offset) == (ssize_t)ks->data_len;
}

/* Publish a sample taken at time t: the mirror (buf may be NULL) and the CPU time. Entry owner only. */
static void publish_sample(struct vm_stats *s, unsigned i, const uint64_t *buf, uint64_t cpu_ns, uint64_t t)
{
	const struct vm_kvm_stats *ks = &s->kvm;
	struct vm_stats_vcpu *v = &s->v[i];

	sb_begin(v->e);
	for (unsigned k = 0; buf && k < ks->nr; k++)
		sb_set(v->e, ks->field[k], v->kvm_base[k] + buf[ks->index[k]]);
	if (cpu_ns)
		sb_set(v->e, s->sf.cpu_ns, v->cpu_ns_base + cpu_ns);
	sb_add(v->e, s->sf.kvm_refreshes, 1);
	if (s->publish_hook)
		s->publish_hook(s->publish_ctx, i, v->e);
	sb_end(v->e);
	__atomic_store_n(&v->kvm_last_ns, t, __ATOMIC_RELAXED);
}

void vm_stats_kvm_refresh(struct vm_stats *s, unsigned i, uint64_t now, bool force)
{
	struct vm_stats_vcpu *v = &s->v[i];
	uint64_t cpu;

	if (!force && now - v->kvm_last_ns < KVM_STATS_PERIOD_NS)
		return;
	/* The system calls stay outside the seqlock, so readers never wait on them. */
	cpu = cpu_time_ns(CLOCK_THREAD_CPUTIME_ID);
	if (kvm_sample(s, i, v->kvm_buf))
		publish_sample(s, i, v->kvm_buf, cpu, now);
}

void vm_stats_refresh_running(struct vm_stats *s)
{
	for (unsigned i = 0; i < s->nr_vcpus; i++) {
		struct vm_stats_vcpu *v = &s->v[i];
		uint32_t open = VCPU_STATS_OPEN;
		uint64_t t = util_now_ns(), cpu;

		if (__atomic_load_n(&v->owner, __ATOMIC_RELAXED) != VCPU_STATS_OPEN ||
		    t - __atomic_load_n(&v->kvm_last_ns, __ATOMIC_RELAXED) < KVM_STATS_PERIOD_NS)
			continue;
		/* Sample first (system calls), then take the entry for the stores only. */
		cpu = v->cpu_clock_ok ? cpu_time_ns(v->cpu_clock) : 0;
		if (!kvm_sample(s, i, s->kvm.main_buf))
			continue;
		if (!__atomic_compare_exchange_n(&v->owner, &open, VCPU_STATS_MAIN, false, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue; /* it left KVM_RUN meanwhile: it refreshes itself */
		/* Older than what the vCPU published since (it left and re-entered meanwhile): dropped. */
		if (v->kvm_last_ns < t)
			publish_sample(s, i, s->kvm.main_buf, cpu, t);
		__atomic_store_n(&v->owner, VCPU_STATS_OPEN, __ATOMIC_RELEASE);
	}
}
