#include "controller/safectl/doctor_checks.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sstream>

#include "common/admission.hpp"

namespace safe::doctor {
namespace {

constexpr const char* kRender = "safectl render-slurm prints the lines SaFE needs";

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  while (true) {
    std::size_t at = s.find(sep);
    std::string part = trim(s.substr(0, at));
    if (!part.empty()) parts.push_back(part);
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

std::string basename(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// slurmctld's value for `key`; "" for unset ("(null)", "none").
std::string setting(const std::map<std::string, std::string>& config, const std::string& key) {
  auto it = config.find(key);
  if (it == config.end() || it->second == "(null)" || it->second == "none") return "";
  return it->second;
}

std::string short_digest(const std::string& digest) { return digest.substr(0, 12); }

Check check(std::string name, Verdict verdict, std::string detail, std::string fix = "") {
  return Check{std::move(name), verdict, std::move(detail), std::move(fix)};
}

Check config_check(const DoctorFacts& f) {
  if (f.config)
    return check("config", Verdict::ok, f.config_path + " is valid (sha256 " + short_digest(f.config_sha256) + ")");
  std::string detail = f.config_errors.empty() ? f.config_path + ": cannot be read" : f.config_errors.front();
  if (f.config_errors.size() > 1) detail += " (and " + std::to_string(f.config_errors.size() - 1) + " more)";
  return check("config", Verdict::fail, detail, "safectl config check " + f.config_path + " lists every error to fix");
}

Check munge_check(const DoctorFacts& f) {
  if (!f.munge_ok)
    return check("munge", Verdict::fail, "cannot make a munge credential on this host: " + f.munge_error,
                 "start munged (systemctl start munge) with the cluster's /etc/munge/munge.key");
  if (!f.safed.error.empty() || f.safed.http_status == 0)
    return check("munge", Verdict::ok, "a credential was made here (safed, unreachable, did not check it)");
  if (f.config && !f.config->auth.munge)
    return check("munge", Verdict::ok, "a credential was made here (safed takes none: auth.munge is false)");
  if (f.safed.http_status == 401)
    return check("munge", Verdict::fail,
                 "safed rejected this host's munge credential" +
                     (f.safed.refusal.empty() ? std::string() : ": " + f.safed.refusal),
                 "the same /etc/munge/munge.key on every host, clocks in step, and this user known on safed's host");
  return check("munge", Verdict::ok, "safed accepted this host's credential");
}

Check controller_check(const DoctorFacts& f) {
  if (!f.controller)
    return check("slurmctld", Verdict::fail, "cannot read slurmctld's configuration: " + f.controller_error,
                 "start slurmctld (systemctl status slurmctld) and check SlurmctldHost in this host's slurm.conf");
  const auto& c = *f.controller;
  return check("slurmctld", Verdict::ok,
               "slurmctld (" + setting(c, "SlurmctldHost[0]") + ") answers, Slurm " + setting(c, "SLURM_VERSION"));
}

Check job_submit_check(const std::map<std::string, std::string>& c) {
  std::string plugins = setting(c, "JobSubmitPlugins");
  for (const auto& p : split(plugins, ','))
    if (p == "safe" || p == "job_submit/safe") return check("job-submit", Verdict::ok, "slurmctld runs job_submit/safe");
  return check("job-submit", Verdict::fail,
               "slurmctld runs without job_submit/safe (JobSubmitPlugins = " + (plugins.empty() ? "none" : plugins) +
                   "): --safe-* options and workspace policy are not applied",
               "add JobSubmitPlugins=safe to slurm.conf on the controller and restart slurmctld (" +
                   std::string(kRender) + ")");
}

// Slurm prints licenses as NAME:COUNT (22.05) or NAME*COUNT; a license without a count is one.
std::map<std::string, long long> parse_licenses(const std::string& text) {
  std::map<std::string, long long> out;
  for (const auto& item : split(text, ',')) {
    std::size_t sep = item.find_first_of(":*");
    out[item.substr(0, sep)] = sep == std::string::npos ? 1 : std::atoll(item.c_str() + sep + 1);
  }
  return out;
}

Check licenses_check(const DoctorFacts& f, const std::map<std::string, std::string>& c) {
  if (!f.config) return check("licenses", Verdict::skip, "safe.yaml is not valid");
  auto have = parse_licenses(setting(c, "Licenses"));
  std::vector<std::string> wrong;
  int quotas = 0;
  for (const auto& w : f.config->workspaces) {
    if (w.gpu_quota <= 0) continue;
    ++quotas;
    std::string name = workspace_license(w.name);
    auto it = have.find(name);
    if (it == have.end())
      wrong.push_back("workspace " + w.name + " has no license " + name + " (its quota of " +
                      std::to_string(w.gpu_quota) + " GPUs is not enforced)");
    else if (it->second != w.gpu_quota)
      wrong.push_back("license " + name + " is " + std::to_string(it->second) + ", safe.yaml says " +
                      std::to_string(w.gpu_quota));
  }
  if (wrong.empty())
    return check("licenses", Verdict::ok,
                 quotas ? "slurmctld's licenses match the " + std::to_string(quotas) + " workspace GPU quotas"
                        : "no workspace has a GPU quota");
  std::string detail = wrong.front();
  for (std::size_t i = 1; i < wrong.size(); ++i) detail += "; " + wrong[i];
  return check("licenses", Verdict::fail, detail,
               "set Licenses= on the controller to what safectl render-slurm prints, then scontrol reconfigure");
}

Check plugstack_check(const DoctorFacts& f) {
  if (f.sbatch_help.find("--safe-retries") != std::string::npos)
    return check("plugstack", Verdict::ok, "Slurm on this host loads spank_safe.so (sbatch --help lists --safe-*)");
  std::string detail = f.sbatch_error.empty()
                           ? "sbatch on this host offers no --safe-* options: its plugstack.conf has no SaFE line"
                           : "sbatch --help fails on this host: " + f.sbatch_error;
  return check("plugstack", Verdict::fail, detail,
               "add the plugstack.conf line (" + std::string(kRender) + ") on every host that runs Slurm commands or slurmd");
}

// Is `path` executable here? Only asked on a node; elsewhere the map has no entry.
std::string missing_here(const DoctorFacts& f, const std::string& path) {
  auto it = f.executable.find(path);
  if (it == f.executable.end() || it->second) return "";
  return path + " is not an executable file on this node";
}

Check program_check(const DoctorFacts& f, const std::map<std::string, std::string>& c, const std::string& name,
                    const std::string& key, const std::string& program, const std::string& without) {
  std::vector<std::string> paths = programs_of(c, key);
  std::string value;
  for (const auto& path : paths) value += (value.empty() ? "" : ",") + path;
  for (const auto& path : paths) {
    if (basename(path) != program) continue;
    if (std::string missing = missing_here(f, path); !missing.empty())
      return check(name, Verdict::fail, missing, "install safe-node on this node (" + program + " is in it)");
    return check(name, Verdict::ok, key + " = " + value);
  }
  return check(name, Verdict::fail, key + " = " + (value.empty() ? "none" : value) + ": " + without,
               "set " + key + "=" + "<sbin>/" + program + " in slurm.conf (" + kRender + "), then scontrol reconfigure");
}

Check health_check_check(const DoctorFacts& f, const std::map<std::string, std::string>& c) {
  std::string program = setting(c, "HealthCheckProgram");
  if (program.empty())
    return check("health-check", Verdict::warn,
                 "no HealthCheckProgram: nodes are checked only where safe-healthcheck.service (the agent) or its "
                 "timer runs",
                 "enable safe-healthcheck.service on every node, or set HealthCheckProgram (" + std::string(kRender) + ")");
  if (basename(program) != "safe-healthcheck")
    return check("health-check", Verdict::warn,
                 "HealthCheckProgram = " + program + ", not safe-healthcheck: SaFE's checks run only where its agent does",
                 "enable safe-healthcheck.service on every node, or call safe-healthcheck from your health check");
  if (std::string missing = missing_here(f, program); !missing.empty())
    return check("health-check", Verdict::fail, missing, "install safe-node on this node");
  std::string states = setting(c, "HealthCheckNodeState");
  auto state_list = split(states, ',');
  // Slurm checks drained idle nodes with ANY or IDLE (not NONDRAINED_IDLE, ALLOC or MIXED alone).
  if (std::find(state_list.begin(), state_list.end(), "ANY") == state_list.end() &&
      std::find(state_list.begin(), state_list.end(), "IDLE") == state_list.end())
    return check("health-check", Verdict::warn,
                 "HealthCheckNodeState = " + states + ": nodes drained by SaFE are not checked again, so not resumed when healed",
                 "set HealthCheckNodeState=ANY (" + std::string(kRender) + ")");
  std::string interval = setting(c, "HealthCheckInterval");
  if (std::atoll(interval.c_str()) <= 0)
    return check("health-check", Verdict::warn,
                 "HealthCheckInterval = " + (interval.empty() ? "0" : interval) + ": slurmd runs " + program +
                     " only when it starts",
                 "set HealthCheckInterval (" + std::string(kRender) + ")");
  return check("health-check", Verdict::ok, "HealthCheckProgram = " + program + ", every " +
                                                setting(c, "HealthCheckInterval") + ", node state " + states);
}

// Where safed runs, <health.state_dir> must be the directory every node's prolog and epilog write
// their evidence into (docs/install.md). Each node's health checker rewrites <node>.json there on
// every run: a fresh one of every node in service means this host sees what the nodes write.
Check health_state_check(const DoctorFacts& f) {
  const char* name = "health-state";
  if (!f.config) return check(name, Verdict::skip, "safe.yaml on this host is not valid");
  if (!f.nodes_in_service) return check(name, Verdict::skip, "Slurm's nodes could not be listed: " + f.nodes_error);
  const std::string& dir = f.config->health.state_dir;
  std::vector<std::string> others;
  for (const auto& n : *f.nodes_in_service)
    if (n != f.node_name) others.push_back(n);
  if (others.empty()) return check(name, Verdict::ok, "no other node in service to share " + dir + " with");
  // A run every HealthCheckInterval (slurmd) or health.interval_s (the agent): fresh within three
  // runs of the slower of the two, and never under 5 minutes.
  long long interval = f.controller ? std::atoll(setting(*f.controller, "HealthCheckInterval").c_str()) : 0;
  interval = std::max<long long>(interval, f.config->health.interval_s);
  long long fresh_after = f.now - std::max(300LL, 3 * interval);
  std::vector<std::string> missing;
  for (const auto& n : others) {
    bool fresh = false;
    if (f.health_files) {
      auto it = f.health_files->find(n);
      fresh = it != f.health_files->end() && it->second >= fresh_after;
    }
    if (!fresh) missing.push_back(n);
  }
  if (missing.empty())
    return check(name, Verdict::ok,
                 "this host sees the health state of all " + std::to_string(others.size()) +
                     (f.node_name.empty() ? "" : " other") + " nodes in " + dir);
  std::string list;
  for (std::size_t i = 0; i < missing.size() && i < 3; ++i) list += (i ? ", " : "") + missing[i];
  if (missing.size() > 3) list += ", ...";
  std::string seen = f.health_files ? std::to_string(others.size() - missing.size()) + " of " +
                                          std::to_string(others.size()) + (f.node_name.empty() ? "" : " other") +
                                          " nodes have fresh health state in " + dir + " here (not " + list + ")"
                                    : dir + " cannot be listed here: " + f.health_files_error;
  return check(name, Verdict::warn, seen,
               "where safed runs, health.state_dir must be the directory every node writes (a shared file system), "
               "or safed misses the prolog's and epilog's evidence (docs/install.md)");
}

Check scheduler_check(const std::map<std::string, std::string>& c) {
  std::string params = setting(c, "SchedulerParameters");
  for (const auto& p : split(params, ','))
    if (p == "nohold_on_prolog_fail")
      return check("scheduler-parameters", Verdict::ok, "SchedulerParameters has nohold_on_prolog_fail");
  return check("scheduler-parameters", Verdict::fail,
               "SchedulerParameters = " + (params.empty() ? "none" : params) +
                   ": a job whose prolog finds a bad GPU is held instead of placed on other nodes",
               "add nohold_on_prolog_fail to the one SchedulerParameters line, then scontrol reconfigure");
}

Check versions_check(const DoctorFacts& f) {
  std::string here = f.local_slurm.empty() ? f.built_for_slurm : f.local_slurm;
  std::vector<std::string> problems;
  if (!f.local_slurm.empty() && f.local_slurm != f.built_for_slurm)
    problems.push_back("SaFE here was built for Slurm " + f.built_for_slurm + ", this host runs " + f.local_slurm);
  auto release = [](const std::string& v) { return v.substr(0, v.rfind('.')); };  // 22.05.8 -> 22.05
  for (const auto& p : f.plugins) {
    if (!p.present) continue;
    if (!p.error.empty())
      problems.push_back(p.path + ": " + p.error);
    else if (p.spank ? release(p.version) != release(here) : p.version != here)
      problems.push_back(p.path + " is for Slurm " + p.version + ", this host runs " + here);
  }
  if (!problems.empty()) {
    std::string detail = problems.front();
    for (std::size_t i = 1; i < problems.size(); ++i) detail += "; " + problems[i];
    return check("versions", Verdict::fail,
                 detail + " (Slurm loads a SPANK plugin of its own release only, another plugin of its exact release)",
                 "install the safe-* packages built for this host's Slurm (apt refuses a mismatched pair)");
  }
  std::vector<std::string> mixed;
  std::string ctld = f.controller ? setting(*f.controller, "SLURM_VERSION") : "";
  if (!ctld.empty() && ctld != here) mixed.push_back("slurmctld runs " + ctld + ", this host " + here);
  if (f.node && !f.node->version.empty() && !ctld.empty() && f.node->version != ctld)
    mixed.push_back("slurmd on " + f.node->name + " runs " + f.node->version + ", slurmctld " + ctld);
  if (!mixed.empty())
    return check("versions", Verdict::warn, mixed.front() + (mixed.size() > 1 ? "; " + mixed[1] : ""),
                 "mixed Slurm releases belong only inside an upgrade (docs/install.md, Upgrading)");
  std::size_t plugins = std::count_if(f.plugins.begin(), f.plugins.end(), [](const PluginFile& p) { return p.present; });
  if (plugins == 0)
    return check("versions", Verdict::warn, "no SaFE plugin in " + (f.plugin_dirs.empty() ? "PluginDir" : f.plugin_dirs),
                 "install safe-slurm-plugins on this host, or --plugin-dir DIR where its plugins are");
  return check("versions", Verdict::ok,
               "Slurm " + here + " here" + (ctld.empty() ? "" : " and on slurmctld") + ", SaFE built for it, " +
                   std::to_string(plugins) + (plugins == 1 ? " plugin" : " plugins") + " of that release");
}

Check node_check(const DoctorFacts& f) {
  if (f.node_name.empty())
    return check("node", Verdict::skip, "this host is not a Slurm node (--node NAME checks one)");
  if (!f.node)
    return check("node", Verdict::fail, "Slurm has no node " + f.node_name + ": " + f.node_error,
                 "check the node's NodeName in slurm.conf, or pass --node with its Slurm name");
  const NodeStatus& n = *f.node;
  if (n.has_flag("DOWN") || n.has_flag("FAIL"))
    return check("node", Verdict::fail, n.name + " is " + n.state + (n.reason.empty() ? "" : ": " + n.reason),
                 "systemctl status slurmd on " + n.name + "; scontrol update nodename=" + n.name +
                     " state=resume once it answers");
  if (n.drained()) {
    std::string owner = is_quarantine_reason(n.reason) ? " (quarantined by safed: safectl node release " + n.name + ")"
                        : is_own_reason(n.reason) ? " (by SaFE's health check: it resumes the node once healed)"
                                                  : "";
    return check("node", Verdict::warn, n.name + " is " + n.state + ": " + n.reason + owner,
                 owner.empty() ? "scontrol update nodename=" + n.name + " state=resume once the cause is fixed" : "");
  }
  return check("node", Verdict::ok, n.name + " is " + n.state + ", slurmd " + n.version);
}

Check safed_check(const DoctorFacts& f) {
  const SafedAnswer& s = f.safed;
  std::string fix = "systemctl status safed; journalctl -u safed (controller.listen in safe.yaml says where it listens)";
  if (!s.error.empty()) return check("safed", Verdict::fail, "safed at " + s.url + " does not answer: " + s.error, fix);
  if (s.http_status == 401)  // the munge check fails; safed's own state could not be read
    return check("safed", Verdict::skip,
                 "safed at " + s.url + " refused the request (see munge)" + (s.refusal.empty() ? "" : ": " + s.refusal));
  if (s.http_status != 200)
    return check("safed", Verdict::fail, "safed at " + s.url + " answered HTTP " + std::to_string(s.http_status), fix);
  if (s.role == "standby")
    return check("safed", Verdict::warn, "safed at " + s.url + " is the standby; the active one is at " + s.active_url,
                 "ask the active one: --url " + s.active_url);
  if (!s.slurm_ok)
    return check("safed", Verdict::fail, "safed cannot read Slurm: " + s.slurm_error,
                 "check slurmctld and the slurm.conf safed reads; journalctl -u safed");
  int poll_s = f.config ? std::max(1, f.config->controller.poll_interval_ms / 1000) : 1;
  long long stale_after = std::max(30, 10 * poll_s);
  long long age = f.now - s.last_pass;
  if (s.last_pass == 0 || age > stale_after)
    return check("safed", Verdict::fail,
                 "safed's last complete pass was " + (s.last_pass == 0 ? std::string("never") : std::to_string(age) + " s ago") +
                     ": nothing is failed over meanwhile",
                 "journalctl -u safed; systemctl restart safed");
  return check("safed", Verdict::ok,
               "safed at " + s.url + " is " + s.role + ", its last pass over Slurm " + std::to_string(std::max(0LL, age)) + " s ago");
}

Check config_same_check(const DoctorFacts& f) {
  if (!f.config) return check("config-same", Verdict::skip, "safe.yaml on this host is not valid");
  if (f.safed.http_status != 200 || f.safed.config_sha256.empty())
    return check("config-same", Verdict::skip, "safed did not say which safe.yaml it runs with");
  if (f.safed.config_sha256 == f.config_sha256)
    return check("config-same", Verdict::ok, "this host's safe.yaml is the one safed runs with");
  return check("config-same", Verdict::fail,
               f.config_path + " here (sha256 " + short_digest(f.config_sha256) + ") is not the safe.yaml safed runs with (" +
                   short_digest(f.safed.config_sha256) + ")",
               "give every host the same safe.yaml; after changing the controller's, systemctl reload safed");
}

Check bridge_check(const DoctorFacts& f) {
  const BridgeAnswer& b = f.bridge;
  if (b.error.empty() && b.http_status == 200) return check("bridge", Verdict::ok, "the REST bridge at " + b.url + " answers");
  std::string found = b.error.empty() ? "answered HTTP " + std::to_string(b.http_status) : "does not answer: " + b.error;
  if (b.named || b.error.empty())
    return check("bridge", Verdict::fail, "the REST bridge at " + b.url + " " + found,
                 "systemctl status safe-kube-bridge; journalctl -u safe-kube-bridge");
  return check("bridge", Verdict::warn, "no REST bridge answers at " + b.url + " (" + b.error + ")",
               "if this site runs one: systemctl status safe-kube-bridge, or --bridge URL where it listens");
}

Check clock_check(const DoctorFacts& f) {
  if (!f.safed.date) return check("clock", Verdict::skip, "safed did not answer with a date");
  // The Date header has whole seconds, and the answer was made somewhere within the round trip.
  long long off = f.safed.asked_at - *f.safed.date;
  double allowance = 1 + f.safed.round_trip_s / 2;
  double beyond = std::abs(static_cast<double>(off)) - allowance;
  if (beyond <= f.max_clock_skew_s)
    return check("clock", Verdict::ok, "this host's clock agrees with safed's within " +
                                           std::to_string(std::max(1LL, static_cast<long long>(std::abs(off)))) + " s");
  return check("clock", Verdict::fail,
               "this host's clock is " + std::to_string(off) + " s off safed's host (more than " +
                   std::to_string(f.max_clock_skew_s) + " s)",
               "run time synchronisation (chrony or systemd-timesyncd) on every host: munge and SaFE's timings need agreed clocks");
}

}  // namespace

const char* to_string(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok: return "ok";
    case Verdict::warn: return "warn";
    case Verdict::fail: return "fail";
    case Verdict::skip: return "skip";
  }
  return "?";
}

std::vector<Check> diagnose(const DoctorFacts& f) {
  std::vector<Check> checks{config_check(f), munge_check(f), controller_check(f)};
  const char* no_ctld = "slurmctld's configuration could not be read";
  if (f.controller) {
    const auto& c = *f.controller;
    checks.push_back(job_submit_check(c));
    checks.push_back(licenses_check(f, c));
  } else {
    checks.push_back(check("job-submit", Verdict::skip, no_ctld));
    checks.push_back(check("licenses", Verdict::skip, no_ctld));
  }
  checks.push_back(plugstack_check(f));
  if (f.controller) {
    const auto& c = *f.controller;
    checks.push_back(health_check_check(f, c));
    checks.push_back(program_check(f, c, "prolog", "Prolog", "safe-prolog",
                                   "jobs start on GPUs nobody checked, and a bad GPU fails them instead of moving them"));
    checks.push_back(program_check(f, c, "epilog", "Epilog", "safe-epilog",
                                   "no post-job check, no stray-process cleanup, no evidence for safed's classifier"));
    checks.push_back(scheduler_check(c));
  } else {
    for (const char* name : {"health-check", "prolog", "epilog", "scheduler-parameters"})
      checks.push_back(check(name, Verdict::skip, no_ctld));
  }
  checks.push_back(health_state_check(f));
  checks.push_back(versions_check(f));
  checks.push_back(node_check(f));
  checks.push_back(safed_check(f));
  checks.push_back(config_same_check(f));
  checks.push_back(bridge_check(f));
  checks.push_back(clock_check(f));
  return checks;
}

bool any_failed(const std::vector<Check>& checks) {
  return std::any_of(checks.begin(), checks.end(), [](const Check& c) { return c.verdict == Verdict::fail; });
}

std::vector<std::string> programs_of(const std::map<std::string, std::string>& config, const std::string& key) {
  std::vector<std::string> programs = split(setting(config, key), ',');
  for (int i = 0;; ++i) {
    auto it = config.find(key + "[" + std::to_string(i) + "]");
    if (it == config.end()) return programs;
    for (const auto& p : split(it->second, ',')) programs.push_back(p);
  }
}

std::map<std::string, long long> parse_health_files(std::string_view text) {
  std::map<std::string, long long> out;
  std::istringstream in{std::string(text)};
  std::string file, mtime;
  while (in >> file >> mtime) {
    const std::string suffix = ".json";
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    out[file.substr(0, file.size() - suffix.size())] = std::atoll(mtime.c_str());
  }
  return out;
}

std::vector<std::string> parse_nodes_in_service(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  std::string node, state;
  while (in >> node >> state) {
    // Down, failed, not responding (*), powered down or powering up or down (~ # % !), or not
    // yet in the cluster (future, unknown): none of them runs health checks.
    bool down = state.rfind("down", 0) == 0 || state.rfind("fail", 0) == 0 || state.rfind("future", 0) == 0 ||
                state.rfind("unk", 0) == 0 || state.find_first_of("*~#%!") != std::string::npos;
    if (!down && std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  }
  return out;
}

std::map<std::string, std::string> parse_scontrol_config(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    std::size_t eq = line.find(" = ");
    if (eq == std::string_view::npos) continue;
    std::string key = trim(line.substr(0, eq));
    if (key.empty() || key.find(' ') != std::string::npos) continue;
    out.emplace(key, trim(line.substr(eq + 3)));
  }
  return out;
}

std::string parse_slurm_version(std::string_view text) {
  // "slurm 22.05.8"; Debian's Slurm calls itself "slurm-wlm 22.05.8".
  std::string line = trim(text.substr(0, text.find('\n')));
  std::size_t space = line.rfind(' ');
  if (line.rfind("slurm", 0) != 0 || space == std::string::npos) return "";
  std::string version = line.substr(space + 1);
  if (version.empty() || version[0] < '0' || version[0] > '9') return "";
  bool plausible = !version.empty() && std::all_of(version.begin(), version.end(), [](char c) {
    return (c >= '0' && c <= '9') || c == '.' || c == '-' || (c >= 'a' && c <= 'z');
  });
  return plausible ? version : "";
}

std::string slurm_version_string(unsigned long number) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02lu.%02lu.%lu", (number >> 16) & 0xff, (number >> 8) & 0xff, number & 0xff);
  return buf;
}

Result<unsigned long> plugin_version_in_elf(std::string_view file) {
  Elf64_Ehdr eh;
  if (file.size() < sizeof eh || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0) return Error{"not an ELF file"};
  std::memcpy(&eh, file.data(), sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr))
    return Error{"not a 64-bit little-endian ELF file"};
  auto within = [&](std::uint64_t offset, std::uint64_t size) { return offset <= file.size() && size <= file.size() - offset; };
  if (!within(eh.e_shoff, std::uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr))) return Error{"truncated section headers"};
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), file.data() + eh.e_shoff, sections.size() * sizeof(Elf64_Shdr));
  for (const auto& symtab : sections) {
    if (symtab.sh_type != SHT_DYNSYM || symtab.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strtab = sections[symtab.sh_link];
    if (!within(symtab.sh_offset, symtab.sh_size) || !within(strtab.sh_offset, strtab.sh_size))
      return Error{"truncated symbol table"};
    for (std::uint64_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, file.data() + symtab.sh_offset + at, sizeof sym);
      if (sym.st_name >= strtab.sh_size || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= sections.size()) continue;
      std::string_view names = file.substr(strtab.sh_offset, strtab.sh_size);
      std::string_view name = names.substr(sym.st_name, names.find('\0', sym.st_name) - sym.st_name);
      if (name != "plugin_version") continue;
      const Elf64_Shdr& holder = sections[sym.st_shndx];
      if (holder.sh_type == SHT_NOBITS || sym.st_value < holder.sh_addr ||
          !within(holder.sh_offset + (sym.st_value - holder.sh_addr), 4))
        return Error{"plugin_version is not stored in the file"};
      std::uint32_t version;
      std::memcpy(&version, file.data() + holder.sh_offset + (sym.st_value - holder.sh_addr), sizeof version);
      return static_cast<unsigned long>(version);
    }
  }
  return Error{"has no plugin_version: not a Slurm plugin"};
}

}  // namespace safe::doctor
