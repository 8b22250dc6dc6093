#include "common/admission.hpp"

#include <algorithm>
#include <cctype>
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

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Any safe_ws_* a user asks for themselves would take a workspace's quota without its checks.
bool has_managed_license(const std::string& licenses) {
  for (const auto& name : license_names(licenses))
    if (name.starts_with("safe_ws_")) return true;
  return false;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item(trimmed(std::string_view(text).substr(pos, end - pos)));
    if (!item.empty()) out.push_back(std::move(item));
    pos = end + 1;
  }
  return out;
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

std::vector<std::string> license_names(std::string_view licenses) {
  std::vector<std::string> names;
  std::size_t pos = 0;
  while (pos <= licenses.size()) {
    std::size_t end = licenses.find_first_of(",;|", pos);
    if (end == std::string_view::npos) end = licenses.size();
    std::string_view entry = licenses.substr(pos, end - pos);
    pos = end + 1;
    std::string_view name = trimmed(entry.substr(0, entry.find_first_of(":=")));
    if (!name.empty()) names.emplace_back(name);
  }
  return names;
}

WorkspaceChoice choose_workspace(const SafeConfig& config, const SafeOptions& options, const std::string& partition,
                                 const std::string* default_partition, const JobUser& user) {
  WorkspaceChoice c;
  std::vector<std::string> asked = split_list(partition);
  auto owners_of = [&](const std::string& p) {
    std::vector<const WorkspaceConfig*> owners;
    for (const auto& w : config.workspaces)
      if (!w.partition.empty() && w.partition == p) owners.push_back(&w);
    return owners;
  };
  auto names = [](const std::vector<const WorkspaceConfig*>& ws) {
    std::string out;
    for (const auto* w : ws) out += (out.empty() ? "'" : ", '") + w->name + "'";
    return out;
  };
  bool any_owned_partition = false;
  for (const auto& w : config.workspaces) any_owned_partition = any_owned_partition || !w.partition.empty();

  if (options.workspace) {
    const WorkspaceConfig* ws = config.find_workspace(*options.workspace);
    if (!ws) return {nullptr, "", "safe: unknown workspace '" + *options.workspace + "'; " + you_may_use(config, user)};
    if (!is_member(*ws, user))
      return {nullptr, "", "safe: user '" + user.name + "' is not a member of workspace '" + ws->name + "'; " +
                               you_may_use(config, user)};
    c.workspace = ws;
    if (!ws->partition.empty()) {
      c.partition = ws->partition;
      if (!asked.empty() && (asked.size() > 1 || asked[0] != ws->partition))
        c.rejection = "safe: workspace '" + ws->name + "' runs in partition '" + ws->partition + "', not '" + partition +
                      "'; drop -p/--partition or use -p " + ws->partition;
      return c;
    }
    // A workspace without a partition of its own runs anywhere but in another workspace's.
    std::vector<std::string> where = asked;
    if (where.empty() && default_partition) where.push_back(*default_partition);
    for (const auto& p : where) {
      auto owners = owners_of(p);
      if (!owners.empty())
        return {nullptr, "", "safe: partition '" + p + "' belongs to workspace " + names(owners) +
                                 ", not to '" + ws->name + "'; submit with --safe-workspace=" + owners.front()->name +
                                 " or to another partition"};
    }
    c.partition = where.size() == 1 ? where[0] : "";
    return c;
  }

  std::vector<std::string> where = asked;
  if (where.empty()) {
    if (default_partition) {
      where.push_back(*default_partition);
    } else if (any_owned_partition) {
      c.rejection = "safe: cannot tell which partition the job would run in (Slurm's default partition is not "
                    "known: safed has not published the cluster's partitions), and some belong to workspaces; "
                    "give -p PARTITION or --safe-workspace, or ask an administrator to start safed";
      return c;
    }
  }
  for (const auto& p : where) {
    auto owners = owners_of(p);
    if (owners.empty()) continue;
    if (where.size() > 1)
      return {nullptr, "", "safe: partition '" + p + "' belongs to workspace " + names(owners) +
                               "; submit to it alone (-p " + p + "), not together with other partitions"};
    std::vector<const WorkspaceConfig*> mine;
    for (const auto* w : owners)
      if (is_member(*w, user)) mine.push_back(w);
    if (mine.empty())
      return {nullptr, "", "safe: partition '" + p + "' belongs to workspace " + names(owners) + ", of which user '" +
                               user.name + "' is not a member; " + you_may_use(config, user)};
    if (mine.size() > 1)
      return {nullptr, "", "safe: partition '" + p + "' is shared by workspaces " + names(mine) +
                               "; name one with --safe-workspace"};
    c.workspace = mine.front();
    c.partition = p;
    return c;
  }
  if (config.admission.require_workspace)
    c.rejection = "safe: this cluster requires --safe-workspace=NAME; " + you_may_use(config, user);
  c.partition = where.size() == 1 ? where[0] : "";
  return c;
}

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
  s.min_nodes = opt.min_nodes.value_or(0);
  s.node_multiple = opt.node_multiple.value_or(1);
  s.ckpt_signal.signo = opt.ckpt_signal ? opt.ckpt_signal->signo
                                        : checkpoint_signal_number(config.checkpoint.signal).value_or(SIGUSR1);
  s.ckpt_signal.seconds = opt.ckpt_signal && opt.ckpt_signal->seconds ? *opt.ckpt_signal->seconds
                                                                      : config.checkpoint.grace_s;
  s.gpus = req.gpus;

  if (ws && ws->gpu_quota > 0 && req.gpus > 0) {
    if (req.gpus > ws->gpu_quota)
      return reject("safe: the job can get " + std::to_string(req.gpus) + " GPUs" +
                    (req.gpus_how.empty() ? "" : " (" + req.gpus_how + ")") + " but workspace '" + ws->name +
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
