// SPDX-License-Identifier: MIT
/*
 * Unit tests for `perfvisor run` argument parsing: defaults, every option,
 * --help, and each bad input with the one line the user gets for it.
 */
#include "vmm/vmm.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "perfvisor/bootinfo.h"
#include "perfvisor/stats_abi.h"
#include "vmm/migrate.h"

static struct vm_config cfg;
static struct errbuf err;
static char *help_buf;
static size_t help_len;
static FILE *help_out;

static void setup(void)
{
	memset(&err, 0, sizeof(err));
	help_out = open_memstream(&help_buf, &help_len);
	cr_assert_not_null(help_out);
}

static void teardown(void)
{
	if (help_out)
		fclose(help_out);
	free(help_buf);
}

TestSuite(cli, .init = setup, .fini = teardown);

/* Parse a NULL-terminated argv (argv[0] is "run"); the array is mutable, getopt permutes it. */
static int parse_argv(char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return cli_parse_run(argc, argv, &cfg, &err, help_out);
}

#define PARSE(...) parse_argv((char *[]){ "run", __VA_ARGS__, NULL })

/* What was written to help_out so far. */
static const char *help_text(void)
{
	cr_assert_eq(fflush(help_out), 0);
	return help_buf ? help_buf : "";
}

#define assert_msg_has(s) cr_assert(strstr(err.msg, (s)), "message '%s' lacks '%s'", err.msg, (s))

/* A bad command line: -EINVAL, a message containing `want`, no help text. */
#define expect_bad(want, ...)                                                 \
	do {                                                                  \
		int rc_ = PARSE(__VA_ARGS__);                                 \
		cr_assert_eq(rc_, -EINVAL, "rc %d (%s)", rc_, err.msg);       \
		assert_msg_has(want);                                         \
		cr_assert_str_eq(help_text(), "", "no usage text on errors"); \
	} while (0)

Test(cli, defaults)
{
	cr_assert_eq(PARSE("--kernel", "guest.elf"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel, "guest.elf");
	cr_assert_eq(cfg.nr_cpus, VM_DEFAULT_CPUS);
	cr_assert_eq(cfg.mem_size, VM_DEFAULT_MEM);
	cr_assert_str_eq(cfg.cmdline, "");
	cr_assert_eq(cfg.console, CONSOLE_STDIO);
	cr_assert_null(cfg.console_path);
	cr_assert_not(cfg.stdin_input);
	cr_assert_eq(cfg.timeout_ms, 0);
	cr_assert_not(cfg.verbose);
	cr_assert(cfg.pmu, "the PV PMU is on by default");
	cr_assert_str_eq(help_text(), "");
}

Test(cli, pmu_on_off)
{
	cr_assert_eq(PARSE("--kernel", "k", "--pmu", "off"), 0, "%s", err.msg);
	cr_assert_not(cfg.pmu);
	cr_assert_eq(PARSE("--kernel", "k", "--pmu=on"), 0, "%s", err.msg);
	cr_assert(cfg.pmu);
}

Test(cli, pmu_bad)
{
	expect_bad("--pmu must be on or off (got 'yes')", "--kernel", "k", "--pmu", "yes");
	expect_bad("(got '')", "--kernel", "k", "--pmu", "");
	expect_bad("(got 'OFF')", "--kernel", "k", "--pmu", "OFF");
}

Test(cli, kernel_decompress)
{
	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_eq(cfg.kernel_decompress, LOADER_DECOMPRESS_AUTO, "auto by default");
	cr_assert_eq(PARSE("--kernel", "k", "--kernel-decompress", "host"), 0, "%s", err.msg);
	cr_assert_eq(cfg.kernel_decompress, LOADER_DECOMPRESS_HOST);
	cr_assert_eq(PARSE("--kernel-decompress=guest", "--kernel", "k"), 0, "%s", err.msg);
	cr_assert_eq(cfg.kernel_decompress, LOADER_DECOMPRESS_GUEST);
	cr_assert_eq(PARSE("--kernel", "k", "--kernel-decompress", "auto"), 0, "%s", err.msg);
	cr_assert_eq(cfg.kernel_decompress, LOADER_DECOMPRESS_AUTO);
	expect_bad("--kernel-decompress must be host, guest or auto (got 'xz')", "--kernel", "k",
		   "--kernel-decompress", "xz");
	expect_bad("--kernel-decompress cannot be combined with --restore", "--restore", "d",
		   "--kernel-decompress", "host");
}

Test(cli, kernel_cache)
{
	setenv("HOME", "/home/u", 1);
	unsetenv("XDG_CACHE_HOME");
	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel_cache, "/home/u/.cache/perfvisor", "the default under $HOME");
	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel_cache, "/x/cache/perfvisor", "$XDG_CACHE_HOME first");
	/* Relative or missing: no default (a cache in whatever the current directory is would surprise). */
	setenv("XDG_CACHE_HOME", "rel", 1);
	setenv("HOME", "/", 1);
	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_null(cfg.kernel_cache, "no default when HOME is / and XDG_CACHE_HOME relative");
	cr_assert_eq(PARSE("--kernel", "k", "--kernel-cache", "/c"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel_cache, "/c");
	setenv("HOME", "/home/u", 1);
	cr_assert_eq(PARSE("--kernel", "k", "--kernel-cache=none"), 0, "%s", err.msg);
	cr_assert_null(cfg.kernel_cache, "none: no cache");
	expect_bad("--kernel-cache needs a directory, or none", "--kernel", "k", "--kernel-cache", "");
	expect_bad("--kernel-cache is given twice", "--kernel", "k", "--kernel-cache", "a", "--kernel-cache",
		   "b");
}

