// SPDX-License-Identifier: MIT
/*
 * jsoncheck: parse JSON from stdin (with jansson) and check values, for the
 * integration tests, which run under busybox without a JSON tool.
 * Usage: jsoncheck PATH=VALUE|PATH...   PATH is keys and array indexes joined
 * by '/', e.g. vcpus/0/exit.io=37; VALUE '*' only requires the path to exist;
 * a bare PATH prints its value.
 * Exit 0 if the input is valid JSON and every check holds, 1 otherwise.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *walk(json_t *v, char *path)
{
	for (char *tok = strtok(path, "/"); tok && v; tok = strtok(NULL, "/")) {
		if (json_is_array(v)) {
			char *end;
			long i = strtol(tok, &end, 10);

			v = *end ? NULL : json_array_get(v, (size_t)i);
		} else {
			v = json_object_get(v, tok);
		}
	}
	return v;
}

static int check(json_t *root, const char *spec)
{
	char *path = strdup(spec), *eq = strchr(path, '=');
	char got[64];
	json_t *v;
	int ok;

	if (eq)
		*eq = '\0';
	v = walk(root, path);
	if (!v) {
		fprintf(stderr, "jsoncheck: %s: no such path\n", spec);
		free(path);
		return 0;
	}
	if (json_is_integer(v))
		snprintf(got, sizeof(got), "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v))
		snprintf(got, sizeof(got), "%s", json_string_value(v));
	else
		snprintf(got, sizeof(got), "<%s>", json_is_array(v) ? "array" : "object");
	if (!eq) {
		printf("%s\n", got);
		free(path);
		return 1;
	}
	ok = !strcmp(eq + 1, "*") || !strcmp(eq + 1, got);
	if (!ok)
		fprintf(stderr, "jsoncheck: %s: got %s\n", spec, got);
	free(path);
	return ok;
}

int main(int argc, char **argv)
{
	json_error_t err;
	json_t *root = json_loadf(stdin, 0, &err);
	int ok = 1;

	if (!root) {
		fprintf(stderr, "jsoncheck: invalid JSON at line %d: %s\n", err.line, err.text);
		return 1;
	}
	for (int i = 1; i < argc; i++)
		ok &= check(root, argv[i]);
	json_decref(root);
	return ok ? 0 : 1;
}
