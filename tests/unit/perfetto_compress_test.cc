// The Perfetto exporter's chunk compression (tools/dump/perfetto_compress.h):
// each chunk becomes one TracePacket whose compressed_packets (deflate) or
// zstd_compressed_packets field decompresses back to the chunk, with zlib
// and libzstd rather than the writer's libdeflate; chunks compressed on
// worker threads are written in the order they were added; uncompressed,
// the chunks are the file.
#include "tools/dump/perfetto_compress.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

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

// The chunks of a written trace, decompressed, in file order.
std::vector<std::string> Decompress(const std::string& trace, PerfettoCompression codec) {
  const uint64_t field = codec == PerfettoCompression::kZstd ? 133 : 50;
  std::vector<std::string> chunks;
  size_t at = 0;
  while (at < trace.size()) {
    EXPECT_EQ(Varint(trace, &at), (1u << 3) | 2u);  // Trace.packet
    const size_t end = at + Varint(trace, &at);
    EXPECT_EQ(Varint(trace, &at), (field << 3) | 2u);  // TracePacket.(zstd_)compressed_packets
    const size_t n = Varint(trace, &at);
    EXPECT_EQ(at + n, end);
    std::string out(1 << 22, '\0');
    if (codec == PerfettoCompression::kZstd) {
      const size_t size = ZSTD_decompress(out.data(), out.size(), trace.data() + at, n);
      EXPECT_FALSE(ZSTD_isError(size));
      out.resize(ZSTD_isError(size) ? 0 : size);
    } else {
      uLongf size = out.size();
      EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                           reinterpret_cast<const Bytef*>(trace.data() + at), n),
                Z_OK);
      out.resize(size);
    }
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

std::string WriteAll(unsigned threads, int chunks,
                     PerfettoCompression codec = PerfettoCompression::kDeflate) {
  char path[] = "/tmp/perfetto_compress_test.XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  {
    OutBuffer out(fd);
    ChunkCompressor compressor(&out, threads, codec);
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

TEST(PerfettoCompress, ChunksDecompressBackInOrder) {
  for (PerfettoCompression codec : {PerfettoCompression::kDeflate, PerfettoCompression::kZstd}) {
    for (unsigned threads : {0u, 1u, 3u}) {
      const std::string trace = WriteAll(threads, 25, codec);
      const std::vector<std::string> chunks = Decompress(trace, codec);
      ASSERT_EQ(chunks.size(), 25u) << threads;
      for (int i = 0; i < 25; ++i) EXPECT_EQ(chunks[i], Chunk(i)) << threads << " " << i;
      EXPECT_LT(trace.size(), 25u * 20000 / 4);  // repetitive text compresses well
    }
  }
}

TEST(PerfettoCompress, UncompressedChunksAreTheFile) {
  std::string all;
  for (int i = 0; i < 5; ++i) all += Chunk(i);
  EXPECT_EQ(WriteAll(0, 5, PerfettoCompression::kNone), all);
  EXPECT_EQ(WriteAll(2, 5, PerfettoCompression::kNone), all);
}

TEST(PerfettoCompress, CodecNames) {
  PerfettoCompression c = PerfettoCompression::kNone;
  EXPECT_TRUE(ParsePerfettoCompression("zstd", &c));
  EXPECT_EQ(c, PerfettoCompression::kZstd);
  EXPECT_TRUE(ParsePerfettoCompression("deflate", &c));
  EXPECT_EQ(c, PerfettoCompression::kDeflate);
  EXPECT_TRUE(ParsePerfettoCompression("none", &c));
  EXPECT_EQ(c, PerfettoCompression::kNone);
  EXPECT_FALSE(ParsePerfettoCompression("gzip", &c));
  EXPECT_FALSE(ParsePerfettoCompression("", &c));
}

TEST(PerfettoCompress, NothingAddedWritesNothing) { EXPECT_EQ(WriteAll(2, 0), ""); }

}  // namespace
}  // namespace dlprof::dump
