/* SPDX-License-Identifier: MIT */
/*
 * perfvisor VM runtime: the configuration and command line of `perfvisor
 * run`, the control socket's requests, the snapshot commands, and the VM
 * itself (KVM setup, vCPU threads, run loop, stop). main.c only parses
 * arguments and composes these.
 */
#ifndef PERFVISOR_VMM_H
#define PERFVISOR_VMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "devices/devices.h"
#include "machine/machine.h"
#include "perfvisor/bootinfo.h"
#include "pmu/pmu.h"
#include "util/util.h"

struct mig_incoming; /* migrate.h */

/* ---- exit statuses of `perfvisor run` (docs/boot.md) ------------------- */
#define PV_EXIT_USAGE 2		/* bad command line */
#define PV_EXIT_GUEST_CRASH 123 /* triple fault, KVM internal error, unhandled exit */
#define PV_EXIT_TIMEOUT 124	/* --timeout expired */
#define PV_EXIT_VMM_ERROR 125	/* perfvisor or KVM failed (bad kernel file, no /dev/kvm, ...) */
#define PV_EXIT_SIGNAL_BASE 128 /* + signal number for SIGINT/SIGTERM */

/* ---- configuration and command line ------------------------------------ */
/* --seccomp: the per-thread system call filters (docs/security.md). */
enum seccomp_mode {
	SECCOMP_ON = 0, /* the default: a denied call stops the VM with a message */
	SECCOMP_LOG,	/* allow, but the kernel logs what a filter would deny (audit, dmesg) */
	SECCOMP_OFF,
};

enum console_kind {
	CONSOLE_STDIO,
	CONSOLE_FILE,
	CONSOLE_NONE
};

#define VM_MAX_DISKS 8 /* --disk options at most: /dev/vda to /dev/vdh */

/* One --disk path=FILE[,readonly=on]. */
struct vm_disk {
	char path[4096]; /* PATH_MAX */
	bool readonly;
};

/* One --net tap=NAME[,mac=MAC][,mrg=on][,rx-usecs=N][,tx-usecs=N]. */
struct vm_net_cfg {
	char tap[VIRTIO_NET_IFNAMSIZ];
	uint8_t mac[6];
	bool has_mac;	   /* else vm_net_default_mac */
	bool mrg_rxbuf;	   /* mrg=on: offer mergeable receive buffers */
	uint32_t rx_usecs; /* rx-usecs=N: a receive interrupt waits N µs for more (0: none waits) */
	uint32_t tx_usecs; /* tx-usecs=N: a transmit interrupt waits N µs for more */
};

/* A running VM's disk: its image's absolute path, read-only or not, its capacity (512-byte sectors). */
struct vm_disk_info {
	const char *path;
	bool readonly;
	uint64_t sectors;
};

struct vm_config {
	const char *kernel;
	unsigned nr_cpus;
	uint64_t mem_size;
	const char *cmdline;
	enum console_kind console;
	const char *console_path;  /* CONSOLE_FILE */
	bool stdin_input;	   /* feed stdin to the UART */
	uint64_t timeout_ms;	   /* 0 = none */
	const char *api_socket;	   /* control socket path, NULL = none */
	const char *name;	   /* the VM's name (stats header, Prometheus label), NULL = none */
	bool pmu;		   /* the paravirtual PMU (default on) */
	enum seccomp_mode seccomp; /* --seccomp on|log|off (default on) */
	const char *initrd[BOOT_MAX_MODULES]; /* --initrd values, in order */
	unsigned nr_initrd;
	unsigned cpuid_hide; /* CPUID_HIDE_* bits (--cpuid-hide) */
	unsigned cpuid_add;  /* CPUID_ADD_* bits: set by vm_create (the host's, or the snapshot's) */
	enum loader_decompress kernel_decompress; /* --kernel-decompress (default auto) */
	const char *kernel_cache; /* --kernel-cache DIR; NULL: none (--kernel-cache none, or no default) */
	bool verbose;
	const char *restore;	      /* --restore DIR: continue a snapshot instead of booting a kernel */
	bool restore_read;	      /* --restore-memory read: read the memory file in (default: map it) */
	bool restore_no_check;	      /* --no-memory-check: skip the memory file's checksum */
	const char *incoming;	      /* --incoming ADDR: receive a migrating VM (docs/migration.md) */
	uint64_t incoming_timeout_ms; /* --incoming-timeout: the longest wait for the source */
	unsigned incoming_max_cpus;   /* --cpus with --incoming: the most offered (0: KVM's limit) */
	uint64_t incoming_max_mem;    /* --memory with --incoming: the most offered (0: no limit) */
	struct mig_incoming *incoming_vm;   /* what came (the restore takes its state and RAM) */
	struct prof_spec prof;		    /* --profile (prof.n == 0: off; a restore takes the snapshot's) */
	const char *profile_output;	    /* --profile-output DIR, NULL = perfvisor-profile.PID */
	const char *symbols;		    /* --symbols FILE, NULL = the kernel's own symbol table */
	bool rng;			    /* --rng: a virtio-rng device (a restore: the snapshot has one) */
	struct vm_disk disks[VM_MAX_DISKS]; /* --disk, in command-line order (a restore: the snapshot's) */
	unsigned nr_disks;
	struct vm_net_cfg net[VIRTIO_NET_MAX]; /* --net, in order (a restore: the snapshot's) */
	unsigned nr_net;
};

