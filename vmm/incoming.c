// SPDX-License-Identifier: MIT
/*
 * Live migration, the destination (migrate.h, docs/migration.md): one
 * source is accepted, its machine checked against this host before it
 * sends anything else, its memory written into fresh guest RAM by the
 * stream's state machine (snapfile/migstream.c), its state kept; the VM
 * is then built by the restore path. The guest runs here only after the
 * source's GO, so until then the source may always resume it.
 */
#include "migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <net/if.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvm.h"
#include "control.h"
#include "vmm.h"
#include "x86.h"

/*
 * PERFVISOR_MIGRATE_FAULT=hello|memory|state|go (the tests' fault
 * injection, docs/migration.md): the destination dies right there, as a
 * crashed or killed one would, without a word to the source.
 */
static void fault_point(const char *where)
{
	const char *f = getenv("PERFVISOR_MIGRATE_FAULT");

	if (f && !strcmp(f, where)) {
		fprintf(stderr, "perfvisor: PERFVISOR_MIGRATE_FAULT=%s: the destination dies here\n", where);
		_exit(99);
	}
}

/*
 * The disks HELLO names (shared by path): each image must be here, of the
 * same size, and open for what the guest does with it. Not locked: the
 * source still holds the locks and hands them over at the pause.
 */
static const char *check_disks(const json_t *disks, char *why, size_t len)
{
	size_t i;
	json_t *d;

	if (!disks)
		return NULL; /* none */
	if (!json_is_array(disks) || json_array_size(disks) > VM_MAX_DISKS)
		return "HELLO's disks are not a list of at most 8";
	json_array_foreach(disks, i, d)
	{
		const char *path = NULL;
		json_int_t sectors = 0;
		int ro = 0, fd;
		struct stat st;
		uint64_t size;

		if (json_unpack(d, "{s:s, s:b, s:I}", "path", &path, "readonly", &ro, "sectors", &sectors) <
		    0)
			return "HELLO has a disk without its path, readonly or sectors";
		fd = open(path, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))) {
			snprintf(why, len, "the VM's disk %.200s cannot be opened %s here: %s", path,
				 ro ? "for reading" : "for writing",
				 fd < 0 ? strerror(errno) : "not a disk image");
			if (fd >= 0)
				close(fd);
			return why;
		}
		size = (uint64_t)st.st_size;
		if (S_ISBLK(st.st_mode) && ioctl(fd, BLKGETSIZE64, &size) < 0)
			size = 0;
		close(fd);
		if (size / 512 != (uint64_t)sectors) {
			snprintf(why, len,
				 "the VM's disk %.200s has %" PRIu64 " sectors here, %lld at the source",
				 path, size / 512, (long long)sectors);
			return why;
		}
	}
	return NULL;
}

/* The taps HELLO names (shared by name): each must exist here (the source is still attached). */
static const char *check_taps(const json_t *taps, char *why, size_t len)
{
	size_t i;
	json_t *t;

	if (!taps)
		return NULL;
	if (!json_is_array(taps) || json_array_size(taps) > VIRTIO_NET_MAX)
		return "HELLO's taps are not a list of at most 4";
	json_array_foreach(taps, i, t)
	{
		if (!json_is_string(t) || json_string_length(t) >= VIRTIO_NET_IFNAMSIZ)
			return "HELLO has a tap that is not an interface name";
		if (!if_nametoindex(json_string_value(t))) {
			snprintf(why, len,
				 "the VM's tap %s is not here (create it first: ip tuntap add %s mode tap)",
				 json_string_value(t), json_string_value(t));
			return why;
		}
	}
	return NULL;
}

