// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the live-migration stream's receiving side
 * (snapfile/migstream.c), as a hostile source would drive it. The input is
 * two bytes of setup, then records as they come over the connection: a
 * 24-byte header, then its payload. Each header is checked with the
 * number due (mig_hdr_check), each payload against its hash
 * (mig_payload_check), and what passes is fed to the destination's state
 * machine (mig_rx_feed), with a small RAM given after HELLO as
 * vmm/incoming.c does. Random checksums would stop nearly every input at
 * its first record, so one bit of the setup makes the target put right
 * the hash (and another the magic, flags and number) before the checks,
 * and the state machine's range, length and order rules are reached too.
 *
 * A reference model of the rules says whether each record must be
 * applied or refused, and a shadow copy of RAM what the memory must then
 * hold: a refused record changes nothing, an applied one counts its pages
 * and writes exactly its range, the phase only moves forward, and after
 * the STATE record the state points at its payload. ASan catches any
 * access outside RAM or a payload (each is malloc'ed to its exact size).
 *
 * Setup: byte 0 bit 0 recomputes each header's hash, bit 1 repairs its
 * magic, flags and number, bit 2 never gives the machine its memory (so
 * memory records must be refused); byte 1 is the RAM's size in pages,
 * less one, modulo 64.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapfile/snapfile.h"

#define RAM_PAGES 64U
#define STATE_MAX (1U << 20)
#define FILL 0xa5

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Would the destination apply this record (the rules of snapfile.h, written out apart)? */
static int model_accepts(const struct mig_rx *rx, const struct mig_hdr *h, const uint8_t *p)
{
	uint64_t gpa, n;

	switch (rx->phase) {
	case MIG_RX_HELLO:
		return h->type == MIG_HELLO;
	case MIG_RX_MEMORY:
		if (h->type == MIG_STATE)
			return h->len > 0;
		if (h->type != MIG_PAGES && h->type != MIG_ZERO)
			return 0;
		if (!rx->mem || h->len < MIG_PAGES_HDR)
			return 0;
		memcpy(&gpa, p, 8);
		memcpy(&n, p + 8, 8);
		if (gpa % MIG_PAGE || n == 0 || (h->type == MIG_PAGES && n > MIG_MAX_RUN))
			return 0;
		if ((unsigned __int128)gpa + (unsigned __int128)n * MIG_PAGE > rx->mem_size)
			return 0;
		if (h->type == MIG_PAGES)
			return h->len == MIG_PAGES_HDR + n * MIG_PAGE;
		return h->len == MIG_PAGES_HDR;
	case MIG_RX_DONE:
		return 0;
	}
	abort(); /* no other phase */
}

/* One record that passed both checks: fed, and its effect compared with the model's. */
static void feed(struct mig_rx *rx, const struct mig_hdr *h, const uint8_t *p, uint8_t *shadow, uint64_t *fed)
{
	struct mig_rx before = *rx;
	struct errbuf err = { 0 };
	int accept = model_accepts(rx, h, p), rc;
	uint64_t gpa = 0, n = 0;

	if ((h->type == MIG_PAGES || h->type == MIG_ZERO) && h->len >= MIG_PAGES_HDR) {
		memcpy(&gpa, p, 8);
		memcpy(&n, p + 8, 8);
		*fed = *fed + n < *fed ? UINT64_MAX : *fed + n;
	}
	rc = mig_rx_feed(rx, h, p, &err);
	if (rc != 0 && rc != -EPROTO && rc != -ERANGE)
		abort(); /* not one of the two refusals */
	if ((rc == 0) != accept)
		abort(); /* applied what the rules refuse, or refused what they allow */
	if (rc) {
		if (!err.msg[0] || memcmp(&before, rx, sizeof(before)))
			abort(); /* a refusal says why and changes nothing */
		return;
	}
	if (rx->records != before.records + 1 || rx->phase < before.phase || rx->mem != before.mem ||
	    rx->mem_size != before.mem_size)
		abort();
	if (h->type == MIG_PAGES) {
		if (rx->pages != before.pages + n || rx->zero_pages != before.zero_pages)
			abort();
		memcpy(shadow + gpa, p + MIG_PAGES_HDR, n * MIG_PAGE);
	} else if (h->type == MIG_ZERO) {
		if (rx->zero_pages != before.zero_pages + n || rx->pages != before.pages)
			abort();
		memset(shadow + gpa, 0, n * MIG_PAGE);
	} else if (rx->pages != before.pages || rx->zero_pages != before.zero_pages) {
		abort();
	}
	if (h->type == MIG_HELLO && rx->phase != MIG_RX_MEMORY)
		abort();
	if (h->type == MIG_STATE && (rx->phase != MIG_RX_DONE || rx->state != p || rx->state_len != h->len))
		abort(); /* the state is the STATE record's payload, all of it */
	if (rx->pages + rx->zero_pages < rx->pages || rx->pages + rx->zero_pages > *fed)
		abort(); /* more pages counted than were sent */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mig_rx rx = { 0 };
	struct mig_hdr h;
	struct errbuf err;
	uint8_t *ram, *shadow, *state = NULL, *p;
	uint64_t fed = 0, ram_size;
	uint32_t seq = 0, state_len = 0;
	bool fix_hash, repair, no_memory;
	size_t off = 2;

	if (size < 2)
		return 0;
	fix_hash = data[0] & 1;
	repair = data[0] & 2;
	no_memory = data[0] & 4;
	ram_size = (uint64_t)(data[1] % RAM_PAGES + 1) * MIG_PAGE;
	ram = malloc(ram_size);
	shadow = malloc(ram_size);
	if (!ram || !shadow)
		abort();
	memset(ram, FILL, ram_size);
	memset(shadow, FILL, ram_size);
	while (size - off >= sizeof(h)) {
		memcpy(&h, data + off, sizeof(h));
		off += sizeof(h);
		if (repair) {
			h.magic = MIG_MAGIC;
			h.flags = 0;
			h.seq = seq;
		}
		err.msg[0] = '\0';
		if (mig_hdr_check(&h, seq, STATE_MAX, &err)) {
			if (!err.msg[0])
				abort();
			break;
		}
		if (!mig_type_name(h.type)[0] || h.len > size - off)
			break;
		/* The payload as mig_recv gives it: its exact bytes (NULL when empty). */
		p = h.len ? malloc(h.len) : NULL;
		if (h.len && !p)
			abort();
		if (h.len)
			memcpy(p, data + off, h.len);
		off += h.len;
		/* Hashed in two pieces anywhere, the same hash. */
		if (mig_hash2(h.type, h.seq, p, h.len / 3, h.len ? p + h.len / 3 : NULL, h.len - h.len / 3) !=
		    mig_hash(h.type, h.seq, p, h.len))
			abort();
		if (fix_hash)
			h.hash = mig_hash(h.type, h.seq, p, h.len);
		err.msg[0] = '\0';
		if (mig_payload_check(&h, p, &err)) {
			if (fix_hash || !err.msg[0])
				abort();
			free(p);
			break;
		}
		seq++;
		feed(&rx, &h, p, shadow, &fed);
		if (h.type == MIG_HELLO && rx.phase == MIG_RX_MEMORY && !rx.mem && !no_memory)
			mig_rx_set_memory(&rx, ram, ram_size); /* the machine was accepted */
		if (memcmp(ram, shadow, ram_size))
			abort(); /* RAM holds what the applied records wrote, nothing else */
		if (rx.phase == MIG_RX_DONE && !state) {
			state = p; /* rx.state points into it: kept to the end */
			state_len = h.len;
		} else {
			free(p);
		}
	}
	if (rx.phase == MIG_RX_DONE && (rx.state != state || rx.state_len != state_len || !state_len))
		abort();
	if (rx.phase != MIG_RX_DONE && (rx.state || rx.state_len))
		abort();
	free(state);
	free(shadow);
	free(ram);
	return 0;
}
