// CRC-32C (Castagnoli), the checksum of headers and block payloads.
#ifndef DLPROF_LIB_FORMAT_CRC32C_H_
#define DLPROF_LIB_FORMAT_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace dlprof::format {

// Returns the CRC-32C of `data`, continuing from `crc` (0 to start). Uses
// the processor's CRC32 instruction where it has one (SSE4.2).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// The two ways Crc32c computes, for tests that check one against the other.
namespace crc32c_internal {
uint32_t Table(const void* data, size_t size, uint32_t crc);
bool HardwareAvailable();
uint32_t Hardware(const void* data, size_t size, uint32_t crc);  // only if available
}  // namespace crc32c_internal

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_CRC32C_H_
