// The Perfetto exporter's chunk compression (tools/dump/perfetto_compress.h):
// each chunk becomes one TracePacket whose compressed_packets field inflates
// back to the chunk, and chunks deflated on worker threads are written in
// the order they were added.
#include "tools/dump/perfetto_compress.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <string>
#include <vector>

namespace dlprof::dump {
namespace {

// Reads a varint at `*at`.
uint64_t Varint(const std::string& s, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[(*at)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) return v;
  }
}

// The chunks of a written trace, inflated, in file order.
std::vector<std::string> Inflate(const std::string& trace) {
  std::vector<std::string> chunks;
  size_t at = 0;
  while (at < trace.size()) {
    EXPECT_EQ(Varint(trace, &at), (1u << 3) | 2u);  // Trace.packet
    const size_t end = at + Varint(trace, &at);
    EXPECT_EQ(Varint(trace, &at), (50u << 3) | 2u);  // TracePacket.compressed_packets
    const size_t n = Varint(trace, &at);
    EXPECT_EQ(at + n, end);
    std::string out(1 << 22, '\0');
    uLongf size = out.size();
    EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                         reinterpret_cast<const Bytef*>(trace.data() + at), n),
              Z_OK);
    out.resize(size);
    chunks.push_back(out);
    at = end;
  }
  return chunks;
}

std::string Chunk(int i) {
  std::string s;
  for (int k = 0; k < 20000 + i * 37; ++k) s += static_cast<char>('a' + (k * i) % 26);
  return s;
}

std::string WriteAll(unsigned threads, int chunks) {
  char path[] = "/tmp/perfetto_compress_test.XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  {
    OutBuffer out(fd);
    ChunkCompressor compressor(&out, threads);
    for (int i = 0; i < chunks; ++i) compressor.Add(Chunk(i));
    compressor.Finish();
    EXPECT_TRUE(out.Flush());
  }
  std::string data;
  FILE* f = fopen(path, "rb");
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) data.append(buf, n);
  fclose(f);
  close(fd);
  unlink(path);
  return data;
}

TEST(PerfettoCompress, ChunksInflateBackInOrder) {
  for (unsigned threads : {0u, 1u, 3u}) {
    const std::string trace = WriteAll(threads, 25);
    const std::vector<std::string> chunks = Inflate(trace);
    ASSERT_EQ(chunks.size(), 25u) << threads;
    for (int i = 0; i < 25; ++i) EXPECT_EQ(chunks[i], Chunk(i)) << threads << " " << i;
    EXPECT_LT(trace.size(), 25u * 20000 / 4);  // repetitive text deflates well
  }
}

TEST(PerfettoCompress, NothingAddedWritesNothing) { EXPECT_EQ(WriteAll(2, 0), ""); }

}  // namespace
}  // namespace dlprof::dump
