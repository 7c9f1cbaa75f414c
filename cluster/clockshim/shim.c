/*
 * lockchaos clock shim: an LD_PRELOAD library that gives one redis-server its
 * own wall clock. It wraps clock_gettime (CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE only; CLOCK_MONOTONIC is left alone, as a wrong
 * server clock leaves it alone), gettimeofday and time, and adds
 *
 *     offset + (host_now - t0) * (rate - 1)
 *
 * read from the clock file named by LOCKCHAOS_CLOCK_FILE, which the harness
 * changes while the server runs (cluster/clock.go writes it). File layout, 32
 * bytes, little-endian, mapped shared:
 *
 *     0  uint64 seq      seqlock: odd while the writer is changing the fields
 *     8  int64  offset   ns, the server's offset from the host clock at t0
 *     16 int64  t0       ns, host CLOCK_REALTIME when the rate took effect
 *     24 uint64 rate     IEEE-754 double bits (1.0 = real speed)
 *
 * Without the variable or the file the shim passes the host clock through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct clockfile {
	uint64_t seq;
	int64_t offset;
	int64_t t0;
	uint64_t rate;
};

typedef int (*cg_fn)(clockid_t, struct timespec *);

static cg_fn real_cg;
static volatile struct clockfile *cf;

__attribute__((constructor)) static void shim_init(void) {
	real_cg = (cg_fn)dlsym(RTLD_NEXT, "clock_gettime");
	const char *path = getenv("LOCKCHAOS_CLOCK_FILE");
	if (path == NULL || *path == '\0')
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	void *p = mmap(NULL, sizeof(struct clockfile), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		cf = p;
}

/* host reads the host's clock without going through the wrappers. */
static int host(clockid_t id, struct timespec *ts) {
	if (real_cg != NULL)
		return real_cg(id, ts);
	return (int)syscall(SYS_clock_gettime, id, ts);
}

/* shift returns the server's offset from the host clock at host time now. */
static int64_t shift(int64_t now) {
	volatile struct clockfile *f = cf;
	if (f == NULL)
		return 0;
	for (;;) {
		uint64_t s1 = __atomic_load_n(&f->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		int64_t off = __atomic_load_n(&f->offset, __ATOMIC_RELAXED);
		int64_t t0 = __atomic_load_n(&f->t0, __ATOMIC_RELAXED);
		uint64_t rbits = __atomic_load_n(&f->rate, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&f->seq, __ATOMIC_RELAXED) != s1)
			continue;
		double rate;
		memcpy(&rate, &rbits, sizeof rate);
		/* A zeroed (not yet written) file reads as rate 0: real speed. */
		if (rate == 1.0 || rate <= 0.0)
			return off;
		return off + (int64_t)((double)(now - t0) * (rate - 1.0));
	}
}

static void add(struct timespec *ts) {
	int64_t ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
	ns += shift(ns);
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000LL;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = host(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		add(ts);
	return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
	(void)tz;
	struct timespec ts;
	int r = host(CLOCK_REALTIME, &ts);
	if (r != 0)
		return r;
	add(&ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	if (host(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	add(&ts);
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
