// SPDX-License-Identifier: MIT
/*
 * `perfvisor snapshot SOCKET --output DIR [--resume|--stop]`, which asks a
 * running VM for a snapshot over its control socket, and `perfvisor
 * snapshot-info DIR [--verify]`, which checks a snapshot and prints what
 * it holds without running it (docs/snapshot.md).
 */
#include "snapfile/snapfile.h"
#include "vmm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char snapshot_usage[] =
	"Usage: perfvisor snapshot SOCKET --output DIR [--resume|--stop]\n"
	"Pause the VM serving the control socket SOCKET (perfvisor run --api-socket), save its\n"
	"whole state into the new directory DIR (atomically: it appears complete or not at all),\n"
	"then let it run on (--resume, the default) or end it (--stop). Prints how long the guest\n"
	"was paused. Restore it with: perfvisor run --restore DIR. Exit status 0 when saved, 1 if\n"
	"the VM could not save it (the reason is printed; the VM carries on), 2 on usage or\n"
	"connection errors.\n";

int cmd_api_call(const char *tool, const char *sock, json_t *req, int timeout_ms, char *reply, size_t len,
		 json_t **rep)
{
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	struct errbuf err;
	int fd, rc;

	*rep = NULL;
	json_decref(req);
	if (!line) {
		fprintf(stderr, "perfvisor %s: the request cannot be sent (a name that is not UTF-8?)\n",
			tool);
		return PV_EXIT_USAGE;
	}
	fd = util_api_connect(sock, &err);
	rc = fd < 0 ? fd : util_api_request(fd, line, reply, len, NULL, timeout_ms, &err);
	free(line);
	if (fd >= 0)
		close(fd);
	if (rc) {
		fprintf(stderr, "perfvisor %s: %s\n", tool, err.msg);
		return PV_EXIT_USAGE;
	}
	*rep = json_loads(reply, 0, NULL);
	return *rep && json_is_true(json_object_get(*rep, "ok")) ? 0 : 1;
}

void cmd_api_error(const char *tool, const json_t *rep, const char *reply)
{
	const json_t *e = rep ? json_object_get(rep, "error") : NULL;

	fprintf(stderr, "perfvisor %s: %s\n", tool, json_is_string(e) ? json_string_value(e) : reply);
}

int snap_cmd_snapshot(int argc, char **argv)
{
	const char *sock = NULL, *out = NULL, *then = "resume";
	char dir[4096], reply[8192];
	json_t *rep;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(snapshot_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--output") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--resume") || !strcmp(argv[i], "--stop")) {
			then = argv[i] + 2;
		} else if (argv[i][0] == '-' || sock) {
			fprintf(stderr,
				"perfvisor snapshot: unexpected argument '%s' (see perfvisor snapshot --help)\n",
				argv[i]);
			return PV_EXIT_USAGE;
		} else {
			sock = argv[i];
		}
	}
	if (!sock || !out || !*out) {
		fprintf(stderr,
			"perfvisor snapshot: needs SOCKET and --output DIR (see perfvisor snapshot --help)\n");
		return PV_EXIT_USAGE;
	}
	/* The VMM may run in another directory: send an absolute path. */
	if (out[0] != '/') {
		char cwd[2048];

		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(dir, sizeof(dir), "%s/%s", cwd, out) >= (int)sizeof(dir)) {
			fprintf(stderr, "perfvisor snapshot: cannot make %s an absolute path\n", out);
			return PV_EXIT_USAGE;
		}
	} else {
		snprintf(dir, sizeof(dir), "%s", out);
	}
	/* Writing gigabytes takes a while: wait up to 10 minutes for the reply. */
	rc = cmd_api_call("snapshot", sock,
			  json_pack("{s:s, s:s, s:s}", "cmd", "snapshot", "dir", dir, "then", then), 600000,
			  reply, sizeof(reply), &rep);
	if (rc == 1)
		cmd_api_error("snapshot", rep, reply);
	if (rc) {
		json_decref(rep);
		return rc;
	}
	printf("perfvisor snapshot: %s: %" JSON_INTEGER_FORMAT " MiB of memory (%s) and %" JSON_INTEGER_FORMAT
	       " bytes of state; the guest was paused %.1f ms (memory %.1f ms), then %s\n",
	       dir, json_integer_value(json_object_get(rep, "memory_bytes")) >> 20,
	       json_string_value(json_object_get(rep, "memory_io")),
	       json_integer_value(json_object_get(rep, "state_bytes")),
	       (double)json_integer_value(json_object_get(rep, "paused_ns")) / 1e6,
	       (double)json_integer_value(json_object_get(rep, "memory_ns")) / 1e6,
	       !strcmp(then, "stop") ? "stopped" : "resumed");
	json_decref(rep);
	return 0;
}

