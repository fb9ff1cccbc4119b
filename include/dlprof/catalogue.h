// The one catalogue of event kinds.
//
// Every traced function has exactly one entry here. The runtime's enum, the
// kind names that dlprof-dump prints, the category and the operation class
// that the analysis uses are all generated from this list, so a new wrapper
// is one line here plus its wrapper body. What each kind is to a reader (GPU
// work, where its bytes are, whose thread...) is derived from its category
// and class once, in lib/format/event_rules.h.
//
//   X(code, Ident, "name as called", category, op_class)
//
// `code` is the on-disk value of the kind. It is part of the trace format:
// never renumber or reuse a code, only append. Codes are grouped by category
// in ranges (POSIX 1-99, STDIO 100-149, MPI-IO 150-199, CUDA and app
// 200-249 with GPUDirect Storage in 210-229, the runtime's own 248-255,
// asynchronous I/O requests 256-319: io_uring 256-271, Linux AIO 272-287,
// POSIX AIO 288-303; STDIO again from 320) to leave room for growth. Codes
// from 256 on share the
// encoder's per-kind timing slots (kind mod 256) with the codes 256 below
// them: docs/FORMAT.md, "Columns".
#ifndef DLPROF_CATALOGUE_H_
#define DLPROF_CATALOGUE_H_

