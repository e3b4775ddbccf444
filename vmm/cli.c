// SPDX-License-Identifier: MIT
/*
 * Command-line parsing for `perfvisor run`: turns argv into a vm_config or
 * one clear error line. Pure logic, unit-tested in tests/unit/test_vmm_cli.c.
 */
#include "vmm.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "migrate.h"
#include "perfvisor/bootinfo.h"
#include "stats/stats.h"

const char cli_run_usage[] =
	"Usage: perfvisor run --kernel FILE [options]\n"
	"       perfvisor run --restore DIR [options]\n"
	"       perfvisor run --incoming ADDR [options]\n"
	"Boot a guest on KVM, or continue a snapshot (docs/snapshot.md), and exit with its\n"
	"status. The kernel's format is detected (docs/boot.md): a Linux bzImage, a multiboot\n"
	"v1 kernel, an ELF with a PVH note, or an ELF64 guest of perfvisor's own contract.\n"
	"\n"
	"  --kernel FILE        the kernel (required, unless --restore)\n"
	"  --initrd 'FILE [ARGS]'  a module (multiboot, PVH) or the initrd (Linux); repeatable for\n"
	"                       multiboot and PVH; a module's command line is the whole value\n"
	"  --restore DIR        continue the VM saved in snapshot directory DIR: its vCPUs, memory,\n"
	"                       devices, PV PMU and statistics; --kernel, --initrd, --cpus, --memory,\n"
	"                       --cmdline, --cpuid-hide, --pmu, --rng, --disk and --net come from the snapshot\n"
	"                       (and --kernel-decompress has no meaning there)\n"
	"                       and may not be given\n"
	"  --restore-memory map|read  map the memory file copy-on-write (default: fast, lazy) or\n"
	"                       read it into fresh RAM\n"
	"  --no-memory-check    skip the memory file's checksum (the state file is always checked)\n"
	"  --incoming ADDR      wait for one VM migrating here (perfvisor migrate; docs/migration.md)\n"
	"                       on tcp:IP:PORT or unix:PATH; the machine comes from the source, as with\n"
	"                       --restore; --cpus and --memory, if given, are the most this host offers\n"
	"  --incoming-timeout SECONDS  how long to wait for the source (default 600)\n"
	"  --cpus N             number of vCPUs, 1-64 (default 1)\n"
	"  --memory SIZE        guest RAM, e.g. 64M, 1G; 4M-3G, 4 KiB multiple (default 64M)\n"
	"  --cmdline STR        command line passed to the guest (at most 4095 bytes)\n"
	"  --console KIND       where the serial console goes: stdio (default), none, or a FILE path\n"
	"  --stdin              feed standard input to the guest's serial port\n"
	"  --timeout SECONDS    stop the guest after SECONDS and exit 124 (default: no limit)\n"
	"  --api-socket PATH    serve the control socket (docs/api.md) at PATH, owner-only\n"
	"  --name NAME          the VM's name in its statistics and their Prometheus labels\n"
	"                       (1-63 characters of A-Z a-z 0-9 _ . : -)\n"
	"  --kernel-decompress host|guest|auto  where a Linux bzImage's compressed payload is\n"
	"                       decompressed: host (xz, gzip or zstd; the vmlinux is loaded and entered\n"
	"                       at its startup_64, no KASLR), guest (the kernel's own decompressor), or\n"
	"                       auto (default: host when the format is xz, gzip or zstd, else guest)\n"
	"  --kernel-cache DIR|none  keep the vmlinux a payload decompressed on the host to in DIR, and\n"
	"                       read it back on the next boot of the same kernel instead of decoding it\n"
	"                       again (checked; at most 4 kernels; default $XDG_CACHE_HOME/perfvisor or\n"
	"                       $HOME/.cache/perfvisor; none: no cache; docs/boot.md)\n"
	"  --cpuid-hide LIST    hide CPU features guest ring 0 cannot run on kvm_pvm: xsave, cmpxchg16b;\n"
	"                       tsc-deadline: no TSC-deadline LAPIC timer (offered where KVM has it);\n"
	"                       pmu-ack: the PV PMU without PMI_ACK/RELOAD (docs/pvpmu.md), as perfvisor before it\n"
	"  --pmu on|off         the paravirtual PMU (docs/pvpmu.md); off hides it, CPUID included (default on)\n"
	"  --rng                a virtio-rng device (virtio-mmio at 0xd0000000, GSI 5; docs/devices.md)\n"
	"                       that fills the guest's buffers from the host's getrandom()\n"
	"  --disk path=FILE[,readonly=on]  a virtio-blk disk on the image FILE (a regular file or a\n"
	"                       block device), repeatable up to 8: /dev/vda, /dev/vdb, ... in this order\n"
	"                       (docs/devices.md); the image is locked, so no two VMs write one image;\n"
	"                       readonly=on opens it read-only and the guest's writes fail\n"
	"  --net tap=NAME[,mac=MAC][,mrg=on][,rx-usecs=N][,tx-usecs=N]  a virtio-net device on the\n"
	"                       existing tap interface NAME (docs/devices.md); repeatable, at most 4;\n"
	"                       MAC a unicast aa:bb:cc:dd:ee:ff (default 52:56:HH:HH:HH:N, from\n"
	"                       --name or the pid);\n"
	"                       mrg=on offers mergeable receive buffers (faster host -> guest;\n"
	"                       default off while a guest fault seen with them is not understood);\n"
	"                       rx-usecs=N, tx-usecs=N (0-10000) hold a receive, a transmit interrupt\n"
	"                       N us for more (interrupt coalescing, as ethtool -C; default 0)\n"
	"  --seccomp on|log|off per-thread system call filters (docs/security.md): on stops the VM\n"
	"                       at a denied call, log only has the kernel log it (default on)\n"
	"  --profile EVENT:PERIOD[,EVENT:PERIOD][,mode=stack|leaf]  sample every vCPU on the overflow\n"
	"                       of host counters on its thread (docs/profiling.md): task-clock or\n"
	"                       cpu-clock with a time (100us-10s, e.g. task-clock:1ms), or a hardware\n"
	"                       event with a count (e.g. cycles:100000) where the host has a PMU;\n"
	"                       mode=stack (default) walks the guest's stack at each sample, mode=leaf\n"
	"                       takes only where it is, at a fraction of the cost; with --restore, the snapshot's\n"
	"  --profile-output DIR where the profile goes at exit (must not exist; default\n"
	"                       perfvisor-profile.PID); read it with perfvisor profile report DIR\n"
	"  --symbols FILE       guest symbols for the profile: an ELF, System.map or nm output\n"
	"                       (default: the kernel's own .symtab, or a Linux kernel's kallsyms)\n"
	"  --verbose            print setup details and per-vCPU exit counts to stderr\n"
	"  --help               show this help\n"
	"\n"
	"Exit status: the guest's (test device DONE status, or (v << 1) | 1 for a write of v\n"
	"to the debug-exit port 0xf4 -- always odd, never 0, and v = 1, 61, 62 give 3, 123,\n"
	"125 --; 0 for an i8042 reset), 2 bad usage, 3 guest assertion, 123 guest crash\n"
	"(triple fault, KVM error), 124 timeout, 125 perfvisor/KVM error, 128+N signal N.\n";

