// The counters the timelines draw beside the events (the Chrome JSON's and
// Perfetto's: tools/dump/chrome_output.cc, perfetto_output.cc), computed as
// the events stream by, in 100 ms bins, with memory bounded by the number of
// counters (not of events or bins):
//   BinnedSums   an amount per bin, e.g. bytes read by a process (the bin
//                of the call's start, as the Chrome exporter counts them);
//   BusyTime     the time covered by intervals per bin, e.g. a GPU busy
//                with any kernel, copy or memset (overlaps counted once).
// Each reports a bin's value once no later event can change it, and a zero
// for the bin after a busy stretch, so that a viewer draws the drop.
#ifndef DLPROF_LIB_ANALYSIS_TIMELINE_COUNTERS_H_
#define DLPROF_LIB_ANALYSIS_TIMELINE_COUNTERS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "dlprof/format.h"

namespace dlprof::analysis {

constexpr uint64_t kCounterBinNs = 100 * 1000 * 1000;

// What a call adds to the I/O bandwidth counters: POSIX, STDIO and MPI-IO
// reads and writes, the bytes they really moved (lib/format/event_rules.h, BytesMoved), in
// the bin of their start. Calls nested in another traced call (the pread of
// an MPI_File_read_at) are counted by that one; GPU copies move no file data.
struct BandwidthBytes {
  uint64_t bytes;
  bool write;
};
// False for a call the counters leave out.
bool BandwidthOf(const Event& e, BandwidthBytes* out);

// Called with (counter, bin start in ns, the bin's value).
using CounterSample = std::function<void(size_t counter, uint64_t at_ns, uint64_t value)>;

class BinnedSums {
 public:
  explicit BinnedSums(CounterSample emit) : emit_(std::move(emit)) {}
  // `at_ns` never goes back (the stream is ordered by start).
  void Add(size_t counter, uint64_t at_ns, uint64_t amount);
  void Finish() { Advance(UINT64_MAX / kCounterBinNs); }

 private:
  void Advance(uint64_t bin);
  void FlushBin();

  CounterSample emit_;
  uint64_t bin_ = 0;
  std::vector<uint64_t> sums_;     // per counter, in bin_
  std::vector<size_t> touched_;    // counters with a sum in bin_
  std::vector<size_t> active_;     // counters with a sum in the bin before
};

class BusyTime {
 public:
  // Value of a bin: the nanoseconds of it that were busy.
  explicit BusyTime(CounterSample emit) : emit_(std::move(emit)) {}
  // Intervals arrive ordered by start.
  void Add(size_t counter, uint64_t start_ns, uint64_t end_ns);
  void Finish();

 private:
  struct Device {
    bool open = false;
    uint64_t start = 0, end = 0;        // the busy stretch being extended
    std::map<uint64_t, uint64_t> bins;  // bin -> busy ns, of closed stretches
    uint64_t last_emitted = UINT64_MAX; // bin of the last nonzero sample
  };
  void Close(Device* d);
  void EmitBefore(size_t counter, Device* d, uint64_t bin);

  CounterSample emit_;
  std::vector<Device> devices_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_TIMELINE_COUNTERS_H_
