// SPDX-License-Identifier: MIT
/*
 * Test device: decodes the ucalls of include/perfvisor/testdev.h. The guest
 * writes the address of a struct pv_ucall; the device copies it out of guest
 * memory once, checks it, and prints, logs, or stops the VM. A malformed
 * request is counted and logged (rate-limited); the guest goes on.
 */
#include "devices/devices_internal.h"
#include "perfvisor/testdev.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One rate limiter per kind of line, so a flood of one cannot hide another. */
struct testdev_log {
	struct ratelimit rl;
	uint64_t reported; /* rl.suppressed already announced in a line */
};

struct testdev {
	struct dev_host host;
	struct testdev_log bad_log, sync_log, assert_log;
	struct testdev_counters c; /* each field accessed atomically */
};

#define TESTDEV_RATELIMIT RATELIMIT_INIT(1000000000ULL, 10)

int testdev_create(struct testdev **out, const struct dev_host *host)
{
	struct testdev *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (host)
		t->host = *host;
	t->bad_log.rl = (struct ratelimit)TESTDEV_RATELIMIT;
	t->sync_log.rl = (struct ratelimit)TESTDEV_RATELIMIT;
	t->assert_log.rl = (struct ratelimit)TESTDEV_RATELIMIT;
	*out = t;
	return 0;
}

void testdev_destroy(struct testdev *t)
{
	free(t);
}

void testdev_get_counters(struct testdev *t, struct testdev_counters *out)
{
	out->prints = __atomic_load_n(&t->c.prints, __ATOMIC_RELAXED);
	out->syncs = __atomic_load_n(&t->c.syncs, __ATOMIC_RELAXED);
	out->asserts = __atomic_load_n(&t->c.asserts, __ATOMIC_RELAXED);
	out->dones = __atomic_load_n(&t->c.dones, __ATOMIC_RELAXED);
	out->bad_requests = __atomic_load_n(&t->c.bad_requests, __ATOMIC_RELAXED);
}

void testdev_set_counters(struct testdev *t, const struct testdev_counters *in)
{
	__atomic_store_n(&t->c.prints, in->prints, __ATOMIC_RELAXED);
	__atomic_store_n(&t->c.syncs, in->syncs, __ATOMIC_RELAXED);
	__atomic_store_n(&t->c.asserts, in->asserts, __ATOMIC_RELAXED);
	__atomic_store_n(&t->c.dones, in->dones, __ATOMIC_RELAXED);
	__atomic_store_n(&t->c.bad_requests, in->bad_requests, __ATOMIC_RELAXED);
}

static void testdev_count(uint64_t *counter)
{
	__atomic_add_fetch(counter, 1, __ATOMIC_RELAXED);
}

/* Claim the lines suppressed since the last announcement (any thread). */
static uint64_t testdev_claim_suppressed(struct testdev_log *l)
{
	uint64_t total = __atomic_load_n(&l->rl.suppressed, __ATOMIC_RELAXED);
	uint64_t prev = __atomic_load_n(&l->reported, __ATOMIC_RELAXED);

	do {
		if (total <= prev)
			return 0;
	} while (!__atomic_compare_exchange_n(&l->reported, &prev, total, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return total - prev;
}

__attribute__((format(printf, 3, 4))) static void testdev_logf(struct testdev *t, struct testdev_log *l,
							       const char *fmt, ...)
{
	char msg[640];
	uint64_t dropped;
	va_list ap;
	int n;

	if (!ratelimit_allow(&l->rl))
		return;
	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dropped = testdev_claim_suppressed(l);
	if (dropped && n >= 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, " (%" PRIu64 " similar lines suppressed)",
			 dropped);
	dev_log(&t->host, msg);
}

/* Guest strings go into the operator's log: keep terminal controls (incl. 8-bit) out. */
static void testdev_sanitize(char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f)
			*s = '?';
	}
}

static void testdev_print(struct testdev *t, const struct pv_ucall *uc)
{
	testdev_count(&t->c.prints);
	dev_console(&t->host, uc->text, strlen(uc->text));
}

static void testdev_sync(struct testdev *t, const struct pv_ucall *uc)
{
	testdev_count(&t->c.syncs);
	testdev_logf(t, &t->sync_log,
		     "guest sync: stage %" PRIu32 " values 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64
		     " 0x%" PRIx64,
		     uc->line, uc->args[0], uc->args[1], uc->args[2], uc->args[3]);
}

