// SPDX-License-Identifier: MIT
/*
 * Unit tests for the live-migration stream (snapfile/migstream.c): record
 * headers made and checked, each refusal of a header with its line, the
 * payload's hash (one flipped byte, or another type, number or length,
 * gives another), a payload hashed in two pieces, and the destination's
 * state machine: its order (HELLO, memory, STATE, nothing after), memory
 * written exactly where the records say and nowhere else, every range
 * outside RAM and every length that disagrees with its page count refused
 * with nothing changed, and the records counted. fuzz/migstream.c drives
 * the same functions with a hostile source's bytes.
 */
#include "snapfile/snapfile.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RAM (2u << 20) /* 512 pages */
#define FILL 0xa5

static struct errbuf err;

static void expect_msg(const char *part)
{
	cr_assert(strstr(err.msg, part), "'%s' lacks '%s'", err.msg, part);
}

/* ---- headers ---------------------------------------------------------------- */

static struct mig_hdr hdr(enum mig_type t, uint32_t seq, uint32_t len)
{
	struct mig_hdr h;

	mig_hdr_make(&h, t, seq, NULL, 0);
	h.len = len;
	return h;
}

static void expect_refused(const struct mig_hdr *h, uint32_t seq, uint32_t state_max, const char *part)
{
	memset(&err, 0, sizeof(err));
	cr_assert_eq(mig_hdr_check(h, seq, state_max, &err), -EPROTO, "header accepted, '%s' expected", part);
	expect_msg(part);
}

static void expect_accepted(const struct mig_hdr *h, uint32_t seq, uint32_t state_max)
{
	memset(&err, 0, sizeof(err));
	cr_assert_eq(mig_hdr_check(h, seq, state_max, &err), 0, "type %u, %u bytes: %s", h->type, h->len,
		     err.msg);
}

Test(mighdr, round_trip)
{
	static const char payload[32] = "{\"protocol\":1}"; /* ZERO's 16 bytes too */

	for (unsigned t = MIG_HELLO; t < MIG_TYPE_END; t++) {
		uint32_t len = t == MIG_ZERO ? MIG_PAGES_HDR : (uint32_t)strlen(payload);
		struct mig_hdr h;

		mig_hdr_make(&h, t, 7, payload, len);
		cr_assert_eq(h.magic, MIG_MAGIC);
		cr_assert_eq(h.type, t);
		cr_assert_eq(h.flags, 0);
		cr_assert_eq(h.len, len);
		cr_assert_eq(h.seq, 7);
		cr_assert_eq(h.hash, mig_hash(t, 7, payload, len));
		expect_accepted(&h, 7, 1 << 20);
		cr_assert_eq(mig_payload_check(&h, payload, &err), 0, "%s: %s", mig_type_name(t), err.msg);
	}
	/* An empty record (GO, RUNNING) has no payload at all. */
	{
		struct mig_hdr h;

		mig_hdr_make(&h, MIG_GO, 0, NULL, 0);
		expect_accepted(&h, 0, 0);
		cr_assert_eq(mig_payload_check(&h, NULL, &err), 0, "%s", err.msg);
	}
	/* The wire format: 24 bytes, little-endian, "PVMG" first. */
	{
		struct mig_hdr h;
		uint8_t wire[sizeof(h)];

		mig_hdr_make(&h, MIG_PAGES, 0x01020304, NULL, 0);
		memcpy(wire, &h, sizeof(h));
		cr_assert_eq(memcmp(wire, "PVMG\x03\x00\x00\x00\x00\x00\x00\x00\x04\x03\x02\x01", 16), 0);
	}
}

Test(mighdr, type_names)
{
	cr_assert_str_eq(mig_type_name(MIG_HELLO), "HELLO");
	cr_assert_str_eq(mig_type_name(MIG_PAGES), "PAGES");
	cr_assert_str_eq(mig_type_name(MIG_STATE), "STATE");
	cr_assert_str_eq(mig_type_name(MIG_ABORT), "ABORT");
	cr_assert_str_eq(mig_type_name(0), "unknown");
	cr_assert_str_eq(mig_type_name(MIG_TYPE_END), "unknown");
	cr_assert_str_eq(mig_type_name(0xffff), "unknown");
}

