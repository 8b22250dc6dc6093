#include "common/admission.hpp"

#include <algorithm>
#include <csignal>

#include "common/signal_name.hpp"

namespace safe {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::vector<std::string> usable_workspaces(const SafeConfig& config, const JobUser& user) {
  std::vector<std::string> names;
  for (const auto& w : config.workspaces)
    if (is_member(w, user)) names.push_back(w.name);
  return names;
}

std::string you_may_use(const SafeConfig& config, const JobUser& user) {
  auto names = usable_workspaces(config, user);
  if (names.empty()) return "you are not a member of any workspace; ask an administrator to add you";
  return "you may use: " + join(names);
}

bool has_managed_license(const std::string& licenses) {
  std::size_t pos = 0;
  while (pos < licenses.size()) {
    std::size_t end = licenses.find_first_of(",|", pos);
    if (end == std::string::npos) end = licenses.size();
    if (licenses.compare(pos, 8, "safe_ws_") == 0) return true;
    pos = end + 1;
  }
  return false;
}

AdmissionDecision reject(std::string message) {
  AdmissionDecision d;
  d.accepted = false;
  d.message = std::move(message);
  return d;
}

}  // namespace

bool is_member(const WorkspaceConfig& w, const JobUser& user) {
  if (std::find(w.users.begin(), w.users.end(), user.name) != w.users.end()) return true;
  for (const auto& g : user.groups)
    if (std::find(w.groups.begin(), w.groups.end(), g) != w.groups.end()) return true;
  return false;
}

std::string workspace_license(const std::string& workspace) { return "safe_ws_" + workspace; }

AdmissionDecision admit_job(const SafeConfig& config, const AdmissionRequest& req, const JobUser& user) {
  const SafeOptions& opt = req.options;
  const WorkspaceConfig* ws = nullptr;

  if (opt.workspace) {
    ws = config.find_workspace(*opt.workspace);
    if (!ws) return reject("safe: unknown workspace '" + *opt.workspace + "'; " + you_may_use(config, user));
    if (!is_member(*ws, user))
      return reject("safe: user '" + user.name + "' is not a member of workspace '" + ws->name + "'; " +
                    you_may_use(config, user));
  } else if (config.admission.require_workspace) {
    return reject("safe: this cluster requires --safe-workspace=NAME; " + you_may_use(config, user));
  }

  if (has_managed_license(req.licenses))
    return reject("safe: licenses named safe_ws_* carry workspace GPU quotas and are set by SaFE; "
                  "remove them from -L/--licenses");

  AdmissionDecision d;
  d.accepted = true;
  JobSettings& s = d.settings;
  std::vector<std::string> notices;

  if (ws) {
    s.workspace = ws->name;
    if (!ws->partition.empty()) {
      if (req.partition.empty()) {
        d.partition = ws->partition;
      } else if (req.partition != ws->partition) {
        return reject("safe: workspace '" + ws->name + "' runs in partition '" + ws->partition + "', not '" +
                      req.partition + "'; drop -p/--partition or use -p " + ws->partition);
      }
    }
    if (!ws->account.empty() && req.account.empty()) d.account = ws->account;
    if (!ws->qos.empty() && req.qos.empty()) d.qos = ws->qos;
  }

  const int default_retries = ws ? ws->default_retries : config.admission.default_retries;
  const int max_retries = ws ? ws->max_retries : config.admission.max_retries;
  s.retries = opt.retries.value_or(default_retries);
  if (s.retries > max_retries) {
    notices.push_back("--safe-retries=" + std::to_string(s.retries) + " capped to " + std::to_string(max_retries) +
                      (ws ? " (workspace '" + ws->name + "' maximum)" : " (cluster maximum)"));
    s.retries = max_retries;
  }

  s.health = opt.health.value_or(ws ? ws->default_health : config.admission.default_health);
  s.ckpt_dir = opt.ckpt_dir.value_or("");
  s.hang_timeout = opt.hang_timeout.value_or(0);
  s.ckpt_signal.signo = opt.ckpt_signal ? opt.ckpt_signal->signo
                                        : checkpoint_signal_number(config.checkpoint.signal).value_or(SIGUSR1);
  s.ckpt_signal.seconds = opt.ckpt_signal && opt.ckpt_signal->seconds ? *opt.ckpt_signal->seconds
                                                                      : config.checkpoint.grace_s;
  s.gpus = req.gpus;

  if (ws && ws->gpu_quota > 0 && req.gpus > 0) {
    if (req.gpus > ws->gpu_quota)
      return reject("safe: the job asks for " + std::to_string(req.gpus) + " GPUs but workspace '" + ws->name +
                    "' has a quota of " + std::to_string(ws->gpu_quota) + "; ask for at most " +
                    std::to_string(ws->gpu_quota) + " GPUs or use another workspace");
    if (req.licenses.find('|') != std::string::npos)
      return reject("safe: license alternatives (a|b) cannot be combined with workspace '" + ws->name +
                    "' GPU quota; request the licenses with ',' or submit without -L");
    std::string license = workspace_license(ws->name) + ":" + std::to_string(req.gpus);
    d.licenses = req.licenses.empty() ? license : req.licenses + "," + license;
  }

  d.requeue_with_append = s.retries > 0;
  for (const auto& n : notices) d.message += (d.message.empty() ? "safe: " : "; ") + n;
  return d;
}

}  // namespace safe
