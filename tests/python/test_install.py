"""`cmake --install` of the build into a temporary prefix: the package and
its reader library land in the prefix's site-packages
(DLPROF_PYTHON_INSTALL_DIR), and a Python that has only that directory on
its path (no build tree, no DLPROF_READER_LIB) imports it, loads the
library next to the package and reads a real trace."""

import os
import subprocess
import textwrap

import dltest


class InstallTest(dltest.TraceTestCase):

    def test_install_and_import(self):
        build = os.environ["DLPROF_BUILD_DIR"]
        site_rel = os.environ["DLPROF_PYTHON_INSTALL_DIR"]
        prefix = os.path.join(self.tmp, "prefix")
        p = subprocess.run([os.environ.get("DLPROF_CMAKE", "cmake"), "--install", build,
                            "--prefix", prefix], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        site = site_rel if os.path.isabs(site_rel) else os.path.join(prefix, site_rel)
        package = os.path.join(site, "dlprof")
        for name in ("__init__.py", "traces.py", "dask.py", "_native.py", "_events.py",
                     "libdlprof_reader.so"):
            self.assertTrue(os.path.isfile(os.path.join(package, name)), name)

        # The bootstrap beside the library (lib/dlprof-python), with its
        # copy of the package.
        boot = os.path.join(prefix, "lib", "dlprof-python")
        for name in ("sitecustomize.py", "dlprof/__init__.py", "dlprof/_torch.py"):
            self.assertTrue(os.path.isfile(os.path.join(boot, name)), name)

        blob = os.path.join(self.data, "blob.bin")
        with open(blob, "wb") as f:
            f.write(os.urandom(1 << 16))
        self.run_traced([dltest.program("threads_pread"), blob, "2", "100"])
        code = textwrap.dedent("""
            import os, sys
            import dlprof, dlprof._native
            print(os.path.dirname(dlprof.__file__))
            print(dlprof._native.lib()._name)
            df = dlprof.read_events(sys.argv[1])
            print(int((df["op"] == "read").sum()), int(df["bytes"].sum()))
        """)
        env = dict(dltest.base_env())
        env.pop("DLPROF_READER_LIB", None)
        env["PYTHONPATH"] = site
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        run = subprocess.run([dltest.SYSTEM_PYTHON, "-c", code, self.traces], env=env,
                             capture_output=True, text=True, timeout=60, cwd=self.tmp)
        self.assertEqual(run.returncode, 0, run.stderr)
        where, lib, counts = run.stdout.split("\n")[:3]
        self.assertEqual(os.path.realpath(where), os.path.realpath(package))
        self.assertEqual(os.path.realpath(lib),
                         os.path.realpath(os.path.join(package, "libdlprof_reader.so")))
        reads = [e for e in self.decode().events if e["name"] in dltest.READ_NAMES]
        self.assertEqual(counts.split(), [str(len(reads)),
                                          str(sum(e["bytes"] for e in reads))])


if __name__ == "__main__":
    import unittest
    unittest.main()