// clang-format off
// Reading through memory maps (lib/core/map_faults.h). major_fault is no
// call: a page fault of a thread on a mapped file that had to read it, told
// by the kernel (perf_event_open): file and offset name the page, size is
// its bytes, ret the bytes brought in for it, aux the faulting address;
// start..end the time it held the thread. map_readahead: the pages the
// kernel read ahead for a thread's reads through a map without a major
// fault (a sequential scan), in ret, on the file; no time. region_faults (a record of the
// runtime) closes an annotation region of a thread that faulted in it: file
// is the region's name, size its major faults, ret its time off the CPU,
// aux its time on the CPU, fd 1 when those faults are major_fault events.
// mremap: names the mapping's file; offset its file offset, size the new
// length, aux the old one. maps_untracked (the runtime's): ret mappings of
// traced files the process's map table could not hold since the last one
// (their faults are not major_fault events). faults_unwatched (the
// runtime's): the thread tid's faults are not major_fault events, the
// kernel having refused its buffer (locked memory spent: ret the errno);
// size 1 when it was known to read through a map, 0 when it was only
// watched in case. map_waits_lost (the runtime's): ret records of the
// thread tid's minor faults its buffer could not hold since the last one
// (it touched fresh memory faster than the flusher read them): a wait for
// a page being read ahead among them is no map_wait event.
#define DLPROF_POSIX_EVENTS(X)                                        \
  X(  1, Open,             "open",             Posix, Open)           \
  X(  2, Open64,           "open64",           Posix, Open)           \
  X(  3, Openat,           "openat",           Posix, Open)           \
  X(  4, Openat64,         "openat64",         Posix, Open)           \
  X(  5, Creat,            "creat",            Posix, Open)           \
  X(  6, Creat64,          "creat64",          Posix, Open)           \
  X(  7, Open2Chk,         "__open_2",         Posix, Open)           \
  X(  8, Open64_2Chk,      "__open64_2",       Posix, Open)           \
  X(  9, Openat2Chk,       "__openat_2",       Posix, Open)           \
  X( 10, Openat64_2Chk,    "__openat64_2",     Posix, Open)           \
  X( 11, Close,            "close",            Posix, Close)          \
  X( 12, Read,             "read",             Posix, Read)           \
  X( 13, Write,            "write",            Posix, Write)          \
  X( 14, Pread,            "pread",            Posix, Read)           \
  X( 15, Pread64,          "pread64",          Posix, Read)           \
  X( 16, Pwrite,           "pwrite",           Posix, Write)          \
  X( 17, Pwrite64,         "pwrite64",         Posix, Write)          \
  X( 18, Readv,            "readv",            Posix, Read)           \
  X( 19, Writev,           "writev",           Posix, Write)          \
  X( 20, Preadv,           "preadv",           Posix, Read)           \
  X( 21, Pwritev,          "pwritev",          Posix, Write)          \
  X( 22, Preadv2,          "preadv2",          Posix, Read)           \
  X( 23, Pwritev2,         "pwritev2",         Posix, Write)          \
  X( 24, ReadChk,          "__read_chk",       Posix, Read)           \
  X( 25, PreadChk,         "__pread_chk",      Posix, Read)           \
  X( 26, Pread64Chk,       "__pread64_chk",    Posix, Read)           \
  X( 27, Lseek,            "lseek",            Posix, Seek)           \
  X( 28, Lseek64,          "lseek64",          Posix, Seek)           \
  X( 29, Fsync,            "fsync",            Posix, Sync)           \
  X( 30, Fdatasync,        "fdatasync",        Posix, Sync)           \
  X( 31, Ftruncate,        "ftruncate",        Posix, Meta)           \
  X( 32, Ftruncate64,      "ftruncate64",      Posix, Meta)           \
  X( 33, Truncate,         "truncate",         Posix, Meta)           \
  X( 34, Truncate64,       "truncate64",       Posix, Meta)           \
  X( 35, Fallocate,        "fallocate",        Posix, Meta)           \
  X( 36, Fallocate64,      "fallocate64",      Posix, Meta)           \
  X( 37, PosixFallocate,   "posix_fallocate",  Posix, Meta)           \
  X( 38, PosixFallocate64, "posix_fallocate64",Posix, Meta)           \
  X( 39, PosixFadvise,     "posix_fadvise",    Posix, Meta)           \
  X( 40, PosixFadvise64,   "posix_fadvise64",  Posix, Meta)           \
  X( 41, Stat,             "stat",             Posix, Meta)           \
  X( 42, Stat64,           "stat64",           Posix, Meta)           \
  X( 43, Lstat,            "lstat",            Posix, Meta)           \
  X( 44, Lstat64,          "lstat64",          Posix, Meta)           \
  X( 45, Fstat,            "fstat",            Posix, Meta)           \
  X( 46, Fstat64,          "fstat64",          Posix, Meta)           \
  X( 47, Fstatat,          "fstatat",          Posix, Meta)           \
  X( 48, Fstatat64,        "fstatat64",        Posix, Meta)           \
  X( 49, Statx,            "statx",            Posix, Meta)           \
  X( 50, Xstat,            "__xstat",          Posix, Meta)           \
  X( 51, Xstat64,          "__xstat64",        Posix, Meta)           \
  X( 52, Lxstat,           "__lxstat",         Posix, Meta)           \
  X( 53, Lxstat64,         "__lxstat64",       Posix, Meta)           \
  X( 54, Fxstat,           "__fxstat",         Posix, Meta)           \
  X( 55, Fxstat64,         "__fxstat64",       Posix, Meta)           \
  X( 56, Fxstatat,         "__fxstatat",       Posix, Meta)           \
  X( 57, Fxstatat64,       "__fxstatat64",     Posix, Meta)           \
  X( 58, Access,           "access",           Posix, Meta)           \
  X( 59, Faccessat,        "faccessat",        Posix, Meta)           \
  X( 60, Unlink,           "unlink",           Posix, Meta)           \
  X( 61, Unlinkat,         "unlinkat",         Posix, Meta)           \
  X( 62, Rename,           "rename",           Posix, Meta)           \
  X( 63, Renameat,         "renameat",         Posix, Meta)           \
  X( 64, Renameat2,        "renameat2",        Posix, Meta)           \
  X( 65, Mkdir,            "mkdir",            Posix, Meta)           \
  X( 66, Mkdirat,          "mkdirat",          Posix, Meta)           \
  X( 67, Rmdir,            "rmdir",            Posix, Meta)           \
  X( 68, Opendir,          "opendir",          Posix, Meta)           \
  X( 69, Fdopendir,        "fdopendir",        Posix, Meta)           \
  X( 70, Readdir,          "readdir",          Posix, Meta)           \
  X( 71, Readdir64,        "readdir64",        Posix, Meta)           \
  X( 72, Closedir,         "closedir",         Posix, Meta)           \
  X( 73, Mmap,             "mmap",             Posix, Mmap)           \
  X( 74, Mmap64,           "mmap64",           Posix, Mmap)           \
  X( 75, Munmap,           "munmap",           Posix, Mmap)           \
  X( 76, Msync,            "msync",            Posix, Sync)           \
  X( 77, Dup,              "dup",              Posix, Dup)            \
  X( 78, Dup2,             "dup2",             Posix, Dup)            \
  X( 79, Dup3,             "dup3",             Posix, Dup)            \
  X( 80, Fcntl,            "fcntl",            Posix, Dup)            \
  X( 81, Fcntl64,          "fcntl64",          Posix, Dup)            \
  X( 82, Sendfile,         "sendfile",         Posix, Read)           \
  X( 83, Sendfile64,       "sendfile64",       Posix, Read)           \
  X( 84, CopyFileRange,    "copy_file_range",  Posix, Read)           \
  X( 85, Preadv64,         "preadv64",         Posix, Read)           \
  X( 86, Pwritev64,        "pwritev64",        Posix, Write)          \
  X( 87, Preadv64v2,       "preadv64v2",       Posix, Read)           \
  X( 88, Pwritev64v2,      "pwritev64v2",      Posix, Write)          \
  X( 89, MajorFault,       "major_fault",      Posix, Fault)          \
  X( 90, RegionFaults,     "region_faults",    Internal, Other)       \
  X( 91, Mremap,           "mremap",           Posix, Mmap)           \
  X( 92, MapReadahead,     "map_readahead",    Posix, Fault)          \
  X( 93, Sync,             "sync",             Posix, Sync)           \
  X( 94, Syncfs,           "syncfs",           Posix, Sync)           \
  X( 95, MapsUntracked,    "maps_untracked",   Internal, Other)       \
  X( 96, FaultsUnwatched,  "faults_unwatched", Internal, Other)       \
  X( 97, Readahead,        "readahead",        Posix, Meta)           \
  X( 98, MapWait,          "map_wait",         Posix, Fault)          \
  X( 99, MapWaitsLost,     "map_waits_lost",   Internal, Other)