/* The machine HELLO offers, checked against this host and the limits; NULL or why not. */
static const char *check_hello(const json_t *h, struct vm_config *cfg, unsigned limit_cpus,
			       uint64_t limit_mem, char *why, size_t len)
{
	json_int_t proto = 0, vcpus = 0, mem = 0, hide = 0, add = 0;
	const char *kernel = "", *cmdline = "";
	int pmu = 1;
	json_t *cpuid = NULL;
	struct kvm_sys kvm = { .fd = -1 };
	struct kvm_cpuid2 *here = NULL;
	struct errbuf e;
	const char *bad = NULL;

	if (json_unpack((json_t *)h, "{s:I, s:I, s:I, s:b, s:I, s:I, s:s, s:s, s:o}", "protocol", &proto,
			"vcpus", &vcpus, "memory", &mem, "pmu", &pmu, "cpuid_hide", &hide, "cpuid_add", &add,
			"kernel", &kernel, "cmdline", &cmdline, "cpuid", &cpuid) < 0)
		return "HELLO lacks a field of protocol 1 (not a perfvisor source?)";
	if (proto < 1 || proto > MIG_PROTOCOL) {
		snprintf(why, len, "the source speaks migration protocol %lld, this perfvisor 1 to %u",
			 (long long)proto, MIG_PROTOCOL);
		return why;
	}
	if (vcpus < 1 || vcpus > PV_MAX_CPUS || (limit_cpus && vcpus > limit_cpus)) {
		snprintf(why, len, "the VM has %lld vCPUs, this destination offers %u (--cpus)",
			 (long long)vcpus, limit_cpus ? limit_cpus : PV_MAX_CPUS);
		return why;
	}
	if (gmem_check_size((uint64_t)mem, &e)) {
		snprintf(why, len, "the VM's RAM: %.250s", e.msg);
		return why;
	}
	if (limit_mem && (uint64_t)mem > limit_mem) {
		snprintf(why, len,
			 "the VM has %lld MiB of RAM, this destination offers %" PRIu64 " MiB (--memory)",
			 (long long)mem >> 20, limit_mem >> 20);
		return why;
	}
	if (kvmsys_open(&kvm, &e)) {
		snprintf(why, len, "%.250s", e.msg);
		return why;
	}
	if (vcpus > kvm.max_vcpus) {
		snprintf(why, len, "the VM has %lld vCPUs, this host's KVM at most %d", (long long)vcpus,
			 kvm.max_vcpus);
		bad = why;
	} else if ((unsigned)add & ~kvmsys_cpuid_add(&kvm)) {
		snprintf(why, len,
			 "the guest has the TSC-deadline LAPIC timer, which this host's KVM does not offer");
		bad = why;
	} else if (x86_setup_cpuid(&kvm, NULL, 0, (unsigned)vcpus, (unsigned)add, (unsigned)hide, -1, &here,
				   &e)) {
		snprintf(why, len, "%.250s", e.msg);
		bad = why;
	} else if (mig_cpuid_check(cpuid, here, why, len)) {
		bad = why;
	}
	free(here);
	kvmsys_close(&kvm);
	if (bad)
		return bad;
	bad = check_disks(json_object_get(h, "disks"), why, len);
	if (bad)
		return bad;
	bad = check_taps(json_object_get(h, "taps"), why, len);
	if (bad)
		return bad;
	cfg->nr_cpus = (unsigned)vcpus;
	cfg->mem_size = (uint64_t)mem;
	return NULL;
}

/* Tell the source why not (best effort: it may be gone) and fail with the same words. */
static int refuse(struct mig_incoming *in, int rc, struct errbuf *err)
{
	struct errbuf ignore;

	mig_send_json(&in->conn, MIG_ABORT, json_pack("{s:s}", "error", err->msg), &ignore);
	return rc;
}

/* The VM made on HELLO and its RAM, given up (what vm_create took is gone from here already). */
static void drop_vm(struct mig_incoming *in)
{
	if (in->vm_fd >= 0)
		close(in->vm_fd);
	in->vm_fd = -1;
	kvmsys_close(&in->kvm);
	gmem_fini(&in->mem);
	in->mem = (struct gmem){ .fd = -1, .src_fd = -1 };
}

int mig_incoming_receive(struct vm_config *cfg, unsigned limit_cpus, uint64_t limit_mem,
			 struct mig_incoming *in, struct errbuf *err)
{
	static char label[400];
	struct mig_addr addr;
	struct mig_rx rx = { 0 };
	struct mig_hdr h;
	void *p = NULL;
	json_t *hello;
	char why[sizeof(err->msg)];
	const char *no;
	int rc;

