// SPDX-License-Identifier: MIT
/*
 * spawn: the bench's stopwatch. Runs one or more commands N times each,
 * interleaved round by round so drift on a noisy machine hits every case
 * alike, and times each run from fork to reap (CLOCK_MONOTONIC). It reads
 * the child's peak RSS from wait4()'s rusage, checks every run's exit status
 * and output, and prints one tab-separated result line per case.
 *
 * Usage: spawn [-n RUNS] [-w WARMUP] [-t SECONDS] [-d DIR] [-p 0|1] CASE [:: CASE]...
 *   CASE = -l LABEL [-x STATUS] [-m TEXT] [-k KEY] [-e MARK] [-g KEY] -- COMMAND [ARG]...
 *   -x  exit status every run must have (default 0)
 *   -m  text every run's standard output must contain
 *   -k  read the number after KEY in every run's standard error (e.g. a VMM's
 *       "guest memory resident: "), reported as its median
 *   -e  also time from fork to MARK's first appearance in standard output
 *       (polled every millisecond while the command runs)
 *   -g  read the kernel's printk time ("[   1.234567] ") of the first line of
 *       standard output that contains KEY (e.g. "Run /init"), in microseconds
 *   -t  a run taking longer is killed and fails the bench (default 120)
 *   -d  directory for the captured output (default /tmp)
 *   -p  1: a line on standard error after every run (label, run, seconds), so a
 *       long bench is not silent (the test host stops a command quiet for 300 s)
 * Output, per case: LABEL runs min_us median_us p90_us rss_kib rss_max_kib
 * key_median (-1 without -k) mark_median_us (-1 without -e) printk_median_us
 * (-1 without -g); rss_kib is the median of the runs' peak RSS.
 * Any failed run aborts with a message and the run's output: the timing of a
 * failing run means nothing. Only busybox exists where this runs, hence C.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CASES 8
#define MAX_RUNS 10000
#define CAPTURE_MAX (1 << 20) /* bytes of a run's output we look at */
#define MARK_CHUNK 65536      /* bytes read at a time while watching for -e */
#define MARK_MAX 255	      /* longest -e mark */

struct bench_case {
	const char *label;
	char **argv; /* NULL-terminated, points into main's argv */
	int want_status;
	const char *match; /* NULL: no stdout check */
	const char *key;   /* NULL: no stderr number */
	const char *mark;  /* NULL: no time to a stdout mark */
	const char *gkey;  /* NULL: no printk time */
	uint64_t *wall_us; /* per measured run */
	uint64_t *rss_kib;
	uint64_t *key_val;
	uint64_t *mark_us;
	uint64_t *gtime_us;
};

struct bench {
	unsigned runs, warmup, timeout_s;
	bool progress; /* -p: a line on stderr after every run */
	const char *dir;
	unsigned nr_cases;
	struct bench_case cases[MAX_CASES];
	char out_path[4096], err_path[4096];
};

static void usage(void)
{
	fputs("usage: spawn [-n RUNS] [-w WARMUP] [-t SECONDS] [-d DIR] [-p 0|1] CASE [:: CASE]...\n"
	      "  CASE = -l LABEL [-x STATUS] [-m TEXT] [-k KEY] [-e MARK] [-g KEY] -- COMMAND "
	      "[ARG]...\n",
	      stderr);
	exit(2);
}

static unsigned parse_uint(const char *s, unsigned max, const char *what)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max) {
		fprintf(stderr, "spawn: %s must be a number from 0 to %u (got '%s')\n", what, max, s);
		exit(2);
	}
	return (unsigned)v;
}

