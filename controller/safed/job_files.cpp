#include "controller/safed/job_files.hpp"

#include <jansson.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/checkpoint_scan.hpp"

namespace safe {

std::string heartbeat_path(const std::string& ckpt_dir) {
  return ckpt_dir.empty() ? "" : ckpt_dir + "/.safe-heartbeat";
}

FileProgress LocalJobFiles::stat_file(const std::string& path) {
  struct stat st;
  if (path.empty() || stat(path.c_str(), &st) != 0) return {};
  return {true, static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtime)};
}

long long LocalJobFiles::newest_checkpoint_time(const std::string& dir, const std::string& marker) {
  if (dir.empty()) return 0;
  std::string newest = newest_complete_checkpoint(dir, marker);
  if (newest.empty()) return 0;
  return stat_file(newest + "/" + marker).mtime;
}

std::string LocalJobFiles::tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg()));
  std::size_t from = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string out(size - from, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return out;
}

std::vector<NodeFault> LocalJobFiles::evidence(std::uint32_t job_id) {
  std::vector<NodeFault> out;
  if (evidence_dir_.empty()) return out;
  std::error_code ec;
  std::string id = std::to_string(job_id);
  for (const auto& entry : std::filesystem::directory_iterator(evidence_dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (!(name == id + ".json" || (name.rfind(id + ".", 0) == 0 && name.ends_with(".json")))) continue;
    json_error_t err;
    json_t* root = json_load_file(entry.path().c_str(), 0, &err);
    if (!root) continue;
    const char* node = json_string_value(json_object_get(root, "node"));
    json_t* failing = json_object_get(root, "failing_checks");
    std::size_t i;
    json_t* check;
    json_array_foreach(failing, i, check) {
      const char* severity = json_string_value(json_object_get(check, "severity"));
      if (!severity || std::string(severity) != "critical") continue;
      const char* c = json_string_value(json_object_get(check, "check"));
      const char* d = json_string_value(json_object_get(check, "detail"));
      out.push_back({node ? node : "?", "epilog", std::string(c ? c : "") + " " + (d ? d : "")});
    }
    json_decref(root);
  }
  return out;
}

std::optional<NodeFault> LocalJobFiles::prolog_refusal(std::uint32_t job_id, int restart_count) {
  if (evidence_dir_.empty()) return std::nullopt;
  std::string path = evidence_dir_ + "/" + std::to_string(job_id) + ".prolog.json";
  json_error_t err;
  json_t* root = json_load_file(path.c_str(), 0, &err);
  if (!root) return std::nullopt;
  std::optional<NodeFault> out;
  json_t* run = json_object_get(root, "restart_count");
  json_t* first = json_array_get(json_object_get(root, "failing_checks"), 0);
  const char* node = json_string_value(json_object_get(root, "node"));
  if (json_is_integer(run) && json_integer_value(run) == restart_count && node && first) {
    const char* c = json_string_value(json_object_get(first, "check"));
    const char* d = json_string_value(json_object_get(first, "detail"));
    out = NodeFault{node, "prolog", std::string(c ? c : "") + " " + (d ? d : "")};
  }
  json_decref(root);
  return out;
}

}  // namespace safe
