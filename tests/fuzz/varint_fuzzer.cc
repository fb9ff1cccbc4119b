// libFuzzer target: the varint readers of varint.h, each against the plain
// one. ByteReader::Varint (bounds-checked, the reference) is compared with
// UncheckedVarint in both forms (the packing by shifts and by PEXT, where
// the processor has a fast one), StopMask64 with StopMask64Portable, and
// PackGroups with PackGroupsPext; every value read is written back with
// PutVarint and must read back the same, zigzag included.
//
// The input is read as a run of varints from its start; any difference in
// a value, a length or the verdict on a malformed varint is a crash.
#include <cstdint>
#include <cstring>
#include <vector>

#include "lib/format/cpu_features.h"
#include "lib/format/varint.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace format = dlprof::format;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The unchecked readers may look 10 bytes ahead (and the stop masks 64):
  // a copy with room after the input, zeros that end any varint there.
  std::vector<uint8_t> padded(data, data + size);
  padded.resize(size + 80, 0);
  const bool pext = format::HasFastPext();

  format::ByteReader ref(data, size);
  std::vector<uint8_t> rewritten;
  while (!ref.at_end()) {
    const size_t at = size - ref.remaining();
    const uint64_t want = ref.Varint();
    const size_t used = size - ref.remaining();
    // While 10 bytes are left, the unchecked readers must agree exactly.
    if (size - at >= 10) {
      const uint8_t* q = padded.data() + at;
      bool bad = false;
      const uint64_t v = format::UncheckedVarint<false>(&q, &bad);
      FUZZ_CHECK(bad == !ref.ok());
      if (ref.ok()) FUZZ_CHECK(v == want && static_cast<size_t>(q - padded.data()) == used);
      if (pext) {
        const uint8_t* q2 = padded.data() + at;
        bool bad2 = false;
        const uint64_t v2 = format::UncheckedVarint<true>(&q2, &bad2);
        FUZZ_CHECK(bad2 == bad && q2 == q && (bad || v2 == v));
      }
    }
    if (!ref.ok()) break;
    format::PutVarint(rewritten, want);
    FUZZ_CHECK(format::UnZigZag(format::ZigZag(static_cast<int64_t>(want))) ==
               static_cast<int64_t>(want));
  }

  // What PutVarint wrote reads back value for value, in canonical length.
  format::ByteReader back(rewritten.data(), rewritten.size());
  format::ByteReader ref2(data, size);
  while (!back.at_end()) {
    const uint64_t a = back.Varint();
    FUZZ_CHECK(back.ok() && a == ref2.Varint());
  }

  // The stop masks and the group packing, over every 64-byte window.
  for (size_t at = 0; at < size; at += 16) {
    FUZZ_CHECK(format::StopMask64(padded.data() + at) ==
               format::StopMask64Portable(padded.data() + at));
    uint64_t w;
    std::memcpy(&w, padded.data() + at, sizeof w);
    if (pext) {
      FUZZ_CHECK(format::PackGroupsPext(w) == format::PackGroups(w & 0x7f7f7f7f7f7f7f7full));
    }
    FUZZ_CHECK(format::VarintFromWord<false>(w & 0x7f7f7f7f7f7f7f7full) ==
               format::PackGroups(w & 0x7f7f7f7f7f7f7f7full));
  }
  return 0;
}
