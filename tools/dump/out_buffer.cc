// The exporters' output buffer and number formatting.
#include "tools/dump/out_buffer.h"

#include <unistd.h>

#include <cerrno>

namespace dlprof::dump {

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

bool OutBuffer::Flush() {
  Drain();
  return error_ == 0;
}

}  // namespace dlprof::dump