Test(mighdr, bad_magic)
{
	struct mig_hdr h = hdr(MIG_HELLO, 0, 2);

	h.magic = 0x20544547; /* "GET " */
	expect_refused(&h, 0, 0, "not a perfvisor migration stream (magic 0x20544547)");
	h.magic = __builtin_bswap32(MIG_MAGIC);
	expect_refused(&h, 0, 0, "not a perfvisor migration stream");
}

Test(mighdr, unknown_type)
{
	struct mig_hdr h = hdr(MIG_HELLO, 3, 0);

	h.type = 0;
	expect_refused(&h, 3, 0, "record 3: unknown type 0");
	h.type = MIG_TYPE_END;
	expect_refused(&h, 3, 0, "record 3: unknown type 10");
	h.type = 0xffff;
	expect_refused(&h, 3, 0, "unknown type 65535");
}

Test(mighdr, flags_set)
{
	struct mig_hdr h = hdr(MIG_PAGES, 1, MIG_PAGES_HDR + MIG_PAGE);

	h.flags = 1;
	expect_refused(&h, 1, 0, "record 1 (PAGES): flags 0x1 set");
	h.flags = 0x8000;
	expect_refused(&h, 1, 0, "flags 0x8000 set");
}

Test(mighdr, wrong_number)
{
	struct mig_hdr h = hdr(MIG_ZERO, 3, MIG_PAGES_HDR);

	expect_accepted(&h, 3, 0);
	expect_refused(&h, 2, 0,
		       "record 3 (ZERO) where record 2 was due: one was lost or repeated"); /* lost */
	expect_refused(&h, 4, 0,
		       "record 3 (ZERO) where record 4 was due: one was lost or repeated"); /* repeated */
	h.seq = UINT32_MAX;
	expect_refused(&h, 0, 0, "record 4294967295 (ZERO) where record 0 was due");
}

Test(mighdr, lengths)
{
	const uint32_t pages_max = MIG_PAGES_HDR + MIG_MAX_RUN * MIG_PAGE;
	struct mig_hdr h;

	/* Control records: a JSON object of up to 64 KiB. */
	for (unsigned t = MIG_HELLO; t < MIG_TYPE_END; t++) {
		if (t == MIG_PAGES || t == MIG_ZERO || t == MIG_STATE)
			continue;
		h = hdr(t, 0, MIG_MAX_CONTROL);
		expect_accepted(&h, 0, 0);
		h.len = MIG_MAX_CONTROL + 1;
		expect_refused(&h, 0, 0, "65537 bytes, more than it may have");
		expect_msg(mig_type_name(t));
	}
	h = hdr(MIG_PAGES, 5, pages_max);
	expect_accepted(&h, 5, 0);
	h.len = pages_max + 1;
	expect_refused(&h, 5, 0, "record 5 (PAGES): 1048593 bytes, more than it may have");
	h.len = UINT32_MAX;
	expect_refused(&h, 5, 0, "more than it may have");
	h = hdr(MIG_ZERO, 0, MIG_PAGES_HDR);
	expect_accepted(&h, 0, 0);
	h.len = MIG_PAGES_HDR + 1;
	expect_refused(&h, 0, 0, "record 0 (ZERO): 17 bytes, more than it may have");
	/* STATE: at most state_max. */
	h = hdr(MIG_STATE, 9, 4096);
	expect_accepted(&h, 9, 4096);
	expect_refused(&h, 9, 4095, "record 9 (STATE): 4096 bytes, more than it may have");
	expect_refused(&h, 9, 0, "more than it may have");
	h.len = UINT32_MAX;
	expect_accepted(&h, 9, UINT32_MAX);
}

/* The first thing wrong is the one named: the magic before the type before the flags before the number. */
Test(mighdr, order_of_checks)
{
	struct mig_hdr h = hdr(MIG_HELLO, 1, UINT32_MAX);

	h.magic = 0;
	h.type = 0;
	h.flags = 1;
	expect_refused(&h, 0, 0, "magic 0x00000000");
	h.magic = MIG_MAGIC;
	expect_refused(&h, 0, 0, "unknown type 0");
	h.type = MIG_HELLO;
	expect_refused(&h, 0, 0, "flags 0x1 set");
	h.flags = 0;
	expect_refused(&h, 0, 0, "where record 0 was due");
	h.seq = 0;
	expect_refused(&h, 0, 0, "more than it may have");
}

