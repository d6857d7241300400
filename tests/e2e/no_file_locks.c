/* Preloaded (LD_PRELOAD) to act as a file system without locks, as NFS without
   its lock daemon: every flock() fails with ENOLCK, which HDF5's best-effort
   locking does not ignore. */
#include <errno.h>

int flock(int fd, int operation) {
  (void)fd;
  (void)operation;
  errno = ENOLCK;
  return -1;
}