// STDIO streams: the event names the stream's fd and file; aux is the
// number of bytes the call really moved.
#define DLPROF_STDIO_EVENTS(X)                                        \
  X(100, Fopen,           "fopen",            Stdio, Open) \
  X(101, Fopen64,         "fopen64",          Stdio, Open) \
  X(102, Fdopen,          "fdopen",           Stdio, Open) \
  X(103, Freopen,         "freopen",          Stdio, Open) \
  X(104, Freopen64,       "freopen64",        Stdio, Open) \
  X(105, Fclose,          "fclose",           Stdio, Close) \
  X(106, Fread,           "fread",            Stdio, Read) \
  X(107, FreadUnlocked,   "fread_unlocked",   Stdio, Read) \
  X(108, FreadChk,        "__fread_chk",      Stdio, Read) \
  X(109, Fwrite,          "fwrite",           Stdio, Write) \
  X(110, FwriteUnlocked,  "fwrite_unlocked",  Stdio, Write) \
  X(111, Fgets,           "fgets",            Stdio, Read) \
  X(112, FgetsChk,        "__fgets_chk",      Stdio, Read) \
  X(113, Fputs,           "fputs",            Stdio, Write) \
  X(114, Fgetc,           "fgetc",            Stdio, Read) \
  X(115, Getc,            "getc",             Stdio, Read) \
  X(116, Fputc,           "fputc",            Stdio, Write) \
  X(117, Putc,            "putc",             Stdio, Write) \
  X(118, Getline,         "getline",          Stdio, Read) \
  X(119, Getdelim,        "getdelim",         Stdio, Read) \
  X(120, Fprintf,         "fprintf",          Stdio, Write) \
  X(121, Vfprintf,        "vfprintf",         Stdio, Write) \
  X(122, FprintfChk,      "__fprintf_chk",    Stdio, Write) \
  X(123, VfprintfChk,     "__vfprintf_chk",   Stdio, Write) \
  X(124, Fscanf,          "fscanf",           Stdio, Read) \
  X(125, Fseek,           "fseek",            Stdio, Seek) \
  X(126, Fseeko,          "fseeko",           Stdio, Seek) \
  X(127, Fseeko64,        "fseeko64",         Stdio, Seek) \
  X(128, Ftell,           "ftell",            Stdio, Seek) \
  X(129, Ftello,          "ftello",           Stdio, Seek) \
  X(130, Ftello64,        "ftello64",         Stdio, Seek) \
  X(131, Rewind,          "rewind",           Stdio, Seek) \
  X(132, Fgetpos,         "fgetpos",          Stdio, Seek) \
  X(133, Fsetpos,         "fsetpos",          Stdio, Seek) \
  X(134, Fflush,          "fflush",           Stdio, Sync) \
  X(135, Printf,          "printf",           Stdio, Write) \
  X(136, Vprintf,         "vprintf",          Stdio, Write) \
  X(137, PrintfChk,       "__printf_chk",     Stdio, Write) \
  X(138, VprintfChk,      "__vprintf_chk",    Stdio, Write) \
  X(139, Puts,            "puts",             Stdio, Write) \
  X(140, Putchar,         "putchar",          Stdio, Write) \
  X(141, Dprintf,         "dprintf",          Stdio, Write) \
  X(142, Vdprintf,        "vdprintf",         Stdio, Write) \
  X(143, Vfscanf,         "vfscanf",          Stdio, Read) \
  X(144, FgetsUnlocked,   "fgets_unlocked",   Stdio, Read) \
  X(145, FputsUnlocked,   "fputs_unlocked",   Stdio, Write) \
  X(146, FreadUnlockedChk, "__fread_unlocked_chk", Stdio, Read) \
  X(147, FgetsUnlockedChk, "__fgets_unlocked_chk", Stdio, Read) \
  X(148, Getchar,         "getchar",          Stdio, Read) \
  X(149, Scanf,           "scanf",            Stdio, Read) \
  /* (the range is full: the stdio kinds go on at 320) */ \
  X(320, Vscanf,          "vscanf",           Stdio, Read) \
  X(321, GetcUnlocked,    "getc_unlocked",    Stdio, Read) \
  X(322, FgetcUnlocked,   "fgetc_unlocked",   Stdio, Read) \
  X(323, GetcharUnlocked, "getchar_unlocked", Stdio, Read) \
  X(324, PutcUnlocked,    "putc_unlocked",    Stdio, Write) \
  X(325, FputcUnlocked,   "fputc_unlocked",   Stdio, Write) \
  X(326, PutcharUnlocked, "putchar_unlocked", Stdio, Write)

