// core::FindNextDefinition: a symbol found by reading the dynamic symbol
// tables of the objects loaded after the one the code is linked into (here
// the test program), as dlsym(RTLD_NEXT) would find it -- how the interposed
// dlvsym finds the C library's (cufile_dlsym.cc).
#include "lib/core/real_symbol.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

extern "C" int dlprof_test_exported_here() { return 1; }

namespace dlprof::core {
namespace {

TEST(FindNextDefinition, FindsWhatRtldNextFinds) {
  // Nothing is preloaded into the test: what follows the test program is
  // the C library and the rest, functions and variables alike.
  for (const char* name : {"dlvsym", "dlsym", "pread", "malloc", "environ", "_r_debug"}) {
    SCOPED_TRACE(name);
    void* want = dlsym(RTLD_NEXT, name);
    ASSERT_NE(want, nullptr);
    EXPECT_EQ(FindNextDefinition(name), want);
  }
}

TEST(FindNextDefinition, NothingForAMissingName) {
  EXPECT_EQ(FindNextDefinition("dlprof_no_such_symbol"), nullptr);
  EXPECT_EQ(FindNextDefinition(""), nullptr);
}

TEST(FindNextDefinition, NeverItsOwnObjectsDefinition) {
  // A name only this program defines: the objects after it have none, and
  // the one before it (none) neither.
  EXPECT_EQ(dlsym(RTLD_NEXT, "dlprof_test_exported_here"), nullptr);
  EXPECT_EQ(FindNextDefinition("dlprof_test_exported_here"), nullptr);
}

}  // namespace
}  // namespace dlprof::core
