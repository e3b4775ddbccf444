// SPDX-License-Identifier: MIT
/*
 * ACPI fixed hardware in I/O space, as the FADT announces it (ports in
 * include/perfvisor/legacy_boot.h): PM1a status and enable, PM1a control
 * (SCI_EN always set: there is no SMI_CMD, ACPI is always on; SLP_EN with
 * \_S5's SLP_TYP powers the VM off, status 0), the PM timer, and the reset
 * register (its value resets the VM, status 0). Nothing raises the SCI.
 */
#include "devices/devices_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "perfvisor/legacy_boot.h"
#include "util/util.h"

#define OFF_STS 0x0 /* PM1 status: write 1 to clear */
#define OFF_EN 0x2  /* PM1 enable */
#define OFF_CNT 0x4 /* PM1 control */
#define OFF_TMR 0x8 /* PM timer, read-only */
#define OFF_RESET (PV_LB_ACPI_RESET - PV_LB_ACPI_PM_BASE)

#define CNT_SCI_EN 0x0001
#define CNT_BM_RLD 0x0002
#define CNT_SLP_TYP 0x1c00 /* bits 10-12 */
#define CNT_SLP_EN 0x2000  /* write-only: enter the sleep state SLP_TYP says */
#define CNT_KEPT (CNT_SCI_EN | CNT_BM_RLD | CNT_SLP_TYP)

#define PM_TIMER_HZ 3579545ULL

struct acpipm {
	pthread_mutex_t lock;
	struct dev_host host;
	struct acpipm_state st;
	struct ratelimit rl;	 /* the guest's unsupported sleep requests */
	uint64_t (*clock)(void); /* monotonic ns: the PM timer's time base */
};

int acpipm_create(struct acpipm **out, const struct dev_host *host)
{
	struct acpipm *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	if (pthread_mutex_init(&p->lock, NULL)) {
		free(p);
		return -ENOMEM;
	}
	if (host)
		p->host = *host;
	p->st.cnt = CNT_SCI_EN;
	p->rl = (struct ratelimit)RATELIMIT_INIT(1000000000ULL, 5);
	p->clock = util_now_ns;
	*out = p;
	return 0;
}

void acpipm_destroy(struct acpipm *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p);
}

uint32_t acpipm_timer(struct acpipm *p)
{
	uint64_t ns = p->clock();

	/* ticks = ns * 3.579545 MHz, in two steps so that no product overflows */
	return (uint32_t)((ns / 1000000000ULL * PM_TIMER_HZ +
			   ns % 1000000000ULL * PM_TIMER_HZ / 1000000000ULL) &
			  0xffffff);
}

static uint8_t reg_read(struct acpipm *p, unsigned off, uint32_t tmr)
{
	switch (off) {
	case OFF_STS:
	case OFF_STS + 1:
		return (uint8_t)(p->st.sts >> 8 * (off - OFF_STS));
	case OFF_EN:
	case OFF_EN + 1:
		return (uint8_t)(p->st.en >> 8 * (off - OFF_EN));
	case OFF_CNT:
	case OFF_CNT + 1:
		return (uint8_t)(p->st.cnt >> 8 * (off - OFF_CNT));
	case OFF_TMR:
	case OFF_TMR + 1:
	case OFF_TMR + 2:
	case OFF_TMR + 3:
		return (uint8_t)(tmr >> 8 * (off - OFF_TMR));
	default: /* the reset register and the gaps read 0 */
		return 0;
	}
}

static void sleep_request(struct acpipm *p, unsigned typ)
{
	char msg[96];

	if (typ == PV_LB_ACPI_SLP_TYP_S5) {
		dev_stop(&p->host, 0, "guest power-off (ACPI S5)");
		return;
	}
	if (ratelimit_allow(&p->rl)) {
		snprintf(msg, sizeof(msg),
			 "ACPI: the guest asked for sleep type %u, which is not offered; ignored", typ);
		dev_log(&p->host, msg);
	}
}

