#include "prolog/job_evidence.hpp"

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/evidence_files.hpp"
#include "common/json_utf8.hpp"
#include "common/json_value.hpp"

namespace safe {

std::string to_json(const JobEvidence& e) {
  Json owner(json_object());
  json_t* root = owner.get();
  json_object_set_new(root, "job_id", json_utf8(e.job_id));
  json_object_set_new(root, "node", json_utf8(e.node));
  json_object_set_new(root, "stage", json_utf8(e.stage));
  if (e.restart_count >= 0) json_object_set_new(root, "restart_count", json_integer(e.restart_count));
  json_object_set_new(root, "time", json_integer(e.time));
  json_object_set_new(root, "health_level", json_utf8(e.health_level));
  json_t* gpus = json_array();
  for (int g : e.gpus) json_array_append_new(gpus, json_integer(g));
  json_object_set_new(root, "gpus", gpus);
  json_object_set_new(root, "gpu_query", json_utf8(e.gpu_query));
  json_t* failing = json_array();
  for (const auto& c : e.failing) {
    json_t* o = json_object();
    json_object_set_new(o, "check", json_utf8(c.check));
    json_object_set_new(o, "severity", json_utf8(std::string(to_string(c.severity))));
    json_object_set_new(o, "detail", json_utf8(c.detail));
    json_array_append_new(failing, o);
  }
  json_object_set_new(root, "failing_checks", failing);
  json_t* pids = json_array();
  for (int p : e.stray_pids_killed) json_array_append_new(pids, json_integer(p));
  json_object_set_new(root, "stray_pids_killed", pids);
  json_object_set_new(root, "action", json_utf8(e.action));
  json_object_set_new(root, "reason", json_utf8(e.reason));
  return json_document(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
}

std::string evidence_path(const std::string& state_dir, const JobEvidence& e) {
  std::string dir = state_dir + "/evidence/";
  return e.stage == "prolog" ? dir + prolog_evidence_name(e.job_id) : dir + epilog_evidence_name(e.job_id, e.node);
}

bool worth_recording(const JobEvidence& e) {
  return !e.failing.empty() || !e.stray_pids_killed.empty() || (e.action != "none" && !e.action.empty());
}

Status write_evidence(const std::string& state_dir, const JobEvidence& e) {
  std::string dir = state_dir + "/evidence";
  mkdir(state_dir.c_str(), 0755);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return Error{dir + ": " + std::strerror(errno)};
  std::string path = evidence_path(state_dir, e);
  // mkstemp: a name no other node or run uses, created with O_EXCL (no link is followed).
  std::string tmp = path + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return Error{tmp + ": " + std::strerror(errno)};
  std::string text = to_json(e);
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  int saved = errno;
  ok = ok && fchmod(fd, 0644) == 0;
  if (close(fd) != 0) ok = false;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) saved = errno;
    unlink(tmp.c_str());
    return Error{path + ": " + std::strerror(saved)};
  }
  return ok_status();
}

}  // namespace safe
