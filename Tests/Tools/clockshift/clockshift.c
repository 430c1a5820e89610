/* An LD_PRELOAD shim that steps the wall clock of a running process, for lanbridge's tests
 * (issue 61 §2). libfaketime cannot be used with Swift programs: its constructor moves `environ`,
 * and the Swift runtime then finds no argv.
 *
 * Only the wall clock moves: clock_gettime(CLOCK_REALTIME and _COARSE), gettimeofday and time
 * are offset by the seconds (a decimal number, negative for back) written in the file that
 * $CLOCKSHIFT_FILE names; the monotonic and boot clocks run on untouched. The file is read again
 * whenever it changes, so a test steps the clock of processes already running by rewriting it.
 *
 *   cc -shared -fPIC -O2 -o clockshift.so clockshift.c -ldl
 *   CLOCKSHIFT_FILE=/tmp/offset LD_PRELOAD=$PWD/clockshift.so lanbridge serve …
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static double offset;
static struct timespec seen;  /* the file's mtime when last read */

static double current_offset(void) {
    const char *path = getenv("CLOCKSHIFT_FILE");
    struct stat info;
    if (!path || stat(path, &info) != 0) return 0;
    if (info.st_mtim.tv_sec != seen.tv_sec || info.st_mtim.tv_nsec != seen.tv_nsec) {
        FILE *f = fopen(path, "r");
        double value = 0;
        if (f) {
            /* Read again at the next call if it was caught half written. */
            if (fscanf(f, "%lf", &value) == 1) {
                offset = value;
                seen = info.st_mtim;
            }
            fclose(f);
        }
    }
    return offset;
}

static void shift(struct timespec *ts) {
    double by = current_offset();
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + (long long)(by * 1e9);
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
    if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000L; ts->tv_sec -= 1; }
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    if (!real_clock_gettime) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    int result = real_clock_gettime(clock, ts);
    if (result == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
    return result;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
    if (tv) { tv->tv_sec = ts.tv_sec; tv->tv_usec = ts.tv_nsec / 1000; }
    return 0;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
