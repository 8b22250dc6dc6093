#include "prolog/job_evidence.hpp"

#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace safe {

std::string to_json(const JobEvidence& e) {
  json_t* root = json_object();
  json_object_set_new(root, "job_id", json_string(e.job_id.c_str()));
  json_object_set_new(root, "node", json_string(e.node.c_str()));
  json_object_set_new(root, "stage", json_string(e.stage.c_str()));
  if (e.restart_count >= 0) json_object_set_new(root, "restart_count", json_integer(e.restart_count));
  json_object_set_new(root, "time", json_integer(e.time));
  json_object_set_new(root, "health_level", json_string(e.health_level.c_str()));
  json_t* gpus = json_array();
  for (int g : e.gpus) json_array_append_new(gpus, json_integer(g));
  json_object_set_new(root, "gpus", gpus);
  json_object_set_new(root, "gpu_query", json_string(e.gpu_query.c_str()));
  json_t* failing = json_array();
  for (const auto& c : e.failing) {
    json_t* o = json_object();
    json_object_set_new(o, "check", json_string(c.check.c_str()));
    json_object_set_new(o, "severity", json_string(std::string(to_string(c.severity)).c_str()));
    json_object_set_new(o, "detail", json_string(c.detail.c_str()));
    json_array_append_new(failing, o);
  }
  json_object_set_new(root, "failing_checks", failing);
  json_t* pids = json_array();
  for (int p : e.stray_pids_killed) json_array_append_new(pids, json_integer(p));
  json_object_set_new(root, "stray_pids_killed", pids);
  json_object_set_new(root, "action", json_string(e.action.c_str()));
  json_object_set_new(root, "reason", json_string(e.reason.c_str()));
  char* text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  std::string out = text ? text : "{}";
  free(text);
  json_decref(root);
  return out + "\n";
}

std::string evidence_path(const std::string& state_dir, const JobEvidence& e) {
  return state_dir + "/evidence/" + e.job_id + (e.stage == "prolog" ? ".prolog.json" : ".json");
}

bool write_evidence(const std::string& state_dir, const JobEvidence& e, std::string& error) {
  std::string dir = state_dir + "/evidence";
  mkdir(state_dir.c_str(), 0755);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error = dir + ": " + std::strerror(errno);
    return false;
  }
  std::string path = evidence_path(state_dir, e);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_json(e);
    if (!out.flush()) {
      error = tmp + ": " + std::strerror(errno);
      return false;
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace safe
