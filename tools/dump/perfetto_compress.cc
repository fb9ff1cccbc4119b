// Compressed chunks of the Perfetto exporter (perfetto_compress.h).
#include "tools/dump/perfetto_compress.h"

#include <libdeflate.h>
#include <zstd.h>

#include <cstring>

#include "tools/dump/perfetto_fields.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {

namespace pf = perfetto_fields;

namespace {
// The fastest levels: packets repeat much, and these already make them
// about 12 (deflate) and 16 (zstd) times smaller.
constexpr int kDeflateLevel = 1, kZstdLevel = 1;
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
  if (codec == PerfettoCompression::kDeflate) deflate_ = libdeflate_alloc_compressor(kDeflateLevel);
  if (codec == PerfettoCompression::kZstd) zstd_ = ZSTD_createCCtx();
}

ChunkCodec::~ChunkCodec() {
  if (deflate_ != nullptr) libdeflate_free_compressor(deflate_);
  if (zstd_ != nullptr) ZSTD_freeCCtx(zstd_);
}

void ChunkCodec::Compress(std::string_view packets, std::string* out) {
  if (deflate_ == nullptr && zstd_ == nullptr) {  // kNone, or out of memory
    out->append(packets);
    return;
  }
  // The packet is a Trace.packet field holding one bytes field: both
  // lengths are written once the compressed size is known, so the data is
  // compressed straight into place after room for the two headers.
  const bool deflate = deflate_ != nullptr;
  const size_t bound = deflate ? libdeflate_zlib_compress_bound(deflate_, packets.size())
                               : ZSTD_compressBound(packets.size());
  constexpr size_t kHeaders = 2 * (1 + 10) + 2;
  const size_t base = out->size();
  out->resize(base + kHeaders + bound);
  char* data = out->data() + base + kHeaders;
  size_t n = 0;
  if (deflate) {
    n = libdeflate_zlib_compress(deflate_, packets.data(), packets.size(), data, bound);
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
