// The Perfetto exporter's compression (perfetto_output.cc): each chunk of
// packets becomes one TracePacket whose `compressed_packets` field holds the
// chunk deflated (zlib format), as Perfetto's own tracing service writes
// them; Perfetto's trace processor and UI inflate them as they read.
//
// Deflating costs as much as encoding the packets, so chunks are deflated on
// worker threads while the next chunk is encoded, and written in their
// order. At most two chunks per worker are in flight: memory stays bounded.
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_COMPRESS_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_COMPRESS_H_

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tools/dump/out_buffer.h"

namespace dlprof::dump {

// One chunk of encoded TracePackets (Trace.packet fields) as the one
// compressed packet that holds them; where zlib fails (it does not on
// memory it was given), the packets themselves.
std::string CompressedPackets(std::string_view packets);

class ChunkCompressor {
 public:
  // `threads` workers; 0: each chunk is deflated as it is added.
  ChunkCompressor(OutBuffer* out, unsigned threads);
  ~ChunkCompressor();
  ChunkCompressor(const ChunkCompressor&) = delete;
  ChunkCompressor& operator=(const ChunkCompressor&) = delete;

  void Add(std::string_view packets);
  // Writes every chunk added so far.
  void Finish();

 private:
  struct Job {
    std::string packets, compressed;
    bool taken = false, done = false;
  };
  void Work();
  void WriteDone(bool wait_all);

  OutBuffer* const out_;
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<std::unique_ptr<Job>> jobs_;  // in the order they are written
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_COMPRESS_H_
