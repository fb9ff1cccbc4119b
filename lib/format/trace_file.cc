#include "lib/format/trace_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "lib/format/crc32c.h"
#include "lib/format/sidecar.h"
#include "lib/format/trace_layout.h"
#include "lib/format/zstd_runs.h"

namespace dlprof::format {
namespace {

void PutString(std::vector<uint8_t>& out, const std::string& s) {
  uint32_t n = static_cast<uint32_t>(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(&n);
  out.insert(out.end(), p, p + 4);
  out.insert(out.end(), s.begin(), s.end());
}

std::string At(uint64_t offset) { return "at byte " + std::to_string(offset) + ": "; }

// What a damaged block whose header holds lost, as its header counts it
// (as the torn-block message says it): "" for a block of strings alone.
std::string LostText(uint64_t events) {
  return events == 0 ? "" : " (its " + std::to_string(events) + " events are lost)";
}

// What ends a trace file whole: a clean shutdown's final block, or the
// last block of a bounded trace's segment (the writer went on in the next).
constexpr uint32_t kEndMarkerFlags = kBlockFlagFinal | kBlockFlagSegmentEnd;

}  // namespace

std::vector<uint8_t> EncodeFileHeader(const ProcessInfo& info) {
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof(kFileMagic));
  h.version = kFormatVersion;
  h.clock_mono_ns = info.clock_mono_ns;
  h.clock_real_ns = info.clock_real_ns;
  h.pid = info.pid;
  h.ppid = info.ppid;
  h.rank = info.rank;
  h.flags = info.flags;
  h.process_start_ns = info.process_start_ns;
  std::vector<uint8_t> out(sizeof(h));
  // Clip strings so the header always fits the reader's limit (64 KiB):
  // 3 x 16 KiB and 9 x 256 bytes.
  auto clip = [](const std::string& s, size_t n) { return s.substr(0, n); };
  PutString(out, clip(info.host, 16 * 1024));
  PutString(out, clip(info.exe, 16 * 1024));
  PutString(out, clip(info.cmdline, 16 * 1024));
  PutString(out, clip(info.run_id, 256));
  PutString(out, clip(info.boot_id, 256));
  PutString(out, clip(info.time_ns, 256));
  PutString(out, clip(info.kernel_start, 256));
  PutString(out, clip(info.parent_run_id, 256));
  PutString(out, clip(info.cpus, 256));
  PutString(out, clip(info.clock, 256));
  PutString(out, clip(info.faults, 256));
  PutString(out, clip(info.pid_ns, 256));
  h.header_size = static_cast<uint32_t>(out.size());
  std::memcpy(out.data(), &h, sizeof(h));
  h.header_crc = Crc32c(out.data(), out.size());
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

BlockFramer::BlockFramer(int zstd_level)
    : compressor_(std::make_unique<PayloadCompressor>(zstd_level)) {}

BlockFramer::~BlockFramer() = default;

bool BlockFramer::Frame(const std::vector<uint8_t>& raw, uint32_t event_count, uint32_t flags,
                        const BlockSpan& span, std::vector<uint8_t>* out,
                        const PayloadCuts* cuts) {
  const size_t bound = ZSTD_compressBound(raw.size());
  if (compressed_.size() < bound) compressed_.resize(bound);
  size_t z = 0;
  bool compressed = false;
  if (cuts != nullptr && raw.size() >= kRunCompressorMinBytes) {
    z = compressor_->CompressRuns(raw.data(), raw.size(), *cuts, compressed_.data(), bound);
    compressed = !ZSTD_isError(z);
  }
  if (!compressed) {
    z = compressor_->CompressMatched(raw.data(), raw.size(), compressed_.data(), bound);
  }
  if (ZSTD_isError(z)) return false;
  out->resize(sizeof(BlockHeader) + z);
  std::memcpy(out->data() + sizeof(BlockHeader), compressed_.data(), z);
  BlockHeader h{};
  h.magic = kBlockMagic;
  h.flags = flags | span.content_flags;
  h.compressed_size = static_cast<uint32_t>(z);
  h.raw_size = static_cast<uint32_t>(raw.size());
  h.event_count = event_count;
  h.clock_error_ns = span.clock_error_ns;
  h.first_start_ns = span.first_start_ns;
  h.last_end_ns = span.last_end_ns;
  h.payload_crc = Crc32c(out->data() + sizeof(BlockHeader), z);
  h.header_crc = Crc32c(&h, offsetof(BlockHeader, header_crc));
  std::memcpy(out->data(), &h, sizeof(h));
  return true;
}

namespace {

bool PreadAll(int fd, uint64_t offset, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    ssize_t r = pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

}  // namespace

// The zstd context is made at the first block decoded: every reader holds
// a decoder, and most readers of a large job (its catalogue's, the ones
// whose blocks a stream's threads decode) never use theirs; making 10,240
// of them cost more than decoding their events.
BlockDecoder::BlockDecoder() : dctx_(nullptr) {}
BlockDecoder::~BlockDecoder() { ZSTD_freeDCtx(dctx_); }

void TraceReader::Release() {
  decoder_.Release();
  recovered_ = {};
  std::vector<uint8_t>().swap(resync_buf_);
}

void BlockDecoder::Release() {
  compressed_.Free();
  raw_.Free();
  ZSTD_freeDCtx(dctx_);
  dctx_ = nullptr;
}

TraceReader::TraceReader() = default;

TraceReader::~TraceReader() { CloseFile(); }

void TraceReader::CloseFile() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool TraceReader::Reopen(std::string* error, bool* gone) {
  *gone = false;
  if (fd_ >= 0) return true;
  fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    *gone = errno == ENOENT;
    *error = path_ + ": cannot open again: " + std::strerror(errno);
    return false;
  }
  // Trace files are only appended to (a bounded trace's end segment may be
  // renamed over one of the same bytes): the same header, and at least the
  // bytes listed, are the same file. Each block's checksums still hold.
  struct stat st;
  FileHeader h{};
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) < file_size_ || !ReadAt(0, &h, sizeof(h)) ||
      std::memcmp(&h, &header_, sizeof(h)) != 0) {
    *error = path_ + ": replaced or cut short after its blocks were listed; not read";
    CloseFile();
    return false;
  }
  return true;
}

