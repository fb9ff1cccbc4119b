// Deflated chunks of the Perfetto exporter (perfetto_compress.h).
#include "tools/dump/perfetto_compress.h"

#include <zlib.h>

#include "tools/dump/perfetto_fields.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {

namespace pf = perfetto_fields;

std::string CompressedPackets(std::string_view packets) {
  uLongf size = compressBound(static_cast<uLong>(packets.size()));
  std::string deflated(size, '\0');
  // The fastest level: packets repeat much, and level 1 already makes them
  // about 12 times smaller.
  if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                reinterpret_cast<const Bytef*>(packets.data()),
                static_cast<uLong>(packets.size()), Z_BEST_SPEED) != Z_OK) {
    return std::string(packets);
  }
  deflated.resize(size);
  ProtoWriter packet;
  const size_t begun = packet.BeginNested(pf::kTracePacket);
  packet.Bytes(pf::kPacketCompressed, deflated);
  packet.EndNested(begun);
  return std::string(packet.data());
}

ChunkCompressor::ChunkCompressor(OutBuffer* out, unsigned threads) : out_(out) {
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
  if (workers_.empty()) {
    out_->Append(CompressedPackets(packets));
    return;
  }
  auto job = std::make_unique<Job>();
  job->packets.assign(packets.data(), packets.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  work_.notify_one();
  WriteDone(false);
}

void ChunkCompressor::Finish() { WriteDone(true); }

// Writes the chunks at the front that are deflated; waits while too many
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
  }
}

void ChunkCompressor::Work() {
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
    std::string compressed = CompressedPackets(job->packets);
    lock.lock();
    job->compressed = std::move(compressed);
    job->done = true;
    done_.notify_all();
  }
}

}  // namespace dlprof::dump
