// The entrypoint prelude of Kubernetes workloads, generated and then run for real with /bin/sh
// (and bash): it must pick the same checkpoint as common/checkpoint_scan, and turn SIGTERM into
// the checkpoint signal for the command, wait for it and leave with its status.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/checkpoint_scan.hpp"
#include "common/process_runner.hpp"
#include "kube-bridge/kube_entrypoint.hpp"

namespace safe::bridge {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/safe-entrypoint-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void touch(const std::string& path, std::time_t mtime) {
  std::ofstream(path) << "x";
  struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
  ASSERT_EQ(0, utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW)) << path;
}

// A checkpoint directory `name` whose marker was written at `mtime` (0: no marker, a torn one).
void checkpoint(const std::string& dir, const std::string& name, std::time_t mtime) {
  fs::create_directories(dir + "/" + name);
  std::ofstream(dir + "/" + name + "/model.pt") << "weights";
  if (mtime) touch(dir + "/" + name + "/COMPLETE", mtime);
}

std::vector<std::string> shells() {
  std::vector<std::string> out = {"/bin/sh"};
  if (access("/bin/bash", X_OK) == 0) out.push_back("/bin/bash");
  return out;
}

// SAFE_RESUME_FROM as the prelude exports it to the command, run by `shell`.
std::string resume_from_in_pod(const std::string& shell, const std::string& ckpt_dir) {
  SystemProcessRunner runner;
  ProcessResult r = runner.run({"env", "SAFE_CKPT_DIR=" + ckpt_dir, shell, "-c", kube_entrypoint_script("COMPLETE", SIGUSR1),
                                "safe-entrypoint", "/bin/sh", "-c", "printf '%s' \"$SAFE_RESUME_FROM\""},
                               10s);
  EXPECT_TRUE(r.ok()) << shell << ": " << r.describe() << " " << r.err;
  return r.out;
}

TEST(KubeEntrypoint, CommandIsThePreludeThenTheWorkload) {
  WorkloadSpec spec;
  spec.command = {"python", "train.py", "--lr", "it's"};
  std::vector<std::string> argv = kube_container_command(spec, "DONE", SIGUSR2);
  ASSERT_EQ(8u, argv.size());
  EXPECT_EQ("/bin/sh", argv[0]);
  EXPECT_EQ("-c", argv[1]);
  EXPECT_NE(argv[2].find("safe_marker='DONE'"), std::string::npos) << argv[2];
  EXPECT_NE(argv[2].find("safe_signal='USR2'"), std::string::npos) << argv[2];
  EXPECT_EQ("safe-entrypoint", argv[3]);
  EXPECT_EQ((std::vector<std::string>{"python", "train.py", "--lr", "it's"}), std::vector<std::string>(argv.begin() + 4, argv.end()));
  spec.command.clear();
  spec.script = "echo hi\n";
  argv = kube_container_command(spec, "COMPLETE", 0);
  EXPECT_EQ((std::vector<std::string>{"safe-entrypoint", "/bin/bash", "-c", "echo hi\n"}), std::vector<std::string>(argv.begin() + 3, argv.end()));
  EXPECT_NE(argv[2].find("safe_signal='TERM'"), std::string::npos) << "no checkpoint signal: SIGTERM is passed on";
}

