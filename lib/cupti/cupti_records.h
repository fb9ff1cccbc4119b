// The CUPTI activity record structs dlprof reads, by CUPTI version.
//
// CUPTI versions its record structs (CUpti_ActivityKernel9 became ...10 in
// CUDA 13.0) and a library delivers the newest it knows. These aliases are
// the one place that names them; cmake/DlprofCuda.cmake only builds the
// plugin for a toolkit listed here, and the plugin checks at run time that
// the loaded libcupti has the same major version as the headers.
#ifndef DLPROF_LIB_CUPTI_CUPTI_RECORDS_H_
#define DLPROF_LIB_CUPTI_CUPTI_RECORDS_H_

#include <cupti_activity.h>
#include <cupti_version.h>

#if CUPTI_API_VERSION >= 130000 && CUPTI_API_VERSION < 140000
namespace dlprof::cupti {
using KernelRecord = CUpti_ActivityKernel10;
using MemcpyRecord = CUpti_ActivityMemcpy6;
using MemcpyP2PRecord = CUpti_ActivityMemcpyPtoP4;
using MemsetRecord = CUpti_ActivityMemset4;
using SyncRecord = CUpti_ActivitySynchronization2;
using ApiRecord = CUpti_ActivityAPI;
// The CUPTI API versions whose records these are: CUDA 13.x.
constexpr uint32_t kCuptiMajor = 13;
}  // namespace dlprof::cupti
#else
#error "dlprof's CUPTI plugin supports CUPTI of CUDA 13.x (CUPTI_API_VERSION 13xxyy)"
#endif

namespace dlprof::cupti {
// CUPTI_API_VERSION is a small integer up to CUDA 12.9 (v28) and xxyyzz from 13.0.
constexpr uint32_t CuptiMajorOf(uint32_t api_version) {
  return api_version >= 10000 ? api_version / 10000 : 0;
}
}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_CUPTI_RECORDS_H_