enum {
	OPT_KERNEL = 256,
	OPT_CPUS,
	OPT_MEMORY,
	OPT_CMDLINE,
	OPT_CONSOLE,
	OPT_STDIN,
	OPT_TIMEOUT,
	OPT_VERBOSE,
	OPT_HELP,
	OPT_API_SOCKET,
	OPT_PMU,
	OPT_RESTORE,
	OPT_RESTORE_MEMORY,
	OPT_NO_MEMORY_CHECK,
	OPT_NAME,
	OPT_INITRD,
	OPT_CPUID_HIDE,
	OPT_SECCOMP,
	OPT_PROFILE,
	OPT_PROFILE_OUTPUT,
	OPT_SYMBOLS,
	OPT_RNG,
	OPT_DISK,
	OPT_NET,
	OPT_KERNEL_DECOMPRESS,
	OPT_INCOMING,
	OPT_INCOMING_TIMEOUT,
	OPT_KERNEL_CACHE
};

static const struct option run_options[] = {
	{ "kernel", required_argument, NULL, OPT_KERNEL },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "cmdline", required_argument, NULL, OPT_CMDLINE },
	{ "console", required_argument, NULL, OPT_CONSOLE },
	{ "stdin", no_argument, NULL, OPT_STDIN },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "api-socket", required_argument, NULL, OPT_API_SOCKET },
	{ "pmu", required_argument, NULL, OPT_PMU },
	{ "restore", required_argument, NULL, OPT_RESTORE },
	{ "restore-memory", required_argument, NULL, OPT_RESTORE_MEMORY },
	{ "no-memory-check", no_argument, NULL, OPT_NO_MEMORY_CHECK },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "initrd", required_argument, NULL, OPT_INITRD },
	{ "cpuid-hide", required_argument, NULL, OPT_CPUID_HIDE },
	{ "seccomp", required_argument, NULL, OPT_SECCOMP },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "profile-output", required_argument, NULL, OPT_PROFILE_OUTPUT },
	{ "symbols", required_argument, NULL, OPT_SYMBOLS },
	{ "rng", no_argument, NULL, OPT_RNG },
	{ "disk", required_argument, NULL, OPT_DISK },
	{ "net", required_argument, NULL, OPT_NET },
	{ "kernel-decompress", required_argument, NULL, OPT_KERNEL_DECOMPRESS },
	{ "incoming", required_argument, NULL, OPT_INCOMING },
	{ "incoming-timeout", required_argument, NULL, OPT_INCOMING_TIMEOUT },
	{ "kernel-cache", required_argument, NULL, OPT_KERNEL_CACHE },
	{ NULL, 0, NULL, 0 },
};

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* "aa:bb:cc:dd:ee:ff": a unicast address, not all zeros. */
static int parse_mac(const char *s, size_t len, uint8_t mac[6], struct errbuf *err)
{
	bool zero = true;

	for (unsigned i = 0; i < 6; i++) {
		int hi = len == 17 ? hexval(s[3 * i]) : -1, lo = len == 17 ? hexval(s[3 * i + 1]) : -1;

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return errbuf_set(err, -EINVAL,
					  "--net mac=%.*s is not a MAC address of six hex bytes "
					  "(aa:bb:cc:dd:ee:ff)",
					  (int)(len > 40 ? 40 : len), s);
		mac[i] = (uint8_t)(hi << 4 | lo);
		zero &= !mac[i];
	}
	if (mac[0] & 1)
		return errbuf_set(err, -EINVAL,
				  "--net mac=%.17s is a multicast address (bit 0 of the first byte); a "
				  "device needs a unicast one, e.g. 52:54:00:12:34:56",
				  s);
	if (zero)
		return errbuf_set(err, -EINVAL, "--net mac=00:00:00:00:00:00 is not a usable address");
	return 0;
}

