// SPDX-License-Identifier: MIT
/*
 * A bzImage's compressed payload (the setup header's payload_offset and
 * payload_length): which format it is, and, for XZ (liblzma), gzip (zlib)
 * and zstd (libzstd), its decompression on the host into a buffer of at
 * most a given size. The input is a user's file: a truncated, corrupt or
 * oversized stream is refused with one line, never trusted. Pure.
 */
#include "machine/machine.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* liblzma's memory limit: Linux packs its kernels with a 32 MiB dictionary at most. */
#define XZ_MEMLIMIT (256ULL << 20)
/* The first allocation when the payload's trailer gives no usable size. */
#define FIRST_CHUNK (16ULL << 20)

static const struct {
	enum loader_payload fmt;
	const char *name;
	uint8_t magic[6];
	uint8_t len;
} formats[] = {
	{ LOADER_PAYLOAD_XZ, "xz", { 0xfd, '7', 'z', 'X', 'Z', 0 }, 6 },
	{ LOADER_PAYLOAD_GZIP, "gzip", { 0x1f, 0x8b }, 2 },
	{ LOADER_PAYLOAD_ZSTD, "zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4 },
	/* The kernel's other formats, decoded only by its own decompressor. */
	{ LOADER_PAYLOAD_OTHER, "bzip2", { 'B', 'Z', 'h' }, 3 },
	{ LOADER_PAYLOAD_OTHER, "lzma", { 0x5d, 0, 0 }, 3 },
	{ LOADER_PAYLOAD_OTHER, "lzo", { 0x89, 'L', 'Z', 'O' }, 4 },
	{ LOADER_PAYLOAD_OTHER, "lz4", { 0x02, 0x21, 0x4c, 0x18 }, 4 },
};

enum loader_payload loader_payload_format(const void *p, size_t len, const char **name)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (len >= formats[i].len && memcmp(p, formats[i].magic, formats[i].len) == 0) {
			*name = formats[i].name;
			return formats[i].fmt;
		}
	*name = len ? "unknown" : "none";
	return len ? LOADER_PAYLOAD_OTHER : LOADER_PAYLOAD_NONE;
}

/* The output: grows by doubling up to cap + 1 bytes, so that one byte past the cap is seen. */
struct out {
	uint8_t *p;
	size_t len, size;
	uint64_t cap;
	const char *fmt;
};

static int too_large(const struct out *o, struct errbuf *err)
{
	return errbuf_set(err, -E2BIG,
			  "the %s payload decompresses to more than %" PRIu64
			  " bytes (the kernel's init_size, at most guest memory): refused",
			  o->fmt, o->cap);
}

/* Room for more output: 0, -E2BIG past the cap, -ENOMEM. */
static int grow(struct out *o, struct errbuf *err)
{
	uint64_t want = o->size ? (uint64_t)o->size * 2 : FIRST_CHUNK;
	uint8_t *p;

	if (o->size >= o->cap + 1)
		return too_large(o, err);
	if (want > o->cap + 1)
		want = o->cap + 1;
	p = realloc(o->p, (size_t)want);
	if (!p)
		return errbuf_set(err, -ENOMEM,
				  "out of memory decompressing the %s payload (%" PRIu64 " bytes)", o->fmt,
				  want);
	o->p = p;
	o->size = (size_t)want;
	return 0;
}

static int truncated(const struct out *o, struct errbuf *err)
{
	return errbuf_set(err, -ENOEXEC, "truncated bzImage: the %s payload ends before its stream does",
			  o->fmt);
}

static int corrupt(const struct out *o, const char *what, struct errbuf *err)
{
	return errbuf_set(err, -ENOEXEC, "corrupt %s payload in the bzImage: %s", o->fmt, what);
}

static int unxz(const uint8_t *in, size_t len, struct out *o, struct errbuf *err)
{
	lzma_stream s = LZMA_STREAM_INIT;
	lzma_ret r;
	int rc = 0;

	/* No LZMA_CONCATENATED: the stream's end is the end; the kernel's 4-byte size trailer follows. */
	if (lzma_stream_decoder(&s, XZ_MEMLIMIT, 0) != LZMA_OK)
		return errbuf_set(err, -ENOMEM, "cannot start the xz decoder");
	s.next_in = in;
	s.avail_in = len;
	for (;;) {
		if (o->len == o->size && (rc = grow(o, err)))
			break;
		s.next_out = o->p + o->len;
		s.avail_out = o->size - o->len;
		r = lzma_code(&s, LZMA_FINISH);
		o->len = o->size - s.avail_out;
		if (r == LZMA_STREAM_END)
			break;
		if (r == LZMA_OK)
			continue;
		if (r == LZMA_BUF_ERROR && s.avail_out)
			rc = truncated(o, err);
		else if (r == LZMA_BUF_ERROR)
			continue;
		else if (r == LZMA_MEM_ERROR)
			rc = errbuf_set(err, -ENOMEM, "out of memory in the xz decoder");
		else if (r == LZMA_MEMLIMIT_ERROR)
			rc = corrupt(o, "it needs a dictionary larger than 256 MiB", err);
		else
			rc = corrupt(o,
				     r == LZMA_FORMAT_ERROR    ? "not an xz stream"
				     : r == LZMA_OPTIONS_ERROR ? "unsupported xz options"
							       : "bad data or checksum",
				     err);
		break;
	}
	lzma_end(&s);
	return rc;
}