/* ---- snapshot-info ---------------------------------------------------------------- */

static const char info_usage[] =
	"Usage: perfvisor snapshot-info DIR [--verify]\n"
	"Check the snapshot in DIR (its state file completely, the memory file's size; with\n"
	"--verify also the memory file's checksum) and print what it holds: format, machine,\n"
	"devices, each vCPU and the PV PMU counters in use. Exit status 0 if it can be restored,\n"
	"1 if not (the reason is printed), 2 on usage errors.\n";

static const char *mp_state_name(uint32_t s)
{
	switch (s) {
	case KVM_MP_STATE_RUNNABLE:
		return "runnable";
	case KVM_MP_STATE_UNINITIALIZED:
		return "waiting for INIT and SIPI";
	case KVM_MP_STATE_INIT_RECEIVED:
		return "waiting for SIPI";
	case KVM_MP_STATE_HALTED:
		return "halted";
	case KVM_MP_STATE_SIPI_RECEIVED:
		return "SIPI received";
	default:
		return "other";
	}
}

static void print_vcpu(const struct snap *s, unsigned i)
{
	const struct snap_vcpu *v = &s->vcpu[i];
	const struct snap_stats *st = snap_part_state(s, &snap_stats_part, (int)i);
	const struct pmu_vcpu_state *pmu = snap_part_state(s, &pmu_vcpu_part, (int)i);
	const struct pmu_caps *caps = snap_part_state(s, &pmu_caps_part, -1);
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	uint64_t exits = 0;
	unsigned used = 0;

	memcpy(&regs, v->regs.p, sizeof(regs));
	memcpy(&sregs, v->sregs.p, sizeof(sregs));
	for (unsigned k = 0; st && k < st->n; k++)
		if (!strcmp(st->s[k].name, "exits"))
			exits = st->s[k].value;
	printf("vCPU %u: rip 0x%llx in ring %u, %s, %u MSRs, %" PRIu64 " exits\n", i,
	       (unsigned long long)regs.rip, sregs.cs.selector & 3, mp_state_name(v->mp_state),
	       v->msrs.len / 16, exits);
	if (!s->pmu || !pmu || !caps)
		return;
	for (unsigned c = 0; c < caps->nr_counters; c++) {
		const struct pmu_event_info *ev =
			pmu_event_info((uint32_t)(pmu->cfg[c] & PV_PMU_CFG_EVENT_MASK));

		if (!(pmu->cfg[c] & PV_PMU_CFG_EN))
			continue;
		printf("  PV PMU counter %u: %s = %" PRIu64 "%s%s\n", c, ev ? ev->name : "?", pmu->value[c],
		       (pmu->global_ctrl >> c & 1) ? "" : " (stopped in GLOBAL_CTRL)",
		       (pmu->cfg[c] & PV_PMU_CFG_INT) ? ", interrupts on overflow" : "");
		used++;
	}
	printf("  PV PMU: %u counters in use, GLOBAL_STATUS 0x%" PRIx64 ", PMI %s%s, page %s\n", used,
	       pmu->status, (pmu->pmi_cfg & PV_PMU_PMI_MODE_VECTOR) ? "as a vector" : "as NMI",
	       pmu->pmi_pending ? " (one pending)" : "",
	       (pmu->page & PV_PMU_PAGE_ENABLE) ? "registered" : "off");
}