static void reg_write(struct acpipm *p, unsigned off, uint8_t v)
{
	uint16_t cnt;

	switch (off) {
	case OFF_STS:
	case OFF_STS + 1:
		p->st.sts &= (uint16_t) ~(v << 8 * (off - OFF_STS));
		break;
	case OFF_EN:
	case OFF_EN + 1:
		p->st.en = (uint16_t)((p->st.en & ~(0xff << 8 * (off - OFF_EN))) | v << 8 * (off - OFF_EN));
		break;
	case OFF_CNT:
	case OFF_CNT + 1:
		cnt = (uint16_t)((p->st.cnt & ~(0xff << 8 * (off - OFF_CNT))) | v << 8 * (off - OFF_CNT));
		p->st.cnt = (uint16_t)((cnt & CNT_KEPT) | CNT_SCI_EN);
		if (cnt & CNT_SLP_EN)
			sleep_request(p, (cnt & CNT_SLP_TYP) >> 10);
		break;
	case OFF_RESET:
		if (v == PV_LB_ACPI_RESET_VALUE)
			dev_stop(&p->host, 0, "guest reset (ACPI reset register)");
		break;
	default: /* the timer is read-only; the gaps hold nothing */
		break;
	}
}

void acpipm_access(struct acpipm *p, unsigned offset, uint8_t *data, unsigned len, bool is_write)
{
	uint32_t tmr = is_write ? 0 : acpipm_timer(p);

	pthread_mutex_lock(&p->lock);
	for (unsigned k = 0; k < len; k++) {
		unsigned off = offset + k;

		if (is_write)
			reg_write(p, off, data[k]);
		else
			data[k] = off < PV_LB_ACPI_PM_LEN ? reg_read(p, off, tmr) : 0;
	}
	pthread_mutex_unlock(&p->lock);
}

void acpipm_save(struct acpipm *p, struct acpipm_state *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	pthread_mutex_unlock(&p->lock);
}

bool acpipm_state_valid(const struct acpipm_state *st)
{
	return (st->cnt & ~CNT_KEPT) == 0 && (st->cnt & CNT_SCI_EN);
}

int acpipm_restore(struct acpipm *p, const struct acpipm_state *st)
{
	if (!acpipm_state_valid(st))
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	p->st = *st;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

/* ---- the declaration ---------------------------------------------------------------- */

static int acpipm_dev_create(void **dev, const struct dev_host *host, const struct dev_config *cfg)
{
	(void)cfg;
	return acpipm_create((struct acpipm **)dev, host);
}

static void acpipm_dev_destroy(void *dev)
{
	acpipm_destroy(dev);
}

static int acpipm_io(void *dev, struct dev_io *io)
{
	acpipm_access(dev, (unsigned)io->offset, io->data, io->len, io->is_write);
	return 0;
}

static const char *acpipm_check(const struct snap *s, const void *state, const char **prop)
{
	(void)s;
	*prop = "pm1-control";
	return acpipm_state_valid(state) ? NULL : "bits PM1 control cannot hold, or SCI_EN clear";
}

static void acpipm_dev_save(void *dev, void *state)
{
	acpipm_save(dev, state);
}

static int acpipm_dev_load(void *dev, const void *state)
{
	return acpipm_restore(dev, state);
}

static const struct snap_field acpipm_fields[] = {
	SNAP_FIELD(struct acpipm_state, "pm1-status", SNAP_F_U16, sts, 0xffff),
	SNAP_FIELD(struct acpipm_state, "pm1-enable", SNAP_F_U16, en, 0xffff),
	SNAP_FIELD(struct acpipm_state, "pm1-control", SNAP_F_U16, cnt, 0xffff),
};

/* Came within format 1: a snapshot without it restores the reset state. */
static const struct snap_part acpipm_part = {
	.name = "acpi_pm@600",
	.size = sizeof(struct acpipm_state),
	.fields = acpipm_fields,
	.nr_fields = sizeof(acpipm_fields) / sizeof(acpipm_fields[0]),
	.flags = SNAP_PART_OPTIONAL,
	.check = acpipm_check,
};

const struct dev_desc dev_acpipm = {
	.name = "acpi_pm",
	.pio = { { PV_LB_ACPI_PM_BASE, PV_LB_ACPI_PM_LEN, "acpi_pm" } },
	.nr_pio = 1,
	.irq = -1,
	.create = acpipm_dev_create,
	.destroy = acpipm_dev_destroy,
	.io = acpipm_io,
	.state = &acpipm_part,
	.save = acpipm_dev_save,
	.load = acpipm_dev_load,
};
