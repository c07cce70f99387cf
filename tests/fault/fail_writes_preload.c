/* A fault-injection library for tests, loaded with LD_PRELOAD: writes to files whose path
 * contains FFCV_FAULT_MATCH succeed until FFCV_FAULT_BYTES bytes in all, then fail with
 * FFCV_FAULT_ERRNO (a number; default ENOSPC, "No space left on device"), as a disk that fills
 * up does: the write that crosses the budget is shortened to it, the next one fails.
 *
 * With FFCV_FAULT_STALL_SECONDS set, nothing fails: the first write past the budget waits that
 * long and then goes through, as on a stalled network disk; a test kills the process meanwhile
 * to end it in the middle of writing a file.
 *
 * It wraps write, pwrite, pwrite64, writev and pwritev (what AtomicFile, std::ofstream and
 * LibTorch's archive writer reach); other files and calls pass through unchanged. Without
 * FFCV_FAULT_MATCH it does nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic long long g_used;

static int fault_errno(void) {
  const char* text = getenv("FFCV_FAULT_ERRNO");
  return text ? atoi(text) : ENOSPC;
}

/* How many of `count` bytes to `fd` may be written: count, fewer, or -1 (fail with errno). */
static long long allowed_bytes(int fd, size_t count) {
  const char* match = getenv("FFCV_FAULT_MATCH");
  if (match == NULL || *match == '\0' || count == 0) return (long long)count;
  char link[64];
  char path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t length = readlink(link, path, sizeof path - 1);
  if (length <= 0) return (long long)count;
  path[length] = '\0';
  if (strstr(path, match) == NULL) return (long long)count;
  const char* budget_text = getenv("FFCV_FAULT_BYTES");
  const long long budget = budget_text ? atoll(budget_text) : 0;
  const long long before = atomic_fetch_add(&g_used, (long long)count);
  const char* stall_text = getenv("FFCV_FAULT_STALL_SECONDS");
  if (stall_text != NULL) {
    static atomic_int stalled;
    if (before + (long long)count > budget && atomic_exchange(&stalled, 1) == 0) {
      sleep((unsigned)atoi(stall_text));
    }
    return (long long)count;
  }
  if (before >= budget) {
    errno = fault_errno();
    return -1;
  }
  return before + (long long)count <= budget ? (long long)count : budget - before;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void* data, size_t count) {
  const long long allowed = allowed_bytes(fd, count);
  if (allowed < 0) return -1;
  return REAL(write)(fd, data, (size_t)allowed);
}

ssize_t pwrite(int fd, const void* data, size_t count, off_t offset) {
  const long long allowed = allowed_bytes(fd, count);
  if (allowed < 0) return -1;
  return REAL(pwrite)(fd, data, (size_t)allowed, offset);
}

ssize_t pwrite64(int fd, const void* data, size_t count, off64_t offset) {
  const long long allowed = allowed_bytes(fd, count);
  if (allowed < 0) return -1;
  return REAL(pwrite64)(fd, data, (size_t)allowed, offset);
}

/* Vectors are passed through whole or refused whole (a short vector write is rare enough). */
static size_t vector_bytes(const struct iovec* vectors, int count) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += vectors[i].iov_len;
  return total;
}

ssize_t writev(int fd, const struct iovec* vectors, int count) {
  const size_t total = vector_bytes(vectors, count);
  const long long allowed = allowed_bytes(fd, total);
  if (allowed != (long long)total) {
    if (allowed >= 0) errno = fault_errno();
    return -1;
  }
  return REAL(writev)(fd, vectors, count);
}

ssize_t pwritev(int fd, const struct iovec* vectors, int count, off_t offset) {
  const size_t total = vector_bytes(vectors, count);
  const long long allowed = allowed_bytes(fd, total);
  if (allowed != (long long)total) {
    if (allowed >= 0) errno = fault_errno();
    return -1;
  }
  return REAL(pwritev)(fd, vectors, count, offset);
}