TEST(KubeEntrypoint, ShellPicksTheCheckpointThatCheckpointScanPicks) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/ckpt";
  const std::time_t t0 = 1700000000;
  struct Step {
    const char* what;
    std::function<void()> change;
  };
  const Step steps[] = {
      {"no directory yet", [] {}},
      {"empty directory", [&] { fs::create_directories(dir); }},
      {"only a torn checkpoint", [&] { checkpoint(dir, "step-100", 0); }},
      {"one complete", [&] { checkpoint(dir, "step-200", t0); }},
      {"a newer complete one", [&] { checkpoint(dir, "step-300", t0 + 10); }},
      {"a newer torn one is ignored", [&] { checkpoint(dir, "step-400", 0); }},
      {"an older marker in a greater name loses", [&] { checkpoint(dir, "step-999", t0 + 5); }},
      {"a tie goes to the greater name", [&] { checkpoint(dir, "step-301", t0 + 10); }},
      {"dot names count", [&] { checkpoint(dir, ".late", t0 + 20); }},
      {"a space in the name", [&] { checkpoint(dir, "step 500", t0 + 30); }},
      {"a symlinked checkpoint directory is not followed",
       [&] {
         checkpoint(tmp.path(), "elsewhere", t0 + 99);
         fs::create_directory_symlink(tmp.path() + "/elsewhere", dir + "/step-link");
       }},
      {"a symlinked marker does not count",
       [&] {
         fs::create_directories(dir + "/step-600");
         touch(tmp.path() + "/marker", t0 + 99);
         fs::create_symlink(tmp.path() + "/marker", dir + "/step-600/COMPLETE");
       }},
      {"a marker that is a directory does not count", [&] { fs::create_directories(dir + "/step-700/COMPLETE"); }},
      {"a plain file is not a checkpoint", [&] { touch(dir + "/notes.txt", t0 + 99); }},
      {"ties across dot names and bytes", [&] { checkpoint(dir, "Step-A", t0 + 30); }},
  };
  for (const auto& step : steps) {
    step.change();
    auto newest = newest_complete_checkpoint(dir, "COMPLETE", geteuid());
    std::string expected = newest ? newest->path : "";
    for (const auto& shell : shells()) {
      EXPECT_EQ(expected, resume_from_in_pod(shell, dir)) << step.what << " (" << shell << ")";
      EXPECT_EQ(expected, resume_from_in_pod(shell, dir + "//")) << step.what << ", trailing slashes (" << shell << ")";
    }
  }
  EXPECT_EQ(dir + "/step 500", newest_complete_checkpoint(dir, "COMPLETE", geteuid())->path)
      << "the steps above end on this one";
  EXPECT_EQ("", resume_from_in_pod("/bin/sh", "")) << "no checkpoint directory";
}

// Runs the prelude with `signal` in front of a command that records the signals it gets, sends
// the prelude SIGTERM (as the kubelet does on pod deletion) once the command runs, and returns
// "<signals recorded> rc=<the prelude's exit status>".
std::string terminate_in_pod(const std::string& shell, int signal) {
  TempDir tmp;
  const std::string rec = tmp.path() + "/rec";
  const char* child = R"(trap 'echo USR1 >>"$1.got"; exit 7' USR1
trap 'echo TERM >>"$1.got"; exit 9' TERM
echo ready >"$1.ready"
while :; do sleep 0.05; done)";
  const char* harness = R"("$0" -c "$1" safe-entrypoint /bin/sh -c "$2" child "$3" &
w=$!
i=0
while [ ! -s "$3.ready" ] && [ "$i" -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
kill -TERM "$w"
wait "$w"
echo "rc=$?")";
  SystemProcessRunner runner;
  ProcessResult r = runner.run({"/bin/sh", "-c", harness, shell, kube_entrypoint_script("COMPLETE", signal), child, rec}, 20s);
  EXPECT_TRUE(r.ok()) << r.describe() << " " << r.err;
  std::ifstream got(rec + ".got");
  std::string signals((std::istreambuf_iterator<char>(got)), {});
  while (!signals.empty() && signals.back() == '\n') signals.pop_back();
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return signals + " " + out;
}

TEST(KubeEntrypoint, SigtermBecomesTheCheckpointSignalAndTheStatusIsTheCommands) {
  for (const auto& shell : shells()) {
    EXPECT_EQ("USR1 rc=7", terminate_in_pod(shell, SIGUSR1)) << shell;
    EXPECT_EQ("TERM rc=9", terminate_in_pod(shell, 0)) << shell << ": without a checkpoint signal SIGTERM goes on";
  }
}

TEST(KubeEntrypoint, ExitStatusPassesThroughWithoutSignals) {
  SystemProcessRunner runner;
  for (const auto& shell : shells()) {
    ProcessResult r = runner.run({shell, "-c", kube_entrypoint_script("COMPLETE", SIGUSR1), "safe-entrypoint", "/bin/sh",
                                  "-c", "echo \"$# $1\"; exit 75", "cmd", "one arg"},
                                 10s);
    EXPECT_EQ(ProcessResult::Outcome::exited, r.outcome) << shell;
    EXPECT_EQ(75, r.exit_code) << shell;
    EXPECT_EQ("1 one arg\n", r.out) << shell;
  }
}

}  // namespace
}  // namespace safe::bridge
