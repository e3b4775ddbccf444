// SPDX-License-Identifier: MIT
/*
 * A small AML byte-code writer (ACPI 6.4, chapter 20): name strings,
 * integers, strings, buffers, and the package-length-prefixed terms
 * (Scope, Device, Package, Buffer), written into a caller's buffer that
 * never overflows: the writer remembers that it failed instead. Pure.
 */
#include "machine/machine.h"

#include <errno.h>
#include <string.h>

#define AML_ZERO 0x00
#define AML_ONE 0x01
#define AML_NAME 0x08
#define AML_BYTE 0x0a
#define AML_WORD 0x0b
#define AML_DWORD 0x0c
#define AML_STRING 0x0d
#define AML_QWORD 0x0e
#define AML_SCOPE 0x10
#define AML_BUFFER 0x11
#define AML_PACKAGE 0x12
#define AML_EXT 0x5b
#define AML_EXT_DEVICE 0x82
#define AML_ROOT '\\'
#define AML_DUAL_NAME 0x2e
#define AML_MULTI_NAME 0x2f

void aml_init(struct aml *a, void *buf, size_t cap)
{
	*a = (struct aml){ .buf = buf, .cap = cap };
}

void aml_bytes(struct aml *a, const void *p, size_t n)
{
	if (a->failed || n > a->cap - a->len) {
		a->failed = true;
		return;
	}
	memcpy(a->buf + a->len, p, n);
	a->len += n;
}

void aml_byte(struct aml *a, uint8_t b)
{
	aml_bytes(a, &b, 1);
}

static void le(struct aml *a, uint64_t v, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		aml_byte(a, (uint8_t)(v >> 8 * k));
}

static bool seg_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || c == '_' || (!first && c >= '0' && c <= '9');
}

int aml_name(struct aml *a, const char *path)
{
	const char *p = path;
	char segs[255][4];
	unsigned n = 0;

	if (*p == AML_ROOT) {
		aml_byte(a, AML_ROOT);
		p++;
	}
	while (*p) {
		unsigned k = 0;

		if (n == 255)
			goto bad;
		memset(segs[n], '_', 4);
		for (; *p && *p != '.'; p++, k++) {
			if (k == 4 || !seg_char(*p, k == 0))
				goto bad;
			segs[n][k] = *p;
		}
		if (!k)
			goto bad;
		n++;
		if (*p == '.' && !*++p)
			goto bad;
	}
	if (n == 0) {
		aml_byte(a, 0x00); /* NullName */
		return 0;
	}
	if (n == 2)
		aml_byte(a, AML_DUAL_NAME);
	else if (n > 2) {
		aml_byte(a, AML_MULTI_NAME);
		aml_byte(a, (uint8_t)n);
	}
	aml_bytes(a, segs, 4 * n);
	return 0;
bad:
	a->failed = true;
	return -EINVAL;
}

void aml_integer(struct aml *a, uint64_t v)
{
	if (v <= 1) {
		aml_byte(a, v ? AML_ONE : AML_ZERO);
	} else if (v <= 0xff) {
		aml_byte(a, AML_BYTE);
		le(a, v, 1);
	} else if (v <= 0xffff) {
		aml_byte(a, AML_WORD);
		le(a, v, 2);
	} else if (v <= 0xffffffff) {
		aml_byte(a, AML_DWORD);
		le(a, v, 4);
	} else {
		aml_byte(a, AML_QWORD);
		le(a, v, 8);
	}
}

void aml_string(struct aml *a, const char *s)
{
	aml_byte(a, AML_STRING);
	aml_bytes(a, s, strlen(s) + 1);
}

int aml_name_decl(struct aml *a, const char *name)
{
	aml_byte(a, AML_NAME);
	return aml_name(a, name);
}

size_t aml_open(struct aml *a, uint8_t op)
{
	if (op == AML_EXT_DEVICE)
		aml_byte(a, AML_EXT);
	aml_byte(a, op);
	return a->len;
}

/* PkgLength counts itself: 1 byte up to 63, else a lead byte (its count and 4 bits) and 1-3 more. */
void aml_close(struct aml *a, size_t start)
{
	size_t n, k, total;
	uint8_t h[4];

	if (a->failed || start > a->len)
		return;
	n = a->len - start;
	k = n + 1 <= 0x3f ? 1 : n + 2 <= 0xfff ? 2 : n + 3 <= 0xfffff ? 3 : 4;
	total = n + k;
	if (total > 0xfffffff || k > a->cap - a->len) {
		a->failed = true;
		return;
	}
	if (k == 1) {
		h[0] = (uint8_t)total;
	} else {
		h[0] = (uint8_t)((k - 1) << 6 | (total & 0xf));
		for (size_t i = 1; i < k; i++)
			h[i] = (uint8_t)(total >> (4 + 8 * (i - 1)));
	}
	memmove(a->buf + start + k, a->buf + start, n);
	memcpy(a->buf + start, h, k);
	a->len += k;
}

size_t aml_scope(struct aml *a, const char *name)
{
	size_t s = aml_open(a, AML_SCOPE);

	aml_name(a, name);
	return s;
}

size_t aml_device(struct aml *a, const char *name)
{
	size_t s = aml_open(a, AML_EXT_DEVICE);

	aml_name(a, name);
	return s;
}

size_t aml_package(struct aml *a, uint8_t nr_elements)
{
	size_t s = aml_open(a, AML_PACKAGE);

	aml_byte(a, nr_elements);
	return s;
}

void aml_buffer(struct aml *a, const void *p, size_t n)
{
	size_t s = aml_open(a, AML_BUFFER);

	aml_integer(a, n);
	aml_bytes(a, p, n);
	aml_close(a, s);
}
