#include "controller/safed/job_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "common/checkpoint_fence.hpp"
#include "common/checkpoint_scan.hpp"
#include "common/hostlist.hpp"
#include "common/json_value.hpp"
#include "common/user_file.hpp"

namespace safe {
namespace {

// Evidence files are small; anything bigger was not written by safe-prolog or safe-epilog.
constexpr std::size_t kMaxEvidenceBytes = 1 << 20;
// Evidence is written by the node programs, which run as root: a file anyone else made (in a
// misconfigured, writable directory) could otherwise turn a user's failure into a node fault.
constexpr uid_t kEvidenceOwner = 0;
// A node's clock may run a little behind slurmctld's.
constexpr long long kClockSlack_s = 5;
// want_since for reads made each time they are asked for.
constexpr long long kAlways = 1LL << 62;

bool plain_name(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

template <class T>
Observed<T> from_answer(const std::optional<DeadlineReader::Answer>& answer) {
  if (!answer) return {};
  if (answer->timed_out) return Observed<T>::unknown("the read timed out");
  if (const auto* value = std::any_cast<Observed<T>>(&answer->value)) return *value;
  return Observed<T>::unknown("the read failed");
}

}  // namespace

std::string heartbeat_path(const std::string& ckpt_dir) {
  return ckpt_dir.empty() ? "" : ckpt_dir + "/.safe-heartbeat";
}

AsyncJobFiles::AsyncJobFiles(std::string evidence_dir, DeadlineReader& users, DeadlineReader& evidence)
    : evidence_dir_(std::move(evidence_dir)), users_(users), evidence_(evidence) {}

Observed<FileProgress> AsyncJobFiles::progress(const std::string& path, uid_t owner, long long since) {
  if (path.empty()) return Observed<FileProgress>::unknown("no file");
  std::string key = "progress:" + std::to_string(owner) + ":" + path;
  // Asked every pass: the answer the last pass asked for will do, and a new one is on its way.
  auto answer = users_.get(key, since, kAlways, [path, owner]() -> std::any {
    auto info = stat_user_file(path, owner);
    if (!info) return Observed<FileProgress>::unknown(info.error());
    return Observed<FileProgress>::known({info->size, info->mtime});
  }, false);
  return from_answer<FileProgress>(answer);
}

Observed<long long> AsyncJobFiles::newest_checkpoint_ns(const std::string& dir, const std::string& marker,
                                                        uid_t owner, long long since, long long want_since) {
  if (dir.empty()) return Observed<long long>::known(0);
  std::string key = "checkpoint:" + std::to_string(owner) + ":" + marker + ":" + dir;
  auto answer = users_.get(key, since, std::max(since, want_since), [dir, marker, owner]() -> std::any {
    auto newest = newest_complete_checkpoint(dir, marker, owner);
    if (!newest) return Observed<long long>::unknown(newest.error());
    return Observed<long long>::known(newest->marker_mtime_ns);
  }, true);
  return from_answer<long long>(answer);
}

Observed<std::string> AsyncJobFiles::fence_attempt(const std::string& dir, const std::string& marker, uid_t owner,
                                                  std::uint32_t job_id, int attempt) {
  if (dir.empty()) return Observed<std::string>::known("");
  std::string key = "fence:" + std::to_string(owner) + ":" + std::to_string(job_id) + ":" + std::to_string(attempt) +
                    ":" + marker + ":" + dir;
  // One write: its answer (or its timeout) stands.
  auto answer = users_.get(key, 0, 0, [dir, marker, owner, job_id, attempt]() -> std::any {
    auto fenced = safe::fence_attempt(dir, marker, owner, {std::to_string(job_id), attempt});
    if (!fenced) return Observed<std::string>::unknown(fenced.error());
    return Observed<std::string>::known(fenced->checkpoint);
  }, true);
  return from_answer<std::string>(answer);
}

Observed<std::vector<NodeFault>> AsyncJobFiles::epilog_evidence(std::uint32_t job_id,
                                                                const std::vector<std::string>& nodes,
                                                                long long attempt_start, long long since) {
  using Faults = std::vector<NodeFault>;
  if (evidence_dir_.empty() || nodes.empty()) return Observed<Faults>::known({});
  std::string key = "epilog:" + std::to_string(job_id) + ":" + std::to_string(attempt_start);
  for (const auto& n : nodes) key += ":" + n;
  std::string dir = evidence_dir_;
  auto answer = evidence_.get(key, since, since, [dir, job_id, nodes, attempt_start]() -> std::any {
    Faults out;
    for (const std::string& node : nodes) {
      if (!plain_name(node)) continue;
      auto data = read_user_file(dir + "/" + epilog_evidence_name(std::to_string(job_id), node), kEvidenceOwner,
                                 kMaxEvidenceBytes);
      if (!data) continue;  // no file: the epilog found nothing there
      Json doc(json_loadb(data->data(), data->size(), 0, nullptr));
      json_t* t = json_object_get(doc.get(), "time");
      if (!doc.get() || !json_is_integer(t) || json_integer_value(t) + kClockSlack_s < attempt_start) continue;
      std::size_t i;
      json_t* check;
      json_array_foreach(json_object_get(doc.get(), "failing_checks"), i, check) {
        if (json_string_or(check, "severity") != "critical") continue;
        out.push_back({node, "epilog", json_string_or(check, "check") + " " + json_string_or(check, "detail")});
      }
    }
    return Observed<Faults>::known(std::move(out));
  }, true);
  return from_answer<Faults>(answer);
}

Observed<std::optional<NodeFault>> AsyncJobFiles::prolog_refusal(std::uint32_t job_id, int restart_count,
                                                                 long long since) {
  using Refusal = std::optional<NodeFault>;
  if (evidence_dir_.empty()) return Observed<Refusal>::known(std::nullopt);
  std::string path = evidence_dir_ + "/" + prolog_evidence_name(std::to_string(job_id));
  std::string key = "prolog:" + std::to_string(job_id) + ":" + std::to_string(restart_count);
  auto answer = evidence_.get(key, since, since, [path, restart_count]() -> std::any {
    auto data = read_user_file(path, kEvidenceOwner, kMaxEvidenceBytes);
    if (!data) return Observed<Refusal>::known(std::nullopt);
    Json doc(json_loadb(data->data(), data->size(), 0, nullptr));
    json_t* run = json_object_get(doc.get(), "restart_count");
    json_t* first = json_array_get(json_object_get(doc.get(), "failing_checks"), 0);
    std::string node = json_string_or(doc.get(), "node");
    if (!json_is_integer(run) || json_integer_value(run) != restart_count || node.empty() || !first)
      return Observed<Refusal>::known(std::nullopt);
    return Observed<Refusal>::known(NodeFault{node, "prolog", json_string_or(first, "check") + " " + json_string_or(first, "detail")});
  }, true);
  return from_answer<Refusal>(answer);
}

Observed<std::string> AsyncJobFiles::tail(const std::string& path, uid_t owner, std::size_t max_bytes, long long since) {
  if (path.empty()) return Observed<std::string>::unknown("no file");
  std::string key = "tail:" + std::to_string(owner) + ":" + std::to_string(max_bytes) + ":" + path;
  auto answer = users_.get(key, since, since, [path, owner, max_bytes]() -> std::any {
    auto data = read_user_file_tail(path, owner, max_bytes);
    if (!data) return Observed<std::string>::unknown(data.error());
    return Observed<std::string>::known(std::move(*data));
  }, true);
  return from_answer<std::string>(answer);
}

void AsyncJobFiles::forget_evidence(std::uint32_t job_id, const std::string& nodes) {
  if (evidence_dir_.empty()) return;
  std::string id = std::to_string(job_id), dir = evidence_dir_;
  // unlink() of a name, never followed: a link planted there is removed, not its target.
  (void)evidence_.get("forget:" + id + ":" + nodes, 0, kAlways, [dir, id, nodes]() -> std::any {
    unlink((dir + "/" + prolog_evidence_name(id)).c_str());
    for (const auto& n : expand_hostlist(nodes))
      if (plain_name(n)) unlink((dir + "/" + epilog_evidence_name(id, n)).c_str());
    return {};
  }, false);
}

void AsyncJobFiles::sweep_evidence(long long before, std::size_t max_entries) {
  if (evidence_dir_.empty()) return;
  std::string dir = evidence_dir_;
  (void)evidence_.get("sweep:" + dir, 0, kAlways, [dir, before, max_entries]() -> std::any {
    int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) return {};
    DIR* d = fdopendir(dfd);
    if (!d) {
      close(dfd);
      return {};
    }
    std::size_t seen = 0;
    while (dirent* e = readdir(d)) {
      if (++seen > max_entries) break;
      std::string name = e->d_name;
      // Records, and the temporary names (`<record>.json.XXXXXX`) of writers that died mid-write.
      if (!name.ends_with(".json") && !name.ends_with(".tmp") && name.find(".json.") == std::string::npos) continue;
      struct stat st {};
      if (fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime < before)
        unlinkat(dfd, name.c_str(), 0);
    }
    closedir(d);
    return {};
  }, false);
}

}  // namespace safe
