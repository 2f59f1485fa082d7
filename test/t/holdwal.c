/*
 * holdwal.c: an LD_PRELOAD shim for the replicated fault tests
 * (test/t/142): while the file named by MQ_HOLD_WAL exists, every write to
 * a file under pg_wal/ waits, so the server's WAL stays in its shared
 * buffers: nothing it commits without a flush reaches the kernel, and a
 * kill -9 loses it, as a power cut loses what was not flushed.  Without
 * MQ_HOLD_WAL, or while the file is absent, writes go through unchanged.
 * Built by the test itself (gcc -shared -fPIC); no part of mq.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn) (int, const void *, size_t, off_t);

static int
is_wal(int fd)
{
	char		link[64];
	char		target[PATH_MAX];
	ssize_t		n;

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof target - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	return strstr(target, "/pg_wal/") != NULL;
}

static void
hold(int fd)
{
	const char *flag = getenv("MQ_HOLD_WAL");

	if (flag == NULL || !is_wal(fd))
		return;
	while (access(flag, F_OK) == 0)
		usleep(10000);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
	static pwrite_fn real = NULL;

	if (real == NULL)
		real = (pwrite_fn) dlsym(RTLD_NEXT, "pwrite");
	hold(fd);
	return real(fd, buf, n, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	static pwrite_fn real = NULL;

	if (real == NULL)
		real = (pwrite_fn) dlsym(RTLD_NEXT, "pwrite64");
	hold(fd);
	return real(fd, buf, n, off);
}
