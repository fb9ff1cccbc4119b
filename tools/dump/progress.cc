// dlprof-dump's progress line (progress.h).
#include "tools/dump/progress.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "lib/text/text.h"

namespace dlprof::dump {
using namespace dlprof::text;
namespace {

using Clock = std::chrono::steady_clock;

int64_t NsSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

void WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a terminal gone: the display is only a courtesy
    off += static_cast<size_t>(n);
  }
}

}  // namespace

bool ShowProgressOn(int fd, bool quiet) { return !quiet && isatty(fd) == 1; }

std::string ProgressLine(uint64_t traces_done, uint64_t traces, uint64_t bytes_done,
                         uint64_t bytes, int64_t elapsed_ns) {
  char buf[200];
  const uint64_t percent = bytes == 0 ? 0 : bytes_done * 100 / bytes;
  int n = snprintf(
      buf, sizeof(buf), "dlprof-dump: %" PRIu64 "/%" PRIu64 " traces, %s of %s (%" PRIu64 " %%)",
      traces_done, traces, ByteText(bytes_done).c_str(), ByteText(bytes).c_str(), percent);
  std::string line(buf, n > 0 ? static_cast<size_t>(n) : 0);
  if (elapsed_ns > 0 && bytes_done > 0) {
    // Bytes per second, and the rest at that rate (whole seconds).
    const uint64_t rate =
        static_cast<uint64_t>(static_cast<unsigned __int128>(bytes_done) * 1000000000u /
                              static_cast<uint64_t>(elapsed_ns));
    line += ", " + ByteText(rate) + "/s";
    if (rate > 0 && bytes > bytes_done) {
      snprintf(buf, sizeof(buf), ", %" PRIu64 " s left", (bytes - bytes_done + rate - 1) / rate);
      line += buf;
    }
  }
  return line;
}

ProgressDisplay::ProgressDisplay(const ReadProgress* progress, uint64_t traces, uint64_t bytes,
                                 int fd, int64_t delay_ms)
    : progress_(progress), traces_(traces), bytes_(bytes), fd_(fd), delay_ms_(delay_ms) {
  thread_ = std::thread([this] { Run(); });
}

ProgressDisplay::~ProgressDisplay() { Stop(); }

void ProgressDisplay::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressDisplay::Draw(const std::string& text) {
  // Back to the line's start, the text, the rest of the old line erased.
  WriteAll(fd_, "\r" + text + "\033[K");
  drawn_ = !text.empty();
}

void ProgressDisplay::Run() {
  const Clock::time_point start = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  if (wake_.wait_for(lock, std::chrono::milliseconds(delay_ms_), [this] { return stop_; })) {
    return;  // done within the delay: nothing shown
  }
  do {
    Draw(ProgressLine(progress_->traces_done.load(std::memory_order_relaxed), traces_,
                      progress_->bytes_done.load(std::memory_order_relaxed), bytes_,
                      NsSince(start)));
  } while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; }));
  if (drawn_) Draw("");
}

}  // namespace dlprof::dump