/* Parses one CASE starting at argv[i]; returns the index after it. */
static int parse_case(int argc, char **argv, int i, struct bench_case *c)
{
	memset(c, 0, sizeof(*c));
	for (; i < argc && strcmp(argv[i], "--"); i += 2) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "-l"))
			c->label = argv[i + 1];
		else if (!strcmp(argv[i], "-x"))
			c->want_status = (int)parse_uint(argv[i + 1], 255, "-x STATUS");
		else if (!strcmp(argv[i], "-m"))
			c->match = argv[i + 1];
		else if (!strcmp(argv[i], "-k"))
			c->key = argv[i + 1];
		else if (!strcmp(argv[i], "-e") && argv[i + 1][0] && strlen(argv[i + 1]) <= MARK_MAX)
			c->mark = argv[i + 1];
		else if (!strcmp(argv[i], "-g") && argv[i + 1][0])
			c->gkey = argv[i + 1];
		else
			usage();
	}
	if (i >= argc || !c->label)
		usage();
	c->argv = &argv[++i];
	while (i < argc && strcmp(argv[i], "::"))
		i++;
	if (c->argv == &argv[i]) /* no command */
		usage();
	if (i < argc)
		argv[i++] = NULL; /* terminate this case's command at "::" */
	return i;
}

static void parse_args(int argc, char **argv, struct bench *b)
{
	int i = 1;

	b->runs = 20;
	b->warmup = 1;
	b->timeout_s = 120;
	b->dir = "/tmp";
	for (; i + 1 < argc && argv[i][0] == '-' && strcmp(argv[i], "-l"); i += 2) {
		if (!strcmp(argv[i], "-n"))
			b->runs = parse_uint(argv[i + 1], MAX_RUNS, "-n RUNS");
		else if (!strcmp(argv[i], "-w"))
			b->warmup = parse_uint(argv[i + 1], MAX_RUNS, "-w WARMUP");
		else if (!strcmp(argv[i], "-t"))
			b->timeout_s = parse_uint(argv[i + 1], 86400, "-t SECONDS");
		else if (!strcmp(argv[i], "-d"))
			b->dir = argv[i + 1];
		else if (!strcmp(argv[i], "-p"))
			b->progress = parse_uint(argv[i + 1], 1, "-p 0|1");
		else
			usage();
	}
	if (b->runs < 1)
		usage();
	while (i < argc) {
		if (b->nr_cases == MAX_CASES) {
			fprintf(stderr, "spawn: at most %d cases\n", MAX_CASES);
			exit(2);
		}
		i = parse_case(argc, argv, i, &b->cases[b->nr_cases++]);
	}
	if (!b->nr_cases)
		usage();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reads at most CAPTURE_MAX bytes of PATH into a NUL-terminated buffer. */
static char *slurp(const char *path)
{
	char *buf = malloc(CAPTURE_MAX + 1);
	size_t n = 0;
	FILE *f;

	if (!buf)
		return NULL;
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, CAPTURE_MAX, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

static void fail_run(const struct bench *b, const struct bench_case *c, const char *why)
{
	char *out = slurp(b->out_path), *err = slurp(b->err_path);

	unlink(b->out_path);
	unlink(b->err_path);

	fprintf(stderr, "spawn: case '%s': %s\n  command:", c->label, why);
	for (char **a = c->argv; *a; a++)
		fprintf(stderr, " %s", *a);
	fprintf(stderr, "\n  --- its stdout ---\n%s\n  --- its stderr ---\n%s\n", out ? out : "",
		err ? err : "");
	exit(1);
}

static int open_capture(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0) {
		fprintf(stderr, "spawn: cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

/* Child side: stdin from /dev/null, stdout/stderr to the capture files. */
static void exec_child(char **argv, int out, int err)
{
	int null = open("/dev/null", O_RDONLY);

	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	execvp(argv[0], argv);
	dprintf(2, "spawn: cannot execute %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* The printk time, in microseconds, of the first line of TEXT containing KEY; -1 if none. */
static uint64_t printk_us(const char *text, const char *key)
{
	const char *at = strstr(text, key), *line;
	char *end;
	double s;

	if (!at)
		return (uint64_t)-1;
	for (line = at; line > text && line[-1] != '\n'; line--)
		;
	if (*line != '[')
		return (uint64_t)-1;
	s = strtod(line + 1, &end);
	if (end == line + 1 || *end != ']' || s < 0)
		return (uint64_t)-1;
	return (uint64_t)(s * 1e6 + 0.5);
}

/* Checks one finished run's status and output; returns the -k number or -1. */
static uint64_t check_run(const struct bench *b, const struct bench_case *c, int status)
{
	char why[256], *text, *at;
	uint64_t val = (uint64_t)-1;

	if (!WIFEXITED(status) || WEXITSTATUS(status) != c->want_status) {
		if (WIFSIGNALED(status))
			snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
		else
			snprintf(why, sizeof(why), "exit status %d, expected %d", WEXITSTATUS(status),
				 c->want_status);
		fail_run(b, c, why);
	}
	if (c->match) {
		text = slurp(b->out_path);
		if (!text || !strstr(text, c->match)) {
			snprintf(why, sizeof(why), "its output lacks \"%s\"", c->match);
			fail_run(b, c, why);
		}
		free(text);
	}
	if (c->key) {
		text = slurp(b->err_path);
		at = text ? strstr(text, c->key) : NULL;
		if (!at) {
			snprintf(why, sizeof(why), "its stderr lacks \"%s\"", c->key);
			fail_run(b, c, why);
		}
		val = strtoull(at + strlen(c->key), NULL, 10);
		free(text);
	}
	return val;
}

/* Reads what the run's stdout file has from *OFF on into BUF (keeping the
 * last bytes of the previous read in front, *HAVE of them); true once C's
 * mark is in it. */
static bool mark_seen(int fd, const struct bench_case *c, char *buf, size_t *have, off_t *off)
{
	size_t len = strlen(c->mark);
	ssize_t n;

	while ((n = pread(fd, buf + *have, MARK_CHUNK, *off)) > 0) {
		*off += n;
		*have += (size_t)n;
		buf[*have] = '\0';
		for (size_t i = 0; i < *have; i++) /* a NUL would hide the rest from strstr */
			if (!buf[i])
				buf[i] = ' ';
		if (strstr(buf, c->mark))
			return true;
		if (*have >= len) { /* keep a possible start of the mark */
			memmove(buf, buf + *have - (len - 1), len - 1);
			*have = len - 1;
		}
	}
	return false;
}

/* Polls the run's stdout every millisecond while PID runs (it is left to be
 * reaped), for at most the timeout; returns the time C's mark appeared, 0 if
 * it did not. */
static uint64_t watch_mark(const struct bench *b, const struct bench_case *c, pid_t pid, uint64_t t0)
{
	static char buf[MARK_CHUNK + MARK_MAX + 1];
	const struct timespec ms = { 0, 1000000 };
	size_t have = 0;
	off_t off = 0;
	siginfo_t si;
	bool done = false;
	int fd = open(b->out_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	for (;;) {
		if (mark_seen(fd, c, buf, &have, &off)) {
			close(fd);
			return now_ns();
		}
		if (done)
			break;
		memset(&si, 0, sizeof(si));
		done = (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid) ||
		       now_ns() - t0 >= (uint64_t)b->timeout_s * 1000000000u;
		if (!done)
			nanosleep(&ms, NULL);
	}
	close(fd);
	return 0;
}

/* One run of case C; records it in slot IDX unless IDX < 0 (warm-up). */
static void run_once(const struct bench *b, struct bench_case *c, int idx)
{
	int out = open_capture(b->out_path), err = open_capture(b->err_path);
	struct rusage ru;
	char why[64];
	unsigned left;
	int status;
	uint64_t t0, t1, val, mark = 0, gtime = (uint64_t)-1, waited_s;
	char *text;
	pid_t pid;

	t0 = now_ns();
	pid = fork();
	if (pid == 0)
		exec_child(c->argv, out, err);
	if (pid < 0) {
		fprintf(stderr, "spawn: fork: %s\n", strerror(errno));
		exit(1);
	}
	if (c->mark)
		mark = watch_mark(b, c, pid, t0);
	waited_s = (now_ns() - t0) / 1000000000u;
	/* SIGALRM interrupts wait4 (no SA_RESTART) */
	alarm(waited_s < b->timeout_s ? b->timeout_s - (unsigned)waited_s : 1);
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "spawn: wait4: %s\n", strerror(errno));
			exit(1);
		}
		left = alarm(0);
		if (left) { /* another signal: keep waiting */
			alarm(left);
			continue;
		}
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		snprintf(why, sizeof(why), "still running after %u s; killed", b->timeout_s);
		fail_run(b, c, why);
	}
	alarm(0);
	t1 = now_ns();
	close(out);
	close(err);
	val = check_run(b, c, status);
	if (c->mark && !mark)
		fail_run(b, c, "its output never showed the -e mark");
	if (c->gkey) {
		text = slurp(b->out_path);
		gtime = text ? printk_us(text, c->gkey) : (uint64_t)-1;
		free(text);
		if (gtime == (uint64_t)-1)
			fail_run(b, c, "no printk-stamped line of its output has the -g key");
	}
	if (b->progress)
		fprintf(stderr, "spawn: %s, %s %d of %u: %.2f s\n", c->label, idx < 0 ? "warm-up" : "run",
			idx < 0 ? (int)b->warmup + idx + 1 : idx + 1, idx < 0 ? b->warmup : b->runs,
			(double)(t1 - t0) / 1e9);
	if (idx < 0)
		return;
	c->mark_us[idx] = c->mark ? (mark - t0) / 1000 : 0;
	c->gtime_us[idx] = gtime;
	c->wall_us[idx] = (t1 - t0) / 1000;
	c->rss_kib[idx] = (uint64_t)ru.ru_maxrss;
	c->key_val[idx] = val;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Sorts V and returns its median (mean of the middle two for even N). */
static uint64_t median(uint64_t *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nearest-rank percentile P of sorted V. */
static uint64_t percentile(const uint64_t *v, unsigned n, unsigned p)
{
	unsigned rank = (n * p + 99) / 100;

	return v[rank ? rank - 1 : 0];
}

static void report(const struct bench *b, struct bench_case *c)
{
	uint64_t med = median(c->wall_us, b->runs);
	uint64_t rss = median(c->rss_kib, b->runs);
	int64_t key = c->key ? (int64_t)median(c->key_val, b->runs) : -1;
	int64_t mark = c->mark ? (int64_t)median(c->mark_us, b->runs) : -1;
	int64_t gtime = c->gkey ? (int64_t)median(c->gtime_us, b->runs) : -1;

	printf("%s\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64
	       "\t%" PRId64 "\t%" PRId64 "\n",
	       c->label, b->runs, c->wall_us[0], med, percentile(c->wall_us, b->runs, 90), rss,
	       c->rss_kib[b->runs - 1], key, mark, gtime);
}

static void on_alarm(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	static struct bench b;
	struct sigaction sa = { .sa_handler = on_alarm }; /* no SA_RESTART */

	sigaction(SIGALRM, &sa, NULL);
	parse_args(argc, argv, &b);
	snprintf(b.out_path, sizeof(b.out_path), "%s/spawn.%d.out", b.dir, (int)getpid());
	snprintf(b.err_path, sizeof(b.err_path), "%s/spawn.%d.err", b.dir, (int)getpid());
	for (unsigned i = 0; i < b.nr_cases; i++) {
		struct bench_case *c = &b.cases[i];

		c->wall_us = calloc(b.runs, sizeof(uint64_t));
		c->rss_kib = calloc(b.runs, sizeof(uint64_t));
		c->key_val = calloc(b.runs, sizeof(uint64_t));
		c->mark_us = calloc(b.runs, sizeof(uint64_t));
		c->gtime_us = calloc(b.runs, sizeof(uint64_t));
		if (!c->wall_us || !c->rss_kib || !c->key_val || !c->mark_us || !c->gtime_us) {
			fprintf(stderr, "spawn: out of memory\n");
			return 1;
		}
	}
	for (unsigned r = 0; r < b.warmup + b.runs; r++)
		for (unsigned i = 0; i < b.nr_cases; i++)
			run_once(&b, &b.cases[i], (int)r - (int)b.warmup);
	for (unsigned i = 0; i < b.nr_cases; i++)
		report(&b, &b.cases[i]);
	unlink(b.out_path);
	unlink(b.err_path);
	return 0;
}
