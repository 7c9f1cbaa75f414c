/*
 * clockshim: an LD_PRELOAD library that sets one process's wall clock
 * REPRO_CLOCK_OFFSET_MS milliseconds ahead of the machine's (behind if
 * negative). It wraps clock_gettime (CLOCK_REALTIME and
 * CLOCK_REALTIME_COARSE; CLOCK_MONOTONIC is left alone, as a wrong wall
 * clock leaves it alone), gettimeofday and time, reading the machine's clock
 * with the raw system call, so it needs no dlsym and no malloc.
 *
 * The reproducer uses it only where libfaketime cannot start redis-server:
 * libfaketime 0.9.10 deadlocks in a redis-server linked with libjemalloc and
 * libstdc++ (Debian's), its clock_gettime being called by jemalloc's first
 * malloc before libfaketime has initialised.
 *
 * Build: cc -shared -fPIC -O2 -o clockshim.so clockshim.c
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/select.h> /* struct timeval, without gettimeofday's prototype */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long offset_ns;

__attribute__((constructor)) static void init(void) {
	const char *s = getenv("REPRO_CLOCK_OFFSET_MS");
	if (s != NULL)
		offset_ns = atoll(s) * 1000000LL;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	int r = (int)syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
		long long t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns;
		ts->tv_sec = (time_t)(t / 1000000000LL);
		ts->tv_nsec = (long)(t % 1000000000LL);
	}
	return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	if (tv != NULL) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