static int gunzip(const uint8_t *in, size_t len, struct out *o, struct errbuf *err)
{
	z_stream z;
	int r, rc = 0;

	memset(&z, 0, sizeof(z));
	if (len > UINT_MAX)
		return too_large(o, err);
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) /* 16: a gzip header, not zlib's */
		return errbuf_set(err, -ENOMEM, "cannot start the gzip decoder");
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	for (;;) {
		size_t room;

		if (o->len == o->size && (rc = grow(o, err)))
			break;
		room = o->size - o->len < UINT_MAX ? o->size - o->len : UINT_MAX;
		z.next_out = o->p + o->len;
		z.avail_out = (uInt)room;
		r = inflate(&z, Z_NO_FLUSH);
		o->len += room - z.avail_out;
		if (r == Z_STREAM_END)
			break;
		if (r == Z_OK || (r == Z_BUF_ERROR && z.avail_out == 0))
			continue;
		if (r == Z_BUF_ERROR)
			rc = truncated(o, err);
		else if (r == Z_MEM_ERROR)
			rc = errbuf_set(err, -ENOMEM, "out of memory in the gzip decoder");
		else
			rc = corrupt(o, z.msg ? z.msg : "bad data", err);
		break;
	}
	inflateEnd(&z);
	return rc;
}

static int unzstd(const uint8_t *in, size_t len, struct out *o, struct errbuf *err)
{
	ZSTD_DStream *d = ZSTD_createDStream();
	ZSTD_inBuffer ib = { in, len, 0 };
	int rc = 0;

	if (!d)
		return errbuf_set(err, -ENOMEM, "cannot start the zstd decoder");
	for (;;) {
		ZSTD_outBuffer ob;
		size_t r;

		if (o->len == o->size && (rc = grow(o, err)))
			break;
		ob = (ZSTD_outBuffer){ o->p, o->size, o->len };
		r = ZSTD_decompressStream(d, &ob, &ib);
		o->len = ob.pos;
		if (ZSTD_isError(r)) {
			rc = corrupt(o, ZSTD_getErrorName(r), err);
			break;
		}
		if (r == 0)
			break; /* the frame is complete */
		if (ib.pos == ib.size && ob.pos < ob.size) {
			rc = truncated(o, err);
			break;
		}
	}
	ZSTD_freeDStream(d);
	return rc;
}

int loader_decompress(enum loader_payload fmt, const void *in, size_t len, uint64_t cap, void **out,
		      size_t *out_len, struct errbuf *err)
{
	struct out o = { .cap = cap,
			 .fmt = fmt == LOADER_PAYLOAD_XZ     ? "xz"
				: fmt == LOADER_PAYLOAD_GZIP ? "gzip"
							     : "zstd" };
	uint32_t hint = 0;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (cap == 0 || cap >= SIZE_MAX)
		return errbuf_set(err, -EINVAL, "no room to decompress the payload into");
	/* The kernel's build appends the decompressed size; a hint for the first allocation only. */
	if (len >= 4)
		memcpy(&hint, (const uint8_t *)in + len - 4, 4);
	if (hint && hint <= cap) {
		o.p = malloc(hint);
		o.size = o.p ? hint : 0;
	}
	switch (fmt) {
	case LOADER_PAYLOAD_XZ:
		rc = unxz(in, len, &o, err);
		break;
	case LOADER_PAYLOAD_GZIP:
		rc = gunzip(in, len, &o, err);
		break;
	case LOADER_PAYLOAD_ZSTD:
		rc = unzstd(in, len, &o, err);
		break;
	default:
		rc = errbuf_set(err, -ENOTSUP, "perfvisor does not decompress this payload format");
	}
	if (!rc && o.len > cap)
		rc = too_large(&o, err);
	if (rc) {
		free(o.p);
		return rc;
	}
	*out = o.p;
	*out_len = o.len;
	return 0;
}