/* An interface name the kernel takes: 1-15 bytes, no '/', ':' or white space, not . or .. */
static bool ifname_ok(const char *s, size_t len)
{
	if (!len || len >= VIRTIO_NET_IFNAMSIZ || (len == 1 && s[0] == '.') ||
	    (len == 2 && !strncmp(s, "..", 2)))
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/' || s[i] == ':' || (unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			return false;
	return true;
}

/* --net tap=NAME[,mac=MAC][,mrg=on|off][,rx-usecs=N][,tx-usecs=N] */
static int parse_net(const char *arg, struct vm_config *cfg, struct errbuf *err)
{
	struct vm_net_cfg n = { 0 };
	bool has_tap = false;
	int rc;

	if (cfg->nr_net >= VIRTIO_NET_MAX)
		return errbuf_set(err, -EINVAL, "at most %u --net options", VIRTIO_NET_MAX);
	for (const char *p = arg; *p;) {
		size_t len = strcspn(p, ","), klen = strcspn(p, "=,");
		const char *val = p + klen + 1;
		size_t vlen = klen < len ? len - klen - 1 : 0;

		if (klen == len)
			return errbuf_set(
				err, -EINVAL,
				"--net '%.80s': '%.*s' is not KEY=VALUE (tap=NAME[,mac=MAC][,mrg=on][,rx-usecs=N][,tx-usecs=N])",
				arg, (int)(len > 40 ? 40 : len), p);
		if (klen == 3 && !strncmp(p, "tap", 3)) {
			if (!ifname_ok(val, vlen))
				return errbuf_set(err, -EINVAL,
						  "--net tap=%.*s is not an interface name (1-15 characters, "
						  "no '/', ':' or spaces)",
						  (int)(vlen > 40 ? 40 : vlen), val);
			memcpy(n.tap, val, vlen);
			has_tap = true;
		} else if (klen == 3 && !strncmp(p, "mac", 3)) {
			rc = parse_mac(val, vlen, n.mac, err);
			if (rc)
				return rc;
			n.has_mac = true;
		} else if (klen == 3 && !strncmp(p, "mrg", 3)) {
			if ((vlen != 2 || strncmp(val, "on", 2)) && (vlen != 3 || strncmp(val, "off", 3)))
				return errbuf_set(err, -EINVAL, "--net mrg= must be on or off (got '%.*s')",
						  (int)(vlen > 40 ? 40 : vlen), val);
			n.mrg_rxbuf = vlen == 2;
		} else if (klen == 8 && (!strncmp(p, "rx-usecs", 8) || !strncmp(p, "tx-usecs", 8))) {
			char num[16];
			uint64_t us;

			snprintf(num, sizeof(num), "%.*s",
				 (int)(vlen < sizeof(num) - 1 ? vlen : sizeof(num) - 1), val);
			if (vlen >= sizeof(num) || util_parse_u64(num, 0, VIRTIO_NET_USECS_MAX, &us))
				return errbuf_set(err, -EINVAL, "--net %cx-usecs=%.*s: microseconds, 0 to %u",
						  p[0], (int)(vlen > 40 ? 40 : vlen), val,
						  VIRTIO_NET_USECS_MAX);
			*(p[0] == 'r' ? &n.rx_usecs : &n.tx_usecs) = (uint32_t)us;
		} else {
			return errbuf_set(
				err, -EINVAL,
				"--net: unknown key '%.*s' (tap=NAME[,mac=MAC][,mrg=on][,rx-usecs=N][,tx-usecs=N])",
				(int)(klen > 40 ? 40 : klen), p);
		}
		p += len + (p[len] == ',');
	}
	if (!has_tap)
		return errbuf_set(err, -EINVAL, "--net '%.80s' needs tap=NAME (an existing tap interface)",
				  arg);
	for (unsigned i = 0; i < cfg->nr_net; i++) {
		if (!strcmp(cfg->net[i].tap, n.tap))
			return errbuf_set(err, -EINVAL, "--net tap=%s is given twice", n.tap);
		if (n.has_mac && cfg->net[i].has_mac && !memcmp(cfg->net[i].mac, n.mac, 6))
			return errbuf_set(err, -EINVAL, "two --net options have the same mac");
	}
	cfg->net[cfg->nr_net++] = n;
	return 0;
}