Test(cli, name)
{
	char longest[PV_STATS_VM_NAME_MAX];

	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_null(cfg.name, "no name by default");
	cr_assert_eq(PARSE("--kernel", "k", "--name", "web-1.eu:a_B"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.name, "web-1.eu:a_B");
	memset(longest, 'n', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	cr_assert_eq(PARSE("--kernel", "k", "--name", longest), 0, "63 characters fit: %s", err.msg);
}

Test(cli, name_bad)
{
	char toolong[PV_STATS_VM_NAME_MAX + 1];

	expect_bad("--name '' must be 1 to 63 characters of A-Z a-z 0-9 _ . : -", "--kernel", "k", "--name",
		   "");
	expect_bad("--name 'a b' must be", "--kernel", "k", "--name", "a b");
	expect_bad("--name 'x\"y' must be", "--kernel", "k", "--name", "x\"y");
	memset(toolong, 'n', sizeof(toolong) - 1);
	toolong[sizeof(toolong) - 1] = '\0';
	expect_bad("must be 1 to 63 characters", "--kernel", "k", "--name", toolong);
}

Test(cli, every_option)
{
	int rc = PARSE("--kernel", "k.elf", "--cpus", "4", "--memory", "128M", "--cmdline", "a=1 b",
		       "--console", "out.log", "--stdin", "--timeout", "30", "--verbose");

	cr_assert_eq(rc, 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel, "k.elf");
	cr_assert_eq(cfg.nr_cpus, 4);
	cr_assert_eq(cfg.mem_size, 128ULL << 20);
	cr_assert_str_eq(cfg.cmdline, "a=1 b");
	cr_assert_eq(cfg.console, CONSOLE_FILE);
	cr_assert_str_eq(cfg.console_path, "out.log");
	cr_assert(cfg.stdin_input);
	cr_assert_eq(cfg.timeout_ms, 30000);
	cr_assert(cfg.verbose);
}

Test(cli, equals_form_and_any_order)
{
	int rc = PARSE("--cpus=64", "--memory=3G", "--kernel=g", "--timeout=604800");

	cr_assert_eq(rc, 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel, "g");
	cr_assert_eq(cfg.nr_cpus, PV_MAX_CPUS);
	cr_assert_eq(cfg.mem_size, GMEM_MAX_SIZE);
	cr_assert_eq(cfg.timeout_ms, 604800000ULL);
}

Test(cli, limits_accepted)
{
	cr_assert_eq(PARSE("--kernel", "k", "--cpus", "1", "--memory", "4M", "--timeout", "1"), 0, "%s",
		     err.msg);
	cr_assert_eq(cfg.nr_cpus, 1);
	cr_assert_eq(cfg.mem_size, GMEM_MIN_SIZE);
	cr_assert_eq(cfg.timeout_ms, 1000);
	cr_assert_eq(PARSE("--kernel", "k", "--memory", "65540K"), 0, "%s", err.msg);
	cr_assert_eq(cfg.mem_size, 65540ULL << 10);
}

Test(cli, console_kinds)
{
	cr_assert_eq(PARSE("--kernel", "k", "--console", "none"), 0, "%s", err.msg);
	cr_assert_eq(cfg.console, CONSOLE_NONE);
	cr_assert_eq(PARSE("--kernel", "k", "--console", "stdio"), 0, "%s", err.msg);
	cr_assert_eq(cfg.console, CONSOLE_STDIO);
	cr_assert_null(cfg.console_path);
	cr_assert_eq(PARSE("--kernel", "k", "--console", "/tmp/serial.txt"), 0, "%s", err.msg);
	cr_assert_eq(cfg.console, CONSOLE_FILE);
	cr_assert_str_eq(cfg.console_path, "/tmp/serial.txt");
}

Test(cli, console_empty)
{
	expect_bad("--console needs stdio, none or a file path", "--kernel", "k", "--console", "");
}

Test(cli, cmdline_at_the_limit)
{
	static char line[PV_CMDLINE_MAX];

	memset(line, 'x', PV_CMDLINE_MAX - 1);
	line[PV_CMDLINE_MAX - 1] = '\0';
	cr_assert_eq(PARSE("--kernel", "k", "--cmdline", line), 0, "%s", err.msg);
	cr_assert_eq(strlen(cfg.cmdline), 4095);
}

Test(cli, cmdline_too_long)
{
	static char line[PV_CMDLINE_MAX + 1];

	memset(line, 'x', PV_CMDLINE_MAX);
	line[PV_CMDLINE_MAX] = '\0';
	expect_bad("--cmdline is 4096 bytes; at most 4095 fit", "--kernel", "k", "--cmdline", line);
}

Test(cli, help)
{
	cr_assert_eq(PARSE("--help"), 1);
	cr_assert_str_eq(help_text(), cli_run_usage);
	cr_assert(strstr(cli_run_usage, "Usage: perfvisor run --kernel FILE"));
}

Test(cli, help_wins_over_missing_kernel_and_later_errors)
{
	cr_assert_eq(PARSE("--cpus", "2", "--help", "--cpus", "0"), 1);
	cr_assert_str_eq(help_text(), cli_run_usage);
}

Test(cli, unknown_option)
{
	expect_bad("unknown option '--bogus' (see perfvisor run --help)", "--kernel", "k", "--bogus");
}

Test(cli, unknown_short_option)
{
	expect_bad("unknown option '-x'", "--kernel", "k", "-x");
}

Test(cli, unknown_short_option_cluster)
{
	/* getopt has not advanced optind yet: the message must not name argv[0]. */
	expect_bad("unknown option '-z'", "-zq", "--kernel", "k");
}

Test(cli, ambiguous_abbreviation)
{
	/* --c could be --cpus, --cmdline or --console. */
	expect_bad("unknown option '--c'", "--kernel", "k", "--c", "1");
}

Test(cli, flag_given_a_value)
{
	expect_bad("'--stdin=yes'", "--kernel", "k", "--stdin=yes");
}

Test(cli, missing_value)
{
	expect_bad("option '--cpus' needs a value", "--kernel", "k", "--cpus");
}

Test(cli, missing_kernel)
{
	expect_bad("--kernel FILE is required", "--cpus", "2");
}

Test(cli, no_arguments)
{
	cr_assert_eq(parse_argv((char *[]){ "run", NULL }), -EINVAL);
	assert_msg_has("--kernel FILE is required");
}

Test(cli, cpus_out_of_range)
{
	expect_bad("--cpus must be a number from 1 to 64 (got '0')", "--kernel", "k", "--cpus", "0");
	expect_bad("--cpus must be a number from 1 to 64 (got '65')", "--kernel", "k", "--cpus", "65");
}

Test(cli, cpus_not_a_number)
{
	expect_bad("(got 'abc')", "--kernel", "k", "--cpus", "abc");
	expect_bad("(got '-1')", "--kernel", "k", "--cpus", "-1");
	expect_bad("(got '2x')", "--kernel", "k", "--cpus", "2x");
}

Test(cli, memory_too_small)
{
	expect_bad("--memory 1M: memory size 1048576 bytes is below the minimum of 4 MiB", "--kernel", "k",
		   "--memory", "1M");
}

Test(cli, memory_too_big)
{
	expect_bad("--memory 4G: memory size 4096 MiB is above the maximum of 3072 MiB", "--kernel", "k",
		   "--memory", "4G");
}

Test(cli, memory_not_page_multiple)
{
	expect_bad("--memory 65537K: memory size 67109888 is not a multiple of 4 KiB", "--kernel", "k",
		   "--memory", "65537K");
}

Test(cli, memory_not_a_size)
{
	expect_bad("--memory 'lots' is not a size (examples: 64M, 512M, 1G)", "--kernel", "k", "--memory",
		   "lots");
	expect_bad("--memory '99999999999999999999' is not a size", "--kernel", "k", "--memory",
		   "99999999999999999999");
}

Test(cli, timeout_bad)
{
	expect_bad("--timeout must be whole seconds from 1 to 604800 (got '0')", "--kernel", "k", "--timeout",
		   "0");
	expect_bad("(got 'x')", "--kernel", "k", "--timeout", "x");
	expect_bad("(got '604801')", "--kernel", "k", "--timeout", "604801");
	expect_bad("(got '1.5')", "--kernel", "k", "--timeout", "1.5");
}

Test(cli, unexpected_positional)
{
	expect_bad("unexpected argument 'extra' (see perfvisor run --help)", "--kernel", "k", "extra");
	expect_bad("unexpected argument 'first'", "first", "--kernel", "k");
}

Test(cli, reparse_after_error_starts_fresh)
{
	cr_assert_eq(PARSE("--kernel", "a", "--cpus", "8", "--verbose", "--bogus"), -EINVAL);
	cr_assert_eq(PARSE("--kernel", "b"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.kernel, "b");
	cr_assert_eq(cfg.nr_cpus, VM_DEFAULT_CPUS, "no state from the previous parse");
	cr_assert_not(cfg.verbose);
}

/* ---- --restore (docs/snapshot.md) ---------------------------------------------- */

Test(cli, restore_takes_the_machine_from_the_snapshot)
{
	cr_assert_eq(PARSE("--restore", "/snaps/a", "--api-socket", "/tmp/s", "--timeout", "9"), 0, "%s",
		     err.msg);
	cr_assert_str_eq(cfg.restore, "/snaps/a");
	cr_assert_null(cfg.kernel, "no --kernel needed");
	cr_assert_not(cfg.restore_read, "memory is mapped by default");
	cr_assert_not(cfg.restore_no_check, "the memory checksum is checked by default");
	cr_assert_eq(PARSE("--restore", "d", "--restore-memory", "read", "--no-memory-check"), 0, "%s",
		     err.msg);
	cr_assert(cfg.restore_read);
	cr_assert(cfg.restore_no_check);
	cr_assert_eq(PARSE("--restore", "d", "--restore-memory", "map"), 0);
	cr_assert_not(cfg.restore_read);
}

Test(cli, restore_refuses_what_the_snapshot_sets)
{
	expect_bad("--kernel cannot be combined with --restore", "--restore", "d", "--kernel", "k.elf");
	expect_bad("--cpus cannot be combined with --restore", "--cpus", "2", "--restore", "d");
	expect_bad("--memory cannot be combined with --restore", "--restore", "d", "--memory", "64M");
	expect_bad("--cmdline cannot be combined with --restore", "--restore", "d", "--cmdline", "x");
	expect_bad("--pmu cannot be combined with --restore", "--restore", "d", "--pmu", "on");
	expect_bad("--restore needs a snapshot directory", "--restore", "");
	expect_bad("--restore-memory must be map or read (got 'lazy')", "--restore", "d", "--restore-memory",
		   "lazy");
	expect_bad("--restore-memory and --no-memory-check need --restore", "--kernel", "k",
		   "--no-memory-check");
	expect_bad("--restore-memory and --no-memory-check need --restore", "--kernel", "k",
		   "--restore-memory", "map");
}

Test(cli, initrd_repeatable_in_order)
{
	int rc = PARSE("--kernel", "k", "--initrd", "/a/mod0 x=1 y", "--initrd", "/b/mod1");

	cr_assert_eq(rc, 0, "%s", err.msg);
	cr_assert_eq(cfg.nr_initrd, 2);
	cr_assert_str_eq(cfg.initrd[0], "/a/mod0 x=1 y");
	cr_assert_str_eq(cfg.initrd[1], "/b/mod1");
}

Test(cli, initrd_bad)
{
	char *argv[3 + 2 * (BOOT_MAX_MODULES + 1) + 1] = { "run", "--kernel", "k" };
	int n = 3;

	expect_bad("--initrd needs a file path", "--kernel", "k", "--initrd", "");
	expect_bad("--initrd needs a file path", "--kernel", "k", "--initrd", " args");
	for (unsigned i = 0; i <= BOOT_MAX_MODULES; i++) {
		argv[n++] = "--initrd";
		argv[n++] = "m";
	}
	argv[n] = NULL;
	cr_assert_eq(parse_argv(argv), -EINVAL);
	assert_msg_has("at most 16 --initrd options");
}

Test(cli, cpuid_hide)
{
	cr_assert_eq(PARSE("--kernel", "k", "--cpuid-hide", "xsave,cmpxchg16b"), 0, "%s", err.msg);
	cr_assert_eq(cfg.cpuid_hide, CPUID_HIDE_XSAVE | CPUID_HIDE_CX16);
	cr_assert_eq(PARSE("--kernel", "k"), 0);
	cr_assert_eq(cfg.cpuid_hide, 0, "nothing hidden by default");
	cr_assert_eq(PARSE("--kernel", "k", "--cpuid-hide", "tsc-deadline"), 0, "%s", err.msg);
	cr_assert_eq(cfg.cpuid_hide, CPUID_HIDE_TSC_DEADLINE);
	expect_bad("--cpuid-hide: unknown feature 'sse'", "--kernel", "k", "--cpuid-hide", "sse");
}

Test(cli, restore_refuses_boot_options)
{
	expect_bad("--initrd cannot be combined with --restore", "--restore", "d", "--initrd", "/m");
	expect_bad("--cpuid-hide cannot be combined with --restore", "--restore", "d", "--cpuid-hide",
		   "xsave");
}

Test(cli, an_option_given_twice_is_an_error)
{
	expect_bad("--cpus is given twice", "--kernel", "k", "--cpus", "2", "--cpus", "4");
	expect_bad("--memory is given twice", "--kernel", "k", "--memory=64M", "--memory", "128M");
	expect_bad("--kernel is given twice", "--kernel", "a", "--kernel", "b");
	expect_bad("--verbose is given twice", "--kernel", "k", "--verbose", "--verbose");
	cr_assert_eq(PARSE("--kernel", "k", "--initrd", "a", "--initrd", "b args"), 0,
		     "--initrd is a list: %s", err.msg);
	cr_assert_eq(cfg.nr_initrd, 2);
}

Test(cli, seccomp_modes)
{
	cr_assert_eq(PARSE("--kernel", "k"), 0);
	cr_assert_eq(cfg.seccomp, SECCOMP_ON, "on by default");
	cr_assert_eq(PARSE("--kernel", "k", "--seccomp", "log"), 0);
	cr_assert_eq(cfg.seccomp, SECCOMP_LOG);
	cr_assert_eq(PARSE("--kernel", "k", "--seccomp=off"), 0);
	cr_assert_eq(cfg.seccomp, SECCOMP_OFF);
	expect_bad("--seccomp must be on, log or off (got 'strict')", "--kernel", "k", "--seccomp", "strict");
}

Test(cli, profile)
{
	cr_assert_eq(cfg.prof.n, 0);
	cr_assert_eq(PARSE("--kernel", "k", "--profile", "task-clock:1ms,cycles:100000", "--profile-output",
			   "d", "--symbols", "System.map"),
		     0, "%s", err.msg);
	cr_assert_eq(cfg.prof.n, 2);
	cr_assert_str_eq(cfg.prof.text, "task-clock:1000000ns,cycles:100000");
	cr_assert_str_eq(cfg.profile_output, "d");
	cr_assert_str_eq(cfg.symbols, "System.map");
	/* With --restore the snapshot sets --profile; where the profile goes and its symbols may be given. */
	cr_assert_eq(PARSE("--restore", "snap", "--profile-output", "d", "--symbols", "m"), 0, "%s", err.msg);
}

Test(cli, profile_bad)
{
	expect_bad("unknown event 'nope'", "--kernel", "k", "--profile", "nope:1ms");
	expect_bad("a time period needs a unit", "--kernel", "k", "--profile", "task-clock:1");
	expect_bad("--profile is given twice", "--kernel", "k", "--profile", "task-clock:1ms", "--profile",
		   "cpu-clock:1ms");
	expect_bad("--profile-output needs --profile", "--kernel", "k", "--profile-output", "d");
	expect_bad("--symbols needs --profile", "--kernel", "k", "--symbols", "m");
	expect_bad("--profile-output needs a directory", "--kernel", "k", "--profile", "task-clock:1ms",
		   "--profile-output", "");
	expect_bad("--profile cannot be combined with --restore", "--restore", "s", "--profile",
		   "task-clock:1ms");
}

Test(cli, rng)
{
	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_not(cfg.rng, "no device unless asked for");
	cr_assert_eq(PARSE("--kernel", "k", "--rng"), 0, "%s", err.msg);
	cr_assert(cfg.rng);
	expect_bad("--rng is given twice", "--kernel", "k", "--rng", "--rng");
	expect_bad("--rng cannot be combined with --restore", "--restore", "s", "--rng");
}

Test(cli, disk)
{
	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_eq(cfg.nr_disks, 0, "no disk unless asked for");
	cr_assert_eq(PARSE("--kernel", "k", "--disk", "path=a.img", "--disk", "path=/x/b.img,readonly=on",
			   "--disk", "readonly=off,path=c"),
		     0, "%s", err.msg);
	cr_assert_eq(cfg.nr_disks, 3);
	cr_assert_str_eq(cfg.disks[0].path, "a.img");
	cr_assert_not(cfg.disks[0].readonly);
	cr_assert_str_eq(cfg.disks[1].path, "/x/b.img", "in command-line order");
	cr_assert(cfg.disks[1].readonly);
	cr_assert_str_eq(cfg.disks[2].path, "c");
	cr_assert_not(cfg.disks[2].readonly);
	cr_assert_eq(PARSE("--kernel", "k", "--disk", "path=1", "--disk", "path=2", "--disk", "path=3",
			   "--disk", "path=4", "--disk", "path=5", "--disk", "path=6", "--disk", "path=7",
			   "--disk", "path=8"),
		     0, "%s", err.msg);
	cr_assert_eq(cfg.nr_disks, 8);
}

Test(cli, disk_bad)
{
	expect_bad("--disk needs path=FILE", "--kernel", "k", "--disk", "readonly=on");
	expect_bad("--disk: unknown key 'size'", "--kernel", "k", "--disk", "path=a,size=1G");
	expect_bad("--disk: readonly must be on or off (got 'yes')", "--kernel", "k", "--disk",
		   "path=a,readonly=yes");
	expect_bad("--disk: readonly must be on or off (got '')", "--kernel", "k", "--disk",
		   "path=a,readonly=");
	expect_bad("--disk: 'a.img' is not key=value", "--kernel", "k", "--disk", "a.img");
	expect_bad("--disk: path= needs a file", "--kernel", "k", "--disk", "path=");
	expect_bad("--disk: path= is given twice", "--kernel", "k", "--disk", "path=a,path=b");
	expect_bad("--disk: readonly= is given twice", "--kernel", "k", "--disk",
		   "path=a,readonly=on,readonly=off");
	expect_bad("--disk: '' is not key=value", "--kernel", "k", "--disk", "path=a,");
	expect_bad("at most 8 --disk options", "--kernel", "k", "--disk", "path=1", "--disk", "path=2",
		   "--disk", "path=3", "--disk", "path=4", "--disk", "path=5", "--disk", "path=6", "--disk",
		   "path=7", "--disk", "path=8", "--disk", "path=9");
	expect_bad("--disk cannot be combined with --restore", "--restore", "s", "--disk", "path=a");
	expect_bad("option '--disk' needs a value", "--kernel", "k", "--disk");
}

Test(cli, net)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };

	cr_assert_eq(PARSE("--kernel", "k"), 0, "%s", err.msg);
	cr_assert_eq(cfg.nr_net, 0, "no device unless asked for");
	cr_assert_eq(PARSE("--kernel", "k", "--net", "tap=tap0"), 0, "%s", err.msg);
	cr_assert_eq(cfg.nr_net, 1);
	cr_assert_str_eq(cfg.net[0].tap, "tap0");
	cr_assert_not(cfg.net[0].has_mac, "the default MAC comes later");
	cr_assert_not(cfg.net[0].mrg_rxbuf, "no mergeable receive buffers unless asked for");
	cr_assert_eq(PARSE("--kernel", "k", "--net", "tap=a,mrg=on", "--net", "mrg=off,tap=b"), 0, "%s",
		     err.msg);
	cr_assert(cfg.net[0].mrg_rxbuf);
	cr_assert_not(cfg.net[1].mrg_rxbuf);
	cr_assert_eq(cfg.net[0].tx_usecs, 0, "transmit interrupts at once unless asked");
	cr_assert_eq(cfg.net[0].rx_usecs, 0, "receive interrupts at once unless asked");
	cr_assert_eq(PARSE("--kernel", "k", "--net", "tap=a,tx-usecs=250", "--net",
			   "tx-usecs=10000,tap=b,rx-usecs=7"),
		     0, "%s", err.msg);
	cr_assert_eq(cfg.net[0].tx_usecs, 250);
	cr_assert_eq(cfg.net[0].rx_usecs, 0);
	cr_assert_eq(cfg.net[1].tx_usecs, 10000);
	cr_assert_eq(cfg.net[1].rx_usecs, 7);
	cr_assert_eq(PARSE("--kernel", "k", "--net", "tap=a,mac=52:54:00:AB:cd:ef", "--net",
			   "mac=52:54:00:00:00:01,tap=b"),
		     0, "%s", err.msg);
	cr_assert_eq(cfg.nr_net, 2);
	cr_assert(cfg.net[0].has_mac);
	cr_assert_arr_eq(cfg.net[0].mac, mac, 6);
	cr_assert_str_eq(cfg.net[1].tap, "b");
	cr_assert_eq(cfg.net[1].mac[5], 1);
	cr_assert_eq(PARSE("--kernel", "k", "--net", "tap=a", "--net", "tap=b", "--net", "tap=c", "--net",
			   "tap=d"),
		     0, "%s", err.msg);
	cr_assert_eq(cfg.nr_net, 4);
	cr_assert_eq(PARSE("--kernel", "k", "--net", "tap=123456789012345"), 0, "15 characters: %s", err.msg);
}

Test(cli, net_bad)
{
	expect_bad("at most 4 --net options", "--kernel", "k", "--net", "tap=a", "--net", "tap=b", "--net",
		   "tap=c", "--net", "tap=d", "--net", "tap=e");
	expect_bad("--net 'mac=52:54:00:12:34:56' needs tap=NAME", "--kernel", "k", "--net",
		   "mac=52:54:00:12:34:56");
	expect_bad("--net: unknown key 'model'", "--kernel", "k", "--net", "tap=a,model=e1000");
	expect_bad("--net mrg= must be on or off (got 'yes')", "--kernel", "k", "--net", "tap=a,mrg=yes");
	expect_bad("--net mrg= must be on or off (got '')", "--kernel", "k", "--net", "tap=a,mrg=");
	expect_bad("--net tx-usecs=10001: microseconds, 0 to 10000", "--kernel", "k", "--net",
		   "tap=a,tx-usecs=10001");
	expect_bad("--net tx-usecs=-1: microseconds", "--kernel", "k", "--net", "tap=a,tx-usecs=-1");
	expect_bad("--net tx-usecs=: microseconds", "--kernel", "k", "--net", "tap=a,tx-usecs=");
	expect_bad("--net tx-usecs=1ms: microseconds", "--kernel", "k", "--net", "tap=a,tx-usecs=1ms");
	expect_bad("--net rx-usecs=10001: microseconds, 0 to 10000", "--kernel", "k", "--net",
		   "tap=a,rx-usecs=10001");
	expect_bad("--net rx-usecs=x: microseconds", "--kernel", "k", "--net", "tap=a,rx-usecs=x");
	expect_bad("'tap' is not KEY=VALUE", "--kernel", "k", "--net", "tap");
	expect_bad("--net tap= is not an interface name", "--kernel", "k", "--net", "tap=");
	expect_bad("--net tap=1234567890123456 is not an interface name", "--kernel", "k", "--net",
		   "tap=1234567890123456");
	expect_bad("--net tap=a/b is not an interface name", "--kernel", "k", "--net", "tap=a/b");
	expect_bad("--net mac=53:54:00:12:34:56 is a multicast address", "--kernel", "k", "--net",
		   "tap=a,mac=53:54:00:12:34:56");
	expect_bad("--net mac=52:54:00:12:34 is not a MAC address", "--kernel", "k", "--net",
		   "tap=a,mac=52:54:00:12:34");
	expect_bad("--net mac=52:54:00:12:34:567 is not a MAC address", "--kernel", "k", "--net",
		   "tap=a,mac=52:54:00:12:34:567");
	expect_bad("--net mac=52-54-00-12-34-56 is not a MAC address", "--kernel", "k", "--net",
		   "tap=a,mac=52-54-00-12-34-56");
	expect_bad("--net mac=52:54:00:12:34:5g is not a MAC address", "--kernel", "k", "--net",
		   "tap=a,mac=52:54:00:12:34:5g");
	expect_bad("--net mac=00:00:00:00:00:00 is not a usable address", "--kernel", "k", "--net",
		   "tap=a,mac=00:00:00:00:00:00");
	expect_bad("--net tap=a is given twice", "--kernel", "k", "--net", "tap=a", "--net", "tap=a");
	expect_bad("two --net options have the same mac", "--kernel", "k", "--net",
		   "tap=a,mac=52:54:00:00:00:01", "--net", "tap=b,mac=52:54:00:00:00:01");
	expect_bad("--net cannot be combined with --restore", "--restore", "s", "--net", "tap=a");
}

/* ---- --incoming and migration addresses (docs/migration.md) --------------------- */

Test(cli, mig_addr_tcp)
{
	struct mig_addr a;
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)&a.sa;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a.sa;
	struct in6_addr lo6 = IN6ADDR_LOOPBACK_INIT;

	cr_assert_eq(mig_addr_parse("tcp:192.0.2.7:4444", &a, &err), 0, "%s", err.msg);
	cr_assert_eq(in4->sin_family, AF_INET);
	cr_assert_eq(ntohs(in4->sin_port), 4444);
	cr_assert_eq(ntohl(in4->sin_addr.s_addr), 0xc0000207);
	cr_assert_eq(a.len, sizeof(struct sockaddr_in));
	cr_assert_str_eq(a.text, "tcp:192.0.2.7:4444");
	cr_assert_eq(mig_addr_parse("tcp:0.0.0.0:0", &a, &err), 0,
		     "port 0: any (the destination says which)");
	cr_assert_eq(ntohs(in4->sin_port), 0);
	cr_assert_eq(mig_addr_parse("tcp:127.0.0.1:65535", &a, &err), 0, "%s", err.msg);
	cr_assert_eq(ntohs(in4->sin_port), 65535);
	cr_assert_eq(mig_addr_parse("tcp:[::1]:8000", &a, &err), 0, "%s", err.msg);
	cr_assert_eq(in6->sin6_family, AF_INET6);
	cr_assert_eq(ntohs(in6->sin6_port), 8000);
	cr_assert_eq(memcmp(&in6->sin6_addr, &lo6, sizeof(lo6)), 0);
	cr_assert_eq(a.len, sizeof(struct sockaddr_in6));
	cr_assert_eq(mig_addr_parse("tcp:[2001:db8::5]:1", &a, &err), 0, "%s", err.msg);
	cr_assert_eq(in6->sin6_family, AF_INET6);
}