/* ---- payload hashes ------------------------------------------------------------- */

static uint8_t *pattern(size_t len, unsigned salt)
{
	uint8_t *p = malloc(len ? len : 1);

	cr_assert_not_null(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + salt + (i >> 8));
	return p;
}

Test(mighash, flipped_byte)
{
	const uint32_t len = MIG_PAGES_HDR + 2 * MIG_PAGE;
	uint8_t *p = pattern(len, 1);
	struct mig_hdr h;
	static const uint32_t at[] = { 0, 15, 16, 4000, 4111, 8207 };

	mig_hdr_make(&h, MIG_PAGES, 4, p, len);
	cr_assert_eq(mig_payload_check(&h, p, &err), 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		p[at[i]] ^= 0x10;
		memset(&err, 0, sizeof(err));
		cr_assert_eq(mig_payload_check(&h, p, &err), -EPROTO, "byte %u flipped", at[i]);
		expect_msg("record 4 (PAGES): checksum mismatch (damaged in transit)");
		p[at[i]] ^= 0x10;
		cr_assert_eq(mig_payload_check(&h, p, &err), 0);
	}
	/* The hash field itself damaged. */
	h.hash ^= 1;
	cr_assert_eq(mig_payload_check(&h, p, &err), -EPROTO);
	free(p);
}

/* The hash covers the header's type, number and length: the same bytes under another header fail. */
Test(mighash, header_fields)
{
	uint8_t *p = pattern(600, 2);
	uint64_t base = mig_hash(MIG_STATE, 5, p, 600);
	struct mig_hdr h;

	cr_assert_neq(mig_hash(MIG_HELLO, 5, p, 600), base);
	cr_assert_neq(mig_hash(MIG_ABORT, 5, p, 600), base);
	cr_assert_neq(mig_hash(MIG_STATE, 4, p, 600), base);
	cr_assert_neq(mig_hash(MIG_STATE, 6, p, 600), base);
	cr_assert_neq(mig_hash(MIG_STATE, 5, p, 599), base);
	cr_assert_neq(mig_hash(MIG_STATE, 5, p, 0), base);
	cr_assert_eq(mig_hash(MIG_STATE, 5, p, 600), base, "the same record, the same hash");
	cr_assert_neq(mig_hash(MIG_GO, 0, NULL, 0), mig_hash(MIG_RUNNING, 0, NULL, 0));
	cr_assert_neq(mig_hash(MIG_GO, 0, NULL, 0), mig_hash(MIG_GO, 1, NULL, 0));

	mig_hdr_make(&h, MIG_STATE, 5, p, 600);
	h.type = MIG_HELLO;
	cr_assert_eq(mig_payload_check(&h, p, &err), -EPROTO, "type changed");
	expect_msg("record 5 (HELLO): checksum mismatch");
	h.type = MIG_STATE;
	h.seq = 6;
	cr_assert_eq(mig_payload_check(&h, p, &err), -EPROTO, "number changed");
	h.seq = 5;
	h.len = 599;
	cr_assert_eq(mig_payload_check(&h, p, &err), -EPROTO, "length changed");
	h.len = 600;
	cr_assert_eq(mig_payload_check(&h, p, &err), 0);
	free(p);
}

/*
 * A payload sent in two pieces (mig_send) hashes as the whole (mig_recv).
 * Many calls in a row with the same seed, and lengths past XXH3's
 * 240-byte short path: a hash state left uninitialized on the stack gives
 * a wrong hash here (seen under ASan).
 */
