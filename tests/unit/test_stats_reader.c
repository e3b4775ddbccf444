// SPDX-License-Identifier: MIT
/*
 * Unit tests for the stats reader: regions built here by a small fake
 * producer (only the ABI header), every corruption rejected with its error,
 * forward compatibility, torn reads under a concurrent writer, -EBUSY, seals.
 */
#include "stats/stats.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stats_check_run.h"
#include "stats_fake.h"

static int open_err(struct fake *f, struct errbuf *err)
{
	struct stats_view *v = (struct stats_view *)0x1;
	int rc = stats_view_open_fd(&v, f->fd, err);

	cr_assert_null(v, "a failed open leaves *out NULL");
	return rc;
}

static void expect_bad(struct fake *f, int want, const char *msg_part)
{
	struct errbuf err = { "" };
	int rc = open_err(f, &err);

	cr_assert_eq(rc, want, "rc %d (%s), want %d", rc, err.msg, want);
	cr_assert(strstr(err.msg, msg_part), "message '%s' lacks '%s'", err.msg, msg_part);
	fake_destroy(f);
}

/* ---- a good region ------------------------------------------------------ */

Test(stats_reader, good_region_reads_values)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;
	uint64_t vals[16];
	uint32_t state = 99;
	unsigned i;

	fake_create(&f);
	cr_assert_eq(stats_view_open_fd(&v, f.fd, &err), 0, "%s", err.msg);
	cr_assert_eq(stats_view_ndesc(v), 2 + NVCPU_FIELDS);
	cr_assert_str_eq(stats_view_desc(v, 0)->name, "exits_total");
	cr_assert_null(stats_view_desc(v, 7));
	cr_assert_eq(stats_view_online(v), 2);
	cr_assert_eq(stats_view_header(v)->generation, 3);
	cr_assert_eq(stats_view_header(v)->producer_pid, (uint64_t)getpid());

	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VM, 0, vals, &state), 0);
	cr_assert_eq(state, PV_STATS_ONLINE);
	cr_assert_eq(vals[0], 300);
	cr_assert_eq(vals[1], 2);
	cr_assert_eq(vals[2], 0, "other record's fields read as 0");

	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 1, vals, &state), 0);
	cr_assert_eq(vals[0], 0);
	for (i = 0; i < NVCPU_FIELDS; i++)
		cr_assert_eq(vals[2 + i], 200 + i);

	/* online/generation are live: publishing vCPU 2 is seen without reopening */
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 2))->state = PV_STATS_ONLINE;
	__atomic_store_n(&f.h->vcpu.online, 3, __ATOMIC_RELEASE);
	__atomic_store_n(&f.h->generation, 4, __ATOMIC_RELEASE);
	cr_assert_eq(stats_view_header(v)->vcpu.online, 3);
	cr_assert_eq(stats_view_header(v)->generation, 4);
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 2, vals, NULL), 0);

	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 3, vals, NULL), -ENOENT, "offline slot");
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 4, vals, NULL), -ENOENT, "beyond slots");
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VM, 1, vals, NULL), -ENOENT);
	cr_assert_eq(stats_view_read(v, (enum pv_stats_record)7, 0, vals, NULL), -ENOENT);

	/* a hostile producer raising online beyond slots is clamped */
	__atomic_store_n(&f.h->vcpu.online, 1000, __ATOMIC_RELEASE);
	cr_assert_eq(stats_view_online(v), VCPU_SLOTS);

	size_t sz;
	cr_assert_not_null(stats_view_base(v, &sz));
	cr_assert_eq(sz, REGION_SIZE);
	stats_view_close(v);
	stats_view_close(NULL);
	fake_destroy(&f);
}

/* ---- corruptions ---------------------------------------------------------- */

Test(stats_reader, bad_magic)
{
	struct fake f;

	fake_create(&f);
	f.h->magic ^= 1;
	expect_bad(&f, -EPROTO, "magic");
}