/*
 * One of a few words: its index in names (NULL-terminated), or -EINVAL with
 * "OPT must be a, b or c (got 'ARG')" (the words in names' order).
 */
static int pick(const char *opt, const char *arg, const char *const *names, struct errbuf *err)
{
	char list[96] = "";
	unsigned n = 0;

	for (; names[n]; n++)
		if (!strcmp(arg, names[n]))
			return (int)n;
	for (unsigned i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 i ? (i + 1 < n ? ", " : " or ") : "", names[i]);
	return errbuf_set(err, -EINVAL, "%s must be %s (got '%s')", opt, list, arg);
}

static int parse_one(int opt, const char *arg, struct vm_config *cfg, struct errbuf *err)
{
	uint64_t v;
	int rc;

	switch (opt) {
	case OPT_KERNEL:
		cfg->kernel = arg;
		return 0;
	case OPT_CPUS:
		rc = util_parse_u64(arg, 1, PV_MAX_CPUS, &v);
		if (rc)
			return errbuf_set(err, -EINVAL, "--cpus must be a number from 1 to %u (got '%s')",
					  PV_MAX_CPUS, arg);
		cfg->nr_cpus = (unsigned)v;
		return 0;
	case OPT_MEMORY:
		rc = util_parse_size(arg, &v);
		if (rc)
			return errbuf_set(err, -EINVAL,
					  "--memory '%s' is not a size (examples: 64M, 512M, 1G)", arg);
		rc = gmem_check_size(v, err);
		if (rc) {
			struct errbuf e2;

			errbuf_set(&e2, rc, "--memory %s: %s", arg, err->msg);
			*err = e2;
			return -EINVAL;
		}
		cfg->mem_size = v;
		return 0;
	case OPT_CMDLINE:
		if (strlen(arg) >= PV_CMDLINE_MAX)
			return errbuf_set(err, -EINVAL, "--cmdline is %zu bytes; at most %u fit", strlen(arg),
					  PV_CMDLINE_MAX - 1);
		cfg->cmdline = arg;
		return 0;
	case OPT_CONSOLE:
		if (!strcmp(arg, "stdio")) {
			cfg->console = CONSOLE_STDIO;
		} else if (!strcmp(arg, "none")) {
			cfg->console = CONSOLE_NONE;
		} else if (arg[0] == '\0') {
			return errbuf_set(err, -EINVAL, "--console needs stdio, none or a file path");
		} else {
			cfg->console = CONSOLE_FILE;
			cfg->console_path = arg;
		}
		return 0;
	case OPT_STDIN:
		cfg->stdin_input = true;
		return 0;
	case OPT_TIMEOUT:
		rc = util_parse_u64(arg, 1, 7 * 24 * 3600, &v);
		if (rc)
			return errbuf_set(err, -EINVAL,
					  "--timeout must be whole seconds from 1 to 604800 (got '%s')", arg);
		cfg->timeout_ms = v * 1000;
		return 0;
	case OPT_VERBOSE:
		cfg->verbose = true;
		return 0;
	case OPT_API_SOCKET:
		if (arg[0] == '\0')
			return errbuf_set(err, -EINVAL, "--api-socket needs a path");
		cfg->api_socket = arg;
		return 0;
	case OPT_NAME:
		if (!stats_vm_name_ok(arg))
			return errbuf_set(err, -EINVAL,
					  "--name '%.80s' must be 1 to %u characters of A-Z a-z 0-9 _ . : -",
					  arg, PV_STATS_VM_NAME_MAX - 1);
		cfg->name = arg;
		return 0;
	case OPT_PMU:
		rc = pick("--pmu", arg, (const char *const[]){ "on", "off", NULL }, err);
		if (rc >= 0)
			cfg->pmu = rc == 0;
		return rc < 0 ? rc : 0;
	case OPT_SECCOMP: /* in enum seccomp_mode's order */
		rc = pick("--seccomp", arg, (const char *const[]){ "on", "log", "off", NULL }, err);
		if (rc >= 0)
			cfg->seccomp = (enum seccomp_mode)rc;
		return rc < 0 ? rc : 0;
	case OPT_RESTORE:
		if (arg[0] == '\0')
			return errbuf_set(err, -EINVAL, "--restore needs a snapshot directory");
		cfg->restore = arg;
		return 0;
	case OPT_RESTORE_MEMORY:
		rc = pick("--restore-memory", arg, (const char *const[]){ "map", "read", NULL }, err);
		if (rc >= 0)
			cfg->restore_read = rc == 1;
		return rc < 0 ? rc : 0;
	case OPT_NO_MEMORY_CHECK:
		cfg->restore_no_check = true;
		return 0;
	case OPT_INCOMING: {
		struct mig_addr a;

		cfg->incoming = arg;
		return mig_addr_parse(arg, &a, err) ? -EINVAL : 0;
	}
	case OPT_INCOMING_TIMEOUT:
		if (util_parse_u64(arg, 1, 86400, &v))
			return errbuf_set(err, -EINVAL,
					  "--incoming-timeout must be 1 to 86400 seconds (got '%s')", arg);
		cfg->incoming_timeout_ms = v * 1000;
		return 0;
	case OPT_INITRD:
		if (arg[0] == '\0' || arg[0] == ' ')
			return errbuf_set(err, -EINVAL,
					  "--initrd needs a file path (then, optionally, arguments)");
		if (cfg->nr_initrd >= BOOT_MAX_MODULES)
			return errbuf_set(err, -EINVAL, "at most %u --initrd options", BOOT_MAX_MODULES);
		cfg->initrd[cfg->nr_initrd++] = arg;
		return 0;
	case OPT_CPUID_HIDE:
		return cpuid_parse_hide(arg, &cfg->cpuid_hide, err);
	case OPT_KERNEL_DECOMPRESS: {
		static const enum loader_decompress modes[] = { LOADER_DECOMPRESS_HOST,
								LOADER_DECOMPRESS_GUEST,
								LOADER_DECOMPRESS_AUTO };

		rc = pick("--kernel-decompress", arg, (const char *const[]){ "host", "guest", "auto", NULL },
			  err);
		if (rc >= 0)
			cfg->kernel_decompress = modes[rc];
		return rc < 0 ? rc : 0;
	}
	case OPT_KERNEL_CACHE:
		if (arg[0] == '\0')
			return errbuf_set(err, -EINVAL, "--kernel-cache needs a directory, or none");
		cfg->kernel_cache = strcmp(arg, "none") ? arg : NULL;
		return 0;
	case OPT_PROFILE:
		/* The syntax here; whether this host has the events, in main.c (prof_spec_check_host). */
		return prof_spec_parse(arg, true, &cfg->prof, err) ? -EINVAL : 0;
	case OPT_PROFILE_OUTPUT:
		if (arg[0] == '\0')
			return errbuf_set(err, -EINVAL, "--profile-output needs a directory path");
		cfg->profile_output = arg;
		return 0;
	case OPT_SYMBOLS:
		if (arg[0] == '\0')
			return errbuf_set(err, -EINVAL, "--symbols needs a file path");
		cfg->symbols = arg;
		return 0;
	case OPT_RNG:
		cfg->rng = true;
		return 0;
	case OPT_DISK:
		if (cfg->nr_disks >= VM_MAX_DISKS)
			return errbuf_set(err, -EINVAL, "at most %u --disk options", VM_MAX_DISKS);
		if (cli_parse_disk(arg, &cfg->disks[cfg->nr_disks], err))
			return -EINVAL;
		cfg->nr_disks++;
		return 0;
	case OPT_NET:
		return parse_net(arg, cfg, err);
	default:
		return errbuf_set(err, -EINVAL, "internal: unhandled option %d", opt);
	}
}

