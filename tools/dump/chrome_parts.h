// The parts of --format chrome's document written beside the events
// (chrome_output.cc): times in microseconds, metadata events naming
// tracks, flow arrows from a CUDA API call to the GPU work it launched, and
// the bandwidth counter tracks.
#ifndef DLPROF_TOOLS_DUMP_CHROME_PARTS_H_
#define DLPROF_TOOLS_DUMP_CHROME_PARTS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/analysis/meters/timeline_counters.h"
#include "dlprof/format.h"
#include "tools/dump/out_buffer.h"

namespace dlprof::dump {

// `ns` as microseconds with the nanoseconds kept as three decimals.
void AppendMicros(OutBuffer* out, uint64_t ns);

// A metadata ("M") event; `what` is process_name or thread_name (args
// {"name": name}), or process_sort_index (args {"sort_index": sort_index}).
void Metadata(OutBuffer* out, const char* what, int32_t pid, int64_t tid, const std::string& name,
              bool* first, int64_t sort_index = -1);

// One end of a flow arrow: 's' where it starts, 'f' where it finishes (bound
// to the slice enclosing it); `name` is already quoted.
void FlowEvent(OutBuffer* out, char ph, std::string_view cat, std::string_view name,
               std::string_view id, int32_t pid, int64_t tid, uint64_t at_ns);

// Flow arrows join a CUDA API call to the GPU work it launched (same
// correlation id). Most recorded calls launch nothing (cudaGetDevice,
// cudaGetLastError, ...: about 19 in 20 in a PyTorch loop), so a call's flow
// start is held back until work with its correlation arrives and is then
// written together with the flow end; viewers do not need time order. A
// launch starts before its work, and the work follows within a few hundred
// calls, so each process keeps only its latest kPendingCalls calls.
class LaunchFlows {
 public:
  void Call(int32_t pid, uint64_t correlation, int64_t tid, uint64_t start_ns) {
    auto& calls = pending_calls_[pid];
    calls[correlation] = PendingCall{tid, start_ns, false};
    if (calls.size() > kPendingCalls) calls.erase(calls.begin());
  }

  // GPU work: writes the flow from its call, if that call is still known.
  void Work(int32_t pid, uint64_t correlation, int64_t tid, uint64_t start_ns, OutBuffer* out) {
    auto calls = pending_calls_.find(pid);
    if (calls == pending_calls_.end()) return;
    auto call = calls->second.find(correlation);
    if (call == calls->second.end()) return;
    if (!call->second.started) {
      Flow(out, 's', pid, correlation, call->second.tid, call->second.start_ns);
    }
    call->second.started = true;
    Flow(out, 'f', pid, correlation, tid, start_ns);
  }

 private:
  struct PendingCall {
    int64_t tid;
    uint64_t start_ns;
    bool started;  // its flow start is written
  };
  static constexpr size_t kPendingCalls = size_t{1} << 16;

  static void Flow(OutBuffer* out, char ph, int32_t pid, uint64_t correlation, int64_t at_tid,
                   uint64_t at_ns) {
    // Correlation ids are per process: the pid makes them unique.
    FlowEvent(out, ph, "launch", "\"launch\"",
              std::to_string(pid) + ":" + std::to_string(correlation), pid, at_tid, at_ns);
  }

  std::map<int32_t, std::map<uint64_t, PendingCall>> pending_calls_;  // pid -> correlation
};

// Bandwidth counters: bytes read and written per 100 ms per process
// (lib/analysis/meters/timeline_counters.h), as MiB/s, with a zero after each busy
// stretch. A bin's samples are written once the stream has passed it: one
// counter event per process, with both series.
class Bandwidth {
 public:
  // `track`: the Chrome "pid" of each process's first image.
  Bandwidth(OutBuffer* out, const std::vector<int32_t>& track)
      : out_(out),
        track_(track),
        sums_([this](size_t counter, uint64_t at_ns, uint64_t bytes) {
          Gather(counter, at_ns, bytes);
        }) {}

  // `image`: the index of the event's process's first image.
  void Add(const Event& e, size_t image) {
    if (analysis::BandwidthBytes io; analysis::BandwidthOf(e, &io)) {
      sums_.Add(2 * image + io.write, e.start_ns, io.bytes);
    }
  }
  void Finish() {
    sums_.Finish();
    WriteBin();
  }

 private:
  // A bin's samples come one counter at a time; each process's read and
  // write go in one event.
  void Gather(size_t counter, uint64_t at_ns, uint64_t bytes) {
    if (at_ns != bin_ns_) WriteBin();
    bin_ns_ = at_ns;
    auto& [read, write] = bin_[counter / 2];
    (counter % 2 == 1 ? write : read) = bytes;
  }
  void WriteBin() {
    for (const auto& [image, bytes] : bin_) {
      out_->Append(",\n{\"ph\":\"C\",\"name\":\"I/O bandwidth (MiB/s)\",\"pid\":");
      out_->AppendInt(track_[image]);
      out_->Append(",\"ts\":");
      AppendMicros(out_, bin_ns_);
      out_->Append(",\"args\":{\"read\":");
      AppendMibPerSecond(bytes.first);
      out_->Append(",\"write\":");
      AppendMibPerSecond(bytes.second);
      out_->Append("}}");
    }
    bin_.clear();
  }

  // A bin's bytes as MiB/s to the nearest thousandth (a loader's 0.78 MiB/s
  // was 0 in whole MiB/s; 1559 B in 100 ms, 0.01487 MiB/s, is 0.015).
  void AppendMibPerSecond(uint64_t bin_bytes) {
    constexpr unsigned kMib = 1024 * 1024;
    const unsigned __int128 thousandths =
        (static_cast<unsigned __int128>(bin_bytes) * (kSecondNs / analysis::kCounterBinNs) * 1000 +
         kMib / 2) / kMib;
    out_->AppendInt(static_cast<uint64_t>(thousandths / 1000));
    out_->Append('.');
    out_->AppendPadded(static_cast<uint64_t>(thousandths % 1000), 3);
  }

  static constexpr uint64_t kSecondNs = 1000 * 1000 * 1000;
  OutBuffer* const out_;
  const std::vector<int32_t>& track_;
  analysis::BinnedSums sums_;
  uint64_t bin_ns_ = 0;
  std::map<size_t, std::pair<uint64_t, uint64_t>> bin_;  // image -> bytes read, written
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_CHROME_PARTS_H_
