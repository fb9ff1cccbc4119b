// make_corpus: writes the seed corpus of the trace fuzzer.
//
//   make_corpus OUT_DIR [REAL_TRACE...]
//
// From each real trace (written by libdlprof.so under a real program): the
// trace itself, truncations (inside the file header, its strings, a block
// header, a payload, one byte short), bit flips in the file header, a block
// header and a compressed payload (checksums then fail), and bit flips inside
// decompressed payloads that are then compressed and checksummed again, so
// the payload decoder sees them; and its block payloads alone (the payload
// half of the target). Then hand-made adversarial inputs: blocks that claim
// 4 GiB, a zstd frame that expands to 64 MiB (and one past the limit),
// strings without end or longer than the limit, lying counts, endless
// varints, thousands of damaged blocks, alternating huge claims.
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/crc32c.h"
#include "lib/format/trace_file.h"
#include "lib/format/varint.h"

namespace {

using Bytes = std::vector<uint8_t>;
using dlprof::BlockHeader;
using dlprof::format::Crc32c;
using dlprof::format::PutVarint;

std::string g_out;
int g_count = 0;

void Save(const std::string& name, const Bytes& data) {
  std::string path = g_out + "/" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  ++g_count;
}

Bytes ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Base(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dash = b.find('-');
  return dash == std::string::npos ? b : b.substr(0, dash);
}

Bytes Header() {
  dlprof::format::ProcessInfo info;
  info.clock_mono_ns = 1000000000;
  info.clock_real_ns = 1700000000000000000ull;
  info.pid = 4242;
  info.ppid = 1;
  info.host = "fuzzhost";
  info.exe = "/usr/bin/fuzz";
  info.cmdline = std::string("fuzz\0--x", 8);
  return dlprof::format::EncodeFileHeader(info);
}

// A block header with the given fields and correct header checksum; the
// payload checksum is of `payload` unless `payload_crc` is given.
Bytes Block(const Bytes& payload, uint32_t raw_size, uint32_t events, uint32_t flags = 0,
            uint32_t compressed_size = UINT32_MAX, const uint32_t* payload_crc = nullptr) {
  BlockHeader h{};
  h.magic = dlprof::kBlockMagic;
  h.flags = flags;
  h.compressed_size =
      compressed_size == UINT32_MAX ? static_cast<uint32_t>(payload.size()) : compressed_size;
  h.raw_size = raw_size;
  h.event_count = events;
  h.last_end_ns = UINT64_MAX;  // the widest span
  h.payload_crc = payload_crc ? *payload_crc : Crc32c(payload.data(), payload.size());
  h.header_crc = Crc32c(&h, offsetof(BlockHeader, header_crc));
  Bytes out(sizeof(h));
  std::memcpy(out.data(), &h, sizeof(h));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes Compress(const Bytes& raw) {
  Bytes out(ZSTD_compressBound(raw.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), 19);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

// A whole framed block of `raw` as the writer makes it.
Bytes Framed(const Bytes& raw, uint32_t events, uint32_t flags = 0) {
  dlprof::format::BlockFramer framer(3);
  Bytes out;
  // The widest span: the payload decides whether the block is sound.
  framer.Frame(raw, events, flags, {0, UINT64_MAX, 0}, &out);
  return out;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A valid payload of `n` events of one thread, with one string.
Bytes GoodPayload(uint32_t n) {
  dlprof::format::BlockEncoder enc;
  dlprof::format::BlockInfo info;
  info.clock_mono_ns = 1000000000;
  info.clock_real_ns = 1700000000000000000ull;
  enc.Begin(info);
  enc.AddString(1, "/data/train/shard-0000.bin", 26);
  std::vector<dlprof::Event> events(n);
  for (uint32_t i = 0; i < n; ++i) {
    dlprof::Event& e = events[i];
    e = {};
    e.kind = static_cast<uint16_t>(dlprof::EventKind::Pread);
    e.start_ns = 1000000000 + i * 1000;
    e.dur_ns = 500;
    e.ret = 4096;
    e.offset = int64_t{i} * 4096;
    e.size = 4096;
    e.file = 1;
    e.fd = 3;
  }
  enc.AddEvents(77, events.data(), events.size());
  Bytes raw;
  enc.Finish(&raw);
  return raw;
}

// Payload built by hand: the fixed fields, then `rest`.
Bytes HandPayload(const Bytes& rest) {
  Bytes p;
  PutVarint(p, 1000000000);  // clock_mono
  PutVarint(p, 1700000000);  // clock_real
  PutVarint(p, 0);           // rank (zigzag 0)
  PutVarint(p, 0);           // dropped
  p.insert(p.end(), rest.begin(), rest.end());
  return p;
}

Bytes WithCount(uint32_t events, const Bytes& payload) {
  Bytes out(4);
  std::memcpy(out.data(), &events, 4);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

struct Parsed {
  Bytes header;
  struct Blk {
    size_t at;
    BlockHeader h;
    Bytes raw;  // decompressed payload
  };
  std::vector<Blk> blocks;
};

Parsed Parse(const Bytes& file) {
  Parsed p;
  dlprof::FileHeader fh;
  std::memcpy(&fh, file.data(), sizeof(fh));
  p.header.assign(file.begin(), file.begin() + fh.header_size);
  size_t at = fh.header_size;
  while (at + sizeof(BlockHeader) <= file.size()) {
    Parsed::Blk b;
    b.at = at;
    std::memcpy(&b.h, file.data() + at, sizeof(b.h));
    if (b.h.magic != dlprof::kBlockMagic || at + sizeof(b.h) + b.h.compressed_size > file.size()) {
      break;
    }
    b.raw.resize(b.h.raw_size);
    ZSTD_decompress(b.raw.data(), b.raw.size(), file.data() + at + sizeof(b.h),
                    b.h.compressed_size);
    p.blocks.push_back(std::move(b));
    at += sizeof(BlockHeader) + b.h.compressed_size;
  }
  return p;
}

void FromRealTrace(const std::string& path, int index) {
  Bytes file = ReadFile(path);
  if (file.size() < sizeof(dlprof::FileHeader)) return;
  std::string base = Base(path) + std::to_string(index);
  Save("real-" + base, file);
  Parsed p = Parse(file);
  size_t hs = p.header.size();
  // Truncations.
  std::vector<size_t> cuts = {10, 63, hs - 3, hs + 5, hs + 31, file.size() - 1};
  if (!p.blocks.empty()) {
    cuts.push_back(p.blocks[0].at + sizeof(BlockHeader) + p.blocks[0].h.compressed_size / 2);
  }
  for (size_t cut : cuts) {
    if (cut < file.size()) Save("trunc-" + base + "-" + std::to_string(cut), Bytes(file.begin(), file.begin() + cut));
  }
  // Raw bit flips (the checksums catch these).
  std::vector<size_t> flips = {9, 20, 40, hs + 2, hs + 9, hs + 14, hs + 40};
  if (!p.blocks.empty()) flips.push_back(p.blocks.back().at + 45);
  for (size_t at : flips) {
    if (at >= file.size()) continue;
    Bytes f = file;
    f[at] ^= 0x10;
    Save("flip-" + base + "-" + std::to_string(at), f);
  }
  // Deep flips: a bit of a decompressed payload, then framed again with
  // valid checksums, so that DecodeBlockPayload sees the damage.
  for (size_t bi = 0; bi < p.blocks.size() && bi < 2; ++bi) {
    const auto& b = p.blocks[bi];
    Save("payload-" + base + "-" + std::to_string(bi), WithCount(b.h.event_count, b.raw));
    for (int k = 0; k < 12; ++k) {
      if (b.raw.empty()) break;
      size_t at = (b.raw.size() * static_cast<size_t>(k)) / 12;
      Bytes raw = b.raw;
      raw[at] ^= static_cast<uint8_t>(1u << (k % 8));
      Bytes rebuilt = Cat({p.header, Framed(raw, b.h.event_count, b.h.flags)});
      Save("deepflip-" + base + "-b" + std::to_string(bi) + "-" + std::to_string(at), rebuilt);
    }
    // The event count one off either way.
    Save("count-" + base + "-b" + std::to_string(bi) + "-plus1",
         Cat({p.header, Framed(b.raw, b.h.event_count + 1, b.h.flags)}));
    if (b.h.event_count > 0) {
      Save("count-" + base + "-b" + std::to_string(bi) + "-minus1",
           Cat({p.header, Framed(b.raw, b.h.event_count - 1, b.h.flags)}));
    }
  }
}

void Adversarial() {
  const Bytes header = Header();
  const Bytes good = GoodPayload(100);
  const Bytes good_block = Framed(good, 100, dlprof::kBlockFlagFinal);
  Save("adv-good", Cat({header, good_block}));
  Save("adv-empty", Bytes());
  Save("adv-magic-only", Bytes(dlprof::kFileMagic, dlprof::kFileMagic + 8));
  Save("adv-header-only", header);

  // A block that claims 4 GiB (raw), 4 GiB (compressed), and both.
  Bytes z = Compress(good);
  Save("adv-claims-4gib-raw", Cat({header, Block(z, UINT32_MAX, 100)}));
  Save("adv-claims-4gib-compressed", Cat({header, Block(z, good.size(), 100, 0, UINT32_MAX - 1)}));
  Save("adv-claims-4gib-both", Cat({header, Block(z, UINT32_MAX, 100, 0, UINT32_MAX - 1)}));
  Save("adv-claims-4g-events", Cat({header, Block(z, good.size(), UINT32_MAX)}));
  // Exactly at and one past the raw size limit.
  Bytes zeros(dlprof::kMaxBlockRawBytes, 0);
  Bytes zz = Compress(zeros);
  Save("adv-zstd-bomb-64mib", Cat({header, Block(zz, dlprof::kMaxBlockRawBytes, 0)}));
  zeros.push_back(0);
  Save("adv-zstd-bomb-over-limit",
       Cat({header, Block(Compress(zeros), dlprof::kMaxBlockRawBytes + 1, 0)}));
  // A frame that expands to 64 MiB while the header claims 100 bytes, and
  // the other way round.
  Save("adv-zstd-bigger-than-claimed", Cat({header, Block(zz, 100, 0)}));
  Save("adv-zstd-smaller-than-claimed", Cat({header, Block(z, dlprof::kMaxBlockRawBytes, 100)}));
  // Alternating huge and tiny claims (a reader that re-zeroes its buffer
  // for every block would spend seconds here).
  {
    Bytes f = header;
    for (int i = 0; i < 200; ++i) {
      f = Cat({f, Block(z, i % 2 ? dlprof::kMaxBlockRawBytes : 8, 100)});
    }
    Save("adv-alternating-claims", f);
  }
  // Thousands of blocks with good headers and bad payload checksums, and
  // thousands of block magics with bad header checksums (resync).
  {
    Bytes f = header;
    uint32_t bad_crc = 1;
    for (int i = 0; i < 3000; ++i) f = Cat({f, Block(Bytes(16, 0xAB), 16, 1, 0, UINT32_MAX, &bad_crc)});
    f = Cat({f, good_block});
    Save("adv-many-damaged-blocks", f);
    Bytes g = header;
    for (int i = 0; i < 20000; ++i) {
      uint32_t m = dlprof::kBlockMagic;
      g.insert(g.end(), reinterpret_cast<uint8_t*>(&m), reinterpret_cast<uint8_t*>(&m) + 4);
    }
    g = Cat({g, good_block});
    Save("adv-many-magics", g);
  }
  // File header: sizes and versions.
  auto header_with = [&](size_t off, uint32_t v, bool fix_crc) {
    Bytes h = header;
    std::memcpy(h.data() + off, &v, 4);
    if (fix_crc) {
      uint32_t zero = 0;
      std::memcpy(h.data() + 60, &zero, 4);
      uint32_t crc = Crc32c(h.data(), h.size());
      std::memcpy(h.data() + 60, &crc, 4);
    }
    return Cat({h, good_block});
  };
  Save("adv-header-size-huge", header_with(12, UINT32_MAX, false));
  Save("adv-header-size-small", header_with(12, 64, true));
  Save("adv-version-newer", header_with(8, dlprof::kFormatVersion + 1, true));
  Save("adv-version-zero", header_with(8, 0, true));
  // Header strings: a length past the header's end (with a valid checksum).
  Save("adv-header-string-overrun", header_with(64, 60000, true));
  Save("adv-header-string-4gib", header_with(64, UINT32_MAX, true));

  // Payloads, each framed validly.
  auto framed = [&](const std::string& name, const Bytes& payload, uint32_t events) {
    Save("adv-" + name, Cat({header, Framed(payload, events)}));
    Save("pl-" + name, WithCount(events, payload));
  };
  {  // A string longer than the format allows, and one that runs past the end.
    Bytes r;
    PutVarint(r, 1);
    PutVarint(r, 1);
    PutVarint(r, dlprof::kMaxStringBytes + 1);
    r.insert(r.end(), 64, 'x');
    framed("string-too-long", HandPayload(r), 0);
    Bytes s;
    PutVarint(s, 1);
    PutVarint(s, 1);
    PutVarint(s, 1000);
    s.insert(s.end(), 40, 'x');
    framed("string-no-end", HandPayload(s), 0);
    Bytes t;
    PutVarint(t, UINT64_MAX);
    framed("string-count-huge", HandPayload(t), 0);
    Bytes u;  // a string with no terminator in a header (no length) at all
    PutVarint(u, 1);
    framed("string-cut", HandPayload(u), 0);
  }
  {  // Thread runs that lie.
    Bytes r;
    PutVarint(r, 0);           // strings
    PutVarint(r, 2);           // runs
    PutVarint(r, 10);          // tid
    PutVarint(r, UINT64_MAX);  // events in run
    framed("runs-huge", HandPayload(r), 5);
    Bytes s;
    PutVarint(s, 0);
    PutVarint(s, 1000000);
    framed("runs-count-huge", HandPayload(s), 5);
  }
  {  // Column lengths past the end, and an endless varint.
    Bytes r;
    PutVarint(r, 0);
    PutVarint(r, 1);
    PutVarint(r, 10);
    PutVarint(r, 1);
    PutVarint(r, UINT64_MAX);  // kind column length
    framed("column-too-long", HandPayload(r), 1);
    Bytes s(20, 0xff);
    framed("endless-varint", s, 1);
    Bytes t;
    PutVarint(t, 0);
    PutVarint(t, 1);
    PutVarint(t, 10);
    PutVarint(t, 3);
    for (int c = 0; c < dlprof::kColumnCount; ++c) {
      PutVarint(t, 3);
      t.insert(t.end(), {0xff, 0xff, 0xff});  // unterminated varints inside
    }
    framed("column-bad-varints", HandPayload(t), 3);
  }
  {  // Events with extreme values: every column's maximum.
    Bytes t;
    PutVarint(t, 0);
    PutVarint(t, 1);
    PutVarint(t, 10);
    PutVarint(t, 4);
    for (int c = 0; c < dlprof::kColumnCount; ++c) {
      Bytes col;
      for (int i = 0; i < 4; ++i) PutVarint(col, i % 2 ? UINT64_MAX : UINT64_MAX / 2);
      PutVarint(t, col.size());
      t.insert(t.end(), col.begin(), col.end());
    }
    framed("extreme-values", HandPayload(t), 4);
  }
  // The good payload alone, and with trailing bytes.
  Save("pl-good", WithCount(100, good));
  Bytes trailing = good;
  trailing.push_back(0);
  framed("trailing-byte", trailing, 100);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: make_corpus OUT_DIR [REAL_TRACE...]\n");
    return 2;
  }
  g_out = argv[1];
  for (int i = 2; i < argc; ++i) FromRealTrace(argv[i], i - 2);
  Adversarial();
  printf("make_corpus: %d inputs in %s\n", g_count, g_out.c_str());
  return 0;
}
