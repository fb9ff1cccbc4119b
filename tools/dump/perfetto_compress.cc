// Compressed chunks of the Perfetto exporter (perfetto_compress.h).
#include "tools/dump/perfetto_compress.h"

#include <isa-l/igzip_lib.h>
#include <zstd.h>

#include <cstring>

#include "tools/dump/perfetto_fields.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {

namespace pf = perfetto_fields;

namespace {
// The fastest levels: packets repeat much, and these already make them
// about 10 (deflate) and 16 (zstd) times smaller.
constexpr int kDeflateLevel = 1, kZstdLevel = 1;
constexpr size_t kDeflateLevelBuf = ISAL_DEF_LVL1_DEFAULT;

// Deflated in zlib's format into `out` (room for `bound` bytes): its size,
// or 0 when it did not fit.
size_t Deflate(std::string_view in, std::vector<uint8_t>* level_buf, char* out, size_t bound) {
  isal_zstream s;
  isal_deflate_stateless_init(&s);
  s.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
  s.avail_in = static_cast<uint32_t>(in.size());
  s.next_out = reinterpret_cast<uint8_t*>(out);
  s.avail_out = static_cast<uint32_t>(bound);
  s.level = kDeflateLevel;
  s.level_buf = level_buf->data();
  s.level_buf_size = static_cast<uint32_t>(level_buf->size());
  s.gzip_flag = IGZIP_ZLIB;
  s.flush = NO_FLUSH;
  s.end_of_stream = 1;
  return isal_deflate_stateless(&s) == COMP_OK ? s.total_out : 0;
}

// Room enough for deflate's output: at worst stored blocks (5 bytes of
// header per 64 KiB), zlib's header and trailer.
size_t DeflateBound(size_t n) { return n + (n >> 10) + 1024; }
}  // namespace

bool ParsePerfettoCompression(std::string_view name, PerfettoCompression* out) {
  if (name == "deflate") {
    *out = PerfettoCompression::kDeflate;
  } else if (name == "zstd") {
    *out = PerfettoCompression::kZstd;
  } else if (name == "none") {
    *out = PerfettoCompression::kNone;
  } else {
    return false;
  }
  return true;
}

ChunkCodec::ChunkCodec(PerfettoCompression codec) {
  if (codec == PerfettoCompression::kDeflate) {
    deflate_ = true;
    deflate_level_buf_.resize(kDeflateLevelBuf);
  }
  if (codec == PerfettoCompression::kZstd) zstd_ = ZSTD_createCCtx();
}

ChunkCodec::~ChunkCodec() {
  if (zstd_ != nullptr) ZSTD_freeCCtx(zstd_);
}

void ChunkCodec::Compress(std::string_view packets, std::string* out) {
  if (!deflate_ && zstd_ == nullptr) {  // kNone, or zstd out of memory
    out->append(packets);
    return;
  }
  // The packet is a Trace.packet field holding one bytes field: both
  // lengths are written once the compressed size is known, so the data is
  // compressed straight into place after room for the two headers.
  const bool deflate = deflate_;
  const size_t bound = deflate ? DeflateBound(packets.size()) : ZSTD_compressBound(packets.size());
  constexpr size_t kHeaders = 2 * (1 + 10) + 2;
  const size_t base = out->size();
  out->resize(base + kHeaders + bound);
  char* data = out->data() + base + kHeaders;
  size_t n = 0;
  if (deflate) {
    n = Deflate(packets, &deflate_level_buf_, data, bound);
  } else {
    n = ZSTD_compressCCtx(zstd_, data, bound, packets.data(), packets.size(), kZstdLevel);
    if (ZSTD_isError(n)) n = 0;
  }
  if (n == 0) {
    out->resize(base);
    out->append(packets);
    return;
  }
  ProtoWriter headers;
  headers.Tag(pf::kTracePacket, ProtoWriter::kLengthDelimited);
  const uint32_t field = deflate ? pf::kPacketCompressed : pf::kPacketZstdCompressed;
  const size_t field_tag = VarintSize((uint64_t{field} << 3) | ProtoWriter::kLengthDelimited);
  headers.RawVarint(field_tag + VarintSize(n) + n);
  headers.Tag(field, ProtoWriter::kLengthDelimited);
  headers.RawVarint(n);
  const std::string_view h = headers.data();
  std::memmove(out->data() + base + h.size(), data, n);
  std::memcpy(out->data() + base, h.data(), h.size());
  out->resize(base + h.size() + n);
}

ChunkCompressor::ChunkCompressor(OutBuffer* out, unsigned threads, PerfettoCompression codec)
    : out_(out), codec_(codec), inline_codec_(threads == 0 ? codec : PerfettoCompression::kNone) {
  if (codec == PerfettoCompression::kNone) threads = 0;  // nothing to do in parallel
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

ChunkCompressor::~ChunkCompressor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (auto& t : workers_) t.join();
}

void ChunkCompressor::Add(std::string_view packets) {
  if (codec_ == PerfettoCompression::kNone) {
    out_->Append(packets);
    return;
  }
  if (workers_.empty()) {
    inline_out_.clear();
    inline_codec_.Compress(packets, &inline_out_);
    out_->Append(inline_out_);
    return;
  }
  std::unique_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!spare_.empty()) {
      job = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  if (!job) job = std::make_unique<Job>();
  job->packets.assign(packets.data(), packets.size());
  job->compressed.clear();
  job->taken = job->done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  work_.notify_one();
  WriteDone(false);
}

void ChunkCompressor::Finish() { WriteDone(true); }

// Writes the chunks at the front that are compressed; waits while too many
// are in flight (or, with `wait_all`, until none is).
void ChunkCompressor::WriteDone(bool wait_all) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!jobs_.empty()) {
    if (!jobs_.front()->done) {
      if (!wait_all && jobs_.size() <= 2 * workers_.size()) return;
      done_.wait(lock, [this] { return jobs_.front()->done; });
    }
    std::unique_ptr<Job> job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    out_->Append(job->compressed);
    lock.lock();
    spare_.push_back(std::move(job));
  }
}

void ChunkCompressor::Work() {
  ChunkCodec codec(codec_);
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    Job* job = nullptr;
    work_.wait(lock, [&] {
      for (auto& j : jobs_) {
        if (!j->taken) {
          job = j.get();
          return true;
        }
      }
      return stopping_;
    });
    if (job == nullptr) return;
    job->taken = true;
    lock.unlock();
    codec.Compress(job->packets, &job->compressed);
    lock.lock();
    job->done = true;
    done_.notify_all();
  }
}

}  // namespace dlprof::dump
