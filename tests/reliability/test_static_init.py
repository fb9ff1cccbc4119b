"""I/O before and after main (programs/static_init.cc), and the tracer's own
static initialisation.

A C++ static constructor, a constructor function, main, an atexit handler
and a static destructor each write a file. Every one of those calls is in
the trace, in the order the program ran them, whether main returns or calls
exit(), and the trace ends cleanly.
"""

import os
import shutil
import subprocess

import dltest
import dltest.reliability as rtest

ORDER_RETURN = ["static_ctor", "ctor_function", "main", "atexit", "static_dtor"]


class StaticInitTest(rtest.RelTestCase):

    def check(self, args):
        traced, _ = self.assert_same_as_untraced([rtest.program("static_init")] + args,
                                                 env={"REL_DATA": self.data})
        ran = [l.split()[1] for l in traced.stdout.splitlines() if l.startswith("RAN ")]
        self.assertEqual(sorted(ran), sorted(ORDER_RETURN))
        trace = self.decode()
        got = []
        for e in trace.under(self.data):
            name = os.path.basename(e["path"])[:-len(".dat")]
            got.append((name, e["name"]))
        want = []
        for name in ran:
            want += [(name, "open"), (name, "write"), (name, "close")]
        self.assertEqual(got, want)
        return ran

    def test_return_from_main(self):
        ran = self.check([])
        # C++ constructors and constructor functions of one object run in an
        # order the toolchain picks; main, atexit and the destructor do not.
        self.assertEqual(ran[2:], ["main", "atexit", "static_dtor"])

    def test_exit_from_main(self):
        ran = self.check(["exit"])
        self.assertEqual(ran[2:], ["main", "atexit", "static_dtor"])


    def test_the_tracer_has_no_dynamic_initialisers_of_its_own(self):
        # libdlprof.so starts from a constructor that runs before other files'
        # dynamic initialisers (and is reached earlier still by another
        # library's constructor calling a traced function): an object of ours
        # that needs one is used unconstructed, or reset after the start.
        # That crashed every traced program where the TSC is the clock (a
        # string the clock choice was assigned to before it was built). Only
        # the C++ runtime's own, linked in statically, may have one.
        nm = shutil.which("nm")
        if nm is None:
            self.skipTest("no nm")
        out = subprocess.run([nm, dltest.LIB_PATH], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
        ours = sorted({l.split()[-1] for l in out.splitlines() if "_GLOBAL__sub_I_" in l}
                      - {"_GLOBAL__sub_I_eh_alloc.cc", "_GLOBAL__sub_I_system_error.cc"})
        self.assertEqual(ours, [])


if __name__ == "__main__":
    dltest.main()
