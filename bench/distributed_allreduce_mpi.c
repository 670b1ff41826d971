/* Raw MPI_Allreduce, the baseline of bench/distributed.sh: the same float32
 * buffers, sizes and iteration scheme as bench/distributed_allreduce.lua
 * (wick) and bench/distributed_allreduce_torch.py (PyTorch, gloo).
 *
 *   mpicc -O2 -o /tmp/allreduce_mpi bench/distributed_allreduce_mpi.c
 *   [THREAD_LEVEL=multiple] mpirun -np 2 /tmp/allreduce_mpi MIN_TIME BYTES...
 *
 * For each size: one checked all-reduce (rank r holds r + 1 everywhere; the sum
 * must be n(n+1)/2), two warm-up calls, then batches of 1, 2, 4, ... calls
 * between a barrier and rank 0's clock until one batch takes MIN_TIME seconds
 * (rank 0's time is broadcast so every rank runs the same batches). Rank 0
 * prints "allreduce<TAB>BYTES<TAB>SECONDS_PER_CALL<TAB>CALLS" per size.
 * The buffer is allocated as wick's CPU allocator does (src/cpu/cpu_backend.c):
 * 64-byte aligned, and from 4 MiB on 2 MiB aligned with MADV_HUGEPAGE, since
 * huge pages change how fast MPI's single-copy path (CMA) moves big buffers. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE (2L << 20)

static float *alloc_like_wick(long bytes) {
  int large = bytes >= 2 * HUGE_PAGE;
  void *p = NULL;
  if (posix_memalign(&p, large ? HUGE_PAGE : 64, (size_t)bytes)) return NULL;
#ifdef MADV_HUGEPAGE
  if (large) madvise(p, (size_t)(bytes / HUGE_PAGE * HUGE_PAGE), MADV_HUGEPAGE);
#endif
  return p;
}

static void die(const char *msg) {
  fprintf(stderr, "distributed_allreduce_mpi: %s\n", msg);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static int check_sum(float *buf, long count, int rank, int size) {
  for (long i = 0; i < count; i++) buf[i] = (float)(rank + 1);
  MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  float want = (float)size * (float)(size + 1) / 2.0f;
  for (long i = 0; i < count; i++)
    if (buf[i] != want) return 0;
  return 1;
}

/* The seconds per call of the first batch (1, 2, 4, ... calls) that takes min_time. */
static double time_size(float *buf, long count, double min_time, int rank, long *calls_out) {
  for (long i = 0; i < count; i++) buf[i] = 0.0f;
  for (int i = 0; i < 2; i++) MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (long calls = 1;; calls *= 2) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < calls; i++) MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (t >= min_time) {
      *calls_out = calls;
      return t / (double)calls;
    }
  }
}

int main(int argc, char **argv) {
  /* THREAD_LEVEL=multiple: MPI_Init_thread(MPI_THREAD_MULTIPLE), the level
   * wick runs at (its comm and watchdog threads); Open MPI 4.1 then takes
   * locks on every call (measured: any level above SINGLE costs about 0.3 us
   * a small all-reduce) */
  const char *level = getenv("THREAD_LEVEL");
  if (level && strcmp(level, "multiple") == 0) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) die("no MPI_THREAD_MULTIPLE");
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) die("usage: distributed_allreduce_mpi MIN_TIME BYTES...");
  double min_time = atof(argv[1]);
  for (int a = 2; a < argc; a++) {
    long bytes = atol(argv[a]);
    long count = bytes / (long)sizeof(float);
    if (count < 1 || count > 0x7fffffffL) die("each size must be 4 bytes to 8 GiB");
    float *buf = alloc_like_wick(count * (long)sizeof(float));
    if (!buf) die("out of memory");
    if (!check_sum(buf, count, rank, size)) die("wrong all-reduce result");
    long calls = 0;
    double per_call = time_size(buf, count, min_time, rank, &calls);
    if (rank == 0) {
      printf("allreduce\t%ld\t%.9g\t%ld\n", bytes, per_call, calls);
      fflush(stdout);
    }
    free(buf);
  }
  MPI_Finalize();
  return 0;
}