// MPI-IO: offset and size in bytes (count x type size), aux the bytes
// moved, fd the size of the file's communicator, ret the MPI return code.
#define DLPROF_MPIIO_EVENTS(X)                                        \
  X(150, MpiFileOpen,               "MPI_File_open",                 Mpiio, Open) \
  X(151, MpiFileClose,              "MPI_File_close",                Mpiio, Close) \
  X(152, MpiFileDelete,             "MPI_File_delete",               Mpiio, Meta) \
  X(153, MpiFileSync,               "MPI_File_sync",                 Mpiio, Sync) \
  X(154, MpiFileSetSize,            "MPI_File_set_size",             Mpiio, Meta) \
  X(155, MpiFilePreallocate,        "MPI_File_preallocate",          Mpiio, Meta) \
  X(156, MpiFileGetSize,            "MPI_File_get_size",             Mpiio, Meta) \
  X(157, MpiFileSetView,            "MPI_File_set_view",             Mpiio, Meta) \
  X(158, MpiFileSeek,               "MPI_File_seek",                 Mpiio, Seek) \
  X(159, MpiFileSeekShared,         "MPI_File_seek_shared",          Mpiio, Seek) \
  X(160, MpiFileRead,               "MPI_File_read",                 Mpiio, Read) \
  X(161, MpiFileReadAt,             "MPI_File_read_at",              Mpiio, Read) \
  X(162, MpiFileReadAll,            "MPI_File_read_all",             Mpiio, Read) \
  X(163, MpiFileReadAtAll,          "MPI_File_read_at_all",          Mpiio, Read) \
  X(164, MpiFileReadShared,         "MPI_File_read_shared",          Mpiio, Read) \
  X(165, MpiFileReadOrdered,        "MPI_File_read_ordered",         Mpiio, Read) \
  X(166, MpiFileWrite,              "MPI_File_write",                Mpiio, Write) \
  X(167, MpiFileWriteAt,            "MPI_File_write_at",             Mpiio, Write) \
  X(168, MpiFileWriteAll,           "MPI_File_write_all",            Mpiio, Write) \
  X(169, MpiFileWriteAtAll,         "MPI_File_write_at_all",         Mpiio, Write) \
  X(170, MpiFileWriteShared,        "MPI_File_write_shared",         Mpiio, Write) \
  X(171, MpiFileWriteOrdered,       "MPI_File_write_ordered",        Mpiio, Write) \
  X(172, MpiFileIread,              "MPI_File_iread",                Mpiio, Read) \
  X(173, MpiFileIreadAt,            "MPI_File_iread_at",             Mpiio, Read) \
  X(174, MpiFileIreadAll,           "MPI_File_iread_all",            Mpiio, Read) \
  X(175, MpiFileIreadAtAll,         "MPI_File_iread_at_all",         Mpiio, Read) \
  X(176, MpiFileIreadShared,        "MPI_File_iread_shared",         Mpiio, Read) \
  X(177, MpiFileIwrite,             "MPI_File_iwrite",               Mpiio, Write) \
  X(178, MpiFileIwriteAt,           "MPI_File_iwrite_at",            Mpiio, Write) \
  X(179, MpiFileIwriteAll,          "MPI_File_iwrite_all",           Mpiio, Write) \
  X(180, MpiFileIwriteAtAll,        "MPI_File_iwrite_at_all",        Mpiio, Write) \
  X(181, MpiFileIwriteShared,       "MPI_File_iwrite_shared",        Mpiio, Write) \
  X(182, MpiFileReadAllBegin,       "MPI_File_read_all_begin",       Mpiio, Read) \
  X(183, MpiFileReadAllEnd,         "MPI_File_read_all_end",         Mpiio, Read) \
  X(184, MpiFileReadAtAllBegin,     "MPI_File_read_at_all_begin",    Mpiio, Read) \
  X(185, MpiFileReadAtAllEnd,       "MPI_File_read_at_all_end",      Mpiio, Read) \
  X(186, MpiFileReadOrderedBegin,   "MPI_File_read_ordered_begin",   Mpiio, Read) \
  X(187, MpiFileReadOrderedEnd,     "MPI_File_read_ordered_end",     Mpiio, Read) \
  X(188, MpiFileWriteAllBegin,      "MPI_File_write_all_begin",      Mpiio, Write) \
  X(189, MpiFileWriteAllEnd,        "MPI_File_write_all_end",        Mpiio, Write) \
  X(190, MpiFileWriteAtAllBegin,    "MPI_File_write_at_all_begin",   Mpiio, Write) \
  X(191, MpiFileWriteAtAllEnd,      "MPI_File_write_at_all_end",     Mpiio, Write) \
  X(192, MpiFileWriteOrderedBegin,  "MPI_File_write_ordered_begin",  Mpiio, Write) \
  X(193, MpiFileWriteOrderedEnd,    "MPI_File_write_ordered_end",    Mpiio, Write) \
  X(194, MpiInit,                   "MPI_Init",                      Mpiio, Other) \
  X(195, MpiInitThread,             "MPI_Init_thread",               Mpiio, Other) \
  X(196, MpiFinalize,               "MPI_Finalize",                  Mpiio, Other)

