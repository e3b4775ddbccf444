/* SPDX-License-Identifier: MIT */
/*
 * The kernel command line from the boot information: space-separated
 * "key=value" or "key" tokens. Parsed once, on first use, into a private
 * copy; the original stays intact for cmdline_raw().
 */
#include "guest.h"

#define MAX_TOKENS 64

static struct {
	struct spinlock lock;
	bool parsed;
	uint32_t n;
	const char *key[MAX_TOKENS];
	const char *val[MAX_TOKENS];
	char copy[PV_CMDLINE_MAX];
} cl;

const char *cmdline_raw(void)
{
	const struct pv_bootinfo *bi = rt_bootinfo();

	if (!bi || !bi->cmdline_gpa || bi->cmdline_gpa >= PV_IDENTITY_MAP_END)
		return "";
	return (const char *)(uintptr_t)bi->cmdline_gpa;
}

static void parse(void)
{
	const char *raw = cmdline_raw();
	size_t len = strnlen(raw, sizeof(cl.copy) - 1);
	char *p = cl.copy;

	memcpy(cl.copy, raw, len);
	cl.copy[len] = '\0';
	while (*p && cl.n < MAX_TOKENS) {
		char *eq;

		while (*p == ' ')
			*p++ = '\0';
		if (!*p)
			break;
		cl.key[cl.n] = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = '\0';
		eq = strchr(cl.key[cl.n], '=');
		if (eq)
			*eq = '\0';
		cl.val[cl.n] = eq ? eq + 1 : "";
		cl.n++;
	}
}

const char *cmdline_get(const char *key)
{
	const char *v = NULL;

	spin_lock(&cl.lock);
	if (!cl.parsed) {
		parse();
		cl.parsed = true;
	}
	spin_unlock(&cl.lock);
	for (uint32_t i = 0; i < cl.n; i++)
		if (!strcmp(cl.key[i], key))
			v = cl.val[i];
	return v;
}

bool cmdline_has(const char *key)
{
	return cmdline_get(key) != NULL;
}

uint64_t cmdline_get_u64(const char *key, uint64_t def)
{
	const char *v = cmdline_get(key);
	char *end;
	uint64_t n;

	if (!v || !*v)
		return def;
	n = strtoull(v, &end, 0);
	if (end == v)
		return def;
	switch (*end) {
	case 'k':
	case 'K':
		return n << 10;
	case 'm':
	case 'M':
		return n << 20;
	case 'g':
	case 'G':
		return n << 30;
	default:
		return n;
	}
}