Test(stats_reader, header_size_too_small)
{
	struct fake f;

	fake_create(&f);
	f.h->header_size = 64;
	expect_bad(&f, -EPROTO, "header_size");
}

Test(stats_reader, header_size_beyond_file)
{
	struct fake f;

	fake_create(&f);
	f.h->header_size = REGION_SIZE + 8;
	expect_bad(&f, -EINVAL, "header_size");
}

Test(stats_reader, file_smaller_than_header)
{
	struct fake f;

	fake_create(&f);
	cr_assert_eq(ftruncate(f.fd, 32), 0);
	munmap(f.p, f.size);
	f.size = 32;
	f.p = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
	cr_assert(f.p != MAP_FAILED);
	expect_bad(&f, -EPROTO, "smaller than a stats header");
}

Test(stats_reader, region_size_larger_than_file)
{
	struct fake f;

	fake_create(&f);
	f.h->region_size = REGION_SIZE + 4096;
	expect_bad(&f, -EINVAL, "region_size");
}

Test(stats_reader, array_offset_inside_header)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.offset = 64;
	expect_bad(&f, -EINVAL, "inside the header");
}

Test(stats_reader, array_offset_unaligned)
{
	struct fake f;

	fake_create(&f);
	f.h->vm.offset = VM_OFF + 4;
	expect_bad(&f, -EINVAL, "multiple of 8");
}

Test(stats_reader, stride_smaller_than_size)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.size = 128;
	expect_bad(&f, -EINVAL, "stride 64 is smaller");
}

Test(stats_reader, stride_not_aligned)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.stride = 96;
	expect_bad(&f, -EINVAL, "not a multiple of 64");
}

Test(stats_reader, record_smaller_than_record_header)
{
	struct fake f;

	fake_create(&f);
	f.h->vm.size = 4;
	expect_bad(&f, -EINVAL, "smaller than the record header");
}

Test(stats_reader, slots_times_stride_overflow)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.slots = 0xffffffffU;
	f.h->vcpu.stride = 0xffffffc0U;
	expect_bad(&f, -EINVAL, "beyond the region");
}

Test(stats_reader, array_offset_overflow)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.offset = UINT64_MAX - 63;
	expect_bad(&f, -EINVAL, "beyond the region");
}

Test(stats_reader, array_beyond_region)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.slots = 65; /* 4096 + 65 * 64 > 8192 */
	expect_bad(&f, -EINVAL, "beyond the region");
}

Test(stats_reader, online_more_than_slots)
{
	struct fake f;

	fake_create(&f);
	f.h->vcpu.online = VCPU_SLOTS + 1;
	expect_bad(&f, -EINVAL, "online 5 is more than slots 4");
}

Test(stats_reader, vm_slots_not_one)
{
	struct fake f;

	fake_create(&f);
	f.h->vm.slots = 2;
	expect_bad(&f, -EINVAL, "must be 1");
}

Test(stats_reader, descriptor_table_outside_file)
{
	struct fake f;

	fake_create(&f);
	f.h->desc_count = 1000; /* 256 + 64000 > 8192 */
	expect_bad(&f, -EINVAL, "descriptor table");
}

Test(stats_reader, descriptor_table_inside_header)
{
	struct fake f;

	fake_create(&f);
	f.h->desc_offset = 8;
	expect_bad(&f, -EINVAL, "descriptor table");
}

Test(stats_reader, descriptor_size_too_small)
{
	struct fake f;

	fake_create(&f);
	f.h->desc_size = 40;
	expect_bad(&f, -EPROTO, "desc_size");
}

Test(stats_reader, descriptor_offset_unaligned)
{
	struct fake f;

	fake_create(&f);
	((struct pv_stats_desc *)(f.p + DESC_OFF))[3].offset = 12;
	expect_bad(&f, -EINVAL, "descriptor 3 (io_exits): offset 12");
}