// GPU activity from CUPTI (lib/cupti). file is the string id of the name
// (kernel name, "memcpy HtoD", API function), fd the device, offset the
// stream, aux the correlation id; see docs/FORMAT.md for the rest.
#define DLPROF_CUDA_EVENTS(X)                                         \
  X(200, CudaKernel,       "kernel",           Cuda, Kernel)          \
  X(201, CudaMemcpy,       "memcpy",           Cuda, Memcpy)          \
  X(202, CudaMemset,       "memset",           Cuda, Memset)          \
  X(203, CudaSync,         "synchronization",  Cuda, Sync)            \
  X(204, CudaRuntimeApi,   "cuda_runtime",     Cuda, Api)             \
  X(205, CudaDriverApi,    "cuda_driver",      Cuda, Api)             \
  X(206, CudaClockSync,    "cupti_clock",      Cuda, Other)           \
  X(207, CudaMemcpyP2P,    "memcpy_p2p",       Cuda, Memcpy)

// GPUDirect Storage (cuFile, lib/intercept/cufile*.cc). Calls: file and fd
// name the file of the call's cuFile handle (none for the driver, buffer
// and batch calls), offset and size the I/O asked for, ret what the call
// returned (cuFileRead/Write: bytes moved, -1 with errno, or -CUfileOpError;
// the others: the CUfileOpError, 0 on success), aux the device buffer's
// address (BufRegister, Read, Write), the CUfileHandle_t (HandleRegister,
// HandleDeregister), the CUstream (ReadAsync, WriteAsync submissions) or the
// batch handle (BatchIO*). The cufile_* kinds are the asynchronous and
// batched I/Os themselves, recorded once their completion is observed: from
// when the stream reached them (or their submission) to their completion,
// ret the bytes moved (or a negative error), aux the device buffer.
#define DLPROF_GDS_EVENTS(X)                                          \
  X(210, CufileDriverOpen,       "cuFileDriverOpen",       Gds, Other) \
  X(211, CufileDriverClose,      "cuFileDriverClose",      Gds, Other) \
  X(212, CufileDriverCloseV2,    "cuFileDriverClose_v2",   Gds, Other) \
  X(213, CufileHandleRegister,   "cuFileHandleRegister",   Gds, Meta)  \
  X(214, CufileHandleDeregister, "cuFileHandleDeregister", Gds, Meta)  \
  X(215, CufileBufRegister,      "cuFileBufRegister",      Gds, Meta)  \
  X(216, CufileBufDeregister,    "cuFileBufDeregister",    Gds, Meta)  \
  X(217, CufileRead,             "cuFileRead",             Gds, Read)  \
  X(218, CufileWrite,            "cuFileWrite",            Gds, Write) \
  X(219, CufileReadAsync,        "cuFileReadAsync",        Gds, Other) \
  X(220, CufileWriteAsync,       "cuFileWriteAsync",       Gds, Other) \
  X(221, CufileAsyncRead,        "cufile_async_read",      Gds, Read)  \
  X(222, CufileAsyncWrite,       "cufile_async_write",     Gds, Write) \
  X(223, CufileBatchSetUp,       "cuFileBatchIOSetUp",     Gds, Other) \
  X(224, CufileBatchSubmit,      "cuFileBatchIOSubmit",    Gds, Other) \
  X(225, CufileBatchGetStatus,   "cuFileBatchIOGetStatus", Gds, Other) \
  X(226, CufileBatchCancel,      "cuFileBatchIOCancel",    Gds, Other) \
  X(227, CufileBatchDestroy,     "cuFileBatchIODestroy",   Gds, Other) \
  X(228, CufileBatchRead,        "cufile_batch_read",      Gds, Read)  \
  X(229, CufileBatchWrite,       "cufile_batch_write",     Gds, Write)