Test(cli, mig_addr_unix)
{
	struct mig_addr a;
	const struct sockaddr_un *un = (const struct sockaddr_un *)&a.sa;
	char path[sizeof(un->sun_path) + 8];

	cr_assert_eq(mig_addr_parse("unix:/run/pv/mig.sock", &a, &err), 0, "%s", err.msg);
	cr_assert_eq(un->sun_family, AF_UNIX);
	cr_assert_str_eq(un->sun_path, "/run/pv/mig.sock");
	cr_assert_eq(mig_addr_parse("unix:relative.sock", &a, &err), 0, "%s", err.msg);
	cr_assert_str_eq(un->sun_path, "relative.sock");
	/* The longest path a sockaddr_un holds with its NUL: 107 bytes. */
	snprintf(path, sizeof(path), "unix:/%0*d", (int)sizeof(un->sun_path) - 2, 0);
	cr_assert_eq(mig_addr_parse(path, &a, &err), 0, "%s", err.msg);
	cr_assert_eq(strlen(un->sun_path), sizeof(un->sun_path) - 1);
	snprintf(path, sizeof(path), "unix:/%0*d", (int)sizeof(un->sun_path) - 1, 0);
	cr_assert_eq(mig_addr_parse(path, &a, &err), -EINVAL);
	assert_msg_has("a unix: address needs a path of 1 to 107 bytes");
	cr_assert_eq(mig_addr_parse("unix:", &a, &err), -EINVAL);
	assert_msg_has("'unix:': a unix: address needs a path of 1 to 107 bytes");
}

