// The record a Kubernetes workload keeps on its Job, which a restarted bridge reads back, and
// the spec's JSON form inside it.
#include <gtest/gtest.h>

#include "kube-bridge/kube_workload_record.hpp"

namespace safe::bridge {
namespace {

WorkloadSpec full_spec() {
  SpecParse p = parse_workload_spec(R"({"name":"train","target":"kubernetes","image":"rocm/pytorch:latest",
    "command":["python","train.py","--note","a \"quoted\" word"],"nodes":4,"gpusPerNode":8,"cpusPerTask":6,
    "memory":"64G","timeLimit":60,"retries":2,"workspace":"ml","health":"strict","hangTimeout":600,
    "checkpoint":{"dir":"/ckpt/r1","signal":"USR2","graceSeconds":45},"env":{"B":"2","A":"1"},
    "excludedNodes":["k9"],"labels":{"team":"llm"}})");
  EXPECT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors[0].path + " " + p.errors[0].message);
  return p.spec.value_or(WorkloadSpec{});
}

TEST(KubeRecord, SpecJsonParsesBackToTheSameSpec) {
  WorkloadSpec spec = full_spec();
  SpecParse back = parse_workload_spec(workload_spec_json(spec));
  ASSERT_TRUE(back.spec) << workload_spec_json(spec);
  EXPECT_TRUE(*back.spec == spec) << workload_spec_json(spec);
  SpecParse script = parse_workload_spec(R"({"name":"s","target":"kubernetes","image":"i","script":"#!/bin/sh\necho hi\n"})");
  ASSERT_TRUE(script.spec);
  SpecParse script_back = parse_workload_spec(workload_spec_json(*script.spec));
  ASSERT_TRUE(script_back.spec);
  EXPECT_TRUE(*script_back.spec == *script.spec) << workload_spec_json(*script.spec);
}

TEST(KubeRecord, RoundTripsEverythingARestartNeeds) {
  KubeWorkload w;
  w.spec = full_spec();
  w.settings.workspace = "ml";
  w.settings.retries = 2;
  w.settings.health = HealthLevel::strict;
  w.settings.ckpt_dir = "/ckpt/r1";
  w.settings.ckpt_signal = {12, 45};
  w.settings.hang_timeout = 600;
  w.settings.gpus = 32;
  w.user = "alice";
  w.uid = 1001;
  w.attempt = 3;
  w.avoid_nodes = {"k9", "k2"};
  w.phase = bridge::WorkloadPhase::pending;
  w.nodes = "k1,k3";
  w.submit_time = 1700000000;
  w.events = {{"Submitted", 1700000000, 1, "Job train-a1 created"}, {"Failover", 1700000100, 3, "node_fault (...): k2 NotReady"}};
  w.draining_attempt = 2;
  w.drain_deadline = 1700000145;
  auto back = parse_kube_workload_record(kube_workload_record(w));
  ASSERT_TRUE(back) << back.error();
  EXPECT_TRUE(back->spec == w.spec);
  EXPECT_EQ(back->settings.workspace, "ml");
  EXPECT_EQ(back->settings.retries, 2);
  EXPECT_EQ(back->settings.health, HealthLevel::strict);
  EXPECT_EQ(back->settings.ckpt_dir, "/ckpt/r1");
  EXPECT_TRUE(back->settings.ckpt_signal == w.settings.ckpt_signal);
  EXPECT_EQ(back->settings.hang_timeout, 600);
  EXPECT_EQ(back->settings.gpus, 32);
  EXPECT_EQ(back->user, "alice");
  EXPECT_EQ(back->uid, 1001u);
  EXPECT_EQ(back->attempt, 3);
  EXPECT_EQ(back->avoid_nodes, w.avoid_nodes);
  EXPECT_EQ(back->phase, bridge::WorkloadPhase::pending);
  EXPECT_EQ(back->nodes, "k1,k3");
  EXPECT_EQ(back->submit_time, 1700000000);
  EXPECT_EQ(back->events, w.events);
  EXPECT_EQ(back->draining_attempt, 2);
  EXPECT_EQ(back->drain_deadline, 1700000145);
}

TEST(KubeRecord, RefusesWhatItCannotRead) {
  EXPECT_FALSE(parse_kube_workload_record(""));
  std::string version = parse_kube_workload_record(R"({"version":2,"user":"a"})").error();
  EXPECT_NE(version.find("record version 2"), std::string::npos) << version;
  std::string spec = parse_kube_workload_record(R"({"version":1,"user":"a","spec":{"name":"Bad Name"}})").error();
  EXPECT_NE(spec.find("spec: name"), std::string::npos) << spec;
}

}  // namespace
}  // namespace safe::bridge