// Application annotations: C API, Python module, NVTX ranges. file is the
// string id of the name; a region's event spans begin to end. A flow's
// start and finish are instants whose aux is the flow's id: the timelines
// draw an arrow from each start to the finish of the same name and id on
// the same host (a loader worker's batch to the loop that received it).
#define DLPROF_APP_EVENTS(X)                                          \
  X(230, AppRegion,        "region",           App, Region)           \
  X(231, AppMark,          "mark",             App, Mark)             \
  X(232, AppCounter,       "counter",          App, Counter)          \
  X(233, NvtxRange,        "nvtx_range",       App, Region)           \
  X(234, NvtxMark,         "nvtx_mark",        App, Mark)             \
  X(235, AppFlowStart,     "flow_start",       App, FlowStart)        \
  X(236, AppFlowFinish,    "flow_finish",      App, FlowFinish)

// Records the runtime writes about itself rather than about a traced call.
//   call_stack  (DLPROF_STACKS=1) follows, in the same thread, the event whose
//               native call stack it holds: file is the string id of the
//               return addresses (little-endian u64s, innermost first).
//   module      a loaded object (executable, shared library) the stacks'
//               addresses resolve against: file = path id, offset = load
//               bias (dlpi_addr), aux = lowest mapped address, size = bytes
//               mapped from there.
//   exit        the process ends by exit(), _exit(), _Exit() or quick_exit():
//               ret is the status it gave (written before the final pass;
//               a return from main() ends through libc's own exit(), which
//               no wrapper sees: no record).
//   signal      the process ends by a signal whose default action ends it,
//               which the runtime caught (fatal_signals.cc): ret is the
//               signal's number, aux the sender's pid where one sent it
//               (kill, tgkill; 0 for the kernel's: a fault, a timer).
//   clock_offset  this clock domain measured against rank fd's through MPI
//               (lib/intercept/mpi_clock.cc): at start_ns here that rank's
//               clock read aux, within +-size ns; ret 0 at MPI_Init, 1 at
//               MPI_Finalize; offset the round trips taken.
#define DLPROF_INTERNAL_EVENTS(X)                                     \
  X(250, ThreadStart,      "thread_start",     Internal, Other)       \
  X(251, ProcessFork,      "fork",             Internal, Other)       \
  X(252, ProcessExec,      "exec",             Internal, Other)       \
  X(253, Signal,           "signal",           Internal, Other)       \
  X(254, CallStack,        "call_stack",       Internal, Other)       \
  X(249, ModuleMap,        "module",           Internal, Other)       \
  X(248, ClockOffset,      "clock_offset",     Internal, Other)       \
  X(247, ProcessExit,      "exit",             Internal, Other)

