// What the processor offers the format code, asked of cpuid once. Not
// __builtin_cpu_supports: the library may checksum from a constructor that
// runs before libgcc has read the CPU model.
#ifndef DLPROF_LIB_FORMAT_CPU_FEATURES_H_
#define DLPROF_LIB_FORMAT_CPU_FEATURES_H_

namespace dlprof::format {

// SSE4.2, for the CRC-32C instruction.
bool HasSse42();
// BMI2's PEXT at full speed: present, and not microcoded (AMD before Zen 3
// takes tens to hundreds of cycles for one).
bool HasFastPext();

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_CPU_FEATURES_H_
