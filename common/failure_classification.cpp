#include "common/failure_classification.hpp"

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <functional>

#include "common/signal_name.hpp"

namespace safe {
namespace {

constexpr std::array<std::pair<FailureClass, std::string_view>, 7> kClassNames{{
    {FailureClass::node_fault, "node_fault"},
    {FailureClass::infra_transient, "infra_transient"},
    {FailureClass::user_error, "user_error"},
    {FailureClass::preempted, "preempted"},
    {FailureClass::timeout, "timeout"},
    {FailureClass::cancelled, "cancelled"},
    {FailureClass::unknown, "unknown"},
}};

bool ended_by_user_or_scheduler(JobEnd e) {
  return e == JobEnd::cancelled || e == JobEnd::timeout || e == JobEnd::deadline || e == JobEnd::preempted ||
         e == JobEnd::completed;
}

std::string describe_faults(const std::vector<NodeFault>& faults) {
  std::string out;
  for (const auto& f : faults) {
    if (!out.empty()) out += "; ";
    out += f.node + " " + f.detail;
  }
  return out;
}

std::string exit_text(const JobFailure& f) {
  if (f.signal) {
    std::string name = signal_name(f.signal);
    if (name.empty() && sigabbrev_np(f.signal)) name = sigabbrev_np(f.signal);
    return "killed by SIG" + (name.empty() ? std::to_string(f.signal) : name);
  }
  return "exit code " + std::to_string(f.exit_code);
}

struct Rule {
  std::string_view name;
  FailureClass result;
  std::function<bool(const JobFailure&, const FailoverConfig&)> matches;
  std::function<std::string(const JobFailure&)> evidence;
};

// First match wins; the order is the policy. User and scheduler decisions come first: a job the
// user cancelled or that ran out of time is not retried even if a node also failed meanwhile.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"cancelled by a user or an administrator", FailureClass::cancelled,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::cancelled; },
       [](const JobFailure&) { return std::string("job state CANCELLED"); }},
      {"reached its time limit", FailureClass::timeout,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::timeout || f.end == JobEnd::deadline; },
       [](const JobFailure& f) { return "job state " + std::string(f.end == JobEnd::timeout ? "TIMEOUT" : "DEADLINE"); }},
      {"preempted by the scheduler", FailureClass::preempted,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::preempted; },
       [](const JobFailure&) { return std::string("job state PREEMPTED"); }},
      // The gate kept the job off a bad GPU: nothing of the user's ran, so nothing was lost.
      {"refused by the prolog gate before it started", FailureClass::node_fault,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::refused_by_prolog; },
       [](const JobFailure& f) {
         return describe_faults(f.node_faults) + (f.node_faults.empty() ? "" : " ") + "(refused by safe-prolog)";
       }},
      {"node fault during the job", FailureClass::node_fault,
       [](const JobFailure& f, const FailoverConfig&) {
         return !f.node_faults.empty() && !ended_by_user_or_scheduler(f.end);
       },
       [](const JobFailure& f) { return describe_faults(f.node_faults); }},
      {"Slurm reported a node failure", FailureClass::node_fault,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::node_fail || f.end == JobEnd::boot_fail; },
       [](const JobFailure& f) {
         return "job state " + std::string(f.end == JobEnd::node_fail ? "NODE_FAIL" : "BOOT_FAIL") +
                " without a SaFE diagnosis";
       }},
      {"no progress for its hang timeout", FailureClass::infra_transient,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::hung; },
       [](const JobFailure& f) { return "hang: " + f.hang_detail; }},
      {"exit code configured as infrastructure", FailureClass::infra_transient,
       [](const JobFailure& f, const FailoverConfig& c) {
         return f.end == JobEnd::failed && f.signal == 0 &&
                std::find(c.infra_exit_codes.begin(), c.infra_exit_codes.end(), f.exit_code) != c.infra_exit_codes.end();
       },
       [](const JobFailure& f) { return exit_text(f) + " (failover.infra_exit_codes)"; }},
      {"ran out of memory", FailureClass::user_error,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::out_of_memory; },
       [](const JobFailure&) { return std::string("job state OUT_OF_MEMORY on healthy nodes"); }},
      {"killed by SIGKILL on healthy nodes", FailureClass::unknown,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::failed && f.signal == SIGKILL; },
       [](const JobFailure& f) { return exit_text(f) + ", no node fault seen"; }},
      {"failed on healthy nodes", FailureClass::user_error,
       [](const JobFailure& f, const FailoverConfig&) { return f.end == JobEnd::failed; },
       [](const JobFailure& f) { return exit_text(f) + ", no node fault seen"; }},
  };
  return table;
}

}  // namespace

