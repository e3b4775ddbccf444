// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the control socket's request parser (vmm/api_parse.c).
 * Any line gives either a parsed request or an error reply that can be
 * sent (valid JSON, valid UTF-8); a snapshot request's directory is
 * absolute and its "then" was one of the two words.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/vmm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct api_request r;
	char *line = malloc(size + 1);
	json_t *err;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	err = api_parse_request(line, &r);
	if (err) {
		char *text = json_dumps(err, JSON_COMPACT);

		if (!text || r.cmd != API_BAD)
			abort(); /* a client would get no reply */
		free(text);
		json_decref(err);
	} else if (r.cmd == API_BAD || (r.cmd == API_SNAPSHOT && r.dir[0] != '/')) {
		abort();
	}
	free(line);
	return 0;
}
