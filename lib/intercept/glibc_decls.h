// Prototypes of glibc entry points that its headers declare only under
// _FORTIFY_SOURCE or not at all (compat symbols); we interpose them all.
#ifndef DLPROF_LIB_INTERCEPT_GLIBC_DECLS_H_
#define DLPROF_LIB_INTERCEPT_GLIBC_DECLS_H_

#include <sys/stat.h>
#include <sys/types.h>

extern "C" {
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);
ssize_t __read_chk(int fd, void* buf, size_t nbytes, size_t buflen);
ssize_t __pread_chk(int fd, void* buf, size_t nbytes, off_t offset, size_t buflen);
ssize_t __pread64_chk(int fd, void* buf, size_t nbytes, off64_t offset, size_t buflen);
int __xstat(int ver, const char* path, struct stat* buf);
int __xstat64(int ver, const char* path, struct stat64* buf);
int __lxstat(int ver, const char* path, struct stat* buf);
int __lxstat64(int ver, const char* path, struct stat64* buf);
int __fxstat(int ver, int fd, struct stat* buf);
int __fxstat64(int ver, int fd, struct stat64* buf);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* buf, int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* buf, int flags);
}

#endif  // DLPROF_LIB_INTERCEPT_GLIBC_DECLS_H_