std::string_view to_string(FailureClass c) {
  for (const auto& [cls, name] : kClassNames)
    if (cls == c) return name;
  return "unknown";
}

std::optional<FailureClass> parse_failure_class(std::string_view name) {
  for (const auto& [cls, n] : kClassNames)
    if (n == name) return cls;
  return std::nullopt;
}

const std::vector<FailureClass>& all_failure_classes() {
  static const std::vector<FailureClass> all = [] {
    std::vector<FailureClass> v;
    for (const auto& [cls, name] : kClassNames) v.push_back(cls);
    return v;
  }();
  return all;
}

std::string_view to_string(JobEnd e) {
  switch (e) {
    case JobEnd::completed: return "COMPLETED";
    case JobEnd::failed: return "FAILED";
    case JobEnd::node_fail: return "NODE_FAIL";
    case JobEnd::boot_fail: return "BOOT_FAIL";
    case JobEnd::timeout: return "TIMEOUT";
    case JobEnd::deadline: return "DEADLINE";
    case JobEnd::preempted: return "PREEMPTED";
    case JobEnd::cancelled: return "CANCELLED";
    case JobEnd::out_of_memory: return "OUT_OF_MEMORY";
    case JobEnd::requeued_by_slurm: return "REQUEUED";
    case JobEnd::refused_by_prolog: return "PROLOG_REFUSED";
    case JobEnd::running_on_bad_node: return "RUNNING";
    case JobEnd::hung: return "RUNNING";
  }
  return "?";
}

std::string Classification::summary() const {
  std::string s(to_string(failure_class));
  if (!evidence.empty()) s += " " + evidence;
  return s;
}

Classification classify_failure(const JobFailure& failure, const FailoverConfig& config) {
  Classification c;
  for (const Rule& rule : rules()) {
    if (!rule.matches(failure, config)) continue;
    c.failure_class = rule.result;
    c.rule = std::string(rule.name);
    c.evidence = rule.evidence(failure);
    break;
  }
  if (c.rule.empty()) {
    c.rule = "no rule matched";
    c.evidence = "ended " + std::string(to_string(failure.end)) + " with " + exit_text(failure);
  }
  if (!failure.user_evidence.empty()) c.evidence += "; the job's output says: " + failure.user_evidence;
  if (c.failure_class == FailureClass::node_fault)
    for (const auto& f : failure.node_faults)
      if (std::find(c.bad_nodes.begin(), c.bad_nodes.end(), f.node) == c.bad_nodes.end()) c.bad_nodes.push_back(f.node);
  return c;
}

bool is_retried(FailureClass c, const FailoverConfig& config) {
  auto name = to_string(c);
  return std::find(config.retry_classes.begin(), config.retry_classes.end(), name) != config.retry_classes.end();
}

ExitStatus decode_wait_status(unsigned int status) {
  ExitStatus e;
  if ((status & 0x7f) == 0) e.code = static_cast<int>((status >> 8) & 0xff);  // WIFEXITED
  else if ((status & 0x7f) != 0x7f) e.signal = static_cast<int>(status & 0x7f);  // WIFSIGNALED
  return e;
}

}  // namespace safe
