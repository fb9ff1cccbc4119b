// dlprof-dump's progress line on a terminal: traces and bytes done, rate,
// time left, while a long decode runs.
//
// The counters come from the reader (ReadProgress, lib/read/event_filter.h),
// which the event filters bump a batch at a time with relaxed atomics; a
// thread of its own reads them five times a second and redraws one line on
// standard error. Nothing is shown in the first second (a short run stays
// silent), nor when standard error is not a terminal, nor with --quiet, nor
// (main.cc decides) while an event listing streams to the same terminal. The
// line is cleared when the work ends, before any output or message.
#ifndef DLPROF_TOOLS_DUMP_PROGRESS_H_
#define DLPROF_TOOLS_DUMP_PROGRESS_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "lib/read/event_filter.h"

namespace dlprof::dump {
using namespace dlprof::read;

// Whether progress goes to `fd`: a terminal, and not --quiet.
bool ShowProgressOn(int fd, bool quiet);

// The line for `done` of `total` (traces, bytes) after `elapsed_ns`:
// "dlprof-dump: 3/64 traces, 1.2 GiB of 4.0 GiB (30 %), 250.0 MiB/s, 12 s left".
std::string ProgressLine(uint64_t traces_done, uint64_t traces, uint64_t bytes_done,
                         uint64_t bytes, int64_t elapsed_ns);

class ProgressDisplay {
 public:
  // Starts watching `progress` (which must outlive this) against the
  // totals; draws on `fd` from `delay_ms` on.
  ProgressDisplay(const ReadProgress* progress, uint64_t traces, uint64_t bytes, int fd,
                  int64_t delay_ms = 1000);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // Stops the display and clears its line; later calls do nothing.
  void Stop();

 private:
  void Run();
  void Draw(const std::string& text);

  const ReadProgress* progress_;
  const uint64_t traces_, bytes_;
  const int fd_;
  const int64_t delay_ms_;
  bool drawn_ = false;  // a line is on the terminal
  std::mutex mu_;       // guards stop_ (the display's own, not the reader's)
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PROGRESS_H_
