// SPDX-License-Identifier: MIT
/*
 * Unit tests for the control socket's request parser (vmm/api_parse.c):
 * each command, each argument rule, and the error reply every bad line gets
 * (always valid JSON, docs/api.md). fuzz/api.c drives the same function
 * with arbitrary bytes.
 */
#include "vmm/vmm.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct api_request req;

/* The error text of a reply, or NULL for no reply; checks the reply's shape and that it dumps. */
static char *error_of(json_t *reply)
{
	const char *msg = NULL;
	int ok = 1;
	char *text, *copy;

	if (!reply)
		return NULL;
	cr_assert_eq(json_unpack(reply, "{s:b, s:s}", "ok", &ok, "error", &msg), 0);
	cr_assert_eq(ok, 0);
	text = json_dumps(reply, JSON_COMPACT);
	cr_assert_not_null(text, "the reply must serialize (valid UTF-8)");
	free(text);
	copy = strdup(msg);
	json_decref(reply);
	return copy;
}

static void expect_error(const char *line, const char *part)
{
	char *msg = error_of(api_parse_request(line, &req));

	cr_assert_not_null(msg, "'%s' parsed without an error", line);
	cr_assert(strstr(msg, part), "'%s' gave '%s', which lacks '%s'", line, msg, part);
	cr_assert_eq(req.cmd, API_BAD);
	free(msg);
}

Test(api_parse, commands)
{
	static const struct {
		const char *line;
		enum api_cmd cmd;
	} ok[] = {
		{ "{\"cmd\":\"query\"}", API_QUERY },
		{ "{\"cmd\":\"stats-fd\"}", API_STATS_FD },
		{ "{\"cmd\":\"pause\"}", API_PAUSE },
		{ "{\"cmd\":\"resume\"}", API_RESUME },
		{ " {\"cmd\" : \"query\", \"extra\": 1} ", API_QUERY },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_null(api_parse_request(ok[i].line, &req), "%s", ok[i].line);
		cr_assert_eq(req.cmd, ok[i].cmd, "%s", ok[i].line);
	}
}

Test(api_parse, snapshot_arguments)
{
	cr_assert_null(api_parse_request("{\"cmd\":\"snapshot\",\"dir\":\"/tmp/s1\"}", &req));
	cr_assert_eq(req.cmd, API_SNAPSHOT);
	cr_assert_str_eq(req.dir, "/tmp/s1");
	cr_assert(!req.stop_after, "resume is the default");
	cr_assert_null(api_parse_request("{\"cmd\":\"snapshot\",\"dir\":\"/s\",\"then\":\"stop\"}", &req));
	cr_assert(req.stop_after);
	cr_assert_str_eq(req.dir, "/s");
}

Test(api_parse, snapshot_refusals)
{
	char *big = malloc(4200 + 64);

	expect_error("{\"cmd\":\"snapshot\"}", "needs \"dir\"");
	expect_error("{\"cmd\":\"snapshot\",\"dir\":7}", "needs \"dir\"");
	expect_error("{\"cmd\":\"snapshot\",\"dir\":\"rel/x\"}", "must be an absolute path (got 'rel/x')");
	expect_error("{\"cmd\":\"snapshot\",\"dir\":\"/x\",\"then\":\"later\"}",
		     "must be \"resume\" or \"stop\"");
	cr_assert_not_null(big);
	strcpy(big, "{\"cmd\":\"snapshot\",\"dir\":\"/");
	memset(big + strlen(big), 'a', 4200);
	strcpy(big + strlen("{\"cmd\":\"snapshot\",\"dir\":\"/") + 4200, "\"}");
	expect_error(big, "is longer than 4095 bytes");
	free(big);
}

Test(api_parse, bad_lines)
{
	expect_error("", "invalid JSON");
	expect_error("{\"cmd\":", "invalid JSON");
	expect_error("[\"query\"]", "a JSON object with a string \"cmd\"");
	expect_error("{\"cmd\":1}", "a JSON object with a string \"cmd\"");
	expect_error("{\"command\":\"query\"}", "a JSON object with a string \"cmd\"");
	expect_error("{\"cmd\":\"query\",\"cmd\":\"pause\"}", "invalid JSON"); /* duplicate keys */
	expect_error("{\"cmd\":\"reboot\"}",
		     "unknown command 'reboot' (query, stats-fd, pause, resume, snapshot, profile, migrate)");
}

Test(api_parse, profile_arguments)
{
	cr_assert_null(api_parse_request("{\"cmd\":\"profile\"}", &req));
	cr_assert_eq(req.cmd, API_PROFILE);
	cr_assert_eq(req.top, 10, "10 rows by default");
	cr_assert_null(api_parse_request("{\"cmd\":\"profile\",\"top\":100}", &req));
	cr_assert_eq(req.top, 100);
	cr_assert_null(api_parse_request("{\"cmd\":\"profile\",\"top\":1}", &req));
	cr_assert_eq(req.top, 1);
	expect_error("{\"cmd\":\"profile\",\"top\":0}", "\"top\" must be 1 to 100 (got 0)");
	expect_error("{\"cmd\":\"profile\",\"top\":101}", "\"top\" must be 1 to 100 (got 101)");
	expect_error("{\"cmd\":\"profile\",\"top\":-5}", "must be 1 to 100");
	expect_error("{\"cmd\":\"profile\",\"top\":\"3\"}", "profile takes \"top\" (a number)");
}

