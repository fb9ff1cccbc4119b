#!/usr/bin/env python3
"""GPUDirect Storage against the real libcufile, on a GPU machine.

    tests/gpu/gds_check.py BUILD_DIR [--python PY] [--keep]

Writes a 3 MiB file, then runs a small Python program under LD_PRELOAD of
BUILD_DIR/lib/libdlprof.so that reads the file into GPU memory through the
real libcufile (the CUDA toolkit's libcufile.so.0 or the nvidia-cufile
wheel's, found by ctypes as kvikio finds it: dlopen + dlsym, which is the
path dlprof's dlsym hook must catch) in compatibility mode
(forced, by CUFILE_FORCE_COMPAT_MODE and a cufile.json: no GDS hardware
needed), with cuFileRead, cuFileReadAsync on a stream and a batch, copies it
back with cudaMemcpy and compares it (by hash) with what was written. Then
it decodes the trace and checks:

  - every cuFile call the program made is one gds event, with the file,
    offset, bytes asked and moved and device buffer the program used;
  - every POSIX read that compatibility mode did on the file is flagged
    nested: the synchronous read's on the caller's thread, the stream's and
    the batch's on libcufile's own worker threads (lib/read/cufile_compat.h);
  - the summary counts the file's bytes once (the cuFile reads' total).

Run on an H100 VM (CUDA 13.0's libcufile, 2026-11-27): cuFileHandleRegister
failed with 5027 until the disk had a udev entry (libcufile reads the
volume's ID_FS_USAGE even in forced compatibility mode; the VM runs no
udev): scripts/gpu-checks.sh writes /run/udev/data/b<major>:<minor> for
the disk first. The stream read and the four batch entries were served by
four worker threads of libcufile's.

Exit status: 0 all checks passed, 1 a check failed, 77 no GPU, CUDA or
libcufile here (the reason on stderr).
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

SIZE = 3 << 20
CHUNK = 1 << 20

# The traced program: ctypes only (no kvikio needed), the ABI as in
# lib/intercept/cufile_abi.h.
PROGRAM = r'''
import ctypes, hashlib, json, os, sys
path = sys.argv[1]
def load(names):
    for n in names:
        try:
            return ctypes.CDLL(n, mode=os.RTLD_LOCAL)
        except OSError:
            pass
    return None
cudart = load(["libcudart.so", "libcudart.so.13", "libcudart.so.12"])
cufile = load(["libcufile.so.0", "libcufile.so"])
if cudart is None or cufile is None:
    print("SKIP no libcudart or libcufile"); sys.exit(77)
class Err(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]
class Descr(ctypes.Structure):
    # type, then the union {int fd; void* handle} at 8, then fs_ops at 16
    _fields_ = [("type", ctypes.c_int), ("pad0", ctypes.c_int), ("fd", ctypes.c_int),
                ("pad1", ctypes.c_int), ("fs_ops", ctypes.c_void_p)]
class Params(ctypes.Structure):
    _fields_ = [("mode", ctypes.c_int), ("base", ctypes.c_void_p), ("file_offset", ctypes.c_long),
                ("buf_offset", ctypes.c_long), ("size", ctypes.c_size_t), ("fh", ctypes.c_void_p),
                ("opcode", ctypes.c_int), ("cookie", ctypes.c_void_p)]
class Events(ctypes.Structure):
    _fields_ = [("cookie", ctypes.c_void_p), ("status", ctypes.c_int), ("ret", ctypes.c_size_t)]
assert Descr.fd.offset == 8 and Params.fh.offset == 40 and Params.cookie.offset == 56
assert ctypes.sizeof(Descr) == 24 and ctypes.sizeof(Params) == 64 and ctypes.sizeof(Events) == 24
for name in ("cuFileDriverOpen", "cuFileDriverClose_v2", "cuFileHandleRegister",
             "cuFileBufRegister", "cuFileBufDeregister", "cuFileReadAsync",
             "cuFileBatchIOSetUp", "cuFileBatchIOSubmit", "cuFileBatchIOGetStatus"):
    getattr(cufile, name).restype = Err
cufile.cuFileRead.restype = ctypes.c_ssize_t
cufile.cuFileRead.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long, ctypes.c_long]
cufile.cuFileHandleDeregister.restype = None
cufile.cuFileBatchIODestroy.restype = None
calls = []
dev = ctypes.c_void_p()
if cudart.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(%(size)d)) != 0:
    print("SKIP cudaMalloc failed: no GPU"); sys.exit(77)
s = cufile.cuFileDriverOpen()
if s.err != 0:
    print("SKIP cuFileDriverOpen: %%d" %% s.err); sys.exit(77)
fd = os.open(path, os.O_RDONLY)
d = Descr(1, 0, fd, 0, None)
fh = ctypes.c_void_p()
s = cufile.cuFileHandleRegister(ctypes.byref(fh), ctypes.byref(d))
assert s.err == 0, ("cuFileHandleRegister", s.err, s.cu_err)
s = cufile.cuFileBufRegister(dev, ctypes.c_size_t(%(size)d), 0)
assert s.err == 0, ("cuFileBufRegister", s.err, s.cu_err)
# Synchronous: the first megabyte.
r = cufile.cuFileRead(fh, dev, %(chunk)d, 0, 0)
calls.append(["cuFileRead", 0, %(chunk)d, r, dev.value])
# On a stream: the second.
stream = ctypes.c_void_p()
cudart.cudaStreamCreate(ctypes.byref(stream))
size, off, boff, nread = ctypes.c_size_t(%(chunk)d), ctypes.c_long(%(chunk)d), ctypes.c_long(%(chunk)d), ctypes.c_ssize_t(0)
s = cufile.cuFileReadAsync(fh, dev, ctypes.byref(size), ctypes.byref(off), ctypes.byref(boff),
                           ctypes.byref(nread), stream)
assert s.err == 0, s.err
cudart.cudaStreamSynchronize(stream)
# (The I/O has the stream it was queued on, its submission the buffer.)
calls.append(["cufile_async_read", %(chunk)d, %(chunk)d, nread.value, stream.value])
submitted_at = dev.value + %(chunk)d
# A batch: the third, in four parts.
batch = ctypes.c_void_p()
assert cufile.cuFileBatchIOSetUp(ctypes.byref(batch), 4).err == 0
parts = (Params * 4)()
for i in range(4):
    q = %(chunk)d // 4
    parts[i] = Params(1, dev.value, 2 * %(chunk)d + i * q, 2 * %(chunk)d + i * q, q, fh.value, 0, i + 1)
assert cufile.cuFileBatchIOSubmit(batch, 4, parts, 0).err == 0
done, evs = 0, (Events * 4)()
while done < 4:
    n = ctypes.c_uint(4)
    assert cufile.cuFileBatchIOGetStatus(batch, 1, ctypes.byref(n), evs, None).err == 0
    for i in range(n.value):
        k = evs[i].cookie - 1
        calls.append(["cufile_batch_read", parts[k].file_offset, parts[k].size, evs[i].ret,
                      dev.value + parts[k].buf_offset])
    done += n.value
cufile.cuFileBatchIODestroy(batch)
host = ctypes.create_string_buffer(%(size)d)
cudart.cudaMemcpy(host, dev, ctypes.c_size_t(%(size)d), 2)  # DeviceToHost
# (Compared by hash with what the checker wrote: reading the file here
# would add the program's own POSIX read to the file's bytes.)
digest = hashlib.sha256(host.raw).hexdigest()
cufile.cuFileBufDeregister(dev)
cufile.cuFileHandleDeregister(fh)
os.close(fd)
cufile.cuFileDriverClose_v2()
print(json.dumps({"calls": calls, "digest": digest, "submitted_at": submitted_at}))
'''


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args(argv)
    lib = os.path.join(args.build, "lib", "libdlprof.so")
    dump = os.path.join(args.build, "tools", "dlprof-dump")
    work = tempfile.mkdtemp(prefix="dlprof-gds-")
    try:
        data = os.path.join(work, "data.bin")
        with open(data, "wb") as f:
            content = os.urandom(SIZE)
            f.write(content)
        config = os.path.join(work, "cufile.json")
        with open(config, "w") as f:
            # force_compat_mode: on a VM whose disk udev does not describe
            # (ID_FS_USAGE), cuFileHandleRegister fails with 5027 even with
            # compat mode allowed; forced, cuFile skips the volume checks.
            json.dump({"properties": {"allow_compat_mode": True, "force_compat_mode": True},
                       "fs": {"generic": {"posix_unaligned_writes": True}}}, f)
        traces = os.path.join(work, "traces")
        env = dict(os.environ, LD_PRELOAD=lib, DLPROF_DIR=traces, DLPROF_QUIET="1",
                   CUFILE_ENV_PATH_JSON=config, CUFILE_ALLOW_COMPAT_MODE="true",
                   CUFILE_FORCE_COMPAT_MODE="true")
        code = PROGRAM % {"size": SIZE, "chunk": CHUNK}
        r = subprocess.run([args.python, "-c", code, data], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        if r.returncode == 77 or "SKIP" in r.stdout:
            print("gds_check: %s" % (r.stdout + r.stderr).strip(), file=sys.stderr)
            return 77
        if r.returncode != 0:
            print("gds_check: the program failed (%d):\n%s" % (r.returncode, r.stderr[-3000:]),
                  file=sys.stderr)
            return 1
        res = json.loads(r.stdout.strip().splitlines()[-1])
        problems = []
        if res["digest"] != hashlib.sha256(content).hexdigest():
            problems.append("the GPU buffer differs from the file")
        d = subprocess.run([dump, "--format", "jsonl", traces], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=300)
        events = [json.loads(l) for l in d.stdout.splitlines() if l.strip()]
        gds = [e for e in events if e["cat"] == "gds"]
        io = sorted((e for e in gds if e.get("bytes", 0) > 0), key=lambda e: e["ts"])
        got = sorted([e["name"], e["offset"], e["size"], e["bytes"],
                      e.get("stream" if e["name"].startswith("cufile_async") else "buffer")]
                     for e in io)
        want = sorted(res["calls"])
        if got != want:
            problems.append("cuFile I/O in the trace %s, the program did %s" % (got, want))
        subs = [e.get("buffer") for e in gds if e["name"] == "cuFileReadAsync"]
        if subs != [res["submitted_at"]]:
            problems.append("cuFileReadAsync's buffer %s, the program's %d"
                            % (subs, res["submitted_at"]))
        posix = [e for e in events if e.get("path") == data and e["cat"] == "posix"
                 and e.get("bytes", 0) > 0]
        loose = [e for e in posix if not e.get("nested")]
        print("compatibility mode's POSIX reads: %d, %d nested; threads %s (program's: %s)"
              % (len(posix), len(posix) - len(loose), sorted({e["tid"] for e in posix}),
                 sorted({e["tid"] for e in gds if e["name"] == "cuFileRead"})))
        if loose:
            problems.append("POSIX reads of the file not flagged nested: %s" % loose[:3])
        s = subprocess.run([dump, "--summary", "--format", "json", traces],
                           stdout=subprocess.PIPE, text=True, timeout=300)
        read = json.loads(s.stdout)["files"].get(data, {}).get("read", {}).get("bytes")
        if read != SIZE:
            problems.append("the summary read %s bytes of the file, the program %d "
                            "(POSIX reads not nested: %d)" % (read, SIZE, len(loose)))
        for line in problems:
            print("FAILED: " + line)
        if not problems:
            print("gds_check: all checks passed")
        return 1 if problems else 0
    finally:
        if args.keep:
            print("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