static void testdev_assert(struct testdev *t, struct pv_ucall *uc)
{
	testdev_count(&t->c.asserts);
	testdev_sanitize(uc->text);
	testdev_sanitize(uc->file);
	testdev_logf(t, &t->assert_log,
		     "guest assertion failed: %s at %s:%" PRIu32 " (values 0x%" PRIx64 ", 0x%" PRIx64
		     ", 0x%" PRIx64 ", 0x%" PRIx64 ")",
		     uc->text, uc->file, uc->line, uc->args[0], uc->args[1], uc->args[2], uc->args[3]);
	dev_stop(&t->host, PV_STATUS_ASSERT, "guest assertion failed");
}

static void testdev_done(struct testdev *t, const struct pv_ucall *uc)
{
	testdev_count(&t->c.dones);
	dev_stop(&t->host, (int)(uc->status & 0xff), "guest done");
}

void testdev_write(struct testdev *t, uint32_t value, unsigned len)
{
	struct pv_ucall uc;
	const void *hva;

	if (len != 4) {
		testdev_count(&t->c.bad_requests);
		testdev_logf(t, &t->bad_log,
			     "testdev: %u-byte write ignored (expected a 4-byte ucall address)", len);
		return;
	}
	hva = dev_gpa_to_hva(&t->host, value, sizeof(uc));
	if (!hva) {
		testdev_count(&t->c.bad_requests);
		testdev_logf(t, &t->bad_log, "testdev: request at gpa 0x%" PRIx32 " outside guest memory",
			     value);
		return;
	}
	/* Exactly one read of guest memory: the guest may change it meanwhile. */
	memcpy(&uc, hva, sizeof(uc));
	uc.file[sizeof(uc.file) - 1] = '\0';
	uc.text[sizeof(uc.text) - 1] = '\0';
	if (uc.magic != PV_UCALL_MAGIC) {
		testdev_count(&t->c.bad_requests);
		testdev_logf(t, &t->bad_log,
			     "testdev: bad magic 0x%08" PRIx32 " in request at gpa 0x%" PRIx32, uc.magic,
			     value);
		return;
	}
	switch (uc.cmd) {
	case PV_UCALL_PRINT:
		testdev_print(t, &uc);
		break;
	case PV_UCALL_SYNC:
		testdev_sync(t, &uc);
		break;
	case PV_UCALL_ASSERT:
		testdev_assert(t, &uc);
		break;
	case PV_UCALL_DONE:
		testdev_done(t, &uc);
		break;
	default:
		testdev_count(&t->c.bad_requests);
		testdev_logf(t, &t->bad_log,
			     "testdev: unknown command %" PRIu32 " in request at gpa 0x%" PRIx32, uc.cmd,
			     value);
		break;
	}
}

/* ---- the declaration ---------------------------------------------------------------- */

static int testdev_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)cfg;
	return testdev_create((struct testdev **)dev, host);
}

static void testdev_dev_destroy(void *dev)
{
	testdev_destroy(dev);
}

static int testdev_io(void *dev, struct dev_io *io)
{
	if (io->is_write)
		testdev_write(dev, dev_io_value(io), io->len);
	else
		dev_io_ones(io);
	return 0;
}

static void testdev_describe(const void *state, char *buf, size_t len)
{
	const struct testdev_counters *c = state;

	snprintf(buf, len, "test device (%" PRIu64 " prints)", c->prints);
}

static void testdev_save(void *dev, void *state)
{
	testdev_get_counters(dev, state);
}

static int testdev_load(void *dev, const void *state)
{
	testdev_set_counters(dev, state);
	return 0;
}

#define TF(prop, member) SNAP_FIELD(struct testdev_counters, prop, SNAP_F_U64, member, 0)

static const struct snap_field testdev_fields[] = {
	TF("prints", prints),
	TF("syncs", syncs),
	TF("asserts", asserts),
	TF("dones", dones),
	TF("bad-requests", bad_requests),
};

static const struct snap_part testdev_part = {
	.name = "testdev",
	.size = sizeof(struct testdev_counters),
	.fields = testdev_fields,
	.nr_fields = sizeof(testdev_fields) / sizeof(testdev_fields[0]),
	.describe = testdev_describe,
};

const struct dev_desc dev_testdev = {
	.name = "testdev",
	.pio = { { PV_TESTDEV_PORT, 4, "testdev" } },
	.nr_pio = 1,
	.irq = -1,
	.create = testdev_dev_create,
	.destroy = testdev_dev_destroy,
	.io = testdev_io,
	.state = &testdev_part,
	.save = testdev_save,
	.load = testdev_load,
};
