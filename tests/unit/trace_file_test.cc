// File framing: the header, checksummed zstd blocks and how TraceReader
// reports and steps over damage.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>

#include "lib/format/crc32c.h"
#include "lib/format/trace_file.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof::format {
namespace {

using testing::Contains;
using testing::BlockSpec;
using testing::ReadBack;
using testing::ReadTrace;
using testing::ScratchDir;
using testing::TraceBytes;
using testing::TraceSpec;

// Block i holds events with start times i*1000 + k, k < 3, on thread 10 + i,
// and defines string i + 1.
TraceSpec ThreeBlocks() {
  TraceSpec spec;
  for (int i = 0; i < 3; ++i) {
    BlockSpec b;
    b.info.rank = i == 0 ? -1 : 4;
    b.strings.push_back({static_cast<uint32_t>(i + 1), "/data/file" + std::to_string(i)});
    testing::ThreadRun run{10 + i, {}};
    for (int k = 0; k < 3; ++k) {
      Event e = testing::MakeEvent(EventKind::Read, i * 1000 + k, 1);
      e.file = static_cast<uint32_t>(i + 1);
      e.fd = 3;
      e.size = 100;
      e.ret = 100;
      run.events.push_back(e);
    }
    b.runs.push_back(run);
    spec.blocks.push_back(b);
  }
  return spec;
}

std::vector<uint64_t> Starts(const ReadBack& r) {
  std::vector<uint64_t> s;
  for (const Event& e : r.events()) s.push_back(e.start_ns);
  return s;
}

class TraceFileTest : public ::testing::Test {
 protected:
  ReadBack WriteAndRead(const std::vector<uint8_t>& bytes) {
    EXPECT_TRUE(testing::WriteFile(path_, bytes));
    return ReadTrace(path_);
  }
  ScratchDir dir_;
  std::string path_ = dir_.File("t.dlprof");
};

TEST_F(TraceFileTest, HeaderRoundTrips) {
  TraceSpec spec;
  spec.process.clock_mono_ns = 0xfedcba9876543210ull;
  spec.process.clock_real_ns = 1700000000987654321ull;
  spec.process.pid = 4242;
  spec.process.ppid = 4241;
  spec.process.rank = 17;
  spec.process.flags = kHeaderFlagForked | kHeaderFlagAfterExec;
  spec.process.process_start_ns = 77;
  spec.process.host = "gpu-node-07";
  spec.process.exe = "/opt/conda/bin/python3.11";
  spec.process.cmdline = std::string("python\0-m\0torch.distributed.run\0\0x", 35);
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_EQ(r.process.clock_mono_ns, spec.process.clock_mono_ns);
  EXPECT_EQ(r.process.clock_real_ns, spec.process.clock_real_ns);
  EXPECT_EQ(r.process.pid, 4242);
  EXPECT_EQ(r.process.ppid, 4241);
  EXPECT_EQ(r.process.rank, 17);
  EXPECT_EQ(r.process.flags, kHeaderFlagForked | kHeaderFlagAfterExec);
  EXPECT_EQ(r.process.process_start_ns, 77u);
  EXPECT_EQ(r.process.host, spec.process.host);
  EXPECT_EQ(r.process.exe, spec.process.exe);
  EXPECT_EQ(r.process.cmdline, spec.process.cmdline);
  EXPECT_TRUE(r.blocks.empty());
  EXPECT_EQ(r.damaged_blocks, 0u);
}

TEST_F(TraceFileTest, HeaderLayoutIsAsSpecified) {
  format::ProcessInfo info = testing::DefaultProcess();
  info.run_id = "job7";
  info.time_ns = "time:[4026531834]";
  info.kernel_start = "1234";
  info.parent_run_id = "host-20261127-1";
  info.cpus = "16";
  info.clock = "tsc; calibration error 20 ns";
  info.faults = "counts; x";
  info.pid_ns = "pid:[4026531836]";
  std::vector<uint8_t> h = EncodeFileHeader(info);
  // host, exe, cmdline, run_id, boot_id (empty), time_ns, kernel_start,
  // parent_run_id, cpus, clock, faults, pid_ns.
  ASSERT_EQ(h.size(), 64u + 4 + 5 + 4 + 16 + 4 + 16 + 4 + 4 + 4 + 0 + 4 + 17 + 4 + 4 + 4 + 15 +
                          4 + 2 + 4 + 28 + 4 + 9 + 4 + 16);
  EXPECT_EQ(std::memcmp(h.data(), "DLPROF\r\n", 8), 0);
  uint32_t v, size, crc;
  std::memcpy(&v, &h[8], 4);
  std::memcpy(&size, &h[12], 4);
  std::memcpy(&crc, &h[60], 4);
  EXPECT_EQ(v, kFormatVersion);
  EXPECT_EQ(size, h.size());
  std::memset(&h[60], 0, 4);
  EXPECT_EQ(Crc32c(h.data(), h.size()), crc);
  EXPECT_EQ(std::memcmp(&h[64], "\x05\0\0\0node1", 9), 0);
  EXPECT_EQ(std::memcmp(&h[64 + 9 + 20 + 20], "\x04\0\0\0job7\0\0\0\0\x11\0\0\0time:[", 18), 0);
  EXPECT_EQ(std::memcmp(&h[h.size() - 20], "\x10\0\0\0" "pid:[4026531836]", 20), 0);
  const size_t end = h.size() - 20;  // of the strings before pid_ns
  EXPECT_EQ(std::memcmp(&h[end - 13], "\x09\0\0\0" "counts; x", 13), 0);
  EXPECT_EQ(std::memcmp(&h[end - 13 - 32], "\x1c\0\0\0" "tsc; calibration error 20 ns", 32), 0);
  EXPECT_EQ(std::memcmp(&h[end - 13 - 33 - 32],
                        "\x04\0\0\0" "1234" "\x0f\0\0\0" "host-20261127-1" "\x02\0\0\0" "16", 33),
            0);
  // And it reads back.
  ReadBack r = WriteAndRead(EncodeFileHeader(info));
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_EQ(r.process.kernel_start, "1234");
  EXPECT_EQ(r.process.parent_run_id, info.parent_run_id);
  EXPECT_EQ(r.process.cpus, "16");
  EXPECT_EQ(r.process.clock, info.clock);
  EXPECT_EQ(r.process.faults, info.faults);
  EXPECT_EQ(r.process.time_ns, info.time_ns);
  EXPECT_EQ(r.process.pid_ns, info.pid_ns);
}

// A trace of an older writer ends its header after the command line: the
// strings added later read as empty, and the ones it has as written.
TEST_F(TraceFileTest, HeaderOfAnOlderWriterHasNoRunOrClockDomain) {
  format::ProcessInfo info = testing::DefaultProcess();
  std::vector<uint8_t> h = EncodeFileHeader(info);
  const size_t old_size = 64 + 9 + 20 + 20;
  h.resize(old_size);
  const uint32_t size = old_size;
  std::memcpy(&h[12], &size, 4);
  std::memset(&h[60], 0, 4);
  const uint32_t crc = Crc32c(h.data(), h.size());
  std::memcpy(&h[60], &crc, 4);
  ReadBack r = WriteAndRead(h);
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_EQ(r.process.cmdline, info.cmdline);
  EXPECT_EQ(r.process.run_id, "");
  EXPECT_EQ(r.process.boot_id, "");
  EXPECT_EQ(r.process.time_ns, "");
}

TEST_F(TraceFileTest, RunAndClockDomainRoundTrip) {
  TraceSpec spec;
  spec.process.run_id = "slurm-123456";
  spec.process.boot_id = "0b9e8a3c-1d2e-4f5a-9b8c-7d6e5f4a3b2c";
  spec.process.time_ns = "time:[4026532471]";
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_EQ(r.process.run_id, spec.process.run_id);
  EXPECT_EQ(r.process.boot_id, spec.process.boot_id);
  EXPECT_EQ(r.process.time_ns, spec.process.time_ns);
}

TEST_F(TraceFileTest, LongHeaderStringsAreClipped) {
  TraceSpec spec;
  spec.process.cmdline = std::string(100000, 'x');
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_EQ(r.process.cmdline, std::string(16 * 1024, 'x'));
}

TEST_F(TraceFileTest, BlocksRoundTrip) {
  ReadBack r = WriteAndRead(testing::BuildTrace(ThreeBlocks()).bytes);
  ASSERT_TRUE(r.opened) << r.open_error;
  ASSERT_EQ(r.blocks.size(), 3u);
  EXPECT_TRUE(r.saw_final);
  EXPECT_EQ(r.blocks[1].info.rank, 4);
  EXPECT_EQ(r.blocks[2].strings.at(0).text, "/data/file2");
  EXPECT_EQ(r.blocks[2].tids, (std::vector<int32_t>{12, 12, 12}));
  EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 1000, 1001, 1002, 2000, 2001, 2002}));
}

