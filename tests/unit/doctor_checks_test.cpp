// safectl doctor's verdicts (controller/safectl/doctor_checks): a healthy installation passes
// every check; each one broken thing fails (or warns in) exactly its own check, with a fix.
#include "controller/safectl/doctor_checks.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <sstream>

namespace safe::doctor {
namespace {

DoctorFacts healthy() {
  DoctorFacts f;
  f.now = 1000;
  f.config_path = "/etc/safe/safe.yaml";
  ConfigResult parsed = parse_config("workspaces:\n  - name: ml\n    gpu_quota: 8\n", "safe.yaml");
  EXPECT_TRUE(parsed.ok());
  f.config = parsed.config;
  f.config_sha256 = "aaaa";
  f.built_for_slurm = f.local_slurm = "22.05.8";
  f.plugins = {{"/usr/lib/slurm/spank_safe.so", true, "22.05.8", "", true},
               {"/usr/lib/slurm/job_submit_safe.so", true, "22.05.8", "", false}};
  f.controller = parse_scontrol_config(
      "Configuration data as of 2026-12-03T20:00:00\n"
      "SlurmctldHost[0]        = ctl(10.0.0.1)\n"
      "SLURM_VERSION           = 22.05.8\n"
      "JobSubmitPlugins        = lua,safe\n"
      "Licenses                = safe_ws_ml:8\n"
      "HealthCheckProgram      = /usr/sbin/safe-healthcheck\n"
      "HealthCheckInterval     = 300 sec\n"
      "HealthCheckNodeState    = ANY\n"
      "Prolog                  = /usr/sbin/safe-prolog\n"
      "Epilog                  = /etc/slurm/site-epilog,/usr/sbin/safe-epilog\n"
      "SchedulerParameters     = bf_continue,nohold_on_prolog_fail\n"
      "\n"
      "Cgroup Support Configuration:\n");
  f.sbatch_help = "Usage: sbatch [OPTIONS...] executable\n      --safe-retries=N   ...\n";
  f.node_name = "n1";
  f.node = parse_scontrol_show_node("NodeName=n1 Arch=x86_64 State=IDLE Version=22.05.8 Reason=old [root@2026]");
  f.executable = {{"/usr/sbin/safe-healthcheck", true}, {"/usr/sbin/safe-prolog", true},
                  {"/etc/slurm/site-epilog", true}, {"/usr/sbin/safe-epilog", true}};
  f.munge_ok = true;
  f.safed.url = "http://ctl:9810";
  f.safed.http_status = 200;
  f.safed.role = "active";
  f.safed.slurm_ok = true;
  f.safed.last_pass = 998;
  f.safed.config_sha256 = "aaaa";
  f.safed.date = 1000;
  f.safed.asked_at = 1000;
  f.safed.round_trip_s = 0.01;
  f.bridge = {"http://bridge:9820", true, "", 200};
  // Every node's health checker ran within its interval, into the directory this host reads.
  f.nodes_in_service = std::vector<std::string>{"n1", "n2", "n3"};
  f.health_files = std::map<std::string, long long>{{"n1", 990}, {"n2", 800}, {"n3", 995}};
  return f;
}

Verdict verdict_of(const std::vector<Check>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.name == name) return c.verdict;
  ADD_FAILURE() << "no check " << name;
  return Verdict::skip;
}

TEST(DoctorChecks, HealthyInstallationPassesEveryCheck) {
  auto checks = diagnose(healthy());
  EXPECT_EQ(checks.size(), 17u);
  for (const auto& c : checks) {
    EXPECT_EQ(c.verdict, Verdict::ok) << c.name << ": " << c.detail;
    EXPECT_TRUE(c.fix.empty()) << c.name;
  }
  EXPECT_FALSE(any_failed(checks));
}

struct Breakage {
  const char* what;
  std::function<void(DoctorFacts&)> apply;
  const char* check;
  Verdict verdict;
};

TEST(DoctorChecks, EachBrokenThingFailsItsOwnCheckWithAFix) {
  const std::vector<Breakage> cases = {
      {"invalid safe.yaml", [](DoctorFacts& f) { f.config.reset(); f.config_errors = {"safe.yaml:3:5: unknown key"}; },
       "config", Verdict::fail},
      {"no munged", [](DoctorFacts& f) { f.munge_ok = false; f.munge_error = "Socket communication error"; }, "munge",
       Verdict::fail},
      {"munge key differs", [](DoctorFacts& f) { f.safed.http_status = 401; }, "munge", Verdict::fail},
      {"no job_submit/safe", [](DoctorFacts& f) { (*f.controller)["JobSubmitPlugins"] = "lua"; }, "job-submit",
       Verdict::fail},
      {"license missing", [](DoctorFacts& f) { (*f.controller)["Licenses"] = "(null)"; }, "licenses", Verdict::fail},
      {"license count differs", [](DoctorFacts& f) { (*f.controller)["Licenses"] = "safe_ws_ml*4"; }, "licenses",
       Verdict::fail},
      {"no plugstack line", [](DoctorFacts& f) { f.sbatch_help = "Usage: sbatch\n"; }, "plugstack", Verdict::fail},
      {"sbatch fails", [](DoctorFacts& f) { f.sbatch_help.clear(); f.sbatch_error = "spank: cannot open"; }, "plugstack",
       Verdict::fail},
      {"no HealthCheckProgram", [](DoctorFacts& f) { (*f.controller)["HealthCheckProgram"] = "(null)"; }, "health-check",
       Verdict::warn},
      {"another health check", [](DoctorFacts& f) { (*f.controller)["HealthCheckProgram"] = "/usr/sbin/nhc"; },
       "health-check", Verdict::warn},
      {"drained nodes not rechecked", [](DoctorFacts& f) { (*f.controller)["HealthCheckNodeState"] = "ALLOC,MIXED"; },
       "health-check", Verdict::warn},
      {"checker missing on the node", [](DoctorFacts& f) { f.executable["/usr/sbin/safe-healthcheck"] = false; },
       "health-check", Verdict::fail},
      {"another prolog", [](DoctorFacts& f) { (*f.controller)["Prolog"] = "/etc/slurm/prolog"; }, "prolog",
       Verdict::fail},
      {"prolog missing on the node", [](DoctorFacts& f) { f.executable["/usr/sbin/safe-prolog"] = false; }, "prolog",
       Verdict::fail},
      {"no epilog", [](DoctorFacts& f) { (*f.controller)["Epilog"] = "(null)"; }, "epilog", Verdict::fail},
      {"prolog failures hold jobs", [](DoctorFacts& f) { (*f.controller)["SchedulerParameters"] = "bf_continue"; },
       "scheduler-parameters", Verdict::fail},
      {"built for another Slurm", [](DoctorFacts& f) { f.built_for_slurm = "22.05.7"; }, "versions", Verdict::fail},
      {"job_submit plugin of another micro release", [](DoctorFacts& f) { f.plugins[1].version = "22.05.9"; },
       "versions", Verdict::fail},
      {"SPANK plugin of another release", [](DoctorFacts& f) { f.plugins[0].version = "23.02.1"; }, "versions",
       Verdict::fail},
      {"no plugin found", [](DoctorFacts& f) { f.plugins.clear(); }, "versions", Verdict::warn},
      {"health checks only at slurmd start", [](DoctorFacts& f) { (*f.controller)["HealthCheckInterval"] = "0 sec"; },
       "health-check", Verdict::warn},
      {"plugin not loadable", [](DoctorFacts& f) { f.plugins[0].error = "cannot be loaded: bad ELF"; }, "versions",
       Verdict::fail},
      {"slurmctld on another release", [](DoctorFacts& f) { (*f.controller)["SLURM_VERSION"] = "23.02.1"; }, "versions",
       Verdict::warn},
      {"unknown node", [](DoctorFacts& f) { f.node.reset(); f.node_error = "Node n1 not found"; }, "node",
       Verdict::fail},
      {"node down", [](DoctorFacts& f) { f.node->state = "DOWN*"; }, "node", Verdict::fail},
      {"node drained by an admin", [](DoctorFacts& f) { f.node->state = "IDLE+DRAIN"; f.node->reason = "disk"; },
       "node", Verdict::warn},
      {"safed unreachable", [](DoctorFacts& f) { f.safed.error = "Connection refused"; f.safed.http_status = 0; },
       "safed", Verdict::fail},
      {"safed without Slurm", [](DoctorFacts& f) { f.safed.slurm_ok = false; f.safed.slurm_error = "timeout"; },
       "safed", Verdict::fail},
      {"safed stalled", [](DoctorFacts& f) { f.safed.last_pass = 900; }, "safed", Verdict::fail},
      {"asked the standby", [](DoctorFacts& f) { f.safed.role = "standby"; }, "safed", Verdict::warn},
      {"another safe.yaml", [](DoctorFacts& f) { f.config_sha256 = "bbbb"; }, "config-same", Verdict::fail},
      {"named bridge down", [](DoctorFacts& f) { f.bridge.error = "Connection refused"; f.bridge.http_status = 0; },
       "bridge", Verdict::fail},
      {"no bridge at the default address",
       [](DoctorFacts& f) { f.bridge.named = false; f.bridge.error = "Connection refused"; f.bridge.http_status = 0; },
       "bridge", Verdict::warn},
      {"clock ahead", [](DoctorFacts& f) { f.safed.asked_at += 8; }, "clock", Verdict::fail},
      {"clock behind", [](DoctorFacts& f) { f.safed.asked_at -= 8; }, "clock", Verdict::fail},
      {"health state not shared", [](DoctorFacts& f) { f.health_files = std::map<std::string, long long>{{"n1", 990}}; },
       "health-state", Verdict::warn},
      {"another node's health state stale", [](DoctorFacts& f) { (*f.health_files)["n3"] = 1000 - 901; },
       "health-state", Verdict::warn},
      {"health state directory unreadable",
       [](DoctorFacts& f) { f.health_files.reset(); f.health_files_error = "find: Permission denied"; },
       "health-state", Verdict::warn},
  };
  for (const auto& c : cases) {
    DoctorFacts f = healthy();
    c.apply(f);
    auto checks = diagnose(f);
    for (const auto& check : checks) {
      if (check.name == c.check) {
        EXPECT_EQ(check.verdict, c.verdict) << c.what << ": " << check.detail;
        EXPECT_FALSE(check.fix.empty() && c.verdict == Verdict::fail) << c.what << ": no fix";
      } else {
        EXPECT_NE(check.verdict, Verdict::fail) << c.what << " also failed " << check.name << ": " << check.detail;
      }
    }
    EXPECT_EQ(any_failed(checks), c.verdict == Verdict::fail) << c.what;
  }
}

TEST(DoctorChecks, WithoutSlurmctldItsChecksAreSkipped) {
  DoctorFacts f = healthy();
  f.controller.reset();
  f.controller_error = "Unable to contact slurm controller";
  auto checks = diagnose(f);
  EXPECT_EQ(verdict_of(checks, "slurmctld"), Verdict::fail);
  for (const char* name : {"job-submit", "licenses", "health-check", "prolog", "epilog", "scheduler-parameters"})
    EXPECT_EQ(verdict_of(checks, name), Verdict::skip) << name;
}

TEST(DoctorChecks, ClockAllowsTheDateHeadersSecondAndHalfTheRoundTrip) {
  DoctorFacts f = healthy();
  f.safed.asked_at = 1000 + 6;  // 5 s allowed, +1 for the header's whole seconds
  EXPECT_EQ(verdict_of(diagnose(f), "clock"), Verdict::ok);
  f.safed.asked_at = 1000 + 7;
  EXPECT_EQ(verdict_of(diagnose(f), "clock"), Verdict::fail);
  f.safed.date.reset();
  EXPECT_EQ(verdict_of(diagnose(f), "clock"), Verdict::skip);
}

TEST(DoctorChecks, ReadsTheProgramListsOfLaterSlurmReleases) {
  DoctorFacts f = healthy();
  f.controller->erase("Prolog");
  f.controller->erase("Epilog");
  (*f.controller)["Prolog[0]"] = "/etc/slurm/site-prolog";
  (*f.controller)["Prolog[1]"] = "/usr/sbin/safe-prolog";
  (*f.controller)["Epilog[0]"] = "/usr/sbin/safe-epilog";
  EXPECT_EQ(programs_of(*f.controller, "Prolog"), (std::vector<std::string>{"/etc/slurm/site-prolog", "/usr/sbin/safe-prolog"}));
  auto checks = diagnose(f);
  EXPECT_EQ(verdict_of(checks, "prolog"), Verdict::ok);
  EXPECT_EQ(verdict_of(checks, "epilog"), Verdict::ok);
  f.controller->erase("Prolog[1]");
  EXPECT_EQ(verdict_of(diagnose(f), "prolog"), Verdict::fail);
}

TEST(DoctorChecks, ASpankPluginOfTheSameReleaseButAnotherMicroLoads) {
  DoctorFacts f = healthy();
  f.plugins[0].version = "22.05.9";
  EXPECT_EQ(verdict_of(diagnose(f), "versions"), Verdict::ok);
}

TEST(DoctorChecks, IdleHealthCheckNodeStateRechecksDrainedNodes) {
  DoctorFacts f = healthy();
  (*f.controller)["HealthCheckNodeState"] = "IDLE,CYCLE";
  EXPECT_EQ(verdict_of(diagnose(f), "health-check"), Verdict::ok);
  (*f.controller)["HealthCheckNodeState"] = "NONDRAINED_IDLE";
  EXPECT_EQ(verdict_of(diagnose(f), "health-check"), Verdict::warn);
}

TEST(DoctorChecks, SafedsRefusalIsShownAndAuthWithoutMungeIsNoFailure) {
  DoctorFacts f = healthy();
  f.safed.http_status = 401;
  f.safed.refusal = "safed: credential expired";
  auto checks = diagnose(f);
  for (const auto& c : checks)
    if (c.name == "munge") {
      EXPECT_NE(c.detail.find("credential expired"), std::string::npos) << c.detail;
    }
  f.config->auth.munge = false;
  EXPECT_EQ(verdict_of(diagnose(f), "munge"), Verdict::ok);
}

TEST(DoctorChecks, PluginVersionIsReadFromTheElfFileOnly) {
  EXPECT_FALSE(plugin_version_in_elf("not an ELF file at all, but long enough to hold a header......"));
  EXPECT_FALSE(plugin_version_in_elf("\x7f" "ELF"));
  // This test program is an ELF file without the symbol.
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto version = plugin_version_in_elf(bytes.str());
  ASSERT_FALSE(version);
  EXPECT_NE(version.error().find("no plugin_version"), std::string::npos) << version.error();
  // Cut short: the section headers are past the end.
  EXPECT_FALSE(plugin_version_in_elf(bytes.str().substr(0, 4096)));
}

TEST(DoctorChecks, NotANodeSkipsTheNodeCheck) {
  DoctorFacts f = healthy();
  f.node_name.clear();
  f.node.reset();
  f.executable.clear();
  EXPECT_EQ(verdict_of(diagnose(f), "node"), Verdict::skip);
}

TEST(DoctorChecks, HealthStateIsFreshWithinThreeHealthCheckIntervalsAndFiveMinutes) {
  DoctorFacts f = healthy();
  (*f.health_files)["n3"] = 1000 - 900;  // HealthCheckInterval 300 s: three runs missed, no more
  EXPECT_EQ(verdict_of(diagnose(f), "health-state"), Verdict::ok);
  (*f.controller)["HealthCheckInterval"] = "5 sec";  // still five minutes at least
  f.config->health.interval_s = 60;
  (*f.health_files)["n3"] = 1000 - 300;
  EXPECT_EQ(verdict_of(diagnose(f), "health-state"), Verdict::ok);
  f.config->health.interval_s = 120;  // the agent's interval, when it is the slower
  (*f.health_files)["n3"] = 1000 - 360;
  EXPECT_EQ(verdict_of(diagnose(f), "health-state"), Verdict::ok);
  (*f.health_files)["n3"] = 1000 - 361;
  auto checks = diagnose(f);
  EXPECT_EQ(verdict_of(checks, "health-state"), Verdict::warn);
  for (const auto& c : checks)
    if (c.name == "health-state") {
      EXPECT_NE(c.detail.find("1 of 2 other nodes"), std::string::npos) << c.detail;
      EXPECT_NE(c.detail.find("(not n3)"), std::string::npos) << c.detail;
      EXPECT_NE(c.fix.find("shared file system"), std::string::npos) << c.fix;
    }
}

TEST(DoctorChecks, HealthStateCountsTheNodesInServiceOnly) {
  DoctorFacts f = healthy();
  f.node_name.clear();  // the controller host: every node counts
  f.node.reset();
  f.executable.clear();
  f.health_files->erase("n1");
  EXPECT_EQ(verdict_of(diagnose(f), "health-state"), Verdict::warn);
  f.nodes_in_service = std::vector<std::string>{"n2", "n3"};  // n1 is down
  EXPECT_EQ(verdict_of(diagnose(f), "health-state"), Verdict::ok);
  f.nodes_in_service.reset();
  f.nodes_error = "sinfo: error: Unable to contact slurm controller";
  EXPECT_EQ(verdict_of(diagnose(f), "health-state"), Verdict::skip);
  EXPECT_EQ(parse_nodes_in_service("n1 idle\nn2 down*\nn3 drained\nn1 idle\nn4 idle*\nn5 mixed\nn6 fail\n"
                                   "n7 idle~\nn8 idle#\nn9 future\nn10 unknown\nn11 allocated%\n"),
            (std::vector<std::string>{"n1", "n3", "n5"}));
  EXPECT_EQ(parse_health_files("n1.json 1733340000.5\nn1.lock 1\nn2.json 17\n.json 3\n"),
            (std::map<std::string, long long>{{"n1", 1733340000}, {"n2", 17}}));
}

TEST(DoctorChecks, ParsesSlurmsOutput) {
  auto config = parse_scontrol_config("SLURM_VERSION = 22.05.8\nSlurmctldHost[0]        = a(b)\nnot a setting\n");
  EXPECT_EQ(config.at("SLURM_VERSION"), "22.05.8");
  EXPECT_EQ(config.at("SlurmctldHost[0]"), "a(b)");
  EXPECT_EQ(config.size(), 2u);
  EXPECT_EQ(parse_slurm_version("slurm 22.05.8\n"), "22.05.8");
  EXPECT_EQ(parse_slurm_version("slurm-wlm 22.05.8\n"), "22.05.8");  // Debian's
  EXPECT_EQ(parse_slurm_version("slurm-wlm unknown"), "");
  EXPECT_EQ(parse_slurm_version("sbatch: error: ..."), "");
  EXPECT_EQ(slurm_version_string(0x160508), "22.05.8");
  EXPECT_EQ(slurm_version_string(0x1a0503), "26.05.3");
}

}  // namespace
}  // namespace safe::doctor
