// The exporters' output buffer and number formatting, and the file it
// goes to.
#include "tools/dump/out_buffer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "lib/format/sidecar.h"

namespace dlprof::dump {

int OpenOutput(const std::string& path, const std::vector<std::string>& inputs) {
  if (path.empty() || path == "-") return STDOUT_FILENO;
  struct stat out;
  if (stat(path.c_str(), &out) == 0) {
    for (const std::string& input : inputs) {
      for (const std::string& file : {input, input + format::kSidecarSuffix}) {
        struct stat in;
        if (stat(file.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
          fprintf(stderr, "error: %s: is %s, an input: not overwritten\n", path.c_str(),
                  file.c_str());
          return -1;
        }
      }
    }
  }
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fprintf(stderr, "error: %s: cannot create: %s\n", path.c_str(), strerror(errno));
  return fd;
}

OutBuffer::OutBuffer(int fd, size_t capacity) : fd_(fd), buf_(capacity < 64 ? 64 : capacity) {}

void OutBuffer::Drain() {
  const char* p = buf_.data();
  size_t n = len_;
  len_ = 0;
  while (n > 0 && error_ == 0) {
    ssize_t w = write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      break;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void OutBuffer::AppendLarge(std::string_view s) {
  while (!s.empty()) {
    size_t room = buf_.size() - len_;
    if (room == 0) {
      Drain();
      continue;
    }
    size_t n = s.size() < room ? s.size() : room;
    std::memcpy(buf_.data() + len_, s.data(), n);
    len_ += n;
    s.remove_prefix(n);
  }
}

void OutBuffer::AppendPadded(uint64_t v, int digits) {
  Reserve(static_cast<size_t>(digits));
  for (int i = digits - 1; i >= 0; --i) {
    buf_[len_ + static_cast<size_t>(i)] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  len_ += static_cast<size_t>(digits);
}

void OutBuffer::AppendSeconds(uint64_t ns) {
  AppendInt(ns / 1000000000);
  Append('.');
  AppendPadded(ns % 1000000000, 9);
}

void OutBuffer::AppendHex(uint64_t v) {
  Reserve(18);
  buf_[len_++] = '0';
  buf_[len_++] = 'x';
  char* p = buf_.data() + len_;
  len_ = static_cast<size_t>(std::to_chars(p, p + 16, v, 16).ptr - buf_.data());
}

void OutBuffer::AppendDouble(double v) {
  Reserve(32);  // the longest shortest form: -2.2250738585072014e-308, 24
  char* p = buf_.data() + len_;
  char* end = std::to_chars(p, p + 32, v).ptr;
  if (std::find_if(p, end, [](char c) { return c == '.' || c == 'e'; }) == end) {
    *end++ = '.';
    *end++ = '0';
  }
  len_ = static_cast<size_t>(end - buf_.data());
}

bool OutBuffer::Flush() {
  Drain();
  return error_ == 0;
}

}  // namespace dlprof::dump