#define VM_DEFAULT_CPUS 1U
#define VM_DEFAULT_MEM (64ULL << 20)

/*
 * Parse `perfvisor run` arguments (argv[0] is "run"). Returns 0, 1 if help
 * was printed to `out`, or -EINVAL with one clear line in err.
 */
int cli_parse_run(int argc, char **argv, struct vm_config *cfg, struct errbuf *err, FILE *help_out);
/*
 * One --disk value, "path=FILE[,readonly=on|off]", into d. 0 or -EINVAL
 * with one line. Pure.
 */
int cli_parse_disk(const char *arg, struct vm_disk *d, struct errbuf *err);
/* Usage text of `perfvisor run`. */
extern const char cli_run_usage[];

/*
 * The parts of this VM's snapshot besides KVM's state (snapschema.c): the
 * devices' (devices/table.c), the PV PMU's and the statistics'. Any thread.
 */
struct snap_schema;
const struct snap_schema *vm_snap_schema(void);

/* `perfvisor snapshot ...` and `perfvisor snapshot-info ...` (snapcmd.c): argv[0] is the command. */
int snap_cmd_snapshot(int argc, char **argv);
/*
 * The commands' side of the control socket (snapcmd.c): send req (taken
 * over) to the VM at sock and wait up to timeout_ms for the reply line
 * (into reply, and parsed into *rep). 0: {"ok":true}; 1: the VM said no
 * (cmd_api_error prints why); PV_EXIT_USAGE: not sent or no reply (printed
 * as "perfvisor TOOL: ..."). *rep is the caller's to free.
 */
int cmd_api_call(const char *tool, const char *sock, json_t *req, int timeout_ms, char *reply, size_t len,
		 json_t **rep);
void cmd_api_error(const char *tool, const json_t *rep, const char *reply);
int snap_cmd_info(int argc, char **argv);

/* ---- control socket requests (api_parse.c, docs/api.md) -------------------- */
enum api_cmd {
	API_BAD = 0,
	API_QUERY,
	API_STATS_FD,
	API_PAUSE,
	API_RESUME,
	API_SNAPSHOT,
	API_PROFILE,
	API_MIGRATE,
};

struct api_request {
	enum api_cmd cmd;
	char dir[4096];	 /* API_SNAPSHOT: absolute */
	bool stop_after; /* API_SNAPSHOT: "then":"stop" */
	unsigned top;	 /* API_PROFILE: rows (default 10, 1-100) */
	/* API_MIGRATE: where (a numeric tcp: or unix: address), the pause allowed, the time allowed */
	char to[300];
	uint64_t max_downtime_ns, timeout_ms, max_bandwidth; /* max_bandwidth: bytes/s, 0 none */
	bool stop_copy;
};

typedef struct json_t json_t;
/*
 * Parse one request line. Returns NULL and fills *r, or the error reply
 * for the client (r->cmd is then API_BAD). Never fails to give one of the
 * two. Pure; any thread.
 */
json_t *api_parse_request(const char *line, struct api_request *r);
/* {"ok":false,"error":...}, always valid UTF-8 (bytes that are not are replaced by '?'). */
json_t *api_error_reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the VM --------------------------------------------------------------- */
struct vm;

/*
 * Create and fully configure a VM from cfg (open KVM, memory, load the
 * kernel, devices, vCPUs), ready to run. Returns 0 or -errno with a message.
 */
int vm_create(struct vm **out, const struct vm_config *cfg, struct errbuf *err);
/*
 * The signals that stop a VM cleanly, with a message and exit status 128+N:
 * SIGINT, SIGTERM, SIGHUP (a closed terminal), SIGQUIT, SIGALRM, SIGUSR2.
 * They must be blocked in every thread before vm_create (main.c does).
 * SIGUSR1 is perfvisor's own vCPU kick: from outside it changes nothing.
 */
void vm_stop_signals(sigset_t *s);
/*
 * Run until the guest finishes, a stop signal (vm_stop_signals) or the timeout.
 * Returns the exit status (>= 0, see PV_EXIT_*) and a reason in err.
 * Main thread only; the stop signals must be blocked in all threads.
 */
int vm_run(struct vm *vm, struct errbuf *why);
/* Join, close and free everything. NULL is a no-op. */
void vm_destroy(struct vm *vm);

#endif