/* One line: what each device part says of itself, in the schema's order. */
static void print_devices(const struct snap *s)
{
	const char *sep = "";

	printf("devices: ");
	for (unsigned k = 0; k < s->schema->nr_devices; k++) {
		const struct snap_part *p = s->schema->devices[k];
		char words[256];

		if (!p->describe || !s->dev[k])
			continue;
		p->describe(s->dev[k], words, sizeof(words));
		printf("%s%s", sep, words);
		sep = ", ";
	}
	printf("\n");
}

int snap_cmd_info(int argc, char **argv)
{
	const char *dir = NULL;
	bool verify = false;
	char path[4200], when[64];
	struct snap *s;
	struct errbuf err;
	struct stat st;
	void *blob = NULL;
	size_t len = 0;
	time_t t;
	int rc = 1, fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(info_usage, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--verify")) {
			verify = true;
		} else if (argv[i][0] == '-' || dir) {
			fprintf(stderr, "perfvisor snapshot-info: unexpected argument '%s' (see --help)\n",
				argv[i]);
			return PV_EXIT_USAGE;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		fprintf(stderr, "perfvisor snapshot-info: needs a snapshot directory (see --help)\n");
		return PV_EXIT_USAGE;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return 1;
	snprintf(path, sizeof(path), "%s/%s", dir, SNAP_STATE_FILE);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "perfvisor snapshot-info: %s is not a directory\n", dir);
		goto out;
	}
	if (snapio_read_file(path, SNAP_MAX_STATE_SIZE, &blob, &len, &err) ||
	    snap_parse(blob, len, vm_snap_schema(), s, &err)) {
		fprintf(stderr, "perfvisor snapshot-info: %s: %s\n", dir, err.msg);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, SNAP_MEMORY_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != s->mem_size) {
		fprintf(stderr,
			"perfvisor snapshot-info: %s: the memory file is missing or not %" PRIu64 " bytes\n",
			dir, s->mem_size);
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if (verify) {
		uint64_t sum = 0;
		int r = snapio_hash_file(fd, s->mem_size, &sum);

		if (r || sum != s->mem_checksum) {
			fprintf(stderr,
				"perfvisor snapshot-info: %s: the memory file is damaged (checksum)\n", dir);
			close(fd);
			goto out;
		}
	}
	close(fd);
	t = (time_t)(s->created_ns / 1000000000ULL);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
	printf("snapshot %s: format %u, written by %s at %s\n", dir, s->format, s->writer, when);
	printf("machine: %u vCPUs, %" PRIu64 " MiB RAM, PV PMU %s, taken on a %s host%s, TSC %u kHz\n",
	       s->nr_vcpus, s->mem_size >> 20, s->pmu ? "on" : "off", host_kind_name(s->host_kind),
	       (s->host_flags & PV_HOST_NESTED) ? " (nested)" : "", s->tsc_khz);
	printf("kernel: %s, command line \"%s\"\n", s->kernel, s->cmdline);
	if (s->profile && s->profile[0])
		printf("profile: %s, symbols from %s (docs/profiling.md)\n", s->profile,
		       s->profile_symbols && s->profile_symbols[0] ? s->profile_symbols : "the kernel");
	else
		printf("profile: off\n");
	printf("memory: %s, %" PRIu64 " bytes, checksum %016" PRIx64 " (%s)\n", SNAP_MEMORY_FILE, s->mem_size,
	       s->mem_checksum, verify ? "verified" : "not verified: --verify");
	print_devices(s);
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		print_vcpu(s, i);
	rc = 0;
out:
	snap_fini(s);
	free(blob);
	free(s);
	return rc;
}
