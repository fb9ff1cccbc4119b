#include "tests/helpers/trace_builder.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/format/crc32c.h"

namespace dlprof::testing {

Event MakeEvent(EventKind kind, uint64_t start_ns, uint64_t dur_ns) {
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start_ns;
  e.dur_ns = dur_ns;
  e.fd = -1;
  e.offset = -1;
  return e;
}

format::ProcessInfo DefaultProcess() {
  format::ProcessInfo p;
  p.clock_mono_ns = 1000;
  p.clock_real_ns = 1700000000000000000ull;
  p.pid = 1234;
  p.ppid = 1;
  p.rank = -1;
  p.process_start_ns = 900;
  p.host = "node1";
  p.exe = "/usr/bin/python3";
  p.cmdline = std::string("python3\0train.py", 16);
  return p;
}

size_t BlockSpec::events() const {
  size_t n = 0;
  for (const auto& r : runs) n += r.events.size();
  return n;
}

namespace {

// The span the writer would put in the header. A hand-made payload gets the
// widest span, so that only the payload itself can make it fail.
format::BlockSpan SpanOf(const BlockSpec& block) {
  if (block.payload) return {0, UINT64_MAX, 0};
  format::BlockEncoder enc;
  for (const auto& r : block.runs) enc.AddEvents(r.tid, r.events.data(), r.events.size());
  return enc.span();
}

}  // namespace

std::vector<uint8_t> EncodePayload(const BlockSpec& block) {
  format::BlockEncoder enc;
  enc.Begin(block.info);
  for (const auto& s : block.strings) enc.AddString(s.id, s.text.data(), s.text.size());
  for (const auto& r : block.runs) enc.AddEvents(r.tid, r.events.data(), r.events.size());
  std::vector<uint8_t> raw;
  enc.Finish(&raw);
  return raw;
}

TraceBytes BuildTrace(const TraceSpec& spec) {
  TraceBytes t;
  t.bytes = format::EncodeFileHeader(spec.process);
  t.header_size = t.bytes.size();
  format::BlockFramer framer(spec.zstd_level);
  std::vector<uint8_t> framed;
  for (size_t i = 0; i < spec.blocks.size(); ++i) {
    const BlockSpec& b = spec.blocks[i];
    uint32_t flags = b.flags;
    if (spec.final_block && i + 1 == spec.blocks.size()) flags |= kBlockFlagFinal;
    std::vector<uint8_t> raw = b.payload ? *b.payload : EncodePayload(b);
    uint32_t count = b.event_count ? *b.event_count : static_cast<uint32_t>(b.events());
    EXPECT_TRUE(framer.Frame(raw, count, flags, SpanOf(b), &framed));
    t.block_offsets.push_back(t.bytes.size());
    t.bytes.insert(t.bytes.end(), framed.begin(), framed.end());
  }
  return t;
}

void FlipBit(std::vector<uint8_t>* bytes, size_t offset, int bit) {
  ASSERT_LT(offset, bytes->size());
  (*bytes)[offset] ^= static_cast<uint8_t>(1u << bit);
}

void EditBlockHeader(std::vector<uint8_t>* bytes, size_t offset,
                     const std::function<void(BlockHeader*)>& edit) {
  ASSERT_LE(offset + sizeof(BlockHeader), bytes->size());
  BlockHeader h;
  std::memcpy(&h, bytes->data() + offset, sizeof(h));
  edit(&h);
  h.header_crc = format::Crc32c(&h, offsetof(BlockHeader, header_crc));
  std::memcpy(bytes->data() + offset, &h, sizeof(h));
}

TraceBuilder::TraceBuilder(format::ProcessInfo process) { spec_.process = std::move(process); }

TraceBuilder& TraceBuilder::Block(const format::BlockInfo& info) {
  spec_.blocks.emplace_back();
  spec_.blocks.back().info = info;
  return *this;
}

BlockSpec& TraceBuilder::last_block() {
  if (spec_.blocks.empty()) Block();
  return spec_.blocks.back();
}

TraceBuilder& TraceBuilder::String(uint32_t id, std::string text) {
  last_block().strings.push_back({id, std::move(text)});
  return *this;
}

TraceBuilder& TraceBuilder::Events(int32_t tid, std::vector<Event> events) {
  last_block().runs.push_back({tid, std::move(events)});
  return *this;
}

TraceBuilder& TraceBuilder::NoFinal() {
  spec_.final_block = false;
  return *this;
}

std::string TraceBuilder::Write(const std::string& path) const {
  EXPECT_TRUE(WriteFile(path, Build().bytes)) << path;
  return path;
}

bool WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f.flush());
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::vector<Event> ReadBack::events() const {
  std::vector<Event> all;
  for (const auto& b : blocks) all.insert(all.end(), b.events.begin(), b.events.end());
  return all;
}

ReadBack ReadTrace(const std::string& path) {
  ReadBack r;
  format::TraceReader reader;
  r.opened = reader.Open(path, &r.open_error);
  if (!r.opened) return r;
  r.process = reader.process();
  for (;;) {
    format::DecodedBlock block;
    std::string error;
    auto status = reader.Next(&block, &error);
    if (status == format::TraceReader::Status::kEnd) break;
    if (status == format::TraceReader::Status::kDamaged) {
      r.errors.push_back(error);
    } else {
      r.blocks.push_back(std::move(block));
    }
  }
  r.damaged_blocks = reader.damaged_blocks();
  r.saw_final = reader.saw_final_block();
  return r;
}

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not found in \"" << text << "\"";
}

ScratchDir::ScratchDir() {
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/dlprof-test-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << templ << ": " << strerror(errno);
  }
  path_ = templ;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace dlprof::testing
