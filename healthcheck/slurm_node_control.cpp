#include "healthcheck/slurm_node_control.hpp"

namespace safe {
namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? text : line;
}

}  // namespace

std::optional<NodeStatus> ScontrolNodeControl::read(const std::string& node, std::string& error) {
  ProcessResult r = runner_.run({scontrol_, "show", "node", "-o", node}, timeout_);
  if (!r.ok()) {
    error = "scontrol show node " + node + " " + r.describe() + (r.err.empty() ? "" : ": " + first_line(r.err));
    return std::nullopt;
  }
  auto status = parse_scontrol_show_node(r.out);
  if (!status || status->name != node) {
    error = "scontrol show node " + node + ": unexpected output: " + first_line(r.out);
    return std::nullopt;
  }
  return status;
}

bool ScontrolNodeControl::run(const std::vector<std::string>& argv, std::string& error) {
  ProcessResult r = runner_.run(argv, timeout_);
  if (r.ok()) return true;
  error = argv[0] + " " + argv[1] + (argv.size() > 2 ? " " + argv[2] : "") + " " + r.describe() +
          (r.err.empty() ? "" : ": " + first_line(r.err));
  return false;
}

bool ScontrolNodeControl::update(const std::vector<std::string>& args, std::string& error) {
  std::vector<std::string> argv = {scontrol_, "update"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, error);
}

bool ScontrolNodeControl::requeue_job(const std::string& job_id, std::string& error) {
  return run({scontrol_, "requeue", job_id}, error);
}

bool ScontrolNodeControl::cancel_job(const std::string& job_id, std::string& error) {
  // scancel lives beside scontrol.
  auto slash = scontrol_.rfind('/');
  std::string scancel = slash == std::string::npos ? "scancel" : scontrol_.substr(0, slash + 1) + "scancel";
  return run({scancel, job_id}, error);
}

bool ScontrolNodeControl::drain(const std::string& node, const std::string& reason, std::string& error) {
  return update({"nodename=" + node, "state=drain", "reason=" + reason}, error);
}

bool ScontrolNodeControl::resume(const std::string& node, std::string& error) {
  return update({"nodename=" + node, "state=resume"}, error);
}

}  // namespace safe