bool TraceReader::ReadAt(uint64_t offset, void* buf, size_t n) const {
  return PreadAll(fd_, offset, buf, n);
}

bool TraceReader::HeaderChecksumMatches(const FileHeader& h) const {
  std::vector<uint8_t> bytes(h.header_size);
  if (bytes.size() < sizeof(h) || !ReadAt(0, bytes.data(), bytes.size())) return false;
  FileHeader zeroed = h;
  zeroed.header_crc = 0;
  std::memcpy(bytes.data(), &zeroed, sizeof(zeroed));
  return Crc32c(bytes.data(), bytes.size()) == h.header_crc;
}

bool TraceReader::Open(const std::string& path, std::string* error) {
  // A file that is no trace holds no descriptor: a directory of thousands
  // of them is read through.
  const bool opened = OpenChecked(path, error);
  if (!opened) CloseFile();
  return opened;
}

bool TraceReader::OpenChecked(const std::string& path, std::string* error) {
  path_ = path;
  // O_NONBLOCK: a FIFO or a device at the path must not hold the open up
  // (it is then refused as no regular file); reads of a file never block.
  fd_ = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return false;
  }
  file_size_ = static_cast<uint64_t>(st.st_size);
  if (file_size_ == 0) {
    *error = path + ": empty file";  // its process wrote no header (killed at once, disk full)
    return false;
  }
  // What there is of the fixed header: a file cut short that starts as a
  // trace does is a truncated trace, not something else.
  FileHeader h{};
  const size_t have = static_cast<size_t>(std::min<uint64_t>(file_size_, sizeof(h)));
  if (!ReadAt(0, &h, have)) {
    *error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  if (std::memcmp(h.magic, kFileMagic, std::min(have, sizeof(kFileMagic))) != 0) {
    *error = path + ": not a dlprof trace (bad magic at byte 0)";
    // The file beside a trace that a user may pass for it: say which to pass.
    if (have >= sizeof(kSidecarMagic) &&
        std::memcmp(h.magic, kSidecarMagic, sizeof(kSidecarMagic)) == 0) {
      const std::string tail = std::string(kTraceSuffix) + kSidecarSuffix;
      const bool named = path.size() > tail.size() &&
                         path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
      const std::string trace =
          named ? path.substr(0, path.size() - std::strlen(kSidecarSuffix)) : "";
      *error = path + ": a rings sidecar (the events its process still held in memory, read " +
               "with its trace), not a trace: pass " +
               (named ? trace : std::string("the .dlprof file beside it")) + " or its directory";
      if (named && access(trace.c_str(), F_OK) != 0) {
        *error = path + ": a rings sidecar (the events its process still held in memory, " +
                 "read with its trace), not a trace; its trace, " + trace +
                 ", is not there, and the sidecar alone cannot be read";
      }
    }
    return false;
  }
  // The header's whole size, where the bytes there state a believable one.
  const bool size_known = have >= offsetof(FileHeader, header_size) + sizeof(h.header_size) &&
                          h.header_size >= sizeof(h) + 12 && h.header_size <= kMaxHeaderBytes;
  if (have < sizeof(h) || (size_known && h.header_size > file_size_)) {
    *error = path + ": truncated header (" + std::to_string(file_size_) + " of " +
             std::to_string(size_known ? h.header_size : sizeof(h)) + " bytes)";
    return false;
  }
  if (h.version > kFormatVersion) {
    // A newer writer keeps the fixed header and its checksum: one that does
    // not match is a damaged version field (a flipped byte read as version
    // 16711683, "use a newer dlprof-dump"), not a newer trace.
    *error = path + ": trace format version " + std::to_string(h.version) +
             " is newer than this dlprof-dump understands (" + std::to_string(kFormatVersion) +
             "); use a newer dlprof-dump";
    if (size_known && !HeaderChecksumMatches(h)) {
      *error = path + ": damaged header (checksum mismatch at byte 60; its version field says " +
               std::to_string(h.version) + ")";
    }
    return false;
  }
  if (h.version < kOldestFormatVersion) {
    *error = path + ": trace format version " + std::to_string(h.version) +
             " was written by an older dlprof; this dlprof-dump reads versions " +
             std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) +
             " (trace again, or decode with the dlprof-dump of that release)";
    return false;
  }
  if (!size_known) {
    *error = path + ": damaged header (bad size at byte 12)";
    return false;
  }
  std::vector<uint8_t> bytes(h.header_size);
  if (!ReadAt(0, bytes.data(), bytes.size())) {
    *error = path + ": header truncated";
    return false;
  }
  if (!HeaderChecksumMatches(h)) {
    *error = path + ": damaged header (checksum mismatch at byte 60)";
    return false;
  }
  size_t pos = sizeof(h);
  // Strings past those this reader knows are skipped; an older writer's
  // header ends before the last eight.
  std::string* fields[] = {&process_.host,    &process_.exe,     &process_.cmdline,
                           &process_.run_id,  &process_.boot_id, &process_.time_ns,
                           &process_.kernel_start, &process_.parent_run_id,
                           &process_.cpus,    &process_.clock,   &process_.faults,
                           &process_.pid_ns};
  for (std::string* f : fields) {
    uint32_t n;
    if (pos + 4 > bytes.size()) break;
    std::memcpy(&n, bytes.data() + pos, 4);
    pos += 4;
    if (n > bytes.size() - pos) {
      *error = path + ": damaged header (string overruns at byte " + std::to_string(pos) + ")";
      return false;
    }
    f->assign(reinterpret_cast<const char*>(bytes.data() + pos), n);
    pos += n;
  }
  process_.clock_mono_ns = h.clock_mono_ns;
  process_.clock_real_ns = h.clock_real_ns;
  process_.pid = h.pid;
  process_.ppid = h.ppid;
  process_.rank = h.rank;
  process_.flags = h.flags;
  process_.process_start_ns = h.process_start_ns;
  version_ = h.version;
  header_ = h;
  offset_ = h.header_size;
  return true;
}

