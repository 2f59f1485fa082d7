/*-------------------------------------------------------------------------
 *
 * malloc_tune.c
 *	  The setting mq.malloc_trim_threshold: how much freed memory a backend
 *	  keeps for its next allocations instead of handing it back to the
 *	  kernel (glibc's M_TRIM_THRESHOLD, with M_MMAP_THRESHOLD at half of it).
 *
 * Why.  A batch of records is a few megabytes of short-lived memory in the
 * backend that writes or reads it: the rows formed for the heap, the
 * arrays of a replica fetch, the tuples SPI and the executor copy.
 * glibc starts with both thresholds at 128 kB and raises them only as far
 * as the largest block freed so far, so a backend that frees a batch's
 * memory gives most of it back (munmap, or trimming the heap's top) and
 * takes it again for the next batch, one page fault per 4 kB page touched.
 * On the replication cycle of 1,000 records of 100 B (the leader's write,
 * the follower's fetch and append, the acknowledging fetch; one backend,
 * fsync off) those faults were 40 % of the time: 11.0 ms a cycle with
 * glibc's defaults, 6.0-6.5 ms with 2 MB / 4 MB or more
 * (docs/benchmarks.md, "Freed memory kept for the next batch").
 *
 * What it costs.  A backend may keep up to the threshold of freed memory
 * at the top of its heap (16 MB by default), and blocks below half of it
 * come from the heap instead of their own mappings.  0 sets glibc's
 * starting thresholds (128 kB) without its adaptation in a backend that
 * had the setting; a server started with 0 never calls mallopt and keeps
 * glibc's adaptive behaviour.
 *
 * Scope.  With shared_preload_libraries = 'mq' the postmaster applies the
 * setting at start and on reload, and every backend inherits it; loaded on
 * first use, it applies to the backends that use mq.  SET changes the
 * calling backend only.  Other C libraries: the setting exists and does
 * nothing.
 *
 * No locks: process-local state only.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "utils/guc.h"

#include "mq.h"

/* glibc refuses an M_MMAP_THRESHOLD above HEAP_MAX_SIZE / 2 (32 MB on 64-bit) */
#define MMAP_THRESHOLD_MAX_KB	(32 * 1024)
/* glibc's starting thresholds */
#define GLIBC_DEFAULT_KB		128

static int	mq_malloc_trim_threshold = 16 * 1024;	/* kB */
static bool defined = false;	/* the setting has its configured value */
static bool applied = false;	/* mallopt was called in this process */

static void
apply(int kb)
{
#ifdef __GLIBC__
	int			trim_kb = kb > 0 ? kb : GLIBC_DEFAULT_KB;
	int			mmap_kb = kb > 0 ? Max(Min(kb / 2, MMAP_THRESHOLD_MAX_KB), 1) : GLIBC_DEFAULT_KB;

	if (kb == 0 && !applied)
		return;					/* glibc's adaptive defaults stay */
	(void) mallopt(M_MMAP_THRESHOLD, mmap_kb * 1024);
	(void) mallopt(M_TRIM_THRESHOLD, trim_kb * 1024);
	applied = true;
#endif
}

/*
 * SET, RESET and reloads.  While the setting is being defined its boot
 * value is assigned before the configured one; applying the boot value
 * then would leave a server configured with 0 without glibc's adaptive
 * defaults, so the first application waits for the end of the definition.
 */
static void
assign_trim_threshold(int newval, void *extra)
{
	if (defined)
		apply(newval);
}

void
mq_malloc_tune_init(void)
{
	DefineCustomIntVariable("mq.malloc_trim_threshold",
							"Freed memory a backend keeps for its next allocations instead of returning it to the kernel.",
							"glibc's M_TRIM_THRESHOLD; allocations below half of it come from the heap (M_MMAP_THRESHOLD). Spares a page fault per page for each batch of records; 0 leaves glibc's defaults.",
							&mq_malloc_trim_threshold, 16 * 1024, 0, 1024 * 1024,
							PGC_SUSET, GUC_UNIT_KB, NULL, assign_trim_threshold, NULL);
	defined = true;
	apply(mq_malloc_trim_threshold);
}
