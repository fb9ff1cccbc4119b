// Buffered output with hand-written number formatting.
//
// dlprof-dump prints millions of lines; iostreams cost more per field than the
// decoding does, so every exporter writes through one large buffer that is
// handed to write(2) when it fills.
#ifndef DLPROF_TOOLS_DUMP_OUT_BUFFER_H_
#define DLPROF_TOOLS_DUMP_OUT_BUFFER_H_

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace dlprof::dump {

// The file -o names (`path`), created, else standard output ("" or "-");
// -1, said on stderr, when it cannot be, or when it is one of `inputs`
// (trace files, or their rings sidecars): O_TRUNC would empty the trace
// before it is read.
int OpenOutput(const std::string& path, const std::vector<std::string>& inputs);

class OutBuffer {
 public:
  explicit OutBuffer(int fd, size_t capacity = 1 << 20);
  OutBuffer(const OutBuffer&) = delete;
  OutBuffer& operator=(const OutBuffer&) = delete;

  void Append(char c) {
    Reserve(1);
    buf_[len_++] = c;
  }
  void Append(std::string_view s) {
    if (s.size() > buf_.size() - len_) return AppendLarge(s);
    std::memcpy(buf_.data() + len_, s.data(), s.size());
    len_ += s.size();
  }
  template <typename Int>
  void AppendInt(Int v) {
    Reserve(24);
    char* p = buf_.data() + len_;
    len_ = static_cast<size_t>(std::to_chars(p, p + 24, v).ptr - buf_.data());
  }
  // `digits` decimal digits of `v`, zero-padded on the left (v < 10^digits).
  void AppendPadded(uint64_t v, int digits);
  // Nanoseconds as seconds with nine decimals: 12.000345678.
  void AppendSeconds(uint64_t ns);
  // Lower-case hexadecimal with a 0x prefix.
  void AppendHex(uint64_t v);
  // A finite double in the fewest digits that read back to it, always with
  // a '.' or an exponent (1.0, not 1: a reader of the JSON sees a float).
  void AppendDouble(double v);

  // Writes out what is buffered. False once any write failed; `error()` then
  // holds the errno of the first failure and later output is discarded.
  bool Flush();
  int error() const { return error_; }

 private:
  void Reserve(size_t n) {
    if (buf_.size() - len_ < n) Drain();
  }
  void Drain();
  void AppendLarge(std::string_view s);

  int fd_;
  std::vector<char> buf_;
  size_t len_ = 0;
  int error_ = 0;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_OUT_BUFFER_H_
