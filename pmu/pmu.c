// SPDX-License-Identifier: MIT
/*
 * The per-vCPU PV PMU: MSR decode and checks, counters kept continuous
 * across reprogramming, overflow and the one-PMI-in-flight protocol, and
 * the counter page. Pure logic: the host is reached through pmu_host_ops.
 */
#include "pmu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define WRAP (PV_PMU_COUNTER_MASK + 1)
#define MSR_OFF(index) ((index)-PV_PMU_MSR_BASE)
#define OFF_CTR_FIRST 0x20u
#define OFF_RELOAD_FIRST 0x60u
#define OFF_BITMAP_FIRST 0x80u
#define OFF_BITMAP_END 0xb0u

void pmu_vm_init(struct pmu_vm *vm, const struct pmu_caps *caps)
{
	memset(vm, 0, sizeof(*vm));
	vm->caps = *caps;
	vm->log_rl = (struct ratelimit)RATELIMIT_INIT(1000000000ULL, 10);
}

/*
 * The PMI rate cap is a token bucket that refills continuously: at most
 * burst + rate * T PMIs in any interval T, so the advertised rate holds
 * over every window, not only over aligned ones. Credit is kept in
 * nanoseconds; one PMI costs 1 s / rate. vCPU thread only.
 */
static uint64_t pmi_cost_ns(const struct pmu_vcpu *p)
{
	uint32_t rate = p->vm->caps.max_pmis_per_s;

	return 1000000000ULL / (rate ? rate : 1);
}

static uint64_t pmi_burst_ns(const struct pmu_vcpu *p)
{
	uint32_t burst = p->vm->caps.max_pmis_per_s / 10;

	return (burst ? burst : 1) * pmi_cost_ns(p);
}

static bool pmi_allowed(struct pmu_vcpu *p)
{
	uint64_t now = util_now_ns();

	p->pmi_credit_ns += now - p->pmi_credit_at;
	p->pmi_credit_at = now;
	if (p->pmi_credit_ns > pmi_burst_ns(p))
		p->pmi_credit_ns = pmi_burst_ns(p);
	if (p->pmi_credit_ns < pmi_cost_ns(p))
		return false;
	p->pmi_credit_ns -= pmi_cost_ns(p);
	return true;
}

void pmu_vcpu_init(struct pmu_vcpu *p, struct pmu_vm *vm, const struct pmu_host_ops *ops, void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->vm = vm;
	p->ops = ops;
	p->ctx = ctx;
	p->pmi_credit_ns = pmi_burst_ns(p);
	p->pmi_credit_at = util_now_ns();
	for (unsigned i = 0; i < PV_PMU_MAX_COUNTERS; i++)
		p->ctr[i].h = -1;
}

static void stat(struct pmu_vcpu *p, enum pmu_stat s, uint64_t n)
{
	if (p->ops->stat)
		p->ops->stat(p->ctx, s, n);
}

static void pmu_log(struct pmu_vcpu *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pmu_log(struct pmu_vcpu *p, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!p->ops->log || !ratelimit_allow(&p->vm->log_rl))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->ops->log(p->ctx, msg);
}

/* A guest misdeed: counted, logged (rate-limited), #GP. */
static int gp(struct pmu_vcpu *p, uint32_t index, bool write, uint64_t val, const char *why)
{
	stat(p, PMU_STAT_GP, 1);
	if (write)
		pmu_log(p, "PV PMU: #GP for wrmsr 0x%x = 0x%" PRIx64 ": %s", index, val, why);
	else
		pmu_log(p, "PV PMU: #GP for rdmsr 0x%x: %s", index, why);
	return -EINVAL;
}

static const struct pmu_event_info *ctr_event(const struct pmu_counter *c)
{
	return pmu_event_info((uint32_t)(c->cfg & PV_PMU_CFG_EVENT_MASK));
}

static bool is_host_class(const struct pmu_event_info *ev)
{
	return ev->cls == PV_PMU_CLASS_HW || ev->cls == PV_PMU_CLASS_SW;
}