TEST_F(TraceFileTest, MissingFinalBlockIsVisible) {
  TraceSpec spec = ThreeBlocks();
  spec.final_block = false;
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  EXPECT_EQ(r.blocks.size(), 3u);
  EXPECT_FALSE(r.saw_final);
  EXPECT_EQ(r.damaged_blocks, 0u);
}

// A failed exec's flush flags its block final (runtime.cc FlushForExec) and
// the process goes on writing: the end marker is the last block's flag,
// not any block's (before: a trace killed after a failed exec read as
// complete, with no note and its sidecar never looked for).
TEST_F(TraceFileTest, FinalBlockInTheMiddleIsNotTheEnd) {
  TraceSpec spec = ThreeBlocks();
  spec.final_block = false;
  spec.blocks[1].flags = kBlockFlagFinal;
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  EXPECT_EQ(r.blocks.size(), 3u);
  EXPECT_FALSE(r.saw_final);
  EXPECT_EQ(r.damaged_blocks, 0u);
  // With a torn block after it, neither.
  const TraceBytes full = testing::BuildTrace(spec);
  std::vector<uint8_t> torn(full.bytes.begin(), full.bytes.end() - 1);
  r = WriteAndRead(torn);
  EXPECT_EQ(r.blocks.size(), 2u);
  EXPECT_FALSE(r.saw_final);
  // The last block's flag, after a final one in the middle, is the end.
  spec.final_block = true;
  r = WriteAndRead(testing::BuildTrace(spec).bytes);
  EXPECT_TRUE(r.saw_final);
}

