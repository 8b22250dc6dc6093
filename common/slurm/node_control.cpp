#include "common/slurm/node_control.hpp"

namespace safe {

const char* const kScontrolPath = SAFE_SCONTROL_PATH;

namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? text : line;
}

}  // namespace

Result<NodeStatus> ScontrolNodeControl::read(const std::string& node) {
  ProcessResult r = runner_.run({scontrol_, "show", "node", "-o", node}, timeout_);
  if (!r.ok())
    return Error{"scontrol show node " + node + " " + r.describe() + (r.err.empty() ? "" : ": " + first_line(r.err))};
  auto status = parse_scontrol_show_node(r.out);
  if (!status || status->name != node) return Error{"scontrol show node " + node + ": unexpected output: " + first_line(r.out)};
  return *status;
}

Status ScontrolNodeControl::run(const std::vector<std::string>& argv) {
  ProcessResult r = runner_.run(argv, timeout_);
  if (r.ok()) return ok_status();
  return Error{argv[0] + " " + argv[1] + (argv.size() > 2 ? " " + argv[2] : "") + " " + r.describe() +
               (r.err.empty() ? "" : ": " + first_line(r.err))};
}

Status ScontrolNodeControl::update(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {scontrol_, "update"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv);
}

Status ScontrolNodeControl::requeue_job(const std::string& job_id) { return run({scontrol_, "requeue", job_id}); }

Status ScontrolNodeControl::cancel_job(const std::string& job_id) {
  // scancel lives beside scontrol.
  auto slash = scontrol_.rfind('/');
  std::string scancel = slash == std::string::npos ? "scancel" : scontrol_.substr(0, slash + 1) + "scancel";
  return run({scancel, job_id});
}

Status ScontrolNodeControl::drain(const std::string& node, const std::string& reason) {
  return update({"nodename=" + node, "state=drain", "reason=" + reason});
}

Status ScontrolNodeControl::resume(const std::string& node) { return update({"nodename=" + node, "state=resume"}); }

}  // namespace safe
