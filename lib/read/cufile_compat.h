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
// and whose bytes lie inside that I/O's range of the file, on a thread that
// made no cuFile call of its own (the program's threads submit, wait for
// and complete cuFile I/O; libcufile's workers never call it: a program
// thread's own pread of a file's header while a stream read of it was in
// flight was flagged, and its bytes lost), gets
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

  // Called for each event of one process, in the stream's order, with the
  // thread that recorded it; may flag it.
  void See(Event& e, int32_t tid) {
    if (IsCaller(e.kind)) AddCaller(tid);
    if (IsTransfer(e.kind)) {
      AddTransfer(e);
    } else if (!transfers_.empty()) {
      FlagIfServing(e, tid);
    }
  }

  // The same over one process's events in any order (a block range, as the
  // C ABI hands one out; `tids` beside them), in place. A transfer outside
  // the range flags nothing in it.
  static void FlagRange(std::vector<Event>* events, const std::vector<int32_t>& tids,
                        const std::unordered_map<uint32_t, std::string>* strings);

 private:
  struct Transfer {
    uint32_t file;
    uint64_t start_ns, end_ns;
    uint64_t offset, end_offset;
  };

  static bool IsTransfer(uint16_t kind);
  // A cuFile event recorded on the thread that called: every one but a
  // stream I/O's, which CUDA's callback thread records at its completion.
  static bool IsCaller(uint16_t kind);
  void AddCaller(int32_t tid);
  void AddTransfer(const Event& e);
  void FlagIfServing(Event& e, int32_t tid);
  bool SameFile(uint32_t a, uint32_t b) const;

  const std::unordered_map<uint32_t, std::string>* strings_;
  std::vector<Transfer> transfers_;  // in progress (a handful: a batch's entries)
  std::vector<int32_t> callers_;     // threads that called cuFile (a few)
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_CUFILE_COMPAT_H_
