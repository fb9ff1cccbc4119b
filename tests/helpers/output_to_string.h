// What an exporter (tools/dump) writes, as a string: the exporter writes
// into an OutBuffer over a temporary file, which is read back. For the
// exporters' tests on traces built in memory.
#ifndef DLPROF_TESTS_HELPERS_OUTPUT_TO_STRING_H_
#define DLPROF_TESTS_HELPERS_OUTPUT_TO_STRING_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tools/dump/out_buffer.h"

namespace dlprof::testing {

// `write(OutBuffer*)` writes the output.
template <typename Write>
std::string OutputToString(Write&& write) {
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  if (file == nullptr) return "";
  {
    dump::OutBuffer out(fileno(file));
    write(&out);
    EXPECT_TRUE(out.Flush());
  }
  std::string text;
  std::rewind(file);
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), file)) > 0;) text.append(buf, n);
  std::fclose(file);
  return text;
}

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_OUTPUT_TO_STRING_H_
