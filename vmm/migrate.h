/* SPDX-License-Identifier: MIT */
/*
 * Live migration (docs/migration.md): the connection and its records with
 * a bound on every wait (migconn.c), the source's pre-copy over KVM's
 * dirty log (migrate.c) and the destination's side (incoming.c), whose VM
 * the restore path builds from the state and RAM that came. Calls control,
 * kvm and the snapshot's state capture.
 */
#ifndef PERFVISOR_VMM_MIGRATE_H
#define PERFVISOR_VMM_MIGRATE_H

#include <jansson.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "kvm.h"
#include "machine/machine.h"
#include "snapfile/snapfile.h"
#include "util/util.h"

#define MIG_DEFAULT_TIMEOUT_MS 60000ULL		  /* the whole migration, at most (--timeout) */
#define MIG_DEFAULT_DOWNTIME_NS 20000000ULL	  /* 20 ms (--max-downtime) */
#define MIG_DEFAULT_INCOMING_TIMEOUT_MS 600000ULL /* a destination waits this long for its source */
#define MIG_REPLY_TIMEOUT_MS 30000     /* the destination's answer to HELLO, STATE (its build) and GO */
#define MIG_MAX_ROUNDS 30	       /* memory rounds while the guest runs */
#define MIG_MIN_BANDWIDTH (1ULL << 20) /* --max-bandwidth at least 1 MiB/s */

/* tcp:IPv4:PORT, tcp:[IPv6]:PORT or unix:PATH, numeric (no name lookup: see mig_addr_resolve). */
struct mig_addr {
	struct sockaddr_storage sa;
	socklen_t len;
	char text[300];
};
int mig_addr_parse(const char *s, struct mig_addr *a, struct errbuf *err);
/* Host names in a tcp: address turned into a numeric address (the CLI, before it asks the VM). */
int mig_addr_resolve(const char *s, char *out, size_t len, struct errbuf *err);

/* The CPUID a guest sees as HELLO carries it (the PV PMU's leaves left out: its part checks them). */
json_t *mig_cpuid_json(const struct kvm_cpuid2 *c);
/* Would this host give the guest the same (here: as x86_setup_cpuid computes it)? 0 or why not. */
int mig_cpuid_check(const json_t *theirs, const struct kvm_cpuid2 *here, char *why, size_t len);

/* One side of a migration connection: records numbered and checked, every wait bounded. */
struct mig_conn {
	int fd;
	uint32_t tx_seq, rx_seq;
	uint64_t tx_bytes, rx_bytes;
	uint64_t deadline_ns; /* no wait goes past it (util_now_ns) */
	const char *peer;     /* for messages */
	/* Bytes per second the sender keeps to (0: as fast as the connection goes), from rate_t0_ns
	 * and rate_b0 (tx_bytes then) on: mig_send waits when it is ahead. */
	uint64_t max_bps, rate_t0_ns, rate_b0;
};
/* Keep to bps bytes per second from now on (0: no limit). */
void mig_conn_limit(struct mig_conn *c, uint64_t bps);
/* Connect (source) within the deadline. 0 or -errno with a message. */
int mig_connect(struct mig_conn *c, const struct mig_addr *a, struct errbuf *err);
/* Listen, accept one connection within the deadline, close the listener (destination). */
int mig_accept_one(struct mig_conn *c, const struct mig_addr *a, bool announce, struct errbuf *err);
void mig_close(struct mig_conn *c);
/* Send one record whose payload is a then b (either may be empty). */
int mig_send(struct mig_conn *c, enum mig_type t, const void *a, uint32_t alen, const void *b, uint32_t blen,
	     struct errbuf *err);
/* Send a JSON object as a control record (steals obj). */
int mig_send_json(struct mig_conn *c, enum mig_type t, json_t *obj, struct errbuf *err);
/* Receive one checked record; *payload malloc'ed (NULL when empty). */
int mig_recv(struct mig_conn *c, struct mig_hdr *h, void **payload, uint32_t state_max, struct errbuf *err);
/*
 * Receive the peer's answer of type `want` ({"ok":true,...}, returned in
 * *reply if non-NULL); its {"ok":false,"error":...}, an ABORT, another
 * record or the end of the connection is an error naming what happened.
 */