bool TraceReader::HeaderAt(uint64_t offset, BlockHeader* h) const {
  if (offset + sizeof(*h) > file_size_ || !ReadAt(offset, h, sizeof(*h))) return false;
  return h->magic == kBlockMagic &&
         h->header_crc == Crc32c(h, offsetof(BlockHeader, header_crc));
}

uint64_t TraceReader::Resync(uint64_t from) {
  // Look for the block magic byte by byte; a candidate counts only if its
  // header checksum holds, so payload bytes that happen to spell the magic
  // are not mistaken for a block.
  // The next block is usually near: read a small piece first and double it
  // (up to 1 MiB), so a file of thousands of damaged blocks costs time in
  // proportion to its size, not to its size times the piece.
  size_t chunk = 4096;
  for (uint64_t base = from; base < file_size_;
       base += chunk, chunk = std::min<size_t>(chunk * 2, 1 << 20)) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(chunk + 3, file_size_ - base));
    if (resync_buf_.size() < n) resync_buf_.resize(n);
    if (!ReadAt(base, resync_buf_.data(), n)) return file_size_;
    for (size_t i = 0; i + 4 <= n; ++i) {
      uint32_t m;
      std::memcpy(&m, resync_buf_.data() + i, 4);
      BlockHeader h;
      if (m == kBlockMagic && HeaderAt(base + i, &h)) return base + i;
    }
  }
  return file_size_;
}