// Asynchronous I/O (lib/intercept/uring_*.cc, linux_aio.cc, posix_aio.cc):
// each request from its submission to its completion, recorded once the
// tracer has seen the program reap it, on the thread that saw that (for a
// blocking wait: the thread that waited). file, fd, offset and size are the
// request's; ret its result (bytes moved, the new fd of an openat, 0, or
// -errno) and err the errno of a failed one (EINPROGRESS: the tracer never
// saw it complete); aux packs the submitting thread, the request's opcode and
// when it was reaped (docs/FORMAT_EVENTS.md, "Asynchronous requests"). io_uring_op
// is any other io_uring request. What the tracer can tell of a ring it cannot
// follow: io_uring_enter, a call on it (fd the ring, size to_submit, offset
// min_complete, aux the flags); io_uring_ring, the ring from its set-up to
// its close (fd the ring, size the requests the kernel took from it, ret the
// completions it posted, aux its set-up flags), no I/O call of its own.
#define DLPROF_AIO_EVENTS(X)                                          \
  X(256, UringRead,        "io_uring_read",        Aio, Read)         \
  X(257, UringWrite,       "io_uring_write",       Aio, Write)        \
  X(258, UringReadv,       "io_uring_readv",       Aio, Read)         \
  X(259, UringWritev,      "io_uring_writev",      Aio, Write)        \
  X(260, UringReadFixed,   "io_uring_read_fixed",  Aio, Read)         \
  X(261, UringWriteFixed,  "io_uring_write_fixed", Aio, Write)        \
  X(262, UringFsync,       "io_uring_fsync",       Aio, Sync)         \
  X(263, UringOpenat,      "io_uring_openat",      Aio, Open)         \
  X(264, UringClose,       "io_uring_close",       Aio, Close)        \
  X(265, UringStatx,       "io_uring_statx",       Aio, Meta)         \
  X(266, UringOp,          "io_uring_op",          Aio, Other)        \
  X(267, UringEnter,       "io_uring_enter",       Aio, Other)        \
  X(268, UringRing,        "io_uring_ring",        Aio, Other)        \
  X(272, LinuxAioPread,    "linux_aio_pread",      Aio, Read)         \
  X(273, LinuxAioPwrite,   "linux_aio_pwrite",     Aio, Write)        \
  X(274, LinuxAioPreadv,   "linux_aio_preadv",     Aio, Read)         \
  X(275, LinuxAioPwritev,  "linux_aio_pwritev",    Aio, Write)        \
  X(276, LinuxAioFsync,    "linux_aio_fsync",      Aio, Sync)         \
  X(277, LinuxAioFdsync,   "linux_aio_fdsync",     Aio, Sync)         \
  X(278, LinuxAioOp,       "linux_aio_op",         Aio, Other)        \
  X(288, AioRead,          "aio_read",             Aio, Read)         \
  X(289, AioWrite,         "aio_write",            Aio, Write)        \
  X(290, AioFsync,         "aio_fsync",            Aio, Sync)

