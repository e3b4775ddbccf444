// SPDX-License-Identifier: MIT
/*
 * `perfvisor migrate SOCKET --to ADDR`: asks the VM serving the control
 * socket to move to the perfvisor waiting at ADDR (perfvisor run
 * --incoming), and prints its rounds and the guest's pause
 * (docs/migration.md).
 */
#include "migrate.h"
#include "vmm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char migrate_usage[] =
	"Usage: perfvisor migrate SOCKET --to tcp:HOST:PORT|unix:PATH [options]\n"
	"Move the running VM serving the control socket SOCKET (perfvisor run --api-socket) to the\n"
	"perfvisor waiting at the address (perfvisor run --incoming ADDR), with its memory, devices,\n"
	"PV PMU counters, statistics and profile (docs/migration.md). Its memory is copied while it\n"
	"runs, in rounds, until what is left fits --max-downtime; then it pauses, the rest and its\n"
	"state go, and it ends here once the destination says it runs there.\n"
	"\n"
	"  --to ADDR            the destination: tcp:HOST:PORT (a name is resolved here), tcp:[IPv6]:PORT\n"
	"                       or unix:PATH\n"
	"  --max-downtime TIME  the pause the guest may see, e.g. 20ms or 1s (default 20ms; 1ms-60s)\n"
	"  --timeout TIME       the whole migration at most, e.g. 60s (default 60s; 1s-3600s)\n"
	"  --max-bandwidth RATE bytes per second the rounds may send while the guest runs, e.g. 100M\n"
	"                       (K, M, G: binary; at least 1M; default: as fast as the connection\n"
	"                       goes). The paused round is not limited.\n"
	"  --stop-copy          when the rounds stop converging, pause and copy the rest anyway\n"
	"                       (default: give up, and the VM runs on here)\n"
	"  --json               print the VM's reply (rounds, downtime) as one JSON object\n"
	"\n"
	"Exit status 0 when the VM runs at the destination (this one has ended), 1 if the migration\n"
	"failed (the reason is printed; the VM runs on here, or stays paused if the destination may\n"
	"run it: read the message), 2 on usage or connection errors.\n";

/* "20ms", "1s", or a bare number of `unit_ms` each; into milliseconds within [min, max]. */
static int parse_time(const char *s, uint64_t unit_ms, uint64_t min, uint64_t max, uint64_t *ms)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno || *s == '-')
		return -EINVAL;
	if (!strcmp(end, "ms"))
		unit_ms = 1;
	else if (!strcmp(end, "s"))
		unit_ms = 1000;
	else if (*end)
		return -EINVAL;
	if (v > max / unit_ms || v * unit_ms < min)
		return -ERANGE;
	*ms = v * unit_ms;
	return 0;
}

static void print_rounds(const json_t *rounds)
{
	size_t i;
	json_t *r;

	json_array_foreach(rounds, i, r)
	{
		json_int_t pages = json_integer_value(json_object_get(r, "pages")),
			   zero = json_integer_value(json_object_get(r, "zero_pages")),
			   bytes = json_integer_value(json_object_get(r, "bytes")),
			   ns = json_integer_value(json_object_get(r, "ns")),
			   dirty = json_integer_value(json_object_get(r, "dirty"));
		bool paused = json_is_true(json_object_get(r, "paused"));

		printf("round %zu%s: %" JSON_INTEGER_FORMAT " pages + %" JSON_INTEGER_FORMAT
		       " zero, %.1f MiB in %.1f ms (%.0f MiB/s)",
		       i, paused ? " (paused)" : "", pages, zero, (double)bytes / 1048576.0, (double)ns / 1e6,
		       ns ? (double)bytes / 1048576.0 / ((double)ns / 1e9) : 0.0);
		if (!paused)
			printf("; %" JSON_INTEGER_FORMAT " pages dirtied meanwhile", dirty);
		printf("\n");
	}
}

