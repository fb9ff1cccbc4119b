// cuFile's compatibility mode seen from the trace: which POSIX reads and
// writes were cuFile's own, done for a cuFile I/O in progress.
//
// Without GDS hardware (or with compatibility mode forced) libcufile serves
// a cuFile I/O with POSIX preads and pwrites. A synchronous cuFileRead does
// them on the caller's thread, where the tracer flags them nested. But
// cuFileReadAsync and the batch API hand them to libcufile's own worker
// threads (seen on an H100 with the CUDA 13.0 libcufile: four workers, one
// pread per batch entry, one per stream read), where nothing is in
// progress: counted as they are, the file's bytes would count twice.
//
// So the reader flags them as it hands the events out (FileStream): a POSIX
// read or write, not nested already, whose process has a cuFile read or
// write of the same file in progress when it starts (between the cuFile
// I/O's start -- its submission -- and its end -- its completion observed),
// and whose bytes lie inside that I/O's range of the file, gets
// kEventFlagNested and kEventFlagServesTransfer. Every reader of the stream
// (the summary, the exporters, read_events) then sees it as the nested
// pread of a synchronous cuFileRead is seen, and the summary's NestedCalls
// knows it repeats the transfer's bytes although its own thread had no call
// around it.
//
//   main thread   [cuFileBatchIOSubmit] ...... [GetStatus: entry done]
//                 |<-- cufile_batch_read (offset 2 MiB, 256 KiB) ------->|
//   cuFile worker          [pread fd 39, offset 2 MiB, 256 KiB]   <- flagged
//
// The stream comes by start, so a transfer is known before the reads it
// covers; transfers that ended before the current event are dropped.
#ifndef DLPROF_LIB_READ_CUFILE_COMPAT_H_
#define DLPROF_LIB_READ_CUFILE_COMPAT_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "dlprof/format.h"

namespace dlprof::read {

class CufileCompatReads {
 public:
  // `strings`: the process's string table (two ids may name one path).
  explicit CufileCompatReads(const std::unordered_map<uint32_t, std::string>* strings)
      : strings_(strings) {}

  // Called for each event of one process, in the stream's order; may flag it.
  void See(Event& e) {
    if (IsTransfer(e.kind)) {
      AddTransfer(e);
    } else if (!transfers_.empty()) {
      FlagIfServing(e);
    }
  }

  // The same over one process's events in any order (a block range, as the
  // C ABI hands one out), in place. A transfer outside the range flags
  // nothing in it.
  static void FlagRange(std::vector<Event>* events,
                        const std::unordered_map<uint32_t, std::string>* strings);

 private:
  struct Transfer {
    uint32_t file;
    uint64_t start_ns, end_ns;
    uint64_t offset, end_offset;
  };

  static bool IsTransfer(uint16_t kind);
  void AddTransfer(const Event& e);
  void FlagIfServing(Event& e);
  bool SameFile(uint32_t a, uint32_t b) const;

  const std::unordered_map<uint32_t, std::string>* strings_;
  std::vector<Transfer> transfers_;  // in progress (a handful: a batch's entries)
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_CUFILE_COMPAT_H_