int cli_parse_disk(const char *arg, struct vm_disk *d, struct errbuf *err)
{
	bool seen_path = false, seen_ro = false;

	*d = (struct vm_disk){ .readonly = false };
	/* A comma-separated key=value list: a path holds no comma here. */
	for (const char *kv = arg; kv;) {
		const char *end = strchr(kv, ','), *eq = strchr(kv, '=');
		size_t len = end ? (size_t)(end - kv) : strlen(kv);
		const char *val = eq && eq < kv + len ? eq + 1 : NULL;
		size_t klen = val ? (size_t)(eq - kv) : len, vlen = val ? len - klen - 1 : 0;

		if (!val)
			return errbuf_set(err, -EINVAL,
					  "--disk: '%.*s' is not key=value (path=FILE[,readonly=on])",
					  (int)(len < 80 ? len : 80), kv);
		if (klen == 4 && !strncmp(kv, "path", 4)) {
			if (seen_path)
				return errbuf_set(err, -EINVAL, "--disk: path= is given twice");
			if (!vlen)
				return errbuf_set(err, -EINVAL, "--disk: path= needs a file");
			if (vlen >= sizeof(d->path))
				return errbuf_set(err, -EINVAL, "--disk: the path is longer than %zu bytes",
						  sizeof(d->path) - 1);
			memcpy(d->path, val, vlen);
			d->path[vlen] = '\0';
			seen_path = true;
		} else if (klen == 8 && !strncmp(kv, "readonly", 8)) {
			if (seen_ro)
				return errbuf_set(err, -EINVAL, "--disk: readonly= is given twice");
			if (!(vlen == 2 && !strncmp(val, "on", 2)) && !(vlen == 3 && !strncmp(val, "off", 3)))
				return errbuf_set(err, -EINVAL,
						  "--disk: readonly must be on or off (got '%.*s')",
						  (int)(vlen < 80 ? vlen : 80), val);
			d->readonly = vlen == 2;
			seen_ro = true;
		} else {
			return errbuf_set(
				err, -EINVAL,
				"--disk: unknown key '%.*s' (keys: path, readonly; see perfvisor run --help)",
				(int)(klen < 80 ? klen : 80), kv);
		}
		kv = end ? end + 1 : NULL;
	}
	if (!seen_path)
		return errbuf_set(err, -EINVAL, "--disk needs path=FILE (e.g. --disk path=rootfs.ext4)");
	return 0;
}

