// Field numbers of the Perfetto trace messages the Perfetto exporter writes,
// from Perfetto's published protos (protos/perfetto/trace/...); the same
// subset is written out as a .proto in tests/integration/perfetto_trace.proto,
// which the integration test decodes the output with.
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_FIELDS_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_FIELDS_H_

#include <cstdint>

namespace dlprof::dump::perfetto_fields {

// Trace
constexpr uint32_t kTracePacket = 1;
// TracePacket
constexpr uint32_t kPacketTimestamp = 8;
constexpr uint32_t kPacketSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kPacketTrackEvent = 11;
constexpr uint32_t kPacketInternedData = 12;
constexpr uint32_t kPacketSequenceFlags = 13;
constexpr uint32_t kPacketClockSnapshot = 6;
constexpr uint32_t kPacketCompressed = 50;       // compressed_packets (zlib deflate)
constexpr uint32_t kPacketZstdCompressed = 133;  // zstd_compressed_packets (v58 on)
constexpr uint32_t kPacketDefaults = 59;    // trace_packet_defaults
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint32_t kPacketSystemInfo = 45;
constexpr uint32_t kPacketMachineId = 98;  // one machine per host
// SystemInfo
constexpr uint32_t kSystemInfoMachineName = 17;
// ProcessTree (TracePacket.process_tree): each process's parent, which the
// trace processor keeps as process.parent_upid (a worker under its rank).
constexpr uint32_t kPacketProcessTree = 2;
constexpr uint32_t kTreeProcesses = 1;
constexpr uint32_t kTreeProcessPid = 1, kTreeProcessPpid = 2, kTreeProcessCmdline = 3;
constexpr uint64_t kSeqIncrementalStateCleared = 1, kSeqNeedsIncrementalState = 2;
// TracePacketDefaults
constexpr uint32_t kDefaultsClockId = 58;  // timestamp_clock_id
// ClockSnapshot / ClockSnapshot.Clock
constexpr uint32_t kSnapshotClocks = 1;
constexpr uint32_t kClockId = 1, kClockTimestamp = 2, kClockIncremental = 3;
constexpr uint64_t kClockBoottime = 6;
constexpr uint64_t kDeltaClock = 64;  // the first sequence-scoped clock id
// TrackDescriptor
constexpr uint32_t kTrackUuid = 1, kTrackName = 2, kTrackParentUuid = 5, kTrackCounter = 8;
constexpr uint32_t kTrackChildOrdering = 11, kTrackSiblingOrderRank = 12;
constexpr uint64_t kChildOrderingExplicit = 3;
constexpr uint32_t kTrackProcess = 3, kTrackThread = 4;
// On the root descriptor (uuid 0): processes and threads in the order of
// their sibling_order_rank (PROCESS_ORDERING_EXPLICIT, THREAD_ORDERING_EXPLICIT).
constexpr uint32_t kTrackProcessOrdering = 19, kTrackThreadOrdering = 20;
constexpr uint64_t kOrderingExplicit = 1;
// ProcessDescriptor, ThreadDescriptor
constexpr uint32_t kProcessPid = 1, kProcessCmdline = 2, kProcessName = 6;
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;
// TrackEvent
constexpr uint32_t kEventCategoryIids = 3, kEventAnnotations = 4, kEventType = 9;
constexpr uint32_t kEventNameIid = 10, kEventTrackUuid = 11, kEventCounterValue = 30;
constexpr uint32_t kEventName = 23;  // a name not interned
constexpr uint32_t kEventDoubleCounterValue = 44;
constexpr uint32_t kEventFlowIds = 47, kEventTerminatingFlowIds = 48;
constexpr uint64_t kTypeSliceBegin = 1, kTypeSliceEnd = 2, kTypeCounter = 4;
// DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1, kAnnotationInt = 4, kAnnotationStringIid = 17;
// InternedData and its entries (EventCategory, EventName,
// DebugAnnotationName, InternedString: iid = 1, name/str = 2)
constexpr uint32_t kInternedCategories = 1, kInternedEventNames = 2;
constexpr uint32_t kInternedAnnotationNames = 3, kInternedStrings = 29;
constexpr uint32_t kInternedIid = 1, kInternedName = 2;

}  // namespace dlprof::dump::perfetto_fields

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_FIELDS_H_