#define DLPROF_EVENT_CATALOGUE(X) \
  DLPROF_POSIX_EVENTS(X)          \
  DLPROF_STDIO_EVENTS(X)          \
  DLPROF_MPIIO_EVENTS(X)          \
  DLPROF_CUDA_EVENTS(X)           \
  DLPROF_GDS_EVENTS(X)            \
  DLPROF_APP_EVENTS(X)            \
  DLPROF_INTERNAL_EVENTS(X)       \
  DLPROF_AIO_EVENTS(X)
// clang-format on

#ifdef __cplusplus
#include <cstdint>

namespace dlprof {

// Where an event came from; printed as the `cat` key.
enum class Category : uint8_t { Posix, Stdio, Mpiio, Cuda, App, Internal, Gds, Aio };

// What the analysis counts an event as.
enum class OpClass : uint8_t {
  Open, Close, Read, Write, Seek, Meta, Sync, Mmap, Dup, Other,
  Kernel, Memcpy, Memset, Api, Region, Mark, Counter, FlowStart, FlowFinish,
  Fault
};

enum class EventKind : uint16_t {
  None = 0,
#define DLPROF_X(code, ident, name, cat, op) ident = code,
  DLPROF_EVENT_CATALOGUE(DLPROF_X)
#undef DLPROF_X
};

// Largest kind code + 1, rounded up to the end of the last range; codes
// index the tables below.
constexpr int kEventKindLimit = 384;

struct EventKindInfo {
  const char* name = nullptr;  // nullptr for unused codes
  Category category = Category::Internal;
  OpClass op_class = OpClass::Other;
};

// Dense table indexed by kind code, built at compile time from the catalogue.
struct EventKindTable {
  EventKindInfo info[kEventKindLimit];
  constexpr EventKindTable() {
#define DLPROF_X(code, ident, name, cat, op) \
  info[code] = EventKindInfo{name, Category::cat, OpClass::op};
    DLPROF_EVENT_CATALOGUE(DLPROF_X)
#undef DLPROF_X
  }
};
inline constexpr EventKindTable kEventKinds{};

inline const EventKindInfo* LookupKind(uint32_t code) {
  if (code >= kEventKindLimit || kEventKinds.info[code].name == nullptr) {
    return nullptr;
  }
  return &kEventKinds.info[code];
}

inline const char* CategoryName(Category c) {
  switch (c) {
    case Category::Posix: return "posix";
    case Category::Stdio: return "stdio";
    case Category::Mpiio: return "mpiio";
    case Category::Cuda: return "cuda";
    case Category::App: return "app";
    case Category::Internal: return "dlprof";
    case Category::Gds: return "gds";
    case Category::Aio: return "aio";
  }
  return "?";
}

inline const char* OpClassName(OpClass o) {
  switch (o) {
    case OpClass::Open: return "open";
    case OpClass::Close: return "close";
    case OpClass::Read: return "read";
    case OpClass::Write: return "write";
    case OpClass::Seek: return "seek";
    case OpClass::Meta: return "meta";
    case OpClass::Sync: return "sync";
    case OpClass::Mmap: return "mmap";
    case OpClass::Dup: return "dup";
    case OpClass::Other: return "other";
    case OpClass::Kernel: return "kernel";
    case OpClass::Memcpy: return "memcpy";
    case OpClass::Memset: return "memset";
    case OpClass::Api: return "api";
    case OpClass::Region: return "region";
    case OpClass::Mark: return "mark";
    case OpClass::Counter: return "counter";
    case OpClass::FlowStart: return "flow_start";
    case OpClass::FlowFinish: return "flow_finish";
    case OpClass::Fault: return "fault";
  }
  return "?";
}

}  // namespace dlprof
#endif  // __cplusplus
#endif  // DLPROF_CATALOGUE_H_
