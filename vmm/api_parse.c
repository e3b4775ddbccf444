// SPDX-License-Identifier: MIT
/*
 * The control socket's requests as data (docs/api.md): one JSON line in,
 * the command and its arguments out, or the error reply a client gets.
 * Pure (jansson only), so it is unit-tested and fuzzed (fuzz/api.c); api.c
 * carries the commands out.
 */
#include "migrate.h"
#include "vmm.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

json_t *api_error_reply(const char *fmt, ...)
{
	char msg[256];
	json_t *reply;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply = json_pack("{s:b, s:s}", "ok", 0, "error", msg);
	if (reply)
		return reply;
	/* Not UTF-8 (a name cut inside a character, say): every client still gets its reply. */
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static const struct {
	const char *name;
	enum api_cmd cmd;
} commands[] = {
	{ "query", API_QUERY },	    { "stats-fd", API_STATS_FD }, { "pause", API_PAUSE },
	{ "resume", API_RESUME },   { "snapshot", API_SNAPSHOT }, { "profile", API_PROFILE },
	{ "migrate", API_MIGRATE },
};

/* {"cmd":"profile"[,"top":N]} */
static json_t *parse_profile(json_t *req, struct api_request *r)
{
	json_int_t top = 10;
	json_error_t jerr;

	if (json_unpack_ex(req, &jerr, 0, "{s?:I}", "top", &top) < 0)
		return api_error_reply("profile takes \"top\" (a number): %s", jerr.text);
	if (top < 1 || top > 100)
		return api_error_reply("profile: \"top\" must be 1 to 100 (got %lld)", (long long)top);
	r->top = (unsigned)top;
	return NULL;
}

static json_t *parse_snapshot(json_t *req, struct api_request *r)
{
	const char *dir = NULL, *then = "resume";
	json_error_t jerr;

	if (json_unpack_ex(req, &jerr, 0, "{s:s, s?:s}", "dir", &dir, "then", &then) < 0)
		return api_error_reply("snapshot needs \"dir\" (a string) and takes \"then\": %s", jerr.text);
	if (dir[0] != '/')
		return api_error_reply("snapshot: \"dir\" must be an absolute path (got '%.100s')", dir);
	if (strlen(dir) >= sizeof(r->dir))
		return api_error_reply("snapshot: \"dir\" is longer than %zu bytes", sizeof(r->dir) - 1);
	if (strcmp(then, "resume") && strcmp(then, "stop"))
		return api_error_reply("snapshot: \"then\" must be \"resume\" or \"stop\" (got '%.40s')",
				       then);
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->stop_after = !strcmp(then, "stop");
	return NULL;
}

/* {"cmd":"migrate","to":"tcp:IP:PORT"|"unix:PATH"[,"max_downtime_ms":N][,"timeout_ms":N]
 *  [,"max_bandwidth":BYTES_PER_S][,"stop_copy":B]} */
static json_t *parse_migrate(json_t *req, struct api_request *r)
{
	const char *to = NULL;
	json_int_t downtime = 20, timeout = 60000, bandwidth = 0;
	int stop_copy = 0;
	json_error_t jerr;

	if (json_unpack_ex(req, &jerr, 0, "{s:s, s?:I, s?:I, s?:I, s?:b}", "to", &to, "max_downtime_ms",
			   &downtime, "timeout_ms", &timeout, "max_bandwidth", &bandwidth, "stop_copy",
			   &stop_copy) < 0)
		return api_error_reply("migrate needs \"to\" (a string) and takes \"max_downtime_ms\", "
				       "\"timeout_ms\", \"max_bandwidth\" (numbers) and \"stop_copy\" "
				       "(true/false): %s",
				       jerr.text);
	if (strncmp(to, "tcp:", 4) && strncmp(to, "unix:", 5))
		return api_error_reply("migrate: \"to\" is tcp:IP:PORT or unix:PATH (got '%.100s')", to);
	if (strlen(to) >= sizeof(r->to))
		return api_error_reply("migrate: \"to\" is longer than %zu bytes", sizeof(r->to) - 1);
	if (downtime < 1 || downtime > 60000)
		return api_error_reply("migrate: \"max_downtime_ms\" must be 1 to 60000 (got %lld)",
				       (long long)downtime);
	if (timeout < 1000 || timeout > 3600000)
		return api_error_reply("migrate: \"timeout_ms\" must be 1000 to 3600000 (got %lld)",
				       (long long)timeout);
	if (bandwidth != 0 && bandwidth < (json_int_t)MIG_MIN_BANDWIDTH)
		return api_error_reply(
			"migrate: \"max_bandwidth\" is bytes per second, at least %llu (1 MiB/s), "
			"or 0 for no limit (got %lld)",
			(unsigned long long)MIG_MIN_BANDWIDTH, (long long)bandwidth);
	snprintf(r->to, sizeof(r->to), "%s", to);
	r->max_bandwidth = (uint64_t)bandwidth;
	r->max_downtime_ns = (uint64_t)downtime * 1000000ULL;
	r->timeout_ms = (uint64_t)timeout;
	r->stop_copy = stop_copy;
	return NULL;
}

json_t *api_parse_request(const char *line, struct api_request *r)
{
	json_error_t jerr;
	json_t *req = json_loads(line, JSON_REJECT_DUPLICATES, &jerr), *cmdv, *err = NULL;
	const char *cmd;

	memset(r, 0, sizeof(*r));
	if (!req)
		return api_error_reply("invalid JSON: %s", jerr.text);
	cmdv = json_is_object(req) ? json_object_get(req, "cmd") : NULL;
	if (!json_is_string(cmdv)) {
		json_decref(req);
		return api_error_reply("%s", "a request is a JSON object with a string \"cmd\"");
	}
	cmd = json_string_value(cmdv);
	r->cmd = API_BAD;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name))
			r->cmd = commands[i].cmd;
	if (r->cmd == API_BAD)
		err = api_error_reply(
			"unknown command '%.100s' (query, stats-fd, pause, resume, snapshot, profile, migrate)",
			cmd);
	else if (r->cmd == API_SNAPSHOT)
		err = parse_snapshot(req, r);
	else if (r->cmd == API_PROFILE)
		err = parse_profile(req, r);
	else if (r->cmd == API_MIGRATE)
		err = parse_migrate(req, r);
	json_decref(req);
	if (err)
		r->cmd = API_BAD;
	return err;
}
