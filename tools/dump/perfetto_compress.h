// The Perfetto exporter's compression (perfetto_output.cc): each chunk of
// packets becomes one TracePacket whose `compressed_packets` field holds the
// chunk deflated (zlib format), as Perfetto's own tracing service writes
// them; Perfetto's trace processor and UI inflate them as they read.
// `zstd_compressed_packets` (Perfetto v58 and later: an older reader skips
// the field and shows an empty trace) is as fast to write and a fifth to
// three fifths smaller; uncompressed packets are for tools that cannot
// inflate.
//
// Deflate is Intel ISA-L's igzip at level 1, in zlib's format: on our
// packets 5x as fast as zlib's level 1 and 2x libdeflate's, for output about
// 10 % larger than libdeflate's. Compressing still costs about as much as
// encoding the packets, so chunks are compressed on worker threads while the
// next chunk is encoded, and written in their order. At most two chunks per
// worker are in flight: memory stays bounded.
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

struct ZSTD_CCtx_s;

namespace dlprof::dump {

enum class PerfettoCompression { kDeflate, kZstd, kNone };

// "deflate", "zstd", "none"; false for anything else.
bool ParsePerfettoCompression(std::string_view name, PerfettoCompression* out);

// Compresses chunks with one codec; one per thread (its state is reused).
class ChunkCodec {
 public:
  explicit ChunkCodec(PerfettoCompression codec);
  ~ChunkCodec();
  ChunkCodec(const ChunkCodec&) = delete;
  ChunkCodec& operator=(const ChunkCodec&) = delete;

  // One chunk of encoded TracePackets (Trace.packet fields) as the one
  // compressed packet that holds them, appended to `*out`; where the codec
  // fails (it does not on memory it was given), the packets themselves.
  void Compress(std::string_view packets, std::string* out);

 private:
  bool deflate_ = false;
  std::vector<uint8_t> deflate_level_buf_;  // igzip's working memory for its level
  ZSTD_CCtx_s* zstd_ = nullptr;             // kZstd's
};

class ChunkCompressor {
 public:
  // `threads` workers; 0: each chunk is compressed as it is added.
  ChunkCompressor(OutBuffer* out, unsigned threads,
                  PerfettoCompression codec = PerfettoCompression::kDeflate);
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
  const PerfettoCompression codec_;
  ChunkCodec inline_codec_;  // without workers
  std::string inline_out_;
  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<std::unique_ptr<Job>> jobs_;  // in the order they are written
  std::vector<std::unique_ptr<Job>> spare_;  // finished jobs, their buffers kept
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_COMPRESS_H_