	memset(in, 0, sizeof(*in));
	in->conn.fd = in->vm_fd = in->kvm.fd = -1;
	in->mem = (struct gmem){ .fd = -1, .src_fd = -1 };
	rc = mig_addr_parse(cfg->incoming, &addr, err);
	if (rc)
		return rc;
	in->conn.deadline_ns = util_now_ns() + cfg->incoming_timeout_ms * 1000000ULL;
	rc = mig_accept_one(&in->conn, &addr, true, err);
	if (rc)
		return rc;
	in->conn.peer = "the source";
	/* From now on every wait is bounded by the reply timeout, renewed at each record. */
	in->conn.deadline_ns = util_now_ns() + MIG_REPLY_TIMEOUT_MS * 1000000ULL;
	rc = mig_recv(&in->conn, &h, &p, 0, err);
	if (!rc)
		rc = mig_rx_feed(&rx, &h, p, err);
	if (rc) {
		free(p);
		return refuse(in, rc, err);
	}
	fault_point("hello");
	hello = json_loads(p, JSON_REJECT_DUPLICATES, NULL);
	free(p);
	no = json_is_object(hello) ? check_hello(hello, cfg, limit_cpus, limit_mem, why, sizeof(why))
				   : "HELLO is not a JSON object";
	if (!no && cfg->verbose)
		vm_log("incoming migration: %u vCPUs, %" PRIu64 " MiB, kernel %s", cfg->nr_cpus,
		       cfg->mem_size >> 20, json_string_value(json_object_get(hello, "kernel")));
	json_decref(hello);
	if (no) {
		errbuf_set(err, -EOPNOTSUPP, "refused the incoming VM: %s", no);
		return refuse(in, -EOPNOTSUPP, err);
	}
	rc = gmem_init(&in->mem, cfg->mem_size, err);
	if (!rc)
		rc = kvmsys_open(&in->kvm, err);
	if (!rc)
		rc = kvmsys_create_vm(&in->kvm, &in->mem, cfg->nr_cpus, &in->vm_fd, err);
	if (rc) {
		drop_vm(in);
		return refuse(in, rc, err);
	}
	mig_rx_set_memory(&rx, in->mem.hva, in->mem.size);
	rc = mig_send_json(&in->conn, MIG_ACCEPT, json_pack("{s:b}", "ok", 1), err);
	/* Memory until the state: a stalled source is bounded by the source's own timeout and ours. */
	while (!rc && rx.phase != MIG_RX_DONE) {
		in->conn.deadline_ns = util_now_ns() + MIG_REPLY_TIMEOUT_MS * 1000000ULL;
		rc = mig_recv(&in->conn, &h, &p, SNAP_MAX_STATE_SIZE, err);
		if (!rc && h.type == MIG_ABORT) {
			json_t *j = p ? json_loads(p, 0, NULL) : NULL;
			const char *e = j ? json_string_value(json_object_get(j, "error")) : NULL;

			rc = errbuf_set(err, -ECANCELED, "the source gave up: %s",
					e ? e : "(no reason given)");
			json_decref(j);
		} else if (!rc) {
			rc = mig_rx_feed(&rx, &h, p, err);
			if (rx.records == 3)
				fault_point("memory");
		}
		if (!rc && rx.phase == MIG_RX_DONE) {
			in->state = p; /* rx.state points into it */
			in->state_len = rx.state_len;
			p = NULL;
		}
		free(p);
		p = NULL;
	}
	if (rc) {
		drop_vm(in);
		if (rc != -ECANCELED)
			refuse(in, rc, err);
		return rc;
	}
	fault_point("state");
	in->pages = rx.pages;
	in->zero_pages = rx.zero_pages;
	in->records = rx.records;
	in->t_state_ns = util_now_ns();
	if (cfg->verbose)
		vm_log("incoming migration: %" PRIu64 " records, %" PRIu64 " pages, %" PRIu64
		       " zero pages, %u bytes of state",
		       rx.records, rx.pages, rx.zero_pages, in->state_len);
	/* A restore of what came: the restore path builds the VM. */
	snprintf(label, sizeof(label), "(the migration from %s)", addr.text);
	cfg->restore = label;
	cfg->restore_no_check = true;
	cfg->incoming_vm = in;
	return 0;
}

int mig_incoming_ready(struct mig_incoming *in, int rc, const char *why, struct errbuf *err)
{
	struct errbuf ignore;

	in->t_ready_ns = util_now_ns();
	in->conn.deadline_ns = in->t_ready_ns + MIG_REPLY_TIMEOUT_MS * 1000000ULL;
	if (rc) {
		mig_send_json(&in->conn, MIG_READY, json_pack("{s:b, s:s}", "ok", 0, "error", why), &ignore);
		return rc;
	}
	rc = mig_send_json(&in->conn, MIG_READY, json_pack("{s:b}", "ok", 1), err);
	if (!rc)
		rc = mig_recv_answer(&in->conn, MIG_GO, NULL, err);
	if (!rc) {
		in->t_go_ns = util_now_ns();
		fault_point("go");
	}
	if (rc)
		errbuf_append(err,
			      " (no GO from the source: the guest did not run here, the source keeps it)");
	return rc;
}

void mig_incoming_running(struct mig_incoming *in, bool verbose)
{
	struct errbuf ignore;

	if (verbose)
		vm_log("incoming migration: the VM built in %.1f ms after its state came, GO %.1f ms later, "
		       "the vCPUs started %.1f ms after GO",
		       (double)(in->t_ready_ns - in->t_state_ns) / 1e6,
		       (double)(in->t_go_ns - in->t_ready_ns) / 1e6,
		       (double)(util_now_ns() - in->t_go_ns) / 1e6);

	mig_send(&in->conn, MIG_RUNNING, NULL, 0, NULL, 0, &ignore);
	mig_close(&in->conn);
}

void mig_incoming_fini(struct mig_incoming *in)
{
	mig_close(&in->conn);
	drop_vm(in);
	free(in->state);
	in->state = NULL;
}