Test(cli, mig_addr_bad)
{
	static const struct {
		const char *addr, *msg;
	} bad[] = {
		{ "192.0.2.7:4444", "'192.0.2.7:4444': an address is tcp:HOST:PORT or unix:PATH" },
		{ "", "an address is tcp:HOST:PORT or unix:PATH" },
		{ "udp:1.2.3.4:5", "an address is tcp:HOST:PORT or unix:PATH" },
		{ "tcp:localhost:4444", "'tcp:localhost:4444': 'localhost' is not a numeric IP address" },
		{ "tcp:1.2.3:4444", "'1.2.3' is not a numeric IP address" },
		{ "tcp:1.2.3.4", "'tcp:1.2.3.4': a tcp: address is tcp:HOST:PORT" },
		{ "tcp:", "a tcp: address is tcp:HOST:PORT" },
		{ "tcp::4444", "'tcp::4444': no host" },
		{ "tcp:[]:4444", "no host" },
		{ "tcp:1.2.3.4:", "'tcp:1.2.3.4:': the port must be 0 to 65535" },
		{ "tcp:1.2.3.4:65536", "the port must be 0 to 65535" },
		{ "tcp:1.2.3.4:-1", "the port must be 0 to 65535" },
		{ "tcp:1.2.3.4:http", "the port must be 0 to 65535" },
		{ "tcp:1.2.3.4:80x", "the port must be 0 to 65535" },
		{ "tcp:1.2.3.4: 80", "the port must be 0 to 65535" },
		{ "tcp:[::1]", "'tcp:[::1]': write an IPv6 address as tcp:[ADDR]:PORT" },
		{ "tcp:[::1:80", "write an IPv6 address as tcp:[ADDR]:PORT" },
		{ "tcp:[::1]80", "write an IPv6 address as tcp:[ADDR]:PORT" },
		{ "tcp:[fe80::1%eth0]:80", "'fe80::1%eth0' is not a numeric IP address" },
		{ "tcp:[::1]:99999", "the port must be 0 to 65535" },
	};
	struct mig_addr a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&err, 0, sizeof(err));
		cr_assert_eq(mig_addr_parse(bad[i].addr, &a, &err), -EINVAL, "'%s' accepted", bad[i].addr);
		cr_assert(strstr(err.msg, bad[i].msg), "'%s' gave '%s', which lacks '%s'", bad[i].addr,
			  err.msg, bad[i].msg);
	}
	cr_assert_eq(mig_addr_parse("tcp:nohost", &a, NULL), -EINVAL, "no errbuf: still refused");
}

Test(cli, incoming)
{
	cr_assert_eq(PARSE("--incoming", "tcp:0.0.0.0:4444"), 0, "%s", err.msg);
	cr_assert_str_eq(cfg.incoming, "tcp:0.0.0.0:4444");
	cr_assert_null(cfg.kernel, "the machine comes from the source");
	cr_assert_eq(cfg.incoming_timeout_ms, 600000, "ten minutes by default");
	expect_bad("'tcp:example.org:4444': 'example.org' is not a numeric IP address", "--incoming",
		   "tcp:example.org:4444");
	expect_bad("an address is tcp:HOST:PORT or unix:PATH", "--incoming", "4444");
}