static const char *option_name(int opt)
{
	for (const struct option *o = run_options; o->name; o++)
		if (o->val == opt)
			return o->name;
	return "?";
}

/* The kernel cache's default: $XDG_CACHE_HOME/perfvisor, else $HOME/.cache/perfvisor (absolute only), else none. */
static const char *default_kernel_cache(void)
{
	static char dir[4096];
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/perfvisor", xdg);
	else if (home && home[0] == '/' && home[1])
		snprintf(dir, sizeof(dir), "%s/.cache/perfvisor", home);
	else
		return NULL;
	return dir;
}

int cli_parse_run(int argc, char **argv, struct vm_config *cfg, struct errbuf *err, FILE *help_out)
{
	uint32_t given = 0; /* bit (opt - OPT_KERNEL): the option was on the command line */
	int opt, rc;

	memset(cfg, 0, sizeof(*cfg));
	cfg->kernel_cache = default_kernel_cache();
	cfg->nr_cpus = VM_DEFAULT_CPUS;
	cfg->mem_size = VM_DEFAULT_MEM;
	cfg->pmu = true;
	cfg->cmdline = "";
	cfg->console = CONSOLE_STDIO;

	optind = 0; /* full re-initialisation, so tests can parse repeatedly */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", run_options, NULL)) != -1) {
		if (opt == OPT_HELP) {
			fputs(cli_run_usage, help_out);
			return 1;
		}
		/* A short option inside "-xy" has not advanced optind: name it by optopt. */
		if (opt == '?' && optopt > 0 && optopt < OPT_KERNEL)
			return errbuf_set(err, -EINVAL, "unknown option '-%c' (see perfvisor run --help)",
					  optopt);
		if (opt == '?')
			return errbuf_set(err, -EINVAL, "unknown option '%s' (see perfvisor run --help)",
					  argv[optind - 1]);
		if (opt == ':')
			return errbuf_set(err, -EINVAL,
					  "option '%s' needs a value (see perfvisor run --help)",
					  argv[optind - 1]);
		/* The last of two values silently winning hides a mistake; --initrd is a list. */
		if (opt != OPT_INITRD && opt != OPT_DISK && opt != OPT_NET && opt < OPT_KERNEL + 32 &&
		    (given & (1u << (opt - OPT_KERNEL))))
			return errbuf_set(err, -EINVAL, "--%s is given twice (see perfvisor run --help)",
					  option_name(opt));
		rc = parse_one(opt, optarg, cfg, err);
		if (rc)
			return rc;
		if (opt < OPT_KERNEL + 32)
			given |= 1u << (opt - OPT_KERNEL);
	}
	if (optind < argc)
		return errbuf_set(err, -EINVAL, "unexpected argument '%s' (see perfvisor run --help)",
				  argv[optind]);
	if (cfg->incoming && cfg->restore)
		return errbuf_set(err, -EINVAL, "--incoming and --restore cannot be combined");
	if (given & (1u << (OPT_INCOMING_TIMEOUT - OPT_KERNEL)) && !cfg->incoming)
		return errbuf_set(err, -EINVAL, "--incoming-timeout needs --incoming");
	if (cfg->incoming) {
		/* --cpus and --memory: the most this destination offers (0: as much as KVM allows). */
		cfg->incoming_max_cpus = given & (1u << (OPT_CPUS - OPT_KERNEL)) ? cfg->nr_cpus : 0;
		cfg->incoming_max_mem = given & (1u << (OPT_MEMORY - OPT_KERNEL)) ? cfg->mem_size : 0;
		given &= ~((1u << (OPT_CPUS - OPT_KERNEL)) | (1u << (OPT_MEMORY - OPT_KERNEL)));
		if (!cfg->incoming_timeout_ms)
			cfg->incoming_timeout_ms = MIG_DEFAULT_INCOMING_TIMEOUT_MS;
	}
	if (cfg->restore || cfg->incoming) {
		const char *with = cfg->incoming ? "--incoming: the source" : "--restore: the snapshot";
		static const struct {
			int opt;
			const char *name;
		} from_snapshot[] = { { OPT_KERNEL, "--kernel" },
				      { OPT_CPUS, "--cpus" },
				      { OPT_MEMORY, "--memory" },
				      { OPT_CMDLINE, "--cmdline" },
				      { OPT_PMU, "--pmu" },
				      { OPT_INITRD, "--initrd" },
				      { OPT_CPUID_HIDE, "--cpuid-hide" },
				      { OPT_PROFILE, "--profile" },
				      { OPT_RNG, "--rng" },
				      { OPT_DISK, "--disk" },
				      { OPT_NET, "--net" },
				      { OPT_KERNEL_DECOMPRESS, "--kernel-decompress" } };

		for (size_t i = 0; i < sizeof(from_snapshot) / sizeof(from_snapshot[0]); i++)
			if (given & (1u << (from_snapshot[i].opt - OPT_KERNEL)))
				return errbuf_set(err, -EINVAL, "%s cannot be combined with %s sets it",
						  from_snapshot[i].name, with);
		return 0;
	}
	if (!cfg->prof.n && cfg->profile_output)
		return errbuf_set(err, -EINVAL, "--profile-output needs --profile");
	if (!cfg->prof.n && cfg->symbols)
		return errbuf_set(err, -EINVAL, "--symbols needs --profile");
	if (given & ((1u << (OPT_RESTORE_MEMORY - OPT_KERNEL)) | (1u << (OPT_NO_MEMORY_CHECK - OPT_KERNEL))))
		return errbuf_set(err, -EINVAL, "--restore-memory and --no-memory-check need --restore");
	if (!cfg->kernel)
		return errbuf_set(err, -EINVAL, "--kernel FILE is required (see perfvisor run --help)");
	return 0;
}
