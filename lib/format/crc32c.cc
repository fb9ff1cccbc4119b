#include "lib/format/crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "lib/format/cpu_features.h"

namespace dlprof::format {
namespace {

// Slicing-by-8 tables for the reflected Castagnoli polynomial, built at
// compile time so the runtime needs no initialisation order.
struct Crc32cTables {
  uint32_t t[8][256];
  constexpr Crc32cTables() : t() {
    constexpr uint32_t kPoly = 0x82f63b78;
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
constexpr Crc32cTables kTables{};

}  // namespace

namespace crc32c_internal {

uint32_t Table(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    uint32_t lo = c ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                       uint32_t(p[3]) << 24);
    c = kTables.t[7][lo & 0xff] ^ kTables.t[6][(lo >> 8) & 0xff] ^
        kTables.t[5][(lo >> 16) & 0xff] ^ kTables.t[4][lo >> 24] ^ kTables.t[3][p[4]] ^
        kTables.t[2][p[5]] ^ kTables.t[1][p[6]] ^ kTables.t[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size--) c = (c >> 8) ^ kTables.t[0][(c ^ *p++) & 0xff];
  return ~c;
}

#if defined(__x86_64__)
bool HardwareAvailable() { return HasSse42(); }

__attribute__((target("sse4.2"))) uint32_t Hardware(const void* data, size_t size,
                                                    uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t c = ~crc;
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; size > 0; --size) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}
#else
bool HardwareAvailable() { return false; }
uint32_t Hardware(const void* data, size_t size, uint32_t crc) { return Table(data, size, crc); }
#endif

}  // namespace crc32c_internal

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  return crc32c_internal::HardwareAvailable() ? crc32c_internal::Hardware(data, size, crc)
                                              : crc32c_internal::Table(data, size, crc);
}

}  // namespace dlprof::format
