// What the cuFile wrappers (cufile_calls.cc, cufile_batch.cc) share: the
// real functions, the table of registered handles, and the way a call that
// returns a CUfileError_t is traced.
#ifndef DLPROF_LIB_INTERCEPT_CUFILE_COMMON_H_
#define DLPROF_LIB_INTERCEPT_CUFILE_COMMON_H_

#include <cerrno>

#include "lib/intercept/cufile_abi.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/wrapper.h"

namespace dlprof::intercept::gds {

template <Fn f, typename Type>
Type Real() {
  return reinterpret_cast<Type>(RealAddress(f));
}

// The fd a registered handle stands for (-1: unknown, or not an fd).
int HandleFd(CUfileHandle_t h);

// The file of `fd` into the event; false when the file is not traced.
inline bool DescribeHandle(Event& e, CUfileHandle_t h) {
  const int fd = HandleFd(h);
  return fd >= 0 && DescribeFd(e, fd);
}

// A call returning CUfileError_t: ret is its CUfileOpError (0: success);
// errno is not the call's result, so err stays 0. A missing real function
// (the program reached our wrapper without libcufile) answers an internal
// error and ENOSYS, as RealFunction does for the C library.
template <typename Call, typename Describe>
CUfileError_t StatusCall(EventKind kind, void* real, Call&& call, Describe&& describe) {
  CUfileError_t out{kCuFileInternalError, 0};
  if (real == nullptr) {
    errno = ENOSYS;
    return out;
  }
  Traced<int64_t>(
      kind,
      [&] {
        out = call();
        return static_cast<int64_t>(out.err);
      },
      [&](Event& e, int64_t, int) {
        e.err = 0;
        return describe(e);
      });
  return out;
}

}  // namespace dlprof::intercept::gds

#endif  // DLPROF_LIB_INTERCEPT_CUFILE_COMMON_H_