Test(mighash, two_pieces)
{
	const uint32_t max = 3 * MIG_PAGE + MIG_PAGES_HDR;
	uint8_t *p = pattern(max, 3);
	static const uint32_t lens[] = { 0,   1,    16,	  239,	240,  241,  255,
					 256, 1024, 1025, 4111, 4112, 8208, 12304 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i];

		for (uint32_t a = 0; a <= len; a += len / 9 + 1) {
			uint64_t whole = mig_hash(MIG_PAGES, 2, p, len);

			cr_assert_eq(mig_hash2(MIG_PAGES, 2, p, a, p + a, len - a), whole,
				     "%u bytes as %u + %u", len, a, len - a);
			cr_assert_eq(mig_hash(MIG_PAGES, 2, p, len), whole, "%u bytes, hashed again", len);
		}
		cr_assert_eq(mig_hash2(MIG_PAGES, 2, p, len, NULL, 0), mig_hash(MIG_PAGES, 2, p, len));
		cr_assert_eq(mig_hash2(MIG_PAGES, 2, NULL, 0, p, len), mig_hash(MIG_PAGES, 2, p, len));
	}
	for (uint32_t len = 200; len < 600; len++)
		cr_assert_eq(mig_hash2(MIG_STATE, 9, p, len / 7, p + len / 7, len - len / 7),
			     mig_hash(MIG_STATE, 9, p, len), "%u bytes", len);
	free(p);
}

/* ---- the destination's state machine ----------------------------------------------- */

static struct mig_rx rx;
static uint8_t *ram, *shadow;
static uint32_t seq;

static void rx_setup(void)
{
	memset(&rx, 0, sizeof(rx));
	memset(&err, 0, sizeof(err));
	seq = 0;
	ram = malloc(RAM);
	shadow = malloc(RAM);
	cr_assert(ram && shadow);
	memset(ram, FILL, RAM);
	memset(shadow, FILL, RAM);
}

static void rx_teardown(void)
{
	free(ram);
	free(shadow);
}

TestSuite(migrx, .init = rx_setup, .fini = rx_teardown);

/* Feed one record (a sound header for it, the next number); the return of mig_rx_feed. */
static int feed(enum mig_type t, const void *payload, uint32_t len)
{
	struct mig_hdr h;

	mig_hdr_make(&h, t, seq++, payload, len);
	memset(&err, 0, sizeof(err));
	return mig_rx_feed(&rx, &h, payload, &err);
}

/* A PAGES or ZERO payload: gpa, page count, then `data` pages of a pattern (malloc'ed). */
static uint8_t *mem_payload(uint64_t gpa, uint64_t n, uint32_t data, unsigned salt, uint32_t *len)
{
	uint8_t *p;

	*len = MIG_PAGES_HDR + data * MIG_PAGE;
	p = pattern(*len, salt);
	memcpy(p, &gpa, 8);
	memcpy(p + 8, &n, 8);
	return p;
}

static int feed_mem(enum mig_type t, uint64_t gpa, uint64_t n, uint32_t data, unsigned salt)
{
	uint32_t len;
	uint8_t *p = mem_payload(gpa, n, data, salt, &len);
	int rc = feed(t, p, len);

	if (!rc && t == MIG_PAGES)
		memcpy(shadow + gpa, p + MIG_PAGES_HDR, n * MIG_PAGE);
	else if (!rc)
		memset(shadow + gpa, 0, n * MIG_PAGE);
	free(p);
	return rc;
}

/* HELLO accepted, then the RAM given, as vmm/incoming.c does. */
static void hello(void)
{
	cr_assert_eq(feed(MIG_HELLO, "{}", 2), 0, "%s", err.msg);
	cr_assert_eq(rx.phase, MIG_RX_MEMORY);
	mig_rx_set_memory(&rx, ram, RAM);
	cr_assert_eq(rx.mem, ram);
	cr_assert_eq(rx.mem_size, RAM);
}

/* Refused with rc and a line, and nothing changed: the machine, its counters, the RAM. */
static void expect_rx_refused(int rc, int want, const struct mig_rx *before, const char *part)
{
	cr_assert_eq(rc, want, "rc %d (%s), %d expected with '%s'", rc, err.msg, want, part);
	expect_msg(part);
	cr_assert_eq(memcmp(before, &rx, sizeof(rx)), 0, "a refused record changed the state machine");
	cr_assert_eq(memcmp(ram, shadow, RAM), 0, "a refused record changed RAM");
}