Test(stats_reader, descriptor_offset_in_record_header)
{
	struct fake f;

	fake_create(&f);
	((struct pv_stats_desc *)(f.p + DESC_OFF))[2].offset = 0;
	expect_bad(&f, -EINVAL, "descriptor 2 (exits): offset 0");
}

Test(stats_reader, descriptor_offset_beyond_record_size)
{
	struct fake f;

	fake_create(&f);
	/* 48 is inside the stride (64) but not inside the record's size (48): presence is by size */
	((struct pv_stats_desc *)(f.p + DESC_OFF))[2].offset = VCPU_SIZE;
	expect_bad(&f, -EINVAL, "beyond the record size");
}

Test(stats_reader, descriptor_name_unterminated)
{
	struct fake f;

	fake_create(&f);
	memset(((struct pv_stats_desc *)(f.p + DESC_OFF))[1].name, 'a', PV_STATS_NAME_MAX);
	expect_bad(&f, -EINVAL, "descriptor 1: name is not NUL-terminated");
}

Test(stats_reader, descriptor_name_bad_charset)
{
	struct fake f;

	fake_create(&f);
	snprintf(((struct pv_stats_desc *)(f.p + DESC_OFF))[1].name, PV_STATS_NAME_MAX, "a\x1b[2J");
	expect_bad(&f, -EINVAL, "outside [a-z0-9_.]");
}

Test(stats_reader, not_a_regular_file)
{
	struct stats_view *v;
	struct errbuf err = { "" };
	int p[2];

	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(stats_view_open_fd(&v, p[0], &err), -EINVAL);
	cr_assert(strstr(err.msg, "not a regular file"), "%s", err.msg);
	close(p[0]);
	close(p[1]);
}

/* ---- forward compatibility -------------------------------------------------- */

/*
 * A newer producer: a 192-byte header, 96-byte descriptors (new fields at
 * their end), an extra descriptor of a record kind this reader does not know
 * and one of a value kind it does not know. The common subset reads fine.
 */
Test(stats_reader, newer_producer_common_subset)
{
	const unsigned dsz = 96;
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;
	uint64_t vals[16];
	unsigned i;

	fake_create(&f);
	memset(f.p + DESC_OFF, 0, VM_OFF - DESC_OFF);
	f.h->header_size = 192;
	memset(f.p + sizeof(struct pv_stats_header), 0xab, 32); /* new header fields */
	f.h->desc_size = dsz;
	put_desc(&f, 0, dsz, "exits_total", PV_STATS_RECORD_VM, 8, PV_STATS_CUMULATIVE);
	put_desc(&f, 1, dsz, "iothread_polls", 2 /* a new record kind */, 8, PV_STATS_CUMULATIVE);
	put_desc(&f, 2, dsz, "exits", PV_STATS_RECORD_VCPU, 8, PV_STATS_CUMULATIVE);
	put_desc(&f, 3, dsz, "latency_hist", PV_STATS_RECORD_VCPU, 16, 9 /* a new value kind */);
	put_desc(&f, 4, dsz, "run_ns", PV_STATS_RECORD_VCPU, 32, PV_STATS_CUMULATIVE);
	for (i = 0; i < 5; i++)
		memset(f.p + DESC_OFF + i * dsz + sizeof(struct pv_stats_desc), 0xcd,
		       dsz - sizeof(struct pv_stats_desc));
	f.h->desc_count = 5;
	cr_assert_eq(stats_view_open_fd(&v, f.fd, &err), 0, "%s", err.msg);
	cr_assert_eq(stats_view_ndesc(v), 3);
	cr_assert_str_eq(stats_view_desc(v, 0)->name, "exits_total");
	cr_assert_str_eq(stats_view_desc(v, 1)->name, "exits");
	cr_assert_str_eq(stats_view_desc(v, 2)->name, "run_ns");
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 0, vals, NULL), 0);
	cr_assert_eq(vals[1], 100);
	cr_assert_eq(vals[2], 103);
	stats_view_close(v);
	fake_destroy(&f);
}