/* The host's count now, for a counting counter. */
static int host_now(struct pmu_vcpu *p, struct pmu_counter *c, uint64_t *now)
{
	const struct pmu_event_info *ev = ctr_event(c);

	if (!is_host_class(ev)) {
		*now = p->ops->hv_read(p->ctx, ev->id);
		return 0;
	}
	return p->ops->read(p->ctx, c->h, now);
}

/* The sampling period that brings the host's interrupt to the guest's wrap. */
static uint64_t arm_period(const struct pmu_vcpu *p, const struct pmu_counter *c)
{
	const struct pmu_event_info *ev = ctr_event(c);
	uint64_t left = WRAP - c->value, min;

	if (!(c->cfg & PV_PMU_CFG_INT))
		return 0;
	min = ev->ns ? p->vm->caps.min_period_ns : p->vm->caps.min_period;
	return left < min ? min : left;
}

static void overflow(struct pmu_vcpu *p, unsigned i)
{
	p->status |= 1ULL << i;
	stat(p, PMU_STAT_OVERFLOW, 1);
	if (p->ctr[i].cfg & PV_PMU_CFG_INT)
		p->pmi_pending = true;
}

/* Fold what the host counted since the last sync into the guest's value. */
static void ctr_sync(struct pmu_vcpu *p, unsigned i)
{
	struct pmu_counter *c = &p->ctr[i];
	uint64_t now, delta, left;

	if (!c->counting || host_now(p, c, &now) < 0)
		return;
	delta = now - c->base;
	if (!delta)
		return;
	c->base = now;
	left = WRAP - c->value;
	c->value = (c->value + delta) & PV_PMU_COUNTER_MASK;
	if (delta >= left) {
		overflow(p, i);
		/* A host counter keeps its old period: re-arm it to the next wrap. */
		if (c->h >= 0 && (c->cfg & PV_PMU_CFG_INT))
			p->ops->set_period(p->ctx, c->h, arm_period(p, c));
	}
}

static void ctr_stop(struct pmu_vcpu *p, unsigned i)
{
	struct pmu_counter *c = &p->ctr[i];
	const struct pmu_event_info *ev = ctr_event(c);

	if (!c->active)
		return;
	ctr_sync(p, i);
	if (c->h >= 0) {
		p->ops->close(p->ctx, c->h);
		c->h = -1;
		__atomic_sub_fetch(&p->vm->host_in_use, 1, __ATOMIC_RELAXED);
		p->nr_host--;
		stat(p, PMU_STAT_HOST_COUNTERS, p->nr_host);
	}
	if (c->counting) {
		p->nr_counting--;
		if (!is_host_class(ev) && (c->cfg & PV_PMU_CFG_INT))
			p->nr_hv_int--;
	}
	c->active = c->counting = false;
	p->error &= ~(1ULL << i);
}

static void ctr_fail(struct pmu_vcpu *p, unsigned i, const struct pmu_event_info *ev, const char *why)
{
	p->error |= 1ULL << i;
	stat(p, PMU_STAT_ERROR, 1);
	pmu_log(p, "PV PMU: counter %u (%s) not backed by the host: %s", i, ev->name, why);
}

static void ctr_start(struct pmu_vcpu *p, unsigned i)
{
	struct pmu_counter *c = &p->ctr[i];
	const struct pmu_event_info *ev = ctr_event(c);

	c->active = true;
	p->error &= ~(1ULL << i);
	if (!is_host_class(ev)) {
		c->base = p->ops->hv_read(p->ctx, ev->id);
		if (c->cfg & PV_PMU_CFG_INT)
			p->nr_hv_int++;
	} else {
		uint32_t in_use = __atomic_add_fetch(&p->vm->host_in_use, 1, __ATOMIC_RELAXED);
		int h;

		if (in_use > p->vm->caps.host_budget) {
			__atomic_sub_fetch(&p->vm->host_in_use, 1, __ATOMIC_RELAXED);
			ctr_fail(p, i, ev, "the VM's budget of host counters is used up");
			return;
		}
		h = p->ops->open(p->ctx, ev, c->cfg, arm_period(p, c));
		if (h < 0) {
			__atomic_sub_fetch(&p->vm->host_in_use, 1, __ATOMIC_RELAXED);
			ctr_fail(p, i, ev, strerror(-h));
			return;
		}
		c->h = h;
		c->base = 0; /* a new host counter starts at 0 */
		p->nr_host++;
		stat(p, PMU_STAT_HOST_COUNTERS, p->nr_host);
	}
	c->counting = true;
	p->nr_counting++;
}