bool TraceReader::NextHeader(BlockHeader* h, uint64_t* at_out, std::string* error) {
  const uint64_t at = offset_;
  *at_out = at;
  // `whole_header`: a block header holds at `at`, so a block was begun there.
  auto damaged = [&](const std::string& why, bool whole_header = true) {
    offset_ = Resync(at + 1);
    error->clear();
    if (end_marker_at_ != kNoBlock && !whole_header && offset_ >= file_size_) {
      // After an end marker, bytes with no block header in them to the end
      // of the file (zero pages of a file system that lost the size race,
      // a copy tool's padding) are no block the process wrote on: it
      // ended cleanly, and no event is lost. Said by the caller
      // (trailing_bytes()), not counted as damage.
      trailing_at_ = at;
      return false;
    }
    ++damaged_blocks_;
    if (whole_header) {
      lost_events_ += h->event_count;
    } else {
      ++uncounted_damage_;
    }
    end_marker_at_ = kNoBlock;  // something was written after it
    *error = path_ + ": " + At(at) + why;
    if (offset_ < file_size_) {
      *error += "; resuming at byte " + std::to_string(offset_);
    }
    return false;
  };
  if (file_size_ - at < sizeof(*h)) {
    return damaged("truncated block header (torn last block)", false);
  }
  if (!HeaderAt(at, h)) return damaged("bad block header", false);
  if (h->raw_size > kMaxBlockRawBytes || h->compressed_size > kMaxBlockCompressedBytes) {
    return damaged("block claims " + std::to_string(h->raw_size) + " bytes, over the limit");
  }
  // No block of events compresses past kMaxBlockRatio; a damaged one
  // claiming more (zstd's run-length blocks: 16 KiB of them made 64 MiB
  // blocks over and over, 17 s of zeroing to decode) is refused unread.
  if (h->raw_size > uint64_t{h->compressed_size} * kMaxBlockRatio + 4096) {
    return damaged("block claims " + std::to_string(h->raw_size) + " bytes from " +
                   std::to_string(h->compressed_size) + " compressed, past any block's ratio");
  }
  if (h->compressed_size > file_size_ - at - sizeof(*h)) {
    // Its header is whole: say what the torn block held, which for a
    // short-lived process is often every event it had.
    return damaged("truncated block (torn last block: " +
                   std::to_string(file_size_ - at - sizeof(*h)) + " of " +
                   std::to_string(h->compressed_size) + " bytes; its " +
                   std::to_string(h->event_count) + " events are lost)");
  }
  if (h->first_start_ns > h->last_end_ns) return damaged("block header's time span is reversed");
  offset_ = at + sizeof(*h) + h->compressed_size;
  end_marker_at_ = (h->flags & kEndMarkerFlags) ? at : kNoBlock;
  return true;
}