/* An older, smaller header is fine as long as it has the fields the reader needs. */
Test(stats_reader, older_header_missing_optional_fields)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;

	fake_create(&f);
	f.h->header_size = 96; /* through desc_count */
	cr_assert_eq(stats_view_open_fd(&v, f.fd, &err), 0, "%s", err.msg);
	cr_assert_eq(stats_view_header(v)->producer_pid, 0, "absent fields read as 0");
	stats_view_close(v);
	fake_destroy(&f);
}

/* ---- the read protocol ---------------------------------------------------- */

static void writer_loop(uint8_t *rec)
{
	uint32_t *seq = (uint32_t *)rec;
	uint64_t k;
	unsigned j;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (k = 1;; k++) {
		__atomic_store_n(seq, *seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		for (j = 0; j < NVCPU_FIELDS; j++)
			__atomic_store_n(field(rec, 8 + 8 * j), k, __ATOMIC_RELAXED);
		__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
		for (volatile unsigned z = 0; z < 100; z++) /* a vCPU does some work between updates */
			;
	}
}

Test(stats_reader, no_torn_reads_under_a_concurrent_writer)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;
	uint64_t vals[16], last = 0;
	unsigned i, j, ok = 0, busy = 0, changed = 0;
	pid_t child;

	fake_create(&f);
	for (j = 0; j < NVCPU_FIELDS; j++)
		*field(vcpu_rec(&f, 1), 8 + 8 * j) = 0;
	cr_assert_eq(stats_view_open_fd(&v, f.fd, &err), 0, "%s", err.msg);
	child = fork();
	cr_assert(child >= 0);
	if (child == 0)
		writer_loop(vcpu_rec(&f, 1));
	/* at least 50000 reads and 100 updates seen; the writer may start late on a loaded machine */
	uint64_t deadline = util_now_ns() + 10000000000ULL;
	for (i = 0; (i < 50000 || changed < 100) && util_now_ns() < deadline; i++) {
		int rc = stats_view_read(v, PV_STATS_RECORD_VCPU, 1, vals, NULL);

		if (rc == -EBUSY) {
			busy++;
			continue;
		}
		cr_assert_eq(rc, 0);
		for (j = 1; j < NVCPU_FIELDS; j++)
			cr_assert_eq(vals[2 + j], vals[2], "torn read: field %u = %llu, field 0 = %llu", j,
				     (unsigned long long)vals[2 + j], (unsigned long long)vals[2]);
		cr_assert_geq(vals[2], last, "values went backwards");
		changed += vals[2] != last;
		last = vals[2];
		ok++;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	/* a writer in a tight loop may make some reads busy (bounded retries): that is allowed */
	cr_assert_geq(ok, 1000, "%u of %u reads succeeded (%u busy)", ok, i, busy);
	cr_assert_geq(changed, 100, "the writer was seen writing only %u times", changed);
	stats_view_close(v);
	fake_destroy(&f);
}

Test(stats_reader, odd_seq_gives_ebusy_not_a_hang)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;
	uint64_t vals[16];

	fake_create(&f);
	cr_assert_eq(stats_view_open_fd(&v, f.fd, &err), 0, "%s", err.msg);
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 0))->seq = 7;
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 0, vals, NULL), -EBUSY);
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 1, vals, NULL), 0, "other entries unaffected");
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 0))->seq = 8;
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 0, vals, NULL), 0);
	stats_view_close(v);
	fake_destroy(&f);
}

/* ---- seals -------------------------------------------------------------- */

static int reopen_ro(int fd)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