Test(migrx, not_hello_first)
{
	static const enum mig_type first[] = {
		MIG_PAGES, MIG_ZERO, MIG_STATE, MIG_ACCEPT, MIG_GO, MIG_ABORT
	};
	struct mig_rx before = rx;

	for (size_t i = 0; i < sizeof(first) / sizeof(first[0]); i++) {
		uint8_t payload[MIG_PAGES_HDR] = { 0 };
		char want[64];

		payload[8] = 1; /* one page at 0 */
		snprintf(want, sizeof(want), "the stream begins with %s, not HELLO", mig_type_name(first[i]));
		expect_rx_refused(feed(first[i], payload, sizeof(payload)), -EPROTO, &before, want);
	}
	cr_assert_eq(rx.phase, MIG_RX_HELLO);
	cr_assert_eq(rx.records, 0);
	cr_assert_eq(feed(MIG_HELLO, NULL, 0), 0, "an empty HELLO is the JSON reader's to refuse");
	cr_assert_eq(rx.phase, MIG_RX_MEMORY);
	cr_assert_eq(rx.records, 1);
}

Test(migrx, memory_before_the_machine_was_accepted)
{
	struct mig_rx before;

	cr_assert_eq(feed(MIG_HELLO, "{}", 2), 0);
	before = rx;
	expect_rx_refused(feed_mem(MIG_ZERO, 0, 1, 0, 0), -EPROTO, &before,
			  "record 1: memory before the machine was accepted");
	expect_rx_refused(feed_mem(MIG_PAGES, 0, 1, 1, 0), -EPROTO, &before,
			  "record 2: memory before the machine was accepted");
	/* A state with no memory at all is the restore's to judge. */
	cr_assert_eq(feed(MIG_STATE, "s", 1), 0, "%s", err.msg);
	cr_assert_eq(rx.phase, MIG_RX_DONE);
}

Test(migrx, pages_applied_in_place)
{
	hello();
	cr_assert_eq(feed_mem(MIG_PAGES, 0x3000, 2, 2, 7), 0, "%s", err.msg);
	cr_assert_eq(rx.pages, 2);
	cr_assert_eq(ram[0x2fff], FILL, "the page before is untouched");
	cr_assert_eq(ram[0x5000], FILL, "the page after is untouched");
	cr_assert_eq(memcmp(ram, shadow, RAM), 0);
	/* The first and the last page of RAM, and a full run. */
	cr_assert_eq(feed_mem(MIG_PAGES, 0, 1, 1, 8), 0, "%s", err.msg);
	cr_assert_eq(feed_mem(MIG_PAGES, RAM - MIG_PAGE, 1, 1, 9), 0, "%s", err.msg);
	cr_assert_eq(feed_mem(MIG_PAGES, RAM - MIG_MAX_RUN * MIG_PAGE, MIG_MAX_RUN, MIG_MAX_RUN, 10), 0, "%s",
		     err.msg);
	/* A page sent again (dirtied in a later round): the last copy wins. */
	cr_assert_eq(feed_mem(MIG_PAGES, 0x3000, 1, 1, 11), 0, "%s", err.msg);
	cr_assert_eq(memcmp(ram, shadow, RAM), 0);
	cr_assert_eq(rx.pages, 2 + 1 + 1 + MIG_MAX_RUN + 1);
	cr_assert_eq(rx.zero_pages, 0);
}

Test(migrx, zero_clears)
{
	hello();
	cr_assert_eq(feed_mem(MIG_ZERO, 0x1000, 3, 0, 0), 0, "%s", err.msg);
	cr_assert_eq(rx.zero_pages, 3);
	cr_assert_eq(ram[0xfff], FILL);
	cr_assert_eq(ram[0x1000], 0);
	cr_assert_eq(ram[0x3fff], 0);
	cr_assert_eq(ram[0x4000], FILL);
	cr_assert_eq(memcmp(ram, shadow, RAM), 0);
	/* A page written, then found zero in a later round. */
	cr_assert_eq(feed_mem(MIG_PAGES, 0x8000, 1, 1, 5), 0, "%s", err.msg);
	cr_assert_eq(feed_mem(MIG_ZERO, 0x8000, 1, 0, 0), 0, "%s", err.msg);
	cr_assert_eq(ram[0x8000 + 100], 0);
	/* ZERO may cover all of RAM at once (more than a PAGES run). */
	cr_assert_eq(feed_mem(MIG_ZERO, 0, RAM / MIG_PAGE, 0, 0), 0, "%s", err.msg);
	cr_assert_eq(memcmp(ram, shadow, RAM), 0);
	cr_assert_eq(rx.zero_pages, 3 + 1 + RAM / MIG_PAGE);
	cr_assert_eq(rx.pages, 1);
}

