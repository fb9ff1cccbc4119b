// The environment the runtime hands a child (lib/core/child_env.h): the
// program's entries in their order, ours replacing theirs in place and the
// missing ones appended; nothing for a child that is not traced; a run id
// or trace directory the program chose for its child kept; PYTHONPATH led
// by the bootstrap once.
#include "lib/core/child_env.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlprof::core {
namespace {

// A spec as the runtime of a process that made run "r1" would have it.
ChildEnvSpec Spec() {
  ChildEnvSpec s;
  s.dir_entry = "DLPROF_DIR=/abs/traces";
  s.dir_inherited = "traces";
  s.run_entry = "DLPROF_RUN_ID=r1";
  s.run_auto_entry = "DLPROF_RUN_ID_AUTO=r1";
  s.python_dir = "/opt/dlprof/lib/dlprof-python";
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

TEST(ChildEnv, AChildThatIsNotTracedGetsItsEnvironmentAsItIs) {
  EXPECT_EQ(Child(Spec(), {"PATH=/bin"}), std::vector<std::string>{"(as it is)"});
  EXPECT_EQ(Child(Spec(), {"LD_PRELOAD=/lib/libother.so", "PATH=/bin"}),
            std::vector<std::string>{"(as it is)"});
  // Our library by another path, among others, with spaces or colons.
  EXPECT_NE(Child(Spec(), {"LD_PRELOAD=/a/libasan.so.8 /x/libdlprof.so:/b/c.so"})[0], "(as it is)");
}

TEST(ChildEnv, OursAreAddedAtTheEnd) {
  EXPECT_EQ(Child(Spec(), {kPreload, "HOME=/root"}),
            (std::vector<std::string>{kPreload, "HOME=/root", "DLPROF_DIR=/abs/traces",
                                      "DLPROF_RUN_ID=r1", "DLPROF_RUN_ID_AUTO=r1",
                                      "PYTHONPATH=/opt/dlprof/lib/dlprof-python"}));
}

TEST(ChildEnv, WhatTheProcessStartedWithIsReplacedInPlace) {
  ChildEnvSpec s = Spec();
  s.run_inherited = "old";
  s.run_auto_inherited = "old";
  EXPECT_EQ(Child(s, {"DLPROF_RUN_ID=old", kPreload, "DLPROF_DIR=traces", "DLPROF_RUN_ID_AUTO=old",
                      "PYTHONPATH=/a:/b", "X=1"}),
            (std::vector<std::string>{"DLPROF_RUN_ID=r1", kPreload, "DLPROF_DIR=/abs/traces",
                                      "DLPROF_RUN_ID_AUTO=r1",
                                      "PYTHONPATH=/opt/dlprof/lib/dlprof-python:/a:/b", "X=1"}));
}

TEST(ChildEnv, WhatTheProgramChoseForItsChildStays) {
  // DLPROF_RUN_ID of its own (the process started with none), another
  // directory: the child's are kept, the auto marker is not added.
  EXPECT_EQ(Child(Spec(), {kPreload, "DLPROF_RUN_ID=mine", "DLPROF_DIR=/elsewhere"}),
            (std::vector<std::string>{kPreload, "DLPROF_RUN_ID=mine", "DLPROF_DIR=/elsewhere",
                                      "PYTHONPATH=/opt/dlprof/lib/dlprof-python"}));
}

TEST(ChildEnv, AUsersRunIdGoesOnWithoutTheAutoMarker) {
  ChildEnvSpec s = Spec();
  s.run_entry = "DLPROF_RUN_ID=exp";
  s.run_auto_entry = nullptr;
  s.run_inherited = "exp";
  s.python_dir = nullptr;
  EXPECT_EQ(Child(s, {kPreload, "DLPROF_RUN_ID=exp", "DLPROF_RUN_ID_AUTO=stale"}),
            (std::vector<std::string>{kPreload, "DLPROF_RUN_ID=exp", "DLPROF_RUN_ID_AUTO=stale",
                                      "DLPROF_DIR=/abs/traces"}));
  EXPECT_EQ(Child(s, {kPreload}),
            (std::vector<std::string>{kPreload, "DLPROF_DIR=/abs/traces", "DLPROF_RUN_ID=exp"}));
}

TEST(ChildEnv, PythonPathIsLedByTheBootstrapOnce) {
  ChildEnvSpec s = Spec();
  s.dir_entry = nullptr;
  s.run_entry = nullptr;
  const std::string dir = s.python_dir;
  EXPECT_EQ(Child(s, {kPreload, "PYTHONPATH="}),
            (std::vector<std::string>{kPreload, "PYTHONPATH=" + dir + ":"}));
  EXPECT_EQ(Child(s, {kPreload, "PYTHONPATH=" + dir}),
            (std::vector<std::string>{kPreload, "PYTHONPATH=" + dir}));
  EXPECT_EQ(Child(s, {kPreload, "PYTHONPATH=" + dir + ":/a"}),
            (std::vector<std::string>{kPreload, "PYTHONPATH=" + dir + ":/a"}));
  // A longer name that starts like it is not it.
  EXPECT_EQ(Child(s, {kPreload, "PYTHONPATH=" + dir + "2"}),
            (std::vector<std::string>{kPreload, "PYTHONPATH=" + dir + ":" + dir + "2"}));
  s.python_dir = nullptr;  // DLPROF_PYTHON=0, or no bootstrap installed
  EXPECT_EQ(Child(s, {kPreload, "PYTHONPATH=/a"}),
            (std::vector<std::string>{kPreload, "PYTHONPATH=/a"}));
}

TEST(ChildEnv, MarkersAreAddedWhereMissing) {
  ChildEnvSpec s = Spec();
  s.dir_entry = nullptr;
  s.run_entry = nullptr;
  s.python_dir = nullptr;
  s.markers[0] = "DLPROF_UNTRACED_WARNED=1";
  s.markers[1] = "DLPROF_STACKS_WARNED=1";
  s.marker_count = 2;
  EXPECT_EQ(Child(s, {kPreload, "DLPROF_STACKS_WARNED=1"}),
            (std::vector<std::string>{kPreload, "DLPROF_STACKS_WARNED=1",
                                      "DLPROF_UNTRACED_WARNED=1"}));
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

}  // namespace
}  // namespace dlprof::core
