// SPDX-License-Identifier: MIT
/*
 * The live-migration stream's records (snapfile.h, docs/migration.md):
 * headers made and checked, payloads hashed, and the destination's
 * receiving state machine, which writes guest memory only inside the RAM
 * it was given. Pure: fuzzed by fuzz/migstream.c.
 */
#include "snapfile.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

static const char *const type_names[MIG_TYPE_END] = {
	[MIG_HELLO] = "HELLO", [MIG_ACCEPT] = "ACCEPT",	  [MIG_PAGES] = "PAGES",
	[MIG_ZERO] = "ZERO",   [MIG_STATE] = "STATE",	  [MIG_READY] = "READY",
	[MIG_GO] = "GO",       [MIG_RUNNING] = "RUNNING", [MIG_ABORT] = "ABORT",
};

const char *mig_type_name(unsigned type)
{
	return type > 0 && type < MIG_TYPE_END ? type_names[type] : "unknown";
}

uint64_t mig_hash2(unsigned type, uint32_t seq, const void *a, uint32_t alen, const void *b, uint32_t blen)
{
	uint64_t seed = (uint64_t)type << 56 ^ (uint64_t)seq << 24 ^ ((uint64_t)alen + blen), h;
	XXH3_state_t st;

	/* A state on the stack must be initialized: reset_withSeed trusts a stale seed field (xxhash.h). */
	XXH3_INITSTATE(&st);
	XXH3_64bits_reset_withSeed(&st, seed);
	if (alen)
		XXH3_64bits_update(&st, a, alen);
	if (blen)
		XXH3_64bits_update(&st, b, blen);
	h = XXH3_64bits_digest(&st);
	return h;
}

uint64_t mig_hash(unsigned type, uint32_t seq, const void *payload, uint32_t len)
{
	return mig_hash2(type, seq, payload, len, NULL, 0);
}

void mig_hdr_make(struct mig_hdr *h, enum mig_type type, uint32_t seq, const void *payload, uint32_t len)
{
	h->magic = MIG_MAGIC;
	h->type = (uint16_t)type;
	h->flags = 0;
	h->len = len;
	h->seq = seq;
	h->hash = mig_hash(type, seq, payload, len);
}

/* The largest payload a type may have. */
static uint64_t type_max(unsigned type, uint32_t state_max)
{
	switch (type) {
	case MIG_PAGES:
		return MIG_PAGES_HDR + (uint64_t)MIG_MAX_RUN * MIG_PAGE;
	case MIG_ZERO:
		return MIG_PAGES_HDR;
	case MIG_STATE:
		return state_max;
	case MIG_GO:
	case MIG_RUNNING:
		return MIG_MAX_CONTROL;
	default:
		return MIG_MAX_CONTROL;
	}
}

int mig_hdr_check(const struct mig_hdr *h, uint32_t seq, uint32_t state_max, struct errbuf *err)
{
	if (h->magic != MIG_MAGIC)
		return errbuf_set(err, -EPROTO, "not a perfvisor migration stream (magic 0x%08" PRIx32 ")",
				  h->magic);
	if (h->type == 0 || h->type >= MIG_TYPE_END)
		return errbuf_set(err, -EPROTO, "record %" PRIu32 ": unknown type %u", h->seq, h->type);
	if (h->flags)
		return errbuf_set(err, -EPROTO, "record %" PRIu32 " (%s): flags 0x%x set", h->seq,
				  mig_type_name(h->type), h->flags);
	if (h->seq != seq)
		return errbuf_set(err, -EPROTO,
				  "record %" PRIu32 " (%s) where record %" PRIu32
				  " was due: one was lost or repeated",
				  h->seq, mig_type_name(h->type), seq);
	if (h->len > type_max(h->type, state_max))
		return errbuf_set(err, -EPROTO,
				  "record %" PRIu32 " (%s): %" PRIu32 " bytes, more than it may have", h->seq,
				  mig_type_name(h->type), h->len);
	return 0;
}