TEST_F(TraceFileTest, MissingFileIsReported) {
  ReadBack r = ReadTrace(dir_.File("absent.dlprof"));
  EXPECT_FALSE(r.opened);
  EXPECT_TRUE(Contains(r.open_error, "absent.dlprof: cannot open: No such file"));
}

TEST_F(TraceFileTest, BadMagicIsNotATrace) {
  for (std::string content : {std::string("hello"), std::string(200, 'x'), std::string("DLPx")}) {
    ReadBack r = WriteAndRead(std::vector<uint8_t>(content.begin(), content.end()));
    EXPECT_FALSE(r.opened);
    EXPECT_TRUE(Contains(r.open_error, path_ + ": not a dlprof trace (bad magic at byte 0)"));
  }
}

// A file cut short is named for what it is (docs/RELIABILITY_DECODER.md,
// the damaged-file messages), not called something other than a trace.
TEST_F(TraceFileTest, EmptyFileIsSaidToBeEmpty) {
  ReadBack r = WriteAndRead({});
  EXPECT_FALSE(r.opened);
  EXPECT_EQ(r.open_error, path_ + ": empty file");
}

TEST_F(TraceFileTest, ShortHeaderWithItsMagicIsTruncated) {
  const TraceBytes t = testing::BuildTrace(ThreeBlocks());
  ASSERT_GT(t.header_size, 100u);
  const std::string whole = std::to_string(t.header_size);
  // Inside the magic, before header_size is there (64: the fixed part),
  // then with it (the header's own size), then inside the strings.
  for (auto [cut, of] : {std::pair<size_t, std::string>{5, "64"}, {14, "64"}, {20, whole},
                         {63, whole}, {64, whole}, {100, whole}, {t.header_size - 1, whole}}) {
    std::vector<uint8_t> bytes(t.bytes.begin(), t.bytes.begin() + static_cast<ptrdiff_t>(cut));
    ReadBack r = WriteAndRead(bytes);
    EXPECT_FALSE(r.opened);
    EXPECT_EQ(r.open_error, path_ + ": truncated header (" + std::to_string(cut) + " of " + of +
                                " bytes)")
        << cut;
  }
}

