// The environment the runtime hands a child (lib/core/child_env.h): the
// program's entries in their order and as they are, the runtime's own
// (DLPROF_INHERITED_*, the markers) added at the end or in place of a stale
// one; nothing for a child that is not traced; a run id or trace directory
// the program chose for its child kept. And the child's side: what its
// parent handed on is taken out of its environment and read as the
// configuration's.
#include "lib/core/child_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace dlprof::core {
namespace {

// A spec as the runtime of a process that made run "r1" would have it.
ChildEnvSpec Spec() {
  ChildEnvSpec s;
  s.dir_entry = "DLPROF_INHERITED_DIR=/abs/traces";
  s.dir_inherited = "traces";
  s.run_entry = "DLPROF_INHERITED_RUN_ID=r1";
  s.run_auto_entry = "DLPROF_INHERITED_RUN_ID_AUTO=r1";
  s.self_name = "libdlprof.so";
  return s;
}

std::vector<std::string> Child(const ChildEnvSpec& spec, std::vector<std::string> env) {
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const size_t bytes = ChildEnvBytes(spec, envp.data());
  if (bytes == 0) return {"(as it is)"};
  std::vector<void*> memory(bytes / sizeof(void*) + 1);
  char* const* out = BuildChildEnv(spec, envp.data(), memory.data(), bytes);
  std::vector<std::string> result;
  for (char* const* e = out; *e; ++e) result.push_back(*e);
  return result;
}

const char* kPreload = "LD_PRELOAD=/opt/dlprof/lib/libdlprof.so";
const char* kDir = "DLPROF_INHERITED_DIR=/abs/traces";
const char* kRun = "DLPROF_INHERITED_RUN_ID=r1";
const char* kAuto = "DLPROF_INHERITED_RUN_ID_AUTO=r1";

TEST(ChildEnv, AChildThatIsNotTracedGetsItsEnvironmentAsItIs) {
  EXPECT_EQ(Child(Spec(), {"PATH=/bin"}), std::vector<std::string>{"(as it is)"});
  EXPECT_EQ(Child(Spec(), {"LD_PRELOAD=/lib/libother.so", "PATH=/bin"}),
            std::vector<std::string>{"(as it is)"});
  // Our library by another path, among others, with spaces or colons.
  EXPECT_NE(Child(Spec(), {"LD_PRELOAD=/a/libasan.so.8 /x/libdlprof.so:/b/c.so"})[0], "(as it is)");
}

TEST(ChildEnv, OursAreAddedAtTheEnd) {
  EXPECT_EQ(Child(Spec(), {kPreload, "HOME=/root"}),
            (std::vector<std::string>{kPreload, "HOME=/root", kDir, kRun, kAuto}));
}

TEST(ChildEnv, TheProgramsOwnEntriesStayAsTheyAre) {
  // What the program was started with and passes on, PYTHONPATH included:
  // the child sees it as it would untraced; ours come beside it.
  ChildEnvSpec s = Spec();
  s.run_inherited = "old";
  s.run_auto_inherited = "old";
  EXPECT_EQ(Child(s, {"DLPROF_RUN_ID=old", kPreload, "DLPROF_DIR=traces", "DLPROF_RUN_ID_AUTO=old",
                      "PYTHONPATH=/a:/b", "X=1"}),
            (std::vector<std::string>{"DLPROF_RUN_ID=old", kPreload, "DLPROF_DIR=traces",
                                      "DLPROF_RUN_ID_AUTO=old", "PYTHONPATH=/a:/b", "X=1", kDir,
                                      kRun, kAuto}));
}

TEST(ChildEnv, OursInTheProgramsEnvironmentAreReplacedInPlaceOrLeftOut) {
  // An environment a program copied from one made for a child: ours take
  // the place of theirs; one the child does not get goes.
  EXPECT_EQ(Child(Spec(), {"DLPROF_INHERITED_RUN_ID=stale", kPreload,
                           "DLPROF_INHERITED_RUN_ID_AUTO=stale", "DLPROF_INHERITED_DIR=/old"}),
            (std::vector<std::string>{kRun, kPreload, kAuto, kDir}));
  EXPECT_EQ(Child(Spec(), {kPreload, "DLPROF_DIR=/elsewhere", "DLPROF_INHERITED_DIR=/old",
                           "DLPROF_RUN_ID=mine", "DLPROF_INHERITED_RUN_ID=stale",
                           "DLPROF_INHERITED_RUN_ID_AUTO=stale"}),
            (std::vector<std::string>{kPreload, "DLPROF_DIR=/elsewhere", "DLPROF_RUN_ID=mine"}));
}

TEST(ChildEnv, WhatTheProgramChoseForItsChildStays) {
  // DLPROF_RUN_ID of its own (the process started with none), another
  // directory: the child's are kept, ours are not given.
  EXPECT_EQ(Child(Spec(), {kPreload, "DLPROF_RUN_ID=mine", "DLPROF_DIR=/elsewhere"}),
            (std::vector<std::string>{kPreload, "DLPROF_RUN_ID=mine", "DLPROF_DIR=/elsewhere"}));
}

TEST(ChildEnv, AUsersRunIdGoesOnWithoutTheAutoMarker) {
  ChildEnvSpec s = Spec();
  s.run_entry = "DLPROF_INHERITED_RUN_ID=exp";
  s.run_auto_entry = nullptr;
  s.run_inherited = "exp";
  // A pair the process did not start with is the program's choice.
  EXPECT_EQ(Child(s, {kPreload, "DLPROF_RUN_ID=exp", "DLPROF_RUN_ID_AUTO=stale"}),
            (std::vector<std::string>{kPreload, "DLPROF_RUN_ID=exp", "DLPROF_RUN_ID_AUTO=stale",
                                      kDir}));
  EXPECT_EQ(Child(s, {kPreload}),
            (std::vector<std::string>{kPreload, kDir, "DLPROF_INHERITED_RUN_ID=exp"}));
  EXPECT_EQ(Child(s, {kPreload, "DLPROF_RUN_ID=exp"}),
            (std::vector<std::string>{kPreload, "DLPROF_RUN_ID=exp", kDir,
                                      "DLPROF_INHERITED_RUN_ID=exp"}));
}

TEST(ChildEnv, MarkersAreAddedWhereMissing) {
  ChildEnvSpec s = Spec();
  s.dir_entry = nullptr;
  s.run_entry = nullptr;
  s.markers[0] = "DLPROF_UNTRACED_WARNED=1";
  s.markers[1] = "DLPROF_STACKS_WARNED=1";
  s.marker_count = 2;
  EXPECT_EQ(Child(s, {kPreload, "DLPROF_STACKS_WARNED=1"}),
            (std::vector<std::string>{kPreload, "DLPROF_STACKS_WARNED=1",
                                      "DLPROF_UNTRACED_WARNED=1"}));
}

TEST(ChildEnv, TheRanksIoMapIsHandedOnWhileThereIsOne) {
  // A GPU process's I/O map file (rank_io_map.h): at the end, or in place
  // of a stale one; a stale one goes where the process has none.
  ChildEnvSpec s = Spec();
  const char* map = "DLPROF_INHERITED_IO_MAP=/dev/shm/dlprof-io-1-2-3";
  s.io_map_entry = map;
  EXPECT_EQ(Child(s, {kPreload}), (std::vector<std::string>{kPreload, kDir, kRun, kAuto, map}));
  EXPECT_EQ(Child(s, {"DLPROF_INHERITED_IO_MAP=/dev/shm/old", kPreload}),
            (std::vector<std::string>{map, kPreload, kDir, kRun, kAuto}));
  EXPECT_EQ(Child(Spec(), {"DLPROF_INHERITED_IO_MAP=/dev/shm/old", kPreload}),
            (std::vector<std::string>{kPreload, kDir, kRun, kAuto}));
}

TEST(ChildEnv, ANullEnvironmentIsAnEmptyOne) {
  EXPECT_EQ(ChildEnvBytes(Spec(), nullptr), 0u);
  EXPECT_EQ(EnvValue(nullptr, "X"), nullptr);
}

TEST(ChildEnv, EnvValueMatchesWholeNames) {
  char a[] = "PYTHONPATHX=1", b[] = "PYTHONPATH=/p", c[] = "EMPTY=";
  char* env[] = {a, b, c, nullptr};
  EXPECT_STREQ(EnvValue(env, "PYTHONPATH"), "/p");
  EXPECT_STREQ(EnvValue(env, "EMPTY"), "");
  EXPECT_EQ(EnvValue(env, "PYTHON"), nullptr);
}

// The child's side, on this process's own environment (one test: the
// runtime takes it once).
TEST(ChildEnv, WhatTheParentHandedOnIsTakenOutOfSight) {
  setenv("DLPROF_DIR", "traces", 1);
  setenv("DLPROF_RUN_ID", "users", 1);
  setenv("DLPROF_INHERITED_DIR", "/abs/traces", 1);
  setenv("DLPROF_INHERITED_RUN_ID", "r1", 1);
  setenv("DLPROF_INHERITED_RUN_ID_AUTO", "r1", 1);
  setenv("DLPROF_INHERITED_IO_MAP", "/dev/shm/m", 1);
  setenv(kUntracedWarnedVar, "1", 1);
  TakeInheritedEnv();
  for (const char* name : {"DLPROF_INHERITED_DIR", "DLPROF_INHERITED_RUN_ID",
                           "DLPROF_INHERITED_RUN_ID_AUTO", "DLPROF_INHERITED_IO_MAP",
                           kUntracedWarnedVar}) {
    EXPECT_EQ(getenv(name), nullptr) << name;
    EXPECT_EQ(GetEnv(name), nullptr) << name;
  }
  // The program's own stay; the runtime reads the parent's in their place.
  EXPECT_STREQ(getenv("DLPROF_DIR"), "traces");
  EXPECT_STREQ(getenv("DLPROF_RUN_ID"), "users");
  EXPECT_STREQ(RuntimeEnv("DLPROF_DIR"), "/abs/traces");
  EXPECT_STREQ(RuntimeEnv("DLPROF_RUN_ID"), "r1");
  EXPECT_STREQ(RuntimeEnv("DLPROF_RUN_ID_AUTO"), "r1");
  EXPECT_STREQ(InheritedIoMap(), "/dev/shm/m");
  EXPECT_EQ(RuntimeEnv("DLPROF_QUIET"), nullptr);
  unsetenv("DLPROF_DIR");
  unsetenv("DLPROF_RUN_ID");
}

}  // namespace
}  // namespace dlprof::core