bool BlockDecoder::Decode(int fd, uint64_t at, const BlockHeader& h, uint32_t version,
                          DecodedBlock* out, std::string* why) {
  struct TrimOnReturn {
    Scratch* a;
    Scratch* b;
    ~TrimOnReturn() {
      a->Trim();
      b->Trim();
    }
  } trim{&compressed_, &raw_};
  uint8_t* compressed = compressed_.Get(h.compressed_size);
  if (!PreadAll(fd, at + sizeof(h), compressed, h.compressed_size)) {
    *why = "read error";
    return false;
  }
  if (Crc32c(compressed, h.compressed_size) != h.payload_crc) {
    *why = "block checksum mismatch";
    return false;
  }
  // The frame states its decompressed size (the writer always records it):
  // a frame that disagrees with the block header is damaged before any room
  // is made for it.
  const unsigned long long content = ZSTD_getFrameContentSize(compressed, h.compressed_size);
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != h.raw_size) {
    *why = "block does not decompress";
    return false;
  }
  if (dctx_ == nullptr && (dctx_ = ZSTD_createDCtx()) == nullptr) {
    *why = "out of memory for a block's decompression";
    return false;
  }
  uint8_t* raw = raw_.Get(h.raw_size);
  size_t r = ZSTD_decompressDCtx(dctx_, raw, h.raw_size, compressed, h.compressed_size);
  const bool decoded = !ZSTD_isError(r) && r == h.raw_size &&
                       DecodeBlockPayload(raw, h.raw_size, h.event_count, version, out, why);
  if (ZSTD_isError(r) || r != h.raw_size) *why = "block does not decompress";
  if (!decoded) return false;
  out->info.clock_error_ns = h.clock_error_ns;
  // A reader merging many blocks trusts the span to know when a block's
  // events are due; one that lies would break the order silently.
  if (!out->events.empty() && (out->min_start_ns < h.first_start_ns ||
                               out->max_end_ns > h.last_end_ns || out->end_wraps)) {
    *why = "an event lies outside the block's time span";
    return false;
  }
  return true;
}

bool TraceReader::NextRecovered(BlockLocation* where, std::string* error) {
  if (recovery_tried_ || end_marker_at_ != kNoBlock) return false;
  recovery_tried_ = true;
  std::string why;
  if (!RecoverFromSidecar(path_, file_size_, &recovered_, &recovery_, &why)) {
    if (!why.empty()) {
      // A damaged sidecar is damaged input: its events are lost, as a
      // damaged block's are (the exit status says so).
      *error = recovery_.path + ": " + why + "; nothing recovered from it";
      ++damaged_blocks_;
      ++uncounted_damage_;
    }
    return false;
  }
  if (recovered_.events.empty() && recovered_.strings.empty()) return false;
  uint32_t flags = 0;
  for (const Event& e : recovered_.events) flags |= ContentFlag(e.kind);
  *where = {file_size_, static_cast<uint32_t>(recovered_.events.size()), flags,
            recovered_.min_start_ns, recovered_.max_end_ns, 0};
  return true;
}