/* Bring counter i's host side in line with its CFG and GLOBAL_CTRL; `force` restarts it. */
static void ctr_update(struct pmu_vcpu *p, unsigned i, bool force)
{
	struct pmu_counter *c = &p->ctr[i];
	bool want = (c->cfg & PV_PMU_CFG_EN) && (p->global_ctrl >> i & 1);

	if (c->active == want && !force)
		return;
	ctr_stop(p, i);
	if (want)
		ctr_start(p, i);
}

static void pmi_deliver(struct pmu_vcpu *p)
{
	int rc;

	if (!p->pmi_pending || (p->pmi_cfg & PV_PMU_PMI_MASK))
		return;
	if (!pmi_allowed(p)) {
		p->status |= PV_PMU_STATUS_THROTTLED;
		if (!p->throttled)
			stat(p, PMU_STAT_THROTTLED, 1);
		p->throttled = true;
		return;
	}
	rc = p->ops->inject(p->ctx, p->pmi_cfg);
	if (rc < 0)
		pmu_log(p, "PV PMU: PMI injection failed: %s", strerror(-rc));
	else
		stat(p, PMU_STAT_PMI, 1);
	p->pmi_pending = p->throttled = false;
	p->pmi_cfg |= PV_PMU_PMI_MASK;
}