TEST_F(TraceFileTest, TornOnlyBlockSaysHowManyEventsItHeld) {
  TraceSpec spec;
  BlockSpec b;
  testing::ThreadRun run{10, {}};
  for (int k = 0; k < 57; ++k) run.events.push_back(testing::MakeEvent(EventKind::Read, k, 1));
  b.runs.push_back(run);
  spec.blocks.push_back(b);
  const TraceBytes full = testing::BuildTrace(spec);
  const size_t at = full.block_offsets[0];
  const size_t payload = full.bytes.size() - at - sizeof(BlockHeader);
  const size_t cut = at + sizeof(BlockHeader) + payload / 2;
  ReadBack r = WriteAndRead(std::vector<uint8_t>(full.bytes.begin(),
                                                 full.bytes.begin() + static_cast<ptrdiff_t>(cut)));
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_TRUE(r.blocks.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0], path_ + ": at byte " + std::to_string(at) +
                             ": truncated block (torn last block: " + std::to_string(payload / 2) +
                             " of " + std::to_string(payload) + " bytes; its 57 events are lost)");
}

// The file header's version, with its checksum made right again.
void SetVersion(TraceBytes* t, uint32_t version) {
  FileHeader h;
  std::memcpy(&h, t->bytes.data(), sizeof h);
  h.version = version;
  h.header_crc = 0;
  std::memcpy(t->bytes.data(), &h, sizeof h);
  h.header_crc = Crc32c(t->bytes.data(), h.header_size);
  std::memcpy(t->bytes.data(), &h, sizeof h);
}

// A newer writer's header (its checksum right) asks for a newer reader; a
// flipped byte of the version field (its checksum wrong) is damage: it said
// "version 16711683 ... use a newer dlprof-dump".
TEST_F(TraceFileTest, NewerVersionIsRejectedWithAMessage) {
  TraceBytes t = testing::BuildTrace(ThreeBlocks());
  const uint32_t v = kFormatVersion + 1;
  SetVersion(&t, v);
  ReadBack r = WriteAndRead(t.bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_TRUE(Contains(r.open_error, "trace format version " + std::to_string(v) +
                                      " is newer than this dlprof-dump understands"));
  EXPECT_TRUE(Contains(r.open_error, path_));
  t = testing::BuildTrace(ThreeBlocks());
  t.bytes[10] = 0xff;
  r = WriteAndRead(t.bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_EQ(r.open_error, path_ + ": damaged header (checksum mismatch at byte 60; its version "
                                  "field says 16711683)");
}

TEST_F(TraceFileTest, OlderVersionsAreReadByTheirOwnRules) {
  // Three reads of 1 ns each, back to back from 0. Version 3 stores the
  // durations as 1 and then 0, 0 (the same as the read before); version 2
  // stored each as it was. The same bytes labelled version 2 are read as
  // version 2 would: durations of 2 (1 zigzagged), 0, 0.
  TraceSpec spec = ThreeBlocks();
  spec.blocks.resize(1);
  TraceBytes t = testing::BuildTrace(spec);
  ReadBack r = WriteAndRead(t.bytes);
  ASSERT_TRUE(r.opened) << r.open_error;
  ASSERT_EQ(r.events().size(), 3u);
  for (const Event& e : r.events()) EXPECT_EQ(e.dur_ns, 1u);
  SetVersion(&t, kOldestFormatVersion);
  r = WriteAndRead(t.bytes);
  ASSERT_TRUE(r.opened) << r.open_error;
  EXPECT_TRUE(r.errors.empty());
  std::vector<uint64_t> durs;
  for (const Event& e : r.events()) durs.push_back(e.dur_ns);
  EXPECT_EQ(durs, (std::vector<uint64_t>{2, 0, 0}));

  SetVersion(&t, kOldestFormatVersion - 1);
  r = WriteAndRead(t.bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_TRUE(Contains(r.open_error, "trace format version 1 was written by an older dlprof; "
                                     "this dlprof-dump reads versions 2 to 3"))
      << r.open_error;
}

TEST_F(TraceFileTest, DamagedHeaderIsRejected) {
  TraceBytes t = testing::BuildTrace(ThreeBlocks());
  testing::FlipBit(&t.bytes, 66);  // inside the host string
  ReadBack r = WriteAndRead(t.bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_TRUE(Contains(r.open_error, "damaged header (checksum mismatch at byte 60)"));

  t = testing::BuildTrace(ThreeBlocks());
  uint32_t huge = kMaxHeaderBytes + 1;
  std::memcpy(&t.bytes[12], &huge, 4);
  r = WriteAndRead(t.bytes);
  EXPECT_FALSE(r.opened);
  EXPECT_TRUE(Contains(r.open_error, "damaged header (bad size at byte 12)"));
}

TEST_F(TraceFileTest, TruncatedLastBlockIsReportedAndEarlierBlocksDecode) {
  const TraceBytes full = testing::BuildTrace(ThreeBlocks());
  const size_t last = full.block_offsets[2];
  // Cut inside the last block's header and inside its payload.
  for (size_t cut : {last + 1, last + 31, last + 40, full.bytes.size() - 1}) {
    std::vector<uint8_t> bytes(full.bytes.begin(), full.bytes.begin() + static_cast<ptrdiff_t>(cut));
    ReadBack r = WriteAndRead(bytes);
    ASSERT_TRUE(r.opened);
    EXPECT_EQ(r.blocks.size(), 2u) << cut;
    EXPECT_EQ(r.damaged_blocks, 1u) << cut;
    EXPECT_FALSE(r.saw_final);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_TRUE(Contains(r.errors[0], path_ + ": at byte " + std::to_string(last) + ": "));
    EXPECT_TRUE(Contains(r.errors[0], "torn last block"));
    EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 1000, 1001, 1002}));
  }
}

TEST_F(TraceFileTest, BitFlipInMiddleBlockSkipsOnlyThatBlock) {
  const TraceBytes full = testing::BuildTrace(ThreeBlocks());
  const size_t mid = full.block_offsets[1], next = full.block_offsets[2];
  // A flip in the payload, then one in the header.
  for (size_t at : {mid + sizeof(BlockHeader) + 2, mid + 9}) {
    std::vector<uint8_t> bytes = full.bytes;
    testing::FlipBit(&bytes, at, 3);
    ReadBack r = WriteAndRead(bytes);
    ASSERT_EQ(r.errors.size(), 1u) << at;
    EXPECT_TRUE(Contains(r.errors[0], "at byte " + std::to_string(mid) + ": "));
    EXPECT_TRUE(Contains(r.errors[0], "resuming at byte " + std::to_string(next)));
    EXPECT_EQ(r.damaged_blocks, 1u);
    EXPECT_TRUE(r.saw_final);
    EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 2000, 2001, 2002}));
  }
}