int mig_recv_answer(struct mig_conn *c, enum mig_type want, json_t **reply, struct errbuf *err);

struct mig_round;
/*
 * Guest RAM as PAGES and ZERO records (runs of up to MIG_MAX_RUN pages,
 * each copied into buf, MIG_MAX_RUN pages, before it is hashed and sent:
 * the guest may be writing them). With bitmap (a bit per page): the pages
 * set in it, zero ones as ZERO; without: every page that holds data (a
 * memfd's holes and zero pages are skipped: the destination's fresh RAM is
 * zero). Counts into r. 0 or -errno with a message.
 */
int mig_send_memory(struct mig_conn *c, const struct gmem *mem, const uint64_t *bitmap, uint8_t *buf,
		    struct mig_round *r, struct errbuf *err);

/* ---- the source (migrate.c) --------------------------------------------------- */
struct mig_request {
	char to[300];		  /* a numeric address (mig_addr_parse) */
	uint64_t max_downtime_ns; /* the pause the final round may take, estimated from the rate */
	uint64_t timeout_ms;	  /* the whole migration */
	uint64_t max_bandwidth;	  /* bytes per second while the guest runs (0: no limit) */
	bool stop_copy;		  /* not converging: pause and copy the rest anyway (else give up) */
};

struct mig_round {
	uint64_t pages, zero_pages, bytes, ns; /* sent in it */
	uint64_t dirty;			       /* pages the guest wrote meanwhile (the next round's) */
};

struct mig_result {
	unsigned nr_rounds; /* incl. the final one, with the guest paused */
	struct mig_round round[MIG_MAX_ROUNDS + 1];
	uint64_t total_ns, downtime_ns, bytes, state_bytes, mem_bytes;
	bool committed; /* GO was sent: the source never runs the guest again */
	bool forced;	/* the rounds did not converge and --stop-copy paused anyway */
};

struct vm_snapshot_env;
struct vm_config;
/*
 * Move the running VM to the perfvisor waiting at rq->to (docs/migration.md):
 * pre-copy rounds, then pause, the last pages and the state, and the
 * destination's confirmation; then this VM stops (status 0). On any
 * failure before GO the VM runs on (resumed if it was paused for the
 * migration) and the error says why; after GO without a confirmation it
 * stays paused (the guest may run there: docs/migration.md). Main thread.
 */
int vm_migrate(const struct vm_snapshot_env *e, const struct mig_request *rq, struct mig_result *res,
	       struct errbuf *err);

/* `perfvisor migrate SOCKET --to ADDR ...` (migcmd.c): argv[0] is "migrate". */
int mig_cmd_migrate(int argc, char **argv);

/* ---- the destination (incoming.c) --------------------------------------------- */
struct mig_incoming {
	struct mig_conn conn;
	struct gmem mem; /* the RAM that came (the restore takes it) */
	/* The KVM VM, made with that RAM on HELLO while the guest still runs at the source (on
	 * kvm_pvm KVM_CREATE_VM alone took 7.5 ms of a 10 ms build): vm_create takes both. */
	struct kvm_sys kvm;
	int vm_fd;
	void *state; /* the state file that came, malloc'ed (the restore takes it) */
	uint32_t state_len;
	uint64_t pages, zero_pages, records;
	uint64_t t_state_ns, t_ready_ns, t_go_ns; /* the state came, the VM was built, GO came */
};
/*
 * `perfvisor run --incoming ADDR`: wait for one source, check the machine
 * it offers against this host and cfg's limits (--cpus, --memory given:
 * at most these), answer, take its memory and state. cfg is then set up as
 * a restore of them (cfg->restore names the source). 0 or -errno with a
 * message; the source was told why.
 */
int mig_incoming_receive(struct vm_config *cfg, unsigned limit_cpus, uint64_t limit_mem,
			 struct mig_incoming *in, struct errbuf *err);
/* The VM is built (rc 0) or not (why): tell the source, and wait for its GO. 0: run the guest. */
int mig_incoming_ready(struct mig_incoming *in, int rc, const char *why, struct errbuf *err);
/* The guest runs: tell the source, and close; verbose: where the pause went, here. */
void mig_incoming_running(struct mig_incoming *in, bool verbose);
void mig_incoming_fini(struct mig_incoming *in);

#endif