Test(stats_reader, sealed_region_cannot_be_written_or_resized)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;
	const uint8_t *base;
	size_t size;
	void *p;
	int ro;

	fake_create(&f);
	cr_assert_eq(
		fcntl(f.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL), 0,
		"F_ADD_SEALS: %s", strerror(errno));
	ro = reopen_ro(f.fd);
	cr_assert(ro >= 0);

	/* writable shared mappings fail, through the reader's fd and even the producer's */
	p = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
	cr_assert_eq(p, MAP_FAILED);
	p = mmap(NULL, f.size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
	cr_assert_eq(p, MAP_FAILED, "F_SEAL_FUTURE_WRITE forbids new writable mappings");
	cr_assert_eq(write(f.fd, "x", 1), -1);
	cr_assert_eq(ftruncate(f.fd, (off_t)f.size * 2), -1, "grow");
	cr_assert_eq(ftruncate(f.fd, (off_t)f.size / 2), -1, "shrink");
	cr_assert_eq(ftruncate(ro, (off_t)f.size * 2), -1, "grow through the reader's fd");
	cr_assert_eq(fcntl(f.fd, F_ADD_SEALS, F_SEAL_WRITE), -1, "seals are sealed");

	cr_assert_eq(stats_view_open_fd(&v, ro, &err), 0, "%s", err.msg);
	base = stats_view_base(v, &size);
	cr_assert_eq(mprotect((void *)base, size, PROT_READ | PROT_WRITE), -1, "mprotect of the RO mapping");
	cr_assert_eq(errno, EACCES);
	/* the producer's mapping from before the seal still writes, and the reader sees it */
	*field(vcpu_rec(&f, 0), 8) = 4242;
	uint64_t vals[16];
	cr_assert_eq(stats_view_read(v, PV_STATS_RECORD_VCPU, 0, vals, NULL), 0);
	cr_assert_eq(vals[2], 4242);
	stats_view_close(v);
	close(ro);
	fake_destroy(&f);
}

/* ---- finding a region by pid ---------------------------------------------------- */

Test(stats_reader, open_pid_finds_the_memfd)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;

	fake_create(&f);
	cr_assert_eq(stats_view_open_pid(&v, getpid(), &err), 0, "%s", err.msg);
	cr_assert_eq(stats_view_ndesc(v), 2 + NVCPU_FIELDS);
	stats_view_close(v);
	fake_destroy(&f);
}

Test(stats_reader, open_pid_errors)
{
	struct errbuf err = { "" };
	struct stats_view *v;
	pid_t child;
	int rc;

	/* our own process without a region */
	rc = stats_view_open_pid(&v, getpid(), &err);
	cr_assert_eq(rc, -ENOENT);
	cr_assert(strstr(err.msg, "has no perfvisor statistics region"), "%s", err.msg);

	/* a process that no longer exists */
	child = fork();
	cr_assert(child >= 0);
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	rc = stats_view_open_pid(&v, child, &err);
	cr_assert_eq(rc, -ESRCH, "%d: %s", rc, err.msg);
	cr_assert(strstr(err.msg, "no such process"), "%s", err.msg);

	cr_assert_eq(stats_view_open_pid(&v, 0, &err), -EINVAL);
}

/* ---- the control socket client ------------------------------------------------ */

#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "stats/tools_internal.h"

struct fake_api {
	int lfd;
	int send_fd; /* -1: answer with an error line and no fd */
	char got[64];
};

static void *fake_api_serve(void *arg)
{
	struct fake_api *a = arg;
	const char *reply = a->send_fd >= 0 ? "{\"ok\":true}\n" : "{\"error\":\"no stats here\"}\n";
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)reply, .iov_len = strlen(reply) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int c = accept(a->lfd, NULL, NULL);
	ssize_t n;

	if (c < 0)
		return NULL;
	/* A line may come in more than one piece: read to its newline. */
	for (size_t got = 0; got < sizeof(a->got) - 1; got += n) {
		n = read(c, a->got + got, sizeof(a->got) - 1 - got);
		a->got[got + (n > 0 ? n : 0)] = 0;
		if (n <= 0 || strchr(a->got, '\n'))
			break;
	}
	if (a->send_fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &a->send_fd, sizeof(int));
	}
	sendmsg(c, &mh, 0);
	close(c);
	return NULL;
}