TEST_F(TraceFileTest, ResyncSkipsBlockMagicWithoutAValidHeader) {
  TraceBytes t = testing::BuildTrace(ThreeBlocks());
  // Decoys before block 2: the magic followed by a header that fails its
  // checksum, as payload bytes might spell it.
  std::vector<uint8_t> decoys;
  for (int i = 0; i < 4; ++i) {
    BlockHeader h{};
    h.magic = kBlockMagic;
    h.compressed_size = 8;
    h.header_crc = 12345;
    const auto* p = reinterpret_cast<const uint8_t*>(&h);
    decoys.insert(decoys.end(), p, p + sizeof(h) - 3 * i);
  }
  t.bytes.insert(t.bytes.begin() + static_cast<ptrdiff_t>(t.block_offsets[2]), decoys.begin(),
                 decoys.end());
  testing::FlipBit(&t.bytes, t.block_offsets[1] + 1);  // break block 1's magic
  ReadBack r = WriteAndRead(t.bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "at byte " + std::to_string(t.block_offsets[1]) +
                                        ": bad block header; resuming at byte " +
                                        std::to_string(t.block_offsets[2] + decoys.size())));
  EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 2000, 2001, 2002}));
}

TEST_F(TraceFileTest, BlockClaimingFourGigabytesIsRejected) {
  for (bool raw : {true, false}) {
    TraceBytes t = testing::BuildTrace(ThreeBlocks());
    testing::EditBlockHeader(&t.bytes, t.block_offsets[1], [raw](BlockHeader* h) {
      (raw ? h->raw_size : h->compressed_size) = 0xffffffffu;
    });
    ReadBack r = WriteAndRead(t.bytes);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_TRUE(Contains(r.errors[0], "over the limit"));
    EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 2000, 2001, 2002}));
  }
}