Test(api_parse, migrate_defaults)
{
	cr_assert_null(api_parse_request("{\"cmd\":\"migrate\",\"to\":\"tcp:192.0.2.7:4444\"}", &req));
	cr_assert_eq(req.cmd, API_MIGRATE);
	cr_assert_str_eq(req.to, "tcp:192.0.2.7:4444");
	cr_assert_eq(req.max_downtime_ns, 20000000ULL, "20 ms by default");
	cr_assert_eq(req.timeout_ms, 60000, "a minute by default");
	cr_assert(!req.stop_copy, "giving up is the default");
	cr_assert_eq(req.max_bandwidth, 0, "no bandwidth limit by default");
}

Test(api_parse, migrate_arguments)
{
	char line[512];

	cr_assert_null(
		api_parse_request("{\"cmd\":\"migrate\",\"to\":\"unix:/run/pv.sock\",\"max_downtime_ms\":1,"
				  "\"timeout_ms\":1000,\"max_bandwidth\":1048576,\"stop_copy\":true}",
				  &req));
	cr_assert_eq(req.cmd, API_MIGRATE);
	cr_assert_eq(req.max_bandwidth, 1048576, "1 MiB/s, the least limit");
	cr_assert_str_eq(req.to, "unix:/run/pv.sock");
	cr_assert_eq(req.max_downtime_ns, 1000000ULL);
	cr_assert_eq(req.timeout_ms, 1000);
	cr_assert(req.stop_copy);
	cr_assert_null(
		api_parse_request("{\"cmd\":\"migrate\",\"to\":\"tcp:[::1]:9\",\"max_downtime_ms\":60000,"
				  "\"timeout_ms\":3600000,\"stop_copy\":false}",
				  &req));
	cr_assert_str_eq(req.to, "tcp:[::1]:9");
	cr_assert_eq(req.max_downtime_ns, 60000ULL * 1000000ULL);
	cr_assert_eq(req.timeout_ms, 3600000);
	cr_assert(!req.stop_copy);
	cr_assert_eq(req.max_bandwidth, 0, "a request's limit does not stay for the next");
	/* "to" at its longest: 299 bytes. */
	snprintf(line, sizeof(line), "{\"cmd\":\"migrate\",\"to\":\"unix:/%0293d\"}", 0);
	cr_assert_null(api_parse_request(line, &req), "%s", line);
	cr_assert_eq(strlen(req.to), sizeof(req.to) - 1);
}

Test(api_parse, migrate_refusals)
{
	char line[512];

	/* "to": missing, not a string, not tcp: or unix:, too long. */
	expect_error("{\"cmd\":\"migrate\"}", "migrate needs \"to\" (a string)");
	expect_error("{\"cmd\":\"migrate\"}", "Object item not found: to");
	expect_error("{\"cmd\":\"migrate\",\"to\":7}", "migrate needs \"to\" (a string)");
	expect_error("{\"cmd\":\"migrate\",\"to\":null}", "migrate needs \"to\" (a string)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"ftp:host:21\"}",
		     "migrate: \"to\" is tcp:IP:PORT or unix:PATH (got 'ftp:host:21')");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"192.0.2.7:4444\"}", "\"to\" is tcp:IP:PORT or unix:PATH");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"\"}", "\"to\" is tcp:IP:PORT or unix:PATH (got '')");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"TCP:1.2.3.4:5\"}", "\"to\" is tcp:IP:PORT or unix:PATH");
	snprintf(line, sizeof(line), "{\"cmd\":\"migrate\",\"to\":\"unix:/%0294d\"}", 0);
	expect_error(line, "migrate: \"to\" is longer than 299 bytes");
	/* max_downtime_ms: 1 to 60000. */
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_downtime_ms\":0}",
		     "migrate: \"max_downtime_ms\" must be 1 to 60000 (got 0)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_downtime_ms\":60001}",
		     "\"max_downtime_ms\" must be 1 to 60000 (got 60001)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_downtime_ms\":-20}",
		     "\"max_downtime_ms\" must be 1 to 60000 (got -20)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_downtime_ms\":\"20\"}",
		     "\"max_downtime_ms\", \"timeout_ms\", \"max_bandwidth\" (numbers)");
	/* timeout_ms: 1000 to 3600000. */
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"timeout_ms\":999}",
		     "migrate: \"timeout_ms\" must be 1000 to 3600000 (got 999)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"timeout_ms\":3600001}",
		     "\"timeout_ms\" must be 1000 to 3600000 (got 3600001)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"timeout_ms\":1.5e3}",
		     "\"timeout_ms\", \"max_bandwidth\" (numbers)");
	/* max_bandwidth: 0 (none) or at least 1 MiB/s. */
	expect_error(
		"{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_bandwidth\":1048575}",
		"migrate: \"max_bandwidth\" is bytes per second, at least 1048576 (1 MiB/s), or 0 for no "
		"limit (got 1048575)");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_bandwidth\":-1}",
		     "\"max_bandwidth\" is bytes per second");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"max_bandwidth\":\"10M\"}",
		     "\"max_bandwidth\" (numbers)");
	/* stop_copy: true or false. */
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"stop_copy\":\"yes\"}",
		     "\"stop_copy\" (true/false): Expected true or false, got string");
	expect_error("{\"cmd\":\"migrate\",\"to\":\"unix:/s\",\"stop_copy\":1}",
		     "\"stop_copy\" (true/false)");
	/* A refusal leaves nothing of the request behind. */
	cr_assert_str_eq(req.to, "");
}

/* A command name whose two-byte character the 100-byte quote cuts: still a valid reply. */
Test(api_parse, error_cut_inside_a_character)
{
	char line[256] = "{\"cmd\":\"";

	memset(line + strlen(line), 'a', 99);
	strcat(line, "\xc3\xa9\"}");
	expect_error(line, "unknown command 'aaaa");
}

Test(api_parse, error_reply_replaces_bad_bytes)
{
	char *msg = error_of(api_error_reply("bad %s", "\xff\xfe"));

	cr_assert_str_eq(msg, "bad ??");
	free(msg);
}
