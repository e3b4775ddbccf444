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
		     "unknown command 'reboot' (query, stats-fd, pause, resume, snapshot, profile)");
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