// A header whose span leaves out one event (start before it, end after it,
// or an end that wraps) would break the merge's order: the block is damage.
TEST_F(TraceFileTest, EventOutsideTheHeaderSpanIsDamage) {
  const std::vector<std::function<void(BlockHeader*)>> lies = {
      [](BlockHeader* h) { h->first_start_ns += 1; },
      [](BlockHeader* h) { h->last_end_ns -= 1; },
  };
  for (size_t i = 0; i < lies.size(); ++i) {
    TraceBytes t = testing::BuildTrace(ThreeBlocks());
    testing::EditBlockHeader(&t.bytes, t.block_offsets[1], lies[i]);
    ReadBack r = WriteAndRead(t.bytes);
    ASSERT_EQ(r.errors.size(), 1u) << i;
    EXPECT_TRUE(Contains(r.errors[0], "an event lies outside the block's time span")) << i;
    EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 2000, 2001, 2002})) << i;
  }
  // A duration that takes the end past 2^64 wraps to below its start: the
  // widest span a header can state still does not hold it.
  TraceSpec spec = ThreeBlocks();
  spec.blocks[1].runs[0].events[1].dur_ns = UINT64_MAX - 500;
  TraceBytes t = testing::BuildTrace(spec);
  testing::EditBlockHeader(&t.bytes, t.block_offsets[1], [](BlockHeader* h) {
    h->first_start_ns = 0;
    h->last_end_ns = UINT64_MAX;
  });
  ReadBack r = WriteAndRead(t.bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "an event lies outside the block's time span"));
}

TEST_F(TraceFileTest, CompressedSizePastEndOfFileIsTorn) {
  TraceBytes t = testing::BuildTrace(ThreeBlocks());
  testing::EditBlockHeader(&t.bytes, t.block_offsets[2],
                           [](BlockHeader* h) { h->compressed_size += 1; });
  ReadBack r = WriteAndRead(t.bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "truncated block"));
  EXPECT_EQ(r.blocks.size(), 2u);
}

TEST_F(TraceFileTest, ZstdFrameLargerOrSmallerThanRawSizeIsDamage) {
  for (int delta : {-1, +1}) {
    TraceBytes t = testing::BuildTrace(ThreeBlocks());
    testing::EditBlockHeader(&t.bytes, t.block_offsets[0], [delta](BlockHeader* h) {
      h->raw_size = static_cast<uint32_t>(static_cast<int64_t>(h->raw_size) + delta);
    });
    ReadBack r = WriteAndRead(t.bytes);
    ASSERT_EQ(r.errors.size(), 1u) << delta;
    EXPECT_TRUE(Contains(r.errors[0], "at byte " + std::to_string(t.header_size) +
                                       ": block does not decompress"));
    EXPECT_EQ(Starts(r), (std::vector<uint64_t>{1000, 1001, 1002, 2000, 2001, 2002}));
  }
}

TEST_F(TraceFileTest, ZstdBombIsStoppedAtRawSize) {
  // 60 MiB of zeros compress to a few KiB; the header says 16 bytes.
  std::vector<uint8_t> zeros(60u << 20, 0);
  TraceSpec spec = ThreeBlocks();
  BlockSpec bomb;
  bomb.payload = zeros;
  bomb.event_count = 0;
  spec.blocks.insert(spec.blocks.begin() + 1, bomb);
  TraceBytes t = testing::BuildTrace(spec);
  testing::EditBlockHeader(&t.bytes, t.block_offsets[1], [](BlockHeader* h) { h->raw_size = 16; });
  ReadBack r = WriteAndRead(t.bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "block does not decompress"));
  EXPECT_EQ(r.blocks.size(), 3u);
}

TEST_F(TraceFileTest, ABlockCompressedPastAnyBlocksRatioIsRefusedUnread) {
  // 8 MiB of zeros from a few hundred bytes (zstd's run-length blocks): a
  // damaged trace made of such blocks took 17 s of zeroing to decode.
  std::vector<uint8_t> zeros(8u << 20, 0);
  TraceSpec spec = ThreeBlocks();
  BlockSpec bomb;
  bomb.payload = zeros;
  bomb.event_count = 0;
  spec.blocks.insert(spec.blocks.begin() + 1, bomb);
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "past any block's ratio")) << r.errors[0];
  EXPECT_EQ(r.blocks.size(), 3u);
}

