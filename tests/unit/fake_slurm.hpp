// A SlurmClient that is a little Slurm: jobs and nodes in memory, requeue/update/signal change
// them as slurmctld would, and every call is recorded for the tests to check.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "controller/safed/job_files.hpp"
#include "controller/safed/slurm_client.hpp"

namespace safe::testing {

class FakeSlurm : public SlurmClient {
 public:
  std::vector<SlurmJob> jobs;
  std::vector<SlurmNode> nodes;
  std::vector<std::string> calls;  // "requeue 7", "signal 7 10", "update 7 exc=... start=... comment=..."
  bool reachable = true;
  bool crash_after_requeue = false;  // simulates safed dying right after Slurm requeued the job
  long long now = 1000;

  SlurmJob* job(std::uint32_t id) {
    for (auto& j : jobs)
      if (j.id == id) return &j;
    return nullptr;
  }
  SlurmNode* node(const std::string& name) {
    for (auto& n : nodes)
      if (n.name == name) return &n;
    return nullptr;
  }
  int count(const std::string& prefix) const {
    int n = 0;
    for (const auto& c : calls) n += c.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }

  std::optional<std::vector<SlurmJob>> load_jobs(std::string& error) override {
    if (!reachable) {
      error = "unreachable";
      return std::nullopt;
    }
    return jobs;
  }
  std::optional<std::vector<SlurmNode>> load_nodes(std::string& error) override {
    if (!reachable) {
      error = "unreachable";
      return std::nullopt;
    }
    return nodes;
  }
  std::optional<std::vector<SlurmLicense>> load_licenses(std::string&) override { return std::vector<SlurmLicense>{}; }

  std::string requeue(std::uint32_t id) override {
    calls.push_back("requeue " + std::to_string(id));
    SlurmJob* j = job(id);
    if (!j) return "Invalid job id specified";
    j->state = SlurmJobState::pending;
    j->completing = false;
    j->restart_cnt++;
    j->start_time = now + 120;  // Slurm's requeue delay
    if (crash_after_requeue) throw std::runtime_error("crash");
    return "";
  }
  std::string update_job(const JobChange& c) override {
    std::string call = "update " + std::to_string(c.id);
    SlurmJob* j = job(c.id);
    if (!j) return "Invalid job id specified";
    if (c.exc_nodes) {
      call += " exc=" + *c.exc_nodes;
      j->exc_nodes = *c.exc_nodes;
    }
    if (c.start_time) {
      call += " start=" + std::string(*c.start_time <= now ? "now" : "+" + std::to_string(*c.start_time - now));
      j->start_time = *c.start_time;
    }
    if (c.hold) call += *c.hold ? " hold" : " release";
    if (c.admin_comment) {
      call += " comment=" + *c.admin_comment;
      j->admin_comment = *c.admin_comment;
    }
    calls.push_back(call);
    return "";
  }
  std::string signal_job(std::uint32_t id, int signo) override {
    calls.push_back("signal " + std::to_string(id) + " " + std::to_string(signo));
    return "";
  }
  std::string cancel_job(std::uint32_t id) override {
    calls.push_back("cancel " + std::to_string(id));
    return "";
  }
  std::string drain_node(const std::string& name, const std::string& reason) override {
    return set_reason("drain", name, reason, [](SlurmNode& n) { n.drain = true; });
  }
  std::string resume_node(const std::string& name) override {
    calls.push_back("resume " + name);
    if (SlurmNode* n = node(name)) {
      n->drain = false;
      n->down = false;
      n->state_down = false;
      n->reason.clear();
    }
    return "";
  }
  std::string down_node(const std::string& name, const std::string& reason) override {
    return set_reason("down", name, reason, [](SlurmNode& n) { n.down = n.state_down = true; });
  }

 private:
  template <class Change>
  std::string set_reason(const char* call, const std::string& name, const std::string& reason, Change change) {
    calls.push_back(std::string(call) + " " + name + " " + reason);
    if (SlurmNode* n = node(name)) {
      change(*n);
      n->reason = reason;
      n->reason_time = now;
    }
    return "";
  }
};

class FakeFiles : public JobFiles {
 public:
  std::map<std::string, FileProgress> files;
  std::map<std::string, long long> checkpoints;  // dir -> marker time
  std::map<std::uint32_t, std::vector<NodeFault>> evidence_by_job;
  FileProgress stat_file(const std::string& path) override {
    auto it = files.find(path);
    return it == files.end() ? FileProgress{} : it->second;
  }
  long long newest_checkpoint_time(const std::string& dir, const std::string&) override {
    auto it = checkpoints.find(dir);
    return it == checkpoints.end() ? 0 : it->second;
  }
  std::vector<NodeFault> evidence(std::uint32_t id) override { return evidence_by_job[id]; }
  std::map<std::string, std::string> contents;  // path -> text, for tail()
  std::string tail(const std::string& path, std::size_t max_bytes) override {
    const std::string& text = contents[path];
    return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
  }
  std::map<std::pair<std::uint32_t, int>, NodeFault> prolog_refusals;  // (job, restart count) -> refusal
  int prolog_reads = 0;
  std::optional<NodeFault> prolog_refusal(std::uint32_t id, int restart_count) override {
    ++prolog_reads;
    auto it = prolog_refusals.find({id, restart_count});
    return it == prolog_refusals.end() ? std::nullopt : std::optional<NodeFault>(it->second);
  }
};

}  // namespace safe::testing