static void page_publish(struct pmu_vcpu *p)
{
	struct pv_pmu_page *pg = p->page;
	uint32_t n = p->vm->caps.nr_counters;

	if (!pg)
		return;
	/* Seqlock writer: odd, release; fields; even, release. */
	__atomic_store_n(&pg->seq, ++p->page_seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	pg->version = PV_PMU_VERSION;
	pg->size = sizeof(*pg);
	pg->nr_counters = n;
	pg->global_ctrl = p->global_ctrl;
	pg->global_status = p->status;
	pg->error = p->error;
	pg->updates = ++p->page_updates;
	pg->refresh_us = PMU_REFRESH_US;
	pg->flags = 0;
	for (uint32_t i = 0; i < n; i++) {
		pg->counter[i].value = p->ctr[i].value;
		pg->counter[i].config = p->ctr[i].cfg;
	}
	__atomic_store_n(&pg->seq, ++p->page_seq, __ATOMIC_RELEASE);
}

static void sync_all(struct pmu_vcpu *p)
{
	for (unsigned i = 0; i < p->vm->caps.nr_counters; i++)
		if (p->ctr[i].counting)
			ctr_sync(p, i);
}

void pmu_after_exit(struct pmu_vcpu *p)
{
	if (!p->nr_counting && !p->page && !p->pmi_pending)
		return;
	if (p->page) {
		sync_all(p);
	} else if (p->nr_hv_int) {
		for (unsigned i = 0; i < p->vm->caps.nr_counters; i++)
			if (p->ctr[i].counting && p->ctr[i].h < 0 && (p->ctr[i].cfg & PV_PMU_CFG_INT))
				ctr_sync(p, i);
	}
	pmi_deliver(p);
	page_publish(p);
}

void pmu_poll(struct pmu_vcpu *p)
{
	sync_all(p);
	pmi_deliver(p);
	page_publish(p);
}

bool pmu_wants_refresh(const struct pmu_vcpu *p)
{
	return (p->page && p->nr_host) || (p->pmi_pending && !(p->pmi_cfg & PV_PMU_PMI_MASK));
}

void pmu_vcpu_fini(struct pmu_vcpu *p)
{
	if (!p->vm)
		return;
	for (unsigned i = 0; i < PV_PMU_MAX_COUNTERS; i++)
		ctr_stop(p, i);
	p->page = NULL;
}

/* ---- MSR decode ---------------------------------------------------------------- */

static uint64_t counters_mask(const struct pmu_vcpu *p)
{
	return (1ULL << p->vm->caps.nr_counters) - 1;
}

static bool has_ack(const struct pmu_vcpu *p)
{
	return p->vm->caps.features & PV_PMU_FEAT_ACK;
}

/* Counter index of a RELOAD offset, or -1 (also without PV_PMU_FEAT_ACK). */
static int reload_index(const struct pmu_vcpu *p, uint32_t off)
{
	if (!has_ack(p) || off < OFF_RELOAD_FIRST || off - OFF_RELOAD_FIRST >= p->vm->caps.nr_counters)
		return -1;
	return (int)(off - OFF_RELOAD_FIRST);
}

/* Counter index of a CFG/CTR offset, or -1. */
static int ctr_index(const struct pmu_vcpu *p, uint32_t off, bool *is_cfg)
{
	uint32_t i;

	if (off < OFF_CTR_FIRST)
		return -1;
	i = (off - OFF_CTR_FIRST) / 2;
	if (i >= p->vm->caps.nr_counters)
		return -1;
	*is_cfg = (off - OFF_CTR_FIRST) % 2 == 0;
	return (int)i;
}

static int bitmap_read(const struct pmu_vcpu *p, uint32_t off, uint64_t *val)
{
	uint32_t kind = (off - OFF_BITMAP_FIRST) / 16, w = (off - OFF_BITMAP_FIRST) % 16;
	const struct pmu_caps *c = &p->vm->caps;

	if (w >= PMU_BITMAP_WORDS)
		return -1;
	*val = kind == 0 ? c->avail[w] : kind == 1 ? c->sample[w] : c->filter[w];
	return 0;
}

int pmu_msr_read(struct pmu_vcpu *p, uint32_t index, uint64_t *val)
{
	uint32_t off = MSR_OFF(index);
	bool is_cfg;
	int i;

	stat(p, PMU_STAT_MSR_READ, 1);
	switch (index) {
	case PV_PMU_MSR_GLOBAL_CTRL:
		*val = p->global_ctrl;
		break;
	case PV_PMU_MSR_GLOBAL_STATUS:
		sync_all(p);
		*val = p->status;
		break;
	case PV_PMU_MSR_PMI_ACK:
		if (!has_ack(p))
			return gp(p, index, false, 0,
				  "no such PV PMU register (PMI_ACK needs PV_PMU_FEAT_ACK)");
		*val = 0;
		return 0; /* write-only: reads 0, changes nothing */
	case PV_PMU_MSR_STATUS_CLEAR:
	case PV_PMU_MSR_NOP:
		*val = 0;
		return 0; /* changes nothing: no PMI or page work */
	case PV_PMU_MSR_PMI_CFG:
		*val = p->pmi_cfg;
		break;
	case PV_PMU_MSR_ERROR:
		*val = p->error;
		break;
	case PV_PMU_MSR_PAGE:
		*val = p->page_msr;
		break;
	default:
		if (off >= OFF_BITMAP_FIRST && off < OFF_BITMAP_END) {
			if (bitmap_read(p, off, val) < 0)
				return gp(p, index, false, 0, "no such event bitmap word");
			return 0;
		}
		if (off >= OFF_RELOAD_FIRST && off < OFF_BITMAP_FIRST) {
			i = reload_index(p, off);
			if (i < 0)
				return gp(p, index, false, 0, "no such PV PMU register");
			*val = p->ctr[i].reload;
			break;
		}
		i = ctr_index(p, off, &is_cfg);
		if (i < 0)
			return gp(p, index, false, 0, "no such PV PMU register");
		if (is_cfg) {
			*val = p->ctr[i].cfg;
		} else {
			ctr_sync(p, (unsigned)i);
			*val = p->ctr[i].value;
		}
		break;
	}
	pmi_deliver(p);
	page_publish(p);
	return 0;
}

/* Checks of a CFG value; NULL if it is acceptable. */
static const char *cfg_check(const struct pmu_vcpu *p, uint64_t cfg)
{
	uint32_t id = (uint32_t)(cfg & PV_PMU_CFG_EVENT_MASK);
	const struct pmu_caps *c = &p->vm->caps;
	bool filter, both;

	if (cfg & ~PV_PMU_CFG_VALID)
		return "reserved bits set in the counter config";
	if (!(cfg & PV_PMU_CFG_EN))
		return NULL;
	if (id >= PV_PMU_NR_EVENTS)
		return "event id out of range";
	if (!pmu_caps_available(c, id))
		return "event not available on this host";
	if ((cfg & PV_PMU_CFG_INT) && !((c->sample[id / 64] >> (id % 64)) & 1))
		return "event cannot interrupt on overflow";
	filter = (c->filter[id / 64] >> (id % 64)) & 1;
	both = (cfg & PV_PMU_CFG_USR) && (cfg & PV_PMU_CFG_OS);
	if (!filter && !both)
		return "event does not honour the user/kernel filter: set both USR and OS";
	return NULL;
}

static int write_cfg(struct pmu_vcpu *p, unsigned i, uint64_t val)
{
	const char *why = cfg_check(p, val);

	if (why)
		return gp(p, PV_PMU_MSR_CFG(i), true, val, why);
	ctr_stop(p, i);
	p->ctr[i].cfg = val;
	ctr_update(p, i, false);
	return 0;
}

/* A CTR or RELOAD value: a 48-bit number, possibly sign-extended. */
static bool ctr_value_ok(uint64_t val)
{
	uint64_t high = val >> PV_PMU_COUNTER_WIDTH;

	return high == 0 || high == (~0ULL >> PV_PMU_COUNTER_WIDTH);
}

/* Counter i counts on from `value` (modulo 2^48); the host's interrupt moves to the new wrap. */
static void ctr_set(struct pmu_vcpu *p, unsigned i, uint64_t value)
{
	struct pmu_counter *c = &p->ctr[i];

	c->value = value & PV_PMU_COUNTER_MASK;
	if (c->counting && host_now(p, c, &c->base) == 0 && c->h >= 0 && (c->cfg & PV_PMU_CFG_INT))
		p->ops->set_period(p->ctx, c->h, arm_period(p, c));
}

static int write_ctr(struct pmu_vcpu *p, unsigned i, uint64_t val)
{
	if (!ctr_value_ok(val))
		return gp(p, PV_PMU_MSR_CTR(i), true, val,
			  "counter value is not a sign-extended 48-bit value");
	ctr_set(p, i, val);
	return 0;
}

static int write_reload(struct pmu_vcpu *p, uint32_t index, uint64_t val)
{
	int i = reload_index(p, MSR_OFF(index));

	if (i < 0)
		return gp(p, index, true, val, "no such PV PMU register");
	if (!ctr_value_ok(val))
		return gp(p, index, true, val, "reload value is not a sign-extended 48-bit value");
	p->ctr[i].reload = val & PV_PMU_COUNTER_MASK;
	return 0;
}

/* PMI_ACK: STATUS_CLEAR, the reloads, and PMI_CFG without MASK, in one write. */
static int write_ack(struct pmu_vcpu *p, uint64_t val)
{
	if (!has_ack(p))
		return gp(p, PV_PMU_MSR_PMI_ACK, true, val,
			  "no such PV PMU register (PMI_ACK needs PV_PMU_FEAT_ACK)");
	if (val & ~(counters_mask(p) | PV_PMU_STATUS_THROTTLED))
		return gp(p, PV_PMU_MSR_PMI_ACK, true, val, "acknowledging a status bit that does not exist");
	/* Bring the counters up to date first: an overflow after this point sets its bit again. */
	sync_all(p);
	p->status &= ~val;
	for (unsigned i = 0; i < p->vm->caps.nr_counters; i++)
		if ((val >> i & 1) && p->ctr[i].reload)
			ctr_set(p, i, p->ctr[i].reload);
	p->pmi_cfg &= ~PV_PMU_PMI_MASK;
	return 0;
}

static int write_page(struct pmu_vcpu *p, uint64_t val)
{
	void *hva = NULL;

	if (val & ~(PV_PMU_PAGE_ADDR_MASK | PV_PMU_PAGE_ENABLE))
		return gp(p, PV_PMU_MSR_PAGE, true, val, "reserved bits set in the page register");
	if (val & PV_PMU_PAGE_ENABLE) {
		hva = p->ops->page(p->ctx, val & PV_PMU_PAGE_ADDR_MASK);
		if (!hva)
			return gp(p, PV_PMU_MSR_PAGE, true, val, "counter page is not in guest RAM");
	}
	p->page_msr = val;
	p->page = hva;
	p->page_seq = 0;
	if (hva)
		memset(hva, 0, sizeof(struct pv_pmu_page));
	return 0;
}

static int write_global(struct pmu_vcpu *p, uint32_t index, uint64_t val)
{
	switch (index) {
	case PV_PMU_MSR_GLOBAL_CTRL:
		if (val & ~counters_mask(p))
			return gp(p, index, true, val, "enable bit of a counter that does not exist");
		p->global_ctrl = val;
		for (unsigned i = 0; i < p->vm->caps.nr_counters; i++)
			ctr_update(p, i, false);
		return 0;
	case PV_PMU_MSR_STATUS_CLEAR:
		if (val & ~(counters_mask(p) | PV_PMU_STATUS_THROTTLED))
			return gp(p, index, true, val, "clearing a status bit that does not exist");
		p->status &= ~val;
		return 0;
	case PV_PMU_MSR_PMI_CFG:
		if (val & ~PV_PMU_PMI_VALID)
			return gp(p, index, true, val, "reserved bits set in the PMI config");
		if ((val & PV_PMU_PMI_MODE_VECTOR) && (val & PV_PMU_PMI_VECTOR_MASK) < 0x20)
			return gp(p, index, true, val, "PMI vector below 0x20");
		p->pmi_cfg = val;
		return 0;
	case PV_PMU_MSR_PAGE:
		return write_page(p, val);
	default:
		return gp(p, index, true, val, "register is read-only");
	}
}

int pmu_msr_write(struct pmu_vcpu *p, uint32_t index, uint64_t val)
{
	uint32_t off = MSR_OFF(index);
	bool is_cfg;
	int i, rc;

	stat(p, PMU_STAT_MSR_WRITE, 1);
	if (index == PV_PMU_MSR_NOP)
		return 0;
	if (index == PV_PMU_MSR_PMI_ACK) {
		rc = write_ack(p, val);
	} else if (off >= OFF_RELOAD_FIRST && off < OFF_BITMAP_FIRST) {
		rc = write_reload(p, index, val);
	} else if (off < OFF_CTR_FIRST || off >= OFF_BITMAP_FIRST) {
		if (off > MSR_OFF(PV_PMU_MSR_NOP) && off < OFF_CTR_FIRST)
			return gp(p, index, true, val, "no such PV PMU register");
		rc = off < OFF_CTR_FIRST
			     ? write_global(p, index, val)
			     : gp(p, index, true, val,
				  off < OFF_BITMAP_END ? "register is read-only" : "no such PV PMU register");
	} else {
		i = ctr_index(p, off, &is_cfg);
		if (i < 0)
			return gp(p, index, true, val, "no such PV PMU register");
		rc = is_cfg ? write_cfg(p, (unsigned)i, val) : write_ctr(p, (unsigned)i, val);
	}
	if (rc)
		return rc;
	pmi_deliver(p);
	page_publish(p);
	return 0;
}

/* ---- snapshot and restore ------------------------------------------------------ */

void pmu_vcpu_save(struct pmu_vcpu *p, struct pmu_vcpu_state *s)
{
	memset(s, 0, sizeof(*s));
	sync_all(p);
	s->global_ctrl = p->global_ctrl;
	s->status = p->status;
	s->pmi_cfg = p->pmi_cfg;
	s->page = p->page_msr;
	for (unsigned i = 0; i < PMU_NR_COUNTERS; i++) {
		s->cfg[i] = p->ctr[i].cfg;
		s->value[i] = p->ctr[i].value;
		s->reload[i] = p->ctr[i].reload;
	}
	s->page_seq = p->page_seq;
	s->page_updates = p->page_updates;
	s->pmi_pending = p->pmi_pending;
	s->throttled = p->throttled;
}

int pmu_vcpu_state_check(const struct pmu_caps *c, const struct pmu_vcpu_state *s, const char **why)
{
	struct pmu_vm vm = { .caps = *c };
	struct pmu_vcpu p = { .vm = &vm };
	uint64_t ctrs = c->nr_counters >= 64 ? ~0ULL : (1ULL << c->nr_counters) - 1;

	*why = NULL;
	if (c->nr_counters > PMU_NR_COUNTERS)
		*why = "more counters than this perfvisor keeps";
	else if (s->global_ctrl & ~ctrs)
		*why = "GLOBAL_CTRL enables a counter that does not exist";
	else if (s->status & ~(ctrs | PV_PMU_STATUS_THROTTLED))
		*why = "GLOBAL_STATUS has a bit that does not exist";
	else if ((s->pmi_cfg & ~PV_PMU_PMI_VALID) ||
		 ((s->pmi_cfg & PV_PMU_PMI_MODE_VECTOR) && (s->pmi_cfg & PV_PMU_PMI_VECTOR_MASK) < 0x20))
		*why = "PMI_CFG is not a valid configuration";
	else if (s->page & ~(PV_PMU_PAGE_ADDR_MASK | PV_PMU_PAGE_ENABLE))
		*why = "PAGE has reserved bits set";
	else if (s->page_seq % 2)
		*why = "the counter page's sequence count is odd (saved mid-update)";
	for (unsigned i = 0; i < PMU_NR_COUNTERS && !*why; i++) {
		if (i >= c->nr_counters && (s->cfg[i] || s->value[i]))
			*why = "a counter beyond the advertised ones is configured";
		else if (s->value[i] & ~PV_PMU_COUNTER_MASK)
			*why = "a counter value is wider than the counter";
		else if (s->reload[i] & ~PV_PMU_COUNTER_MASK)
			*why = "a reload value is wider than the counter";
		else if (s->reload[i] && (i >= c->nr_counters || !(c->features & PV_PMU_FEAT_ACK)))
			*why = "a reload value without PV_PMU_FEAT_ACK or beyond the advertised counters";
		else if (i < c->nr_counters)
			*why = cfg_check(&p, s->cfg[i]);
	}
	return *why ? -EINVAL : 0;
}

int pmu_vcpu_restore(struct pmu_vcpu *p, const struct pmu_vcpu_state *s, const char **why)
{
	int rc = pmu_vcpu_state_check(&p->vm->caps, s, why);

	if (rc)
		return rc;
	/*
	 * The guest's own write path, in an order that opens each host counter
	 * once, already at its restored value: counters first with GLOBAL_CTRL
	 * clear, then GLOBAL_CTRL. PMI_CFG keeps MASK as saved.
	 */
	for (unsigned i = 0; i < p->vm->caps.nr_counters; i++) {
		p->ctr[i].cfg = s->cfg[i];
		p->ctr[i].value = s->value[i];
		p->ctr[i].reload = s->reload[i];
	}
	p->pmi_cfg = s->pmi_cfg;
	if (s->page & PV_PMU_PAGE_ENABLE) {
		p->page = p->ops->page(p->ctx, s->page & PV_PMU_PAGE_ADDR_MASK);
		if (!p->page) {
			*why = "the counter page is not in guest RAM";
			return -EINVAL;
		}
	}
	p->page_msr = s->page;
	p->page_seq = (uint32_t)s->page_seq;
	p->page_updates = s->page_updates;
	p->global_ctrl = s->global_ctrl;
	for (unsigned i = 0; i < p->vm->caps.nr_counters; i++)
		ctr_update(p, i, false);
	/* Host-initiated only: registers and a flag the guest cannot write. */
	p->status = s->status;
	p->pmi_pending = s->pmi_pending;
	p->throttled = s->throttled;
	pmi_deliver(p);
	page_publish(p);
	return 0;
}

bool pmu_caps_equal(const struct pmu_caps *a, const struct pmu_caps *b, const char **why)
{
	*why = NULL;
	if (a->nr_counters != b->nr_counters)
		*why = "number of counters";
	else if (a->features != b->features)
		*why = "feature bits";
	else if (a->min_period != b->min_period || a->min_period_ns != b->min_period_ns ||
		 a->max_pmis_per_s != b->max_pmis_per_s || a->host_budget != b->host_budget)
		*why = "limits (minimum periods, PMI rate, host counter budget)";
	else if (memcmp(a->avail, b->avail, sizeof(a->avail)))
		*why = "available events (AVAIL bitmap)";
	else if (memcmp(a->sample, b->sample, sizeof(a->sample)) ||
		 memcmp(a->filter, b->filter, sizeof(a->filter)))
		*why = "sampling or filter bitmaps";
	return *why == NULL;
}