int mig_cmd_migrate(int argc, char **argv)
{
	const char *sock = NULL, *to = NULL;
	uint64_t downtime_ms = 20, timeout_ms = 60000, bandwidth = 0;
	bool stop_copy = false, as_json = false;
	char addr[300], reply[65536];
	struct errbuf err;
	json_t *rep;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(migrate_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--to") && i + 1 < argc) {
			to = argv[++i];
		} else if (!strcmp(argv[i], "--max-downtime") && i + 1 < argc) {
			if (parse_time(argv[++i], 1, 1, 60000, &downtime_ms)) {
				fprintf(stderr,
					"perfvisor migrate: --max-downtime '%s': a time of 1ms to 60s (e.g. 20ms)\n",
					argv[i]);
				return PV_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			if (parse_time(argv[++i], 1000, 1000, 3600000, &timeout_ms)) {
				fprintf(stderr,
					"perfvisor migrate: --timeout '%s': a time of 1s to 3600s (e.g. 60s)\n",
					argv[i]);
				return PV_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--max-bandwidth") && i + 1 < argc) {
			if (util_parse_size(argv[++i], &bandwidth) || bandwidth < MIG_MIN_BANDWIDTH ||
			    bandwidth > (uint64_t)INT64_MAX) {
				fprintf(stderr,
					"perfvisor migrate: --max-bandwidth '%s': bytes per second, at least 1M "
					"(e.g. 100M)\n",
					argv[i]);
				return PV_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--stop-copy")) {
			stop_copy = true;
		} else if (!strcmp(argv[i], "--json")) {
			as_json = true;
		} else if (argv[i][0] == '-' || sock) {
			fprintf(stderr,
				"perfvisor migrate: unexpected argument '%s' (see perfvisor migrate --help)\n",
				argv[i]);
			return PV_EXIT_USAGE;
		} else {
			sock = argv[i];
		}
	}
	if (!sock || !to) {
		fprintf(stderr,
			"perfvisor migrate: needs SOCKET and --to ADDR (see perfvisor migrate --help)\n");
		return PV_EXIT_USAGE;
	}
	/* The VM parses numeric addresses only (it runs under seccomp): names are resolved here. */
	if (mig_addr_resolve(to, addr, sizeof(addr), &err) ||
	    mig_addr_parse(addr, &(struct mig_addr){ 0 }, &err)) {
		fprintf(stderr, "perfvisor migrate: --to %s\n", err.msg);
		return PV_EXIT_USAGE;
	}
	/* The VM's own bound is --timeout; its reply comes a little after. */
	rc = cmd_api_call("migrate", sock,
			  json_pack("{s:s, s:s, s:I, s:I, s:I, s:b}", "cmd", "migrate", "to", addr,
				    "max_downtime_ms", (json_int_t)downtime_ms, "timeout_ms",
				    (json_int_t)timeout_ms, "max_bandwidth", (json_int_t)bandwidth,
				    "stop_copy", stop_copy),
			  (int)timeout_ms + 30000, reply, sizeof(reply), &rep);
	if (rc == PV_EXIT_USAGE)
		return rc;
	if (as_json)
		printf("%s\n", reply);
	else if (rep)
		print_rounds(json_object_get(rep, "rounds"));
	if (!as_json && json_is_true(json_object_get(rep, "stop_copy")))
		printf("perfvisor migrate: the rounds did not converge: the guest was paused anyway "
		       "(--stop-copy)\n");
	if (rc) {
		cmd_api_error("migrate", rep, reply);
		json_decref(rep);
		return 1;
	}
	if (!as_json) {
		json_int_t mem = json_integer_value(json_object_get(rep, "memory_bytes")),
			   bytes = json_integer_value(json_object_get(rep, "bytes"));

		printf("perfvisor migrate: the VM runs at %s; the guest was paused %.1f ms, the migration took "
		       "%.1f ms and sent %.1f MiB (%.2f of its %" JSON_INTEGER_FORMAT " MiB of RAM)\n",
		       addr, (double)json_integer_value(json_object_get(rep, "downtime_ns")) / 1e6,
		       (double)json_integer_value(json_object_get(rep, "total_ns")) / 1e6,
		       (double)bytes / 1048576.0, mem ? (double)bytes / (double)mem : 0.0, mem >> 20);
	}
	json_decref(rep);
	return 0;
}