Test(migrx, ranges_outside_ram)
{
	struct mig_rx before;

	hello();
	before = rx;
	/* Past the end, and across it. */
	expect_rx_refused(feed_mem(MIG_PAGES, RAM, 1, 1, 0), -ERANGE, &before,
			  "record 1 (PAGES): 0x200000 + 1 pages lies outside the guest's 2 MiB");
	expect_rx_refused(feed_mem(MIG_ZERO, RAM, 1, 0, 0), -ERANGE, &before,
			  "record 2 (ZERO): 0x200000 + 1 pages lies outside the guest's 2 MiB");
	expect_rx_refused(feed_mem(MIG_PAGES, RAM - MIG_PAGE, 2, 2, 0), -ERANGE, &before, "lies outside");
	expect_rx_refused(feed_mem(MIG_ZERO, MIG_PAGE, RAM / MIG_PAGE, 0, 0), -ERANGE, &before,
			  "lies outside");
	expect_rx_refused(feed_mem(MIG_ZERO, 1ULL << 40, 1, 0, 0), -ERANGE, &before, "lies outside");
	/* gpa + n pages past 2^64: must not wrap into RAM. */
	expect_rx_refused(feed_mem(MIG_PAGES, 0xfffffffffffff000ULL, 2, 2, 0), -ERANGE, &before,
			  "lies outside");
	expect_rx_refused(feed_mem(MIG_ZERO, 0xfffffffffffff000ULL, 2, 0, 0), -ERANGE, &before,
			  "lies outside");
	expect_rx_refused(feed_mem(MIG_ZERO, 0x1000, UINT64_MAX / MIG_PAGE + 2, 0, 0), -EPROTO, &before,
			  "bad range 0x1000 + 4503599627370497 pages");
	expect_rx_refused(feed_mem(MIG_ZERO, 0x1000, UINT64_MAX, 0, 0), -EPROTO, &before, "bad range");
	/* Not page-aligned, no pages, or more than a PAGES run. */
	expect_rx_refused(feed_mem(MIG_PAGES, 0x1001, 1, 1, 0), -EPROTO, &before,
			  "(PAGES): bad range 0x1001 + 1 pages");
	expect_rx_refused(feed_mem(MIG_ZERO, 0x800, 1, 0, 0), -EPROTO, &before,
			  "(ZERO): bad range 0x800 + 1 pages");
	expect_rx_refused(feed_mem(MIG_PAGES, 0x1000, 0, 0, 0), -EPROTO, &before,
			  "(PAGES): bad range 0x1000 + 0 pages");
	expect_rx_refused(feed_mem(MIG_ZERO, 0x1000, 0, 0, 0), -EPROTO, &before,
			  "(ZERO): bad range 0x1000 + 0 pages");
	expect_rx_refused(feed_mem(MIG_PAGES, 0, MIG_MAX_RUN + 1, MIG_MAX_RUN + 1, 0), -EPROTO, &before,
			  "(PAGES): bad range 0x0 + 257 pages");
	expect_rx_refused(feed_mem(MIG_ZERO, 0, RAM / MIG_PAGE + 1, 0, 0), -EPROTO, &before, "bad range");
	cr_assert_eq(rx.records, 1, "only HELLO counted");
}