static void socket_round(int send_fd, int *fd_out, struct errbuf *err, char *got, size_t gotlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct fake_api a = { .send_fd = send_fd };
	pthread_t th;
	pid_t pid;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/pv-stats-test-%d.sock", (int)getpid());
	unlink(sa.sun_path);
	a.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(a.lfd >= 0);
	cr_assert_eq(bind(a.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(a.lfd, 1), 0);
	cr_assert_eq(pthread_create(&th, NULL, fake_api_serve, &a), 0);
	*fd_out = stats_target_fd(sa.sun_path, &pid, err);
	pthread_join(th, NULL);
	close(a.lfd);
	unlink(sa.sun_path);
	snprintf(got, gotlen, "%s", a.got);
}

Test(stats_reader, socket_target_receives_the_fd)
{
	struct fake f;
	struct errbuf err = { "" };
	struct stats_view *v;
	char got[64];
	int ro, fd;

	fake_create(&f);
	ro = reopen_ro(f.fd);
	socket_round(ro, &fd, &err, got, sizeof(got));
	cr_assert_str_eq(got, "{\"cmd\":\"stats-fd\"}\n");
	cr_assert(fd >= 0, "%s", err.msg);
	cr_assert_eq(stats_view_open_fd(&v, fd, &err), 0, "%s", err.msg);
	cr_assert_eq(stats_view_ndesc(v), 2 + NVCPU_FIELDS);
	stats_view_close(v);
	close(fd);
	close(ro);
	fake_destroy(&f);

	socket_round(-1, &fd, &err, got, sizeof(got));
	cr_assert_eq(fd, -EPROTO);
	cr_assert(strstr(err.msg, "sent no stats fd: {\"error\":\"no stats here\"}"), "%s", err.msg);
}

Test(stats_reader, target_errors)
{
	struct errbuf err = { "" };
	pid_t pid;

	cr_assert_eq(stats_target_fd("/nonexistent/x.sock", &pid, &err), -ENOENT);
	cr_assert(strstr(err.msg, "neither a process id nor"), "%s", err.msg);
	cr_assert_eq(stats_target_fd("/tmp", &pid, &err), -EINVAL);
	cr_assert(strstr(err.msg, "not a Unix socket"), "%s", err.msg);
}

/* ---- stats-check ---------------------------------------------------------------- */

static void seal(struct fake *f)
{
	cr_assert_eq(
		fcntl(f->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL),
		0);
}

static char check_out[16384];

static void check_fails(struct fake *f, const char *fail_part)
{
	char pid[16];
	int rc;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	rc = stats_check_run(pid, check_out, sizeof(check_out));
	cr_assert_eq(rc, 1, "rc %d:\n%s", rc, check_out);
	cr_assert(strstr(check_out, fail_part), "output lacks '%s':\n%s", fail_part, check_out);
	cr_assert_null(strstr(strstr(check_out, "FAIL") + 4, "FAIL"), "stops at the first violation:\n%s",
		       check_out);
	fake_destroy(f);
}

Test(stats_check, good_sealed_region_passes)
{
	struct fake f;
	char pid[16];
	int rc;

	fake_create(&f);
	seal(&f);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	rc = stats_check_run(pid, check_out, sizeof(check_out));
	cr_assert_eq(rc, 0, "%s", check_out);
	cr_assert_null(strstr(check_out, "FAIL"), "%s", check_out);
	cr_assert(strstr(check_out, "invariants hold"), "%s", check_out);
	fake_destroy(&f);
}

Test(stats_check, usage)
{
	cr_assert_eq(stats_check_run(NULL, check_out, sizeof(check_out)), 2);
	cr_assert_eq(stats_check_run("--help", check_out, sizeof(check_out)), 0);
	cr_assert(strstr(check_out, "Usage: perfvisor stats-check TARGET"));
	cr_assert_eq(stats_check_run("--bogus", check_out, sizeof(check_out)), 2);
}

Test(stats_check, unsealed_region_fails)
{
	struct fake f;

	fake_create(&f);
	check_fails(&f, "FAIL the region is sealed");
}

Test(stats_check, nonzero_padding_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	vcpu_rec(&f, 1)[VCPU_SIZE + 3] = 1;
	check_fails(&f, "FAIL padding between size and stride is zero: vCPU slot 1");
}

Test(stats_check, dirty_offline_slot_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	vcpu_rec(&f, 3)[0] = 2;
	check_fails(&f, "FAIL offline vCPU slot 3 is all zero");
}

Test(stats_check, duplicate_name_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	snprintf(((struct pv_stats_desc *)(f.p + DESC_OFF))[3].name, PV_STATS_NAME_MAX, "exits");
	check_fails(&f, "FAIL descriptor names are unique per record: 'exits' twice");
}

Test(stats_check, nonzero_reserved_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	f.h->reserved[5] = 1;
	check_fails(&f, "FAIL header reserved fields are zero");
}

Test(stats_check, nonzero_gap_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	f.p[REGION_SIZE - 1] = 1;
	check_fails(&f, "FAIL space outside the header, descriptors and arrays is zero: byte 8191");
}

Test(stats_check, bad_state_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 1))->state = 9;
	check_fails(&f, "FAIL online vCPU entry 1's state is ONLINE or STOPPED: 9");
}

