// CRC-32C (Castagnoli), the checksum of headers and block payloads.
#ifndef DLPROF_LIB_FORMAT_CRC32C_H_
#define DLPROF_LIB_FORMAT_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace dlprof::format {

// Returns the CRC-32C of `data`, continuing from `crc` (0 to start).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_CRC32C_H_