Test(migrx, length_disagrees_with_page_count)
{
	struct mig_rx before;
	uint8_t short_payload[MIG_PAGES_HDR - 1] = { 0 };

	hello();
	before = rx;
	expect_rx_refused(feed_mem(MIG_PAGES, 0x2000, 2, 1, 0), -EPROTO, &before,
			  "record 1 (PAGES): 4112 bytes for 2 pages");
	expect_rx_refused(feed_mem(MIG_PAGES, 0x2000, 1, 2, 0), -EPROTO, &before,
			  "record 2 (PAGES): 8208 bytes for 1 pages");
	expect_rx_refused(feed_mem(MIG_PAGES, 0x2000, 1, 0, 0), -EPROTO, &before, "16 bytes for 1 pages");
	/* ZERO is gpa and count only (mig_hdr_check refuses more first; the machine too). */
	expect_rx_refused(feed_mem(MIG_ZERO, 0x2000, 1, 1, 0), -EPROTO, &before,
			  "record 4 (ZERO): 4112 bytes");
	/* Too short for gpa and count (a header's length is all a hostile source controls). */
	expect_rx_refused(feed(MIG_PAGES, short_payload, sizeof(short_payload)), -EPROTO, &before,
			  "record 5 (PAGES): 15 bytes, too short");
	expect_rx_refused(feed(MIG_ZERO, short_payload, 8), -EPROTO, &before,
			  "record 6 (ZERO): 8 bytes, too short");
	expect_rx_refused(feed(MIG_ZERO, NULL, 0), -EPROTO, &before, "record 7 (ZERO): 0 bytes, too short");
}

Test(migrx, control_records_while_memory_was_expected)
{
	static const enum mig_type bad[] = {
		MIG_HELLO, MIG_ACCEPT, MIG_READY, MIG_GO, MIG_RUNNING, MIG_ABORT
	};
	struct mig_rx before;

	hello();
	before = rx;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[80];

		snprintf(want, sizeof(want), "record %u: %s while memory was expected", seq,
			 mig_type_name(bad[i]));
		expect_rx_refused(feed(bad[i], "{}", 2), -EPROTO, &before, want);
	}
}

Test(migrx, state_empty_refused)
{
	struct mig_rx before;

	hello();
	before = rx;
	expect_rx_refused(feed(MIG_STATE, NULL, 0), -EPROTO, &before, "record 1 (STATE) is empty");
	cr_assert_eq(rx.phase, MIG_RX_MEMORY);
	cr_assert_null(rx.state);
}

Test(migrx, state_then_nothing)
{
	static const char state[] = "the state file";
	static const enum mig_type after[] = { MIG_PAGES, MIG_ZERO, MIG_STATE, MIG_HELLO, MIG_GO, MIG_ABORT };
	struct mig_rx before;

	hello();
	cr_assert_eq(feed_mem(MIG_ZERO, 0, 1, 0, 0), 0, "%s", err.msg);
	cr_assert_eq(feed(MIG_STATE, state, sizeof(state)), 0, "%s", err.msg);
	cr_assert_eq(rx.phase, MIG_RX_DONE);
	cr_assert_eq(rx.state, state, "the state points at the STATE payload");
	cr_assert_eq(rx.state_len, sizeof(state));
	before = rx;
	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		uint8_t payload[MIG_PAGES_HDR] = { 0 };
		char want[64];

		payload[8] = 1;
		snprintf(want, sizeof(want), "record %u: %s after the state", seq, mig_type_name(after[i]));
		expect_rx_refused(feed(after[i], payload, sizeof(payload)), -EPROTO, &before, want);
	}
	cr_assert_eq(rx.state, state, "still the first STATE's");
}

Test(migrx, a_whole_stream_counted)
{
	static const char state[] = "s";

	hello();
	cr_assert_eq(feed_mem(MIG_PAGES, 0, 4, 4, 1), 0, "%s", err.msg);
	cr_assert_eq(feed_mem(MIG_ZERO, 0x4000, 12, 0, 0), 0, "%s", err.msg);
	cr_assert_neq(feed_mem(MIG_PAGES, 0x4001, 1, 1, 0), 0, "refused: not counted");
	cr_assert_eq(feed_mem(MIG_PAGES, 0x10000, 1, 1, 2), 0, "%s", err.msg);
	cr_assert_neq(feed(MIG_GO, NULL, 0), 0);
	cr_assert_eq(feed(MIG_STATE, state, 1), 0, "%s", err.msg);
	cr_assert_eq(rx.records, 1 + 3 + 1, "HELLO, three memory records, STATE");
	cr_assert_eq(rx.pages, 5);
	cr_assert_eq(rx.zero_pages, 12);
	cr_assert_eq(rx.phase, MIG_RX_DONE);
	cr_assert_eq(rx.state_len, 1);
	cr_assert_eq(memcmp(ram, shadow, RAM), 0);
}