int mig_payload_check(const struct mig_hdr *h, const void *payload, struct errbuf *err)
{
	if (mig_hash(h->type, h->seq, payload, h->len) != h->hash)
		return errbuf_set(err, -EPROTO,
				  "record %" PRIu32 " (%s): checksum mismatch (damaged in transit)", h->seq,
				  mig_type_name(h->type));
	return 0;
}

void mig_rx_set_memory(struct mig_rx *rx, uint8_t *mem, uint64_t size)
{
	rx->mem = mem;
	rx->mem_size = size;
}

/* A PAGES or ZERO record: its range must lie in RAM and its length match its page count. */
static int rx_memory(struct mig_rx *rx, const struct mig_hdr *h, const uint8_t *p, struct errbuf *err)
{
	uint64_t gpa, n;

	if (h->len < MIG_PAGES_HDR)
		return errbuf_set(err, -EPROTO, "record %" PRIu32 " (%s): %" PRIu32 " bytes, too short",
				  h->seq, mig_type_name(h->type), h->len);
	memcpy(&gpa, p, 8);
	memcpy(&n, p + 8, 8);
	if (gpa % MIG_PAGE || n == 0 || n > (h->type == MIG_PAGES ? MIG_MAX_RUN : rx->mem_size / MIG_PAGE))
		return errbuf_set(err, -EPROTO,
				  "record %" PRIu32 " (%s): bad range 0x%" PRIx64 " + %" PRIu64 " pages",
				  h->seq, mig_type_name(h->type), gpa, n);
	if (gpa >= rx->mem_size || n > (rx->mem_size - gpa) / MIG_PAGE)
		return errbuf_set(err, -ERANGE,
				  "record %" PRIu32 " (%s): 0x%" PRIx64 " + %" PRIu64
				  " pages lies outside the guest's %" PRIu64 " MiB",
				  h->seq, mig_type_name(h->type), gpa, n, rx->mem_size >> 20);
	if (h->type == MIG_PAGES) {
		if (h->len != MIG_PAGES_HDR + n * MIG_PAGE)
			return errbuf_set(err, -EPROTO,
					  "record %" PRIu32 " (PAGES): %" PRIu32 " bytes for %" PRIu64
					  " pages",
					  h->seq, h->len, n);
		memcpy(rx->mem + gpa, p + MIG_PAGES_HDR, n * MIG_PAGE);
		rx->pages += n;
	} else {
		if (h->len != MIG_PAGES_HDR)
			return errbuf_set(err, -EPROTO, "record %" PRIu32 " (ZERO): %" PRIu32 " bytes",
					  h->seq, h->len);
		memset(rx->mem + gpa, 0, n * MIG_PAGE);
		rx->zero_pages += n;
	}
	return 0;
}

int mig_rx_feed(struct mig_rx *rx, const struct mig_hdr *h, const void *payload, struct errbuf *err)
{
	int rc = 0;

	switch (rx->phase) {
	case MIG_RX_HELLO:
		if (h->type != MIG_HELLO)
			return errbuf_set(err, -EPROTO, "the stream begins with %s, not HELLO",
					  mig_type_name(h->type));
		rx->phase = MIG_RX_MEMORY;
		break;
	case MIG_RX_MEMORY:
		if (h->type == MIG_STATE) {
			if (!h->len)
				return errbuf_set(err, -EPROTO, "record %" PRIu32 " (STATE) is empty",
						  h->seq);
			rx->state = payload;
			rx->state_len = h->len;
			rx->phase = MIG_RX_DONE;
			break;
		}
		if (h->type != MIG_PAGES && h->type != MIG_ZERO)
			return errbuf_set(err, -EPROTO, "record %" PRIu32 ": %s while memory was expected",
					  h->seq, mig_type_name(h->type));
		if (!rx->mem)
			return errbuf_set(err, -EPROTO,
					  "record %" PRIu32 ": memory before the machine was accepted",
					  h->seq);
		rc = rx_memory(rx, h, payload, err);
		break;
	case MIG_RX_DONE:
		return errbuf_set(err, -EPROTO, "record %" PRIu32 ": %s after the state", h->seq,
				  mig_type_name(h->type));
	}
	if (!rc)
		rx->records++;
	return rc;
}