TEST_F(TraceFileTest, StringLongerThanTheLimitIsDamage) {
  TraceSpec spec = ThreeBlocks();
  // (Not one letter over and over: such a block compresses past any real
  // block's ratio, and is refused before its strings are read.)
  std::string path(kMaxStringBytes + 1, 'p');
  uint32_t x = 1;
  for (char& c : path) c = static_cast<char>('a' + (x = x * 1103515245u + 12345u) % 26);
  spec.blocks[1].strings.push_back({50, path});
  ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_TRUE(Contains(r.errors[0], "string longer than the format allows"));
  EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 2000, 2001, 2002}));
}

TEST_F(TraceFileTest, EventCountThatDisagreesWithThePayloadIsDamage) {
  for (uint32_t count : {2u, 4u, 0u, 0xffffffffu}) {
    TraceSpec spec = ThreeBlocks();
    spec.blocks[1].event_count = count;
    ReadBack r = WriteAndRead(testing::BuildTrace(spec).bytes);
    ASSERT_EQ(r.errors.size(), 1u) << count;
    EXPECT_EQ(Starts(r), (std::vector<uint64_t>{0, 1, 2, 2000, 2001, 2002})) << count;
  }
}

TEST_F(TraceFileTest, GarbageAfterTheHeaderIsOneDamagedStretch) {
  TraceBytes t = testing::BuildTrace(TraceSpec{});
  for (int i = 0; i < 5000; ++i) t.bytes.push_back(static_cast<uint8_t>(i * 7919));
  ReadBack r = WriteAndRead(t.bytes);
  ASSERT_TRUE(r.opened);
  EXPECT_EQ(r.damaged_blocks, 1u);
  EXPECT_TRUE(r.blocks.empty());
}

// The block header's clock_error_ns (offset 20) carries the error bound of
// the payload's clock pair from the encoder's BlockInfo to every reader:
// the header word, BlockLocation and DecodedBlock::info. A block of an older
// writer (the word was reserved, written 0) reads as 0: unknown.
TEST_F(TraceFileTest, ClockErrorBoundTravelsInTheBlockHeader) {
  std::vector<uint8_t> bytes = EncodeFileHeader(ProcessInfo{});
  const size_t first = bytes.size();
  BlockFramer framer(3);
  std::vector<uint8_t> raw, framed;
  for (uint32_t error : {37u, 0u, 0xffffffffu}) {
    BlockEncoder enc;
    BlockInfo info;
    info.clock_mono_ns = 1000;
    info.clock_real_ns = 2000;
    info.clock_error_ns = error;
    enc.Begin(info);
    Event e = testing::MakeEvent(EventKind::Read, 5, 1);
    enc.AddEvents(1, &e, 1);
    enc.Finish(&raw);
    ASSERT_TRUE(framer.Frame(raw, 1, 0, enc.span(), &framed));
    bytes.insert(bytes.end(), framed.begin(), framed.end());
  }
  uint32_t word;
  std::memcpy(&word, bytes.data() + first + 20, 4);
  EXPECT_EQ(word, 37u);
  EXPECT_EQ(offsetof(BlockHeader, clock_error_ns), 20u);
  ASSERT_TRUE(testing::WriteFile(path_, bytes));
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.Open(path_, &error)) << error;
  std::vector<uint32_t> located, decoded;
  for (BlockLocation where; reader.NextLocation(&where, &error) == TraceReader::Status::kBlock;) {
    located.push_back(where.clock_error_ns);
    DecodedBlock block;
    ASSERT_TRUE(reader.DecodeAt(where, &block, &error)) << error;
    decoded.push_back(block.info.clock_error_ns);
    EXPECT_EQ(block.info.clock_real_ns, 2000u);
  }
  EXPECT_EQ(located, (std::vector<uint32_t>{37u, 0u, 0xffffffffu}));
  EXPECT_EQ(decoded, located);
  // Next() fills it too.
  ReadBack r = ReadTrace(path_);
  ASSERT_EQ(r.blocks.size(), 3u);
  EXPECT_EQ(r.blocks[0].info.clock_error_ns, 37u);
  // An older writer's blocks: 0.
  ReadBack old = WriteAndRead(testing::BuildTrace(ThreeBlocks()).bytes);
  ASSERT_EQ(old.blocks.size(), 3u);
  for (const DecodedBlock& b : old.blocks) EXPECT_EQ(b.info.clock_error_ns, 0u);
}

}  // namespace
}  // namespace dlprof::format