TraceReader::Status TraceReader::Next(DecodedBlock* out, std::string* error) {
  if (offset_ >= file_size_) {
    BlockLocation where;
    error->clear();
    if (!NextRecovered(&where, error)) return error->empty() ? Status::kEnd : Status::kDamaged;
    *out = recovered_;
    return Status::kBlock;
  }
  BlockHeader h;
  uint64_t at;
  if (!NextHeader(&h, &at, error)) return error->empty() ? Status::kEnd : Status::kDamaged;
  std::string why;
  if (!decoder_.Decode(fd_, at, h, version_, out, &why)) {
    // The header was sound, so the next block starts right after this one,
    // and it says how many events are lost.
    ++damaged_blocks_;
    lost_events_ += h.event_count;
    *error = path_ + ": " + At(at) + why + LostText(h.event_count);
    if (offset_ < file_size_) *error += "; resuming at byte " + std::to_string(offset_);
    return Status::kDamaged;
  }
  if (h.flags & kEndMarkerFlags) end_marker_decoded_at_ = at;
  return Status::kBlock;
}

TraceReader::Status TraceReader::NextLocation(BlockLocation* where, std::string* error) {
  if (offset_ >= file_size_) {
    error->clear();
    if (NextRecovered(where, error)) return Status::kBlock;
    return error->empty() ? Status::kEnd : Status::kDamaged;
  }
  BlockHeader h;
  uint64_t at;
  if (!NextHeader(&h, &at, error)) return error->empty() ? Status::kEnd : Status::kDamaged;
  *where = {at, h.event_count, h.flags, h.first_start_ns, h.last_end_ns, h.clock_error_ns};
  return Status::kBlock;
}

bool TraceReader::DecodeAt(const BlockLocation& where, DecodedBlock* out, std::string* error) {
  std::string why;
  const bool decoded = DecodeWith(&decoder_, where, out, &why);
  return Account(where, decoded, why, error);
}

bool TraceReader::DecodeWith(BlockDecoder* decoder, const BlockLocation& where,
                             DecodedBlock* out, std::string* why) const {
  if (where.offset == file_size_ && recovery_.found) {
    *out = recovered_;
    return true;
  }
  BlockHeader h;
  if (!HeaderAt(where.offset, &h)) {
    *why = "bad block header";
    return false;
  }
  return decoder->Decode(fd_, where.offset, h, version_, out, why);
}

bool TraceReader::Account(const BlockLocation& where, bool decoded, const std::string& why,
                          std::string* error) {
  if (decoded) {
    // (Blocks may be decoded in any order: only the end marker that is the
    // last block counts, whichever decoded last.)
    if ((where.flags & kEndMarkerFlags) && where.offset == end_marker_at_) {
      end_marker_decoded_at_ = where.offset;
    }
    return true;
  }
  ++damaged_blocks_;
  lost_events_ += where.event_count;
  *error = path_ + ": " + At(where.offset) + why + LostText(where.event_count);
  // NextLocation checked the header, so the next block starts after it.
  BlockHeader h{};
  if (HeaderAt(where.offset, &h)) {
    const uint64_t next = where.offset + sizeof(h) + h.compressed_size;
    if (next < file_size_) *error += "; resuming at byte " + std::to_string(next);
  }
  return false;
}

BlockList ListBlocks(TraceReader* reader) {
  BlockList list;
  BlockLocation where;
  std::string error;
  for (;;) {
    const TraceReader::Status status = reader->NextLocation(&where, &error);
    if (status == TraceReader::Status::kEnd) break;
    if (status == TraceReader::Status::kBlock) {
      list.blocks.push_back(where);
    } else {
      list.damage.emplace_back(list.blocks.size(), error);
    }
  }
  return list;
}

}  // namespace dlprof::format