Test(stats_check, busy_entry_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	((struct pv_stats_record_hdr *)vcpu_rec(&f, 0))->seq = 1;
	check_fails(&f, "FAIL consistent read 1 of every record completes: busy");
}

/* ---- stats-check: what the fields mean (stats/meanings.c) ------------------------ */

Test(stats_check, meaning_rules_that_lack_fields_are_skipped_with_the_reason)
{
	struct fake f;
	int rc;

	fake_create(&f);
	seal(&f);
	rc = stats_check_self(check_out, sizeof(check_out));
	cr_assert_eq(rc, 0, "%s", check_out);
	cr_assert(strstr(check_out,
			 "ok   current: exits_total is the sum of exits over the vCPUs (v1): 300 <= 300"),
		  "%s", check_out);
	cr_assert(strstr(check_out,
			 "ok   current: time.kvm_run_ns_total is the sum of the published "
			 "time.kvm_run_ns (v1): a field is not published by this producer (skipped)"),
		  "%s", check_out);
	fake_destroy(&f);
}

/* The defect a v1 reader found: a VM total larger than the sum of what the vCPU records publish. */
Test(stats_check, vm_total_above_the_sum_of_the_vcpus_fails)
{
	struct fake f;

	fake_create(&f);
	seal(&f);
	*field(f.p + VM_OFF, 8) = 301;
	check_fails(&f, "FAIL current: exits_total is the sum of exits over the vCPUs (v1): 301 <= 300");
}

/* Once the VM record is STOPPED its totals are final: equal to the sums, not only below them. */
Test(stats_check, stopped_vm_total_below_the_sum_fails)
{
	struct fake f;

	fake_create(&f);
	((struct pv_stats_record_hdr *)(f.p + VM_OFF))->state = PV_STATS_STOPPED;
	*field(f.p + VM_OFF, 8) = 299;
	seal(&f);
	check_fails(&f, "FAIL current: exits_total is the sum of exits over the vCPUs (v1): 299 == 300");
}

Test(stats_check, stopped_vm_total_equal_to_the_sum_passes)
{
	struct fake f;
	int rc;

	fake_create(&f);
	((struct pv_stats_record_hdr *)(f.p + VM_OFF))->state = PV_STATS_STOPPED;
	seal(&f);
	rc = stats_check_self(check_out, sizeof(check_out));
	cr_assert_eq(rc, 0, "%s", check_out);
	cr_assert(strstr(check_out, "exits_total is the sum of exits over the vCPUs (v1): 300 == 300"), "%s",
		  check_out);
	fake_destroy(&f);
}
