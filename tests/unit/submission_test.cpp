// A submission end to end through the pure core: SPANK environment in, changes out; plus the
// metadata record, job updates, the job environment, checkpoint selection and Slurm fragments.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "common/checkpoint_scan.hpp"
#include "common/job_environment.hpp"
#include "common/job_metadata.hpp"
#include "common/job_user.hpp"
#include "common/slurm_fragments.hpp"
#include "common/submission.hpp"

namespace safe {
namespace {

SafeConfig config() {
  ConfigResult r = parse_config(
      "workspaces:\n  - name: ml\n    gpu_quota: 8\n    users: [alice]\n    max_retries: 4\n"
      "  - name: cv\n    partition: cvpart\n    users: [bob]\n",
      "t.yaml");
  EXPECT_TRUE(r.ok());
  return *r.config;
}
const JobUser kAlice{"alice", {}};

// Two partitions as safed would publish them: 8-GPU nodes with 2 sockets, and one that gives jobs
// whole nodes.
ClusterShape shape() {
  ClusterShape c;
  c.written = 1;
  c.partitions = {{"gpu", true, false, 4, 8, 2}, {"whole", false, true, 2, 8, 2}, {"cvpart", false, false, 4, 8, 2}};
  return c;
}
const ClusterShape kShape = shape();

TEST(Submission, AcceptedJobIsRewritten) {
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=ml", "_SLURM_SPANK_OPTION_safe_safe_retries=9",
                 "_SLURM_SPANK_OPTION_safe_safe_ckpt_dir=/ckpt/r1", "OTHER=1"};
  s.gpus.tres_per_node = "gres:gpu:4";
  s.gpus.min_nodes = 2;
  s.gpus.max_nodes = 2;  // sbatch -N2
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.message, "safe: --safe-retries=9 capped to 4 (workspace 'ml' maximum)");
  EXPECT_EQ(r.changes.licenses, "safe_ws_ml:8");
  EXPECT_TRUE(r.changes.requeue_with_append);
  EXPECT_EQ(r.changes.admin_comment,
            "safe: ws=ml retries=0/4 health=standard sig=USR1@120 hang=0 gpus=8 ckpt=/ckpt/r1");
  ASSERT_TRUE(r.changes.spank_env.has_value());
  EXPECT_EQ(*r.changes.spank_env, (std::vector<std::string>{
                                      "OTHER=1",
                                      "_SLURM_SPANK_OPTION_safe_safe_workspace=ml",
                                      "_SLURM_SPANK_OPTION_safe_safe_retries=4",
                                      "_SLURM_SPANK_OPTION_safe_safe_ckpt_dir=/ckpt/r1",
                                      "_SLURM_SPANK_OPTION_safe_safe_ckpt_signal=USR1@120",
                                      "_SLURM_SPANK_OPTION_safe_safe_health=standard",
                                      "_SLURM_SPANK_OPTION_safe_safe_hang_timeout=0",
                                  }));
}

// Slurm 25.11's --requeue=expedite restarts a job itself: a job SaFE retries cannot also have it.
TEST(Submission, AnExpeditedRequeueIsForJobsSafeDoesNotRetry) {
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=ml", "_SLURM_SPANK_OPTION_safe_safe_retries=2"};
  s.expedited_requeue = true;
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.message,
            "safe: --requeue=expedite and --safe-retries=2 would both restart this job after one failure (Slurm's "
            "expedited requeue restarts it at once after a node failure or a failed epilog); drop --requeue=expedite "
            "to let SaFE retry it (at once, away from the failed node), or give --safe-retries=0 to leave restarts to "
            "Slurm");
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=ml", "_SLURM_SPANK_OPTION_safe_safe_retries=0"};
  r = review_submission(config(), s, kAlice, &kShape);
  EXPECT_TRUE(r.accepted) << r.message;
  EXPECT_FALSE(r.changes.requeue_with_append);
  s.expedited_requeue = false;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=ml", "_SLURM_SPANK_OPTION_safe_safe_retries=2"};
  EXPECT_TRUE(review_submission(config(), s, kAlice, &kShape).accepted);
}

TEST(Submission, RejectsBadOptionValueFromTheEnvironment) {
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_ckpt_dir=relative/dir"};
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.message, "safe: --safe-ckpt-dir expects an absolute path (starting with /), got 'relative/dir'");
}

TEST(Submission, RejectsOverQuota) {
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=ml"};
  s.gpus.tres_per_job = "gres:gpu:9";
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("can get 9 GPUs (--gpus) but workspace 'ml' has a quota of 8"), std::string::npos);
}

Submission ml_job() {
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=ml"};
  return s;
}

// --exclusive gets every GPU of its nodes from Slurm, asked for or not: it is charged them.
TEST(Submission, AnExclusiveJobIsChargedItsWholeNodes) {
  Submission s = ml_job();
  s.gpus.exclusive = true;
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.changes.licenses, "safe_ws_ml:8");
  s.gpus.min_nodes = 2;
  s.gpus.max_nodes = 2;
  r = review_submission(config(), s, kAlice, &kShape);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("can get 16 GPUs (2 nodes x 8 GPUs: --exclusive gives whole nodes)"), std::string::npos)
      << r.message;
}

TEST(Submission, AJobInAnExclusivePartitionIsChargedWholeNodes) {
  Submission s = ml_job();
  s.partition = "whole";
  s.gpus.tres_per_node = "gres:gpu:1";
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.changes.licenses, "safe_ws_ml:8");
}

// -N1-2 can get two nodes: it is charged for two.
TEST(Submission, ANodeRangeIsChargedAtItsMaximum) {
  Submission s = ml_job();
  s.gpus.tres_per_node = "gres:gpu:4";
  s.gpus.min_nodes = 1;
  s.gpus.max_nodes = 2;
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.changes.licenses, "safe_ws_ml:8");
  EXPECT_FALSE(r.changes.max_nodes) << "bounded by the job itself";
}

// Without a maximum (-N 2-) Slurm could give the job more nodes than it is charged for: it gets
// one, and is told. A job that gave no -N at all gets one node from Slurm: bounded silently.
TEST(Submission, AnUnboundedNodeCountIsBoundedToWhatIsCharged) {
  Submission s = ml_job();
  s.gpus.tres_per_node = "gres:gpu:4";
  s.gpus.min_nodes = 2;
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.changes.max_nodes, 2u);
  EXPECT_NE(r.message.find("at most 2 node(s)"), std::string::npos) << r.message;
  s.gpus.min_nodes = 0;
  r = review_submission(config(), s, kAlice, &kShape);
  EXPECT_EQ(r.changes.max_nodes, 1u);
  EXPECT_EQ(r.message, "");
}

// A share of a GPU (gres/shard, gres/mps) runs on GPUs no whole-GPU count covers: a quota
// refuses it; outside a quota it is Slurm's business.
TEST(Submission, SharesOfAGpuAreRefusedInAWorkspaceWithAQuota) {
  for (const char* tres : {"gres:shard:4", "gres/mps:100", "gres:gpu:1,gres:shard:2", "gres/shard=4"}) {
    Submission s = ml_job();
    s.gpus.tres_per_node = tres;
    SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
    EXPECT_FALSE(r.accepted) << tres;
    EXPECT_NE(r.message.find("shares of a GPU (--gres=shard or --gres=mps) cannot be charged"), std::string::npos)
        << r.message;
  }
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_workspace=cv"};
  s.gpus.tres_per_node = "gres:shard:4";
  SubmissionReview r = review_submission(config(), s, JobUser{"bob", {}}, &kShape);
  EXPECT_TRUE(r.accepted) << "cv has no quota: " << r.message;
}

// Slurm tests each component's licenses on its own and starts them together (measured on 22.05:
// two components of 8 GPUs ran at once on a quota of 8), so a quota may be charged once per job.
TEST(Submission, AHeterogeneousJobTakesGpusFromAQuotaInOneComponentOnly) {
  Submission first = ml_job();
  first.gpus.tres_per_job = "gres:gpu:8";
  first.het = Submission::HetComponent{0, {}};
  SubmissionReview r = review_submission(config(), first, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.quota_charged, "ml");

  Submission second = first;
  second.het = Submission::HetComponent{1, {"ml"}};
  r = review_submission(config(), second, kAlice, &kShape);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("component 1 of this heterogeneous job takes GPUs from workspace 'ml' as an earlier "
                           "component does"),
            std::string::npos)
      << r.message;

  Submission launcher = ml_job();  // a component without GPUs is charged nothing: fine
  launcher.het = Submission::HetComponent{1, {"ml"}};
  r = review_submission(config(), launcher, kAlice, &kShape);
  EXPECT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.quota_charged, "");

  Submission elsewhere;  // GPUs outside any quota: fine too
  elsewhere.gpus.tres_per_job = "gres:gpu:8";
  elsewhere.het = Submission::HetComponent{1, {"ml"}};
  EXPECT_TRUE(review_submission(config(), elsewhere, kAlice, &kShape).accepted);
}

// Slurm 25.11 and 26.05 refuse licenses on any component but the leader, even those job_submit
// added ("license request allowed only on leader job"): a later component's charge goes to the
// leader, which starts and ends with the whole job.
TEST(Submission, ALaterComponentsChargeGoesToTheLeader) {
  Submission leader = ml_job();
  leader.het = Submission::HetComponent{0, {}};
  SubmissionReview r = review_submission(config(), leader, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_FALSE(r.changes.leader_licenses);

  Submission gpus = ml_job();
  gpus.gpus.tres_per_job = "gres:gpu:8";
  gpus.het = Submission::HetComponent{1, {}};
  r = review_submission(config(), gpus, kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.quota_charged, "ml");
  EXPECT_EQ(r.changes.leader_licenses, "safe_ws_ml:8");
  EXPECT_FALSE(r.changes.licenses) << "the component itself keeps no license";

  gpus.het->offset = 0;  // the leader's own charge stays on it
  r = review_submission(config(), gpus, kAlice, &kShape);
  EXPECT_EQ(r.changes.licenses, "safe_ws_ml:8");
  EXPECT_FALSE(r.changes.leader_licenses);
}

TEST(Submission, AQuotaNeedsTheClusterShape) {
  Submission s = ml_job();
  s.gpus.tres_per_job = "gres:gpu:1";
  SubmissionReview r = review_submission(config(), s, kAlice, nullptr);
  EXPECT_FALSE(r.accepted);
  EXPECT_NE(r.message.find("safed has not published the cluster's partitions"), std::string::npos) << r.message;
  Submission plain;
  plain.partition = "debug";
  EXPECT_TRUE(review_submission(config(), plain, kAlice, nullptr).accepted) << "no quota, no shape needed";
  Submission unplaced;  // no -p, and cvpart belongs to a workspace: which partition would it be?
  EXPECT_FALSE(review_submission(config(), unplaced, kAlice, nullptr).accepted);
}

// Naming a workspace's partition makes the job that workspace's: membership and quota apply.
TEST(Submission, AWorkspacesPartitionBringsItsPolicy) {
  Submission s;
  s.partition = "cvpart";
  s.gpus.tres_per_job = "gres:gpu:2";
  SubmissionReview mallory = review_submission(config(), s, JobUser{"mallory", {}}, &kShape);
  EXPECT_FALSE(mallory.accepted);
  EXPECT_NE(mallory.message.find("partition 'cvpart' belongs to workspace 'cv'"), std::string::npos) << mallory.message;
  SubmissionReview bob = review_submission(config(), s, JobUser{"bob", {}}, &kShape);
  ASSERT_TRUE(bob.accepted) << bob.message;
  EXPECT_NE(bob.changes.admin_comment->find("ws=cv"), std::string::npos) << *bob.changes.admin_comment;
}

TEST(Submission, RecordsWhenItWasSubmitted) {
  Submission s;
  s.now = 1764600000;
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted);
  EXPECT_NE(r.changes.admin_comment->find(" sub=1764600000"), std::string::npos) << *r.changes.admin_comment;
}

TEST(Submission, KeepsAnAdministratorsComment) {
  Submission s;
  s.admin_comment = "ticket 42";
  SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
  ASSERT_TRUE(r.accepted);
  EXPECT_EQ(r.changes.admin_comment, "ticket 42; safe: retries=0/0 health=standard sig=USR1@120 hang=0 gpus=0");
}

// The hot spares are safed's to give: no job is submitted into their reservation, not even by
// root (the REST bridge submits as root for its users).
TEST(Submission, NoJobIsSubmittedIntoTheSpares) {
  Submission s;
  s.reservation = "maint,safe_spares_gpu";
  for (const JobUser& user : {kAlice, JobUser{"root", {}}}) {
    SubmissionReview r = review_submission(config(), s, user, &kShape);
    EXPECT_FALSE(r.accepted);
    EXPECT_EQ("safe: reservation safe_spares_gpu holds SaFE's hot spare nodes, which safed alone gives to "
              "failing-over SaFE jobs (they get one automatically); submit or update the job without it",
              r.message);
  }
  s.reservation = "maint";
  EXPECT_TRUE(review_submission(config(), s, kAlice, &kShape).accepted);
}

struct UpdateCase {
  const char* name;
  JobUpdate update;
  JobUser user;
  bool admin;
  bool allowed;
};

class UpdateTest : public ::testing::TestWithParam<UpdateCase> {};
TEST_P(UpdateTest, Decides) {
  const UpdateCase& c = GetParam();
  Status allowed = review_update(config(), c.update, c.user, c.admin);
  EXPECT_EQ(allowed.ok(), c.allowed) << allowed.error();
  if (!allowed) {
    EXPECT_EQ(allowed.error().rfind("safe: ", 0), 0u);
    EXPECT_TRUE(allowed.refused());
  }
}
const UpdateCase kUpdateCases[] = {
    {"time_limit_only", JobUpdate{}, kAlice, false, true},
    {"licenses_by_user", JobUpdate{"matlab:1", std::nullopt, std::nullopt, false}, kAlice, false, false},
    {"licenses_by_admin", JobUpdate{"safe_ws_ml:1", std::nullopt, std::nullopt, false}, kAlice, true, true},
    {"gpu_request_by_user", JobUpdate{std::nullopt, std::nullopt, std::nullopt, true}, kAlice, false, false},
    {"partition_of_foreign_workspace", JobUpdate{std::nullopt, "cvpart", std::nullopt, false}, kAlice, false, false},
    {"partition_of_own_workspace", JobUpdate{std::nullopt, "cvpart", std::nullopt, false}, JobUser{"bob", {}}, false, true},
    {"unrelated_partition", JobUpdate{std::nullopt, "debug", std::nullopt, false}, kAlice, false, true},
    {"into_the_spares_by_user", JobUpdate{std::nullopt, std::nullopt, "maint,safe_spares_gpu", false}, kAlice, false,
     false},
    {"into_the_spares_other_case", JobUpdate{std::nullopt, std::nullopt, "SAFE_SPARES_gpu", false}, kAlice, false,
     false},
    {"into_the_spares_by_safed", JobUpdate{std::nullopt, std::nullopt, "safe_spares_gpu", false}, kAlice, true, true},
    {"out_of_any_reservation", JobUpdate{std::nullopt, std::nullopt, "", false}, kAlice, false, true},
    {"other_reservation", JobUpdate{std::nullopt, std::nullopt, "maint", false}, kAlice, false, true},
};
INSTANTIATE_TEST_SUITE_P(Updates, UpdateTest, ::testing::ValuesIn(kUpdateCases),
                         [](const auto& info) { return std::string(info.param.name); });

int g_lookups = 0;
std::optional<JobUser> counting_lookup(uid_t uid) {
  ++g_lookups;
  if (uid == 404) return std::nullopt;
  return JobUser{"u" + std::to_string(uid), {}};
}

// --safe-min-nodes: safed resizes the job between its -N and M in steps of K, which only a batch
// job of a fixed node count, not tied to a task count, allows.
Submission elastic_job(const std::string& min, const std::string& multiple = "") {
  Submission s;
  s.spank_env = {"_SLURM_SPANK_OPTION_safe_safe_min_nodes=" + min};
  if (!multiple.empty()) s.spank_env.push_back("_SLURM_SPANK_OPTION_safe_safe_node_multiple=" + multiple);
  s.gpus.min_nodes = 4;
  s.gpus.max_nodes = 4;  // sbatch -N4
  return s;
}

TEST(Submission, AnElasticJobRecordsItsSizesAndTellsItsTasksTheFullOne) {
  SubmissionReview r = review_submission(config(), elastic_job("2", "2"), kAlice, &kShape);
  ASSERT_TRUE(r.accepted) << r.message;
  EXPECT_EQ(r.settings.full_nodes, 4);
  EXPECT_EQ(r.settings.min_nodes, 2);
  EXPECT_EQ(r.settings.node_multiple, 2);
  EXPECT_NE(r.changes.admin_comment->find(" elastic=4/2/2"), std::string::npos) << *r.changes.admin_comment;
  EXPECT_EQ(r.changes.environment_entry, "SAFE_FULL_NNODES=4");
  auto back = parse_job_metadata(*r.changes.admin_comment);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->settings.full_nodes, 4);
  EXPECT_EQ(back->settings.min_nodes, 2);
  EXPECT_EQ(back->settings.node_multiple, 2);
  // Not elastic: nothing recorded, nothing set.
  Submission plain = elastic_job("1");
  plain.spank_env.clear();
  r = review_submission(config(), plain, kAlice, &kShape);
  ASSERT_TRUE(r.accepted);
  EXPECT_EQ(r.changes.admin_comment->find("elastic="), std::string::npos);
  EXPECT_FALSE(r.changes.environment_entry);
}

TEST(Submission, AnElasticJobMustBeResizable) {
  auto refused = [](Submission s) {
    SubmissionReview r = review_submission(config(), s, kAlice, &kShape);
    EXPECT_FALSE(r.accepted);
    return r.message;
  };
  EXPECT_EQ(refused(elastic_job("5")),
            "safe: --safe-min-nodes=5 is more than the job's 4 node(s); give -N 5 or more, or a smaller "
            "--safe-min-nodes");
  EXPECT_EQ(refused(elastic_job("2", "3")),
            "safe: --safe-node-multiple=3 must divide both --safe-min-nodes=2 and the job's node count (-N 4)");
  Submission range = elastic_job("2");
  range.gpus.max_nodes = 8;
  EXPECT_EQ(refused(range), "safe: --safe-min-nodes needs a fixed node count; give -N 4 rather than a range");
  Submission tasks = elastic_job("2");
  tasks.gpus.ntasks_per_node = 1;
  EXPECT_NE(refused(tasks).find("not tasks"), std::string::npos);
  Submission interactive = elastic_job("2");
  interactive.batch = false;
  EXPECT_NE(refused(interactive).find("batch jobs (sbatch) only"), std::string::npos);
  Submission required = elastic_job("2");
  required.required_nodes = true;
  EXPECT_NE(refused(required).find("-w/--nodelist"), std::string::npos);
  Submission per_job_gpus = elastic_job("2");
  per_job_gpus.gpus.tres_per_job = "gres/gpu:32";
  EXPECT_NE(refused(per_job_gpus).find("--gpus-per-node"), std::string::npos);
  Submission het = elastic_job("2");
  het.het = Submission::HetComponent{0, {}};
  EXPECT_NE(refused(het).find("heterogeneous"), std::string::npos);
  Submission multiple_alone = elastic_job("2", "2");
  multiple_alone.spank_env.erase(multiple_alone.spank_env.begin());
  EXPECT_EQ(refused(multiple_alone),
            "safe: --safe-node-multiple only applies with --safe-min-nodes; add --safe-min-nodes=M or drop it");
}

TEST(Submission, TheFullSizeReplacesTheJobsOwnVariable) {
  EXPECT_EQ(with_environment_entry({"A=1", "SAFE_FULL_NNODES=99", "SAFE_FULL_NNODES_X=2"}, "SAFE_FULL_NNODES=4"),
            (std::vector<std::string>{"A=1", "SAFE_FULL_NNODES_X=2", "SAFE_FULL_NNODES=4"}));
}

TEST(JobUserCache, RemembersLookupsForTheTtl) {
  g_lookups = 0;
  JobUserCache cache(60, counting_lookup);
  EXPECT_EQ(cache.get(1000, 100)->name, "u1000");
  EXPECT_EQ(cache.get(1000, 159)->name, "u1000");
  EXPECT_EQ(g_lookups, 1);
  EXPECT_EQ(cache.get(1000, 160)->name, "u1000");  // expired: looked up again
  EXPECT_EQ(g_lookups, 2);
  EXPECT_FALSE(cache.get(404, 160).has_value());
  EXPECT_FALSE(cache.get(404, 161).has_value());  // unknown users are not remembered
  EXPECT_EQ(g_lookups, 4);
  EXPECT_EQ(cache.get(1000, 50)->name, "u1000");  // clock went back: look up again
  EXPECT_EQ(g_lookups, 5);
}

TEST(JobMetadata, RoundTrips) {
  JobMetadata m;
  m.settings.workspace = "ml";
  m.settings.retries = 3;
  m.settings.health = HealthLevel::strict;
  m.settings.ckpt_dir = "/ckpt/run1";
  m.settings.ckpt_signal = {SIGUSR1, 120};
  m.settings.hang_timeout = 600;
  m.settings.gpus = 16;
  m.retries_used = 1;
  m.last_failure = "node_fault n3 gpu2 uncorrectable ECC";
  std::string text = format_job_metadata(m);
  EXPECT_EQ(text,
            "safe: ws=ml retries=1/3 health=strict sig=USR1@120 hang=600 gpus=16 ckpt=/ckpt/run1 "
            "last=node_fault n3 gpu2 uncorrectable ECC");
  auto back = parse_job_metadata("ticket 7; " + text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->settings.workspace, "ml");
  EXPECT_EQ(back->settings.retries, 3);
  EXPECT_EQ(back->retries_used, 1);
  EXPECT_EQ(back->settings.health, HealthLevel::strict);
  EXPECT_EQ(back->settings.ckpt_signal, (CheckpointSignal{SIGUSR1, 120}));
  EXPECT_EQ(back->settings.hang_timeout, 600);
  EXPECT_EQ(back->settings.gpus, 16);
  EXPECT_EQ(back->settings.ckpt_dir, "/ckpt/run1");
  EXPECT_EQ(back->last_failure, "node_fault n3 gpu2 uncorrectable ECC");
  EXPECT_FALSE(parse_job_metadata("just an admin note").has_value());
  EXPECT_EQ(merge_admin_comment("note; safe: retries=0/1", "safe: retries=1/1"), "note; safe: retries=1/1");
  EXPECT_EQ(merge_admin_comment("", "safe: retries=0/1"), "safe: retries=0/1");
}

TEST(JobEnvironment, SetsEveryVariable) {
  JobSettings s;
  s.workspace = "ml";
  s.retries = 3;
  s.ckpt_dir = "/ckpt/r";
  s.ckpt_signal = CheckpointSignal{SIGUSR1, 120};
  auto env = safe_job_environment(s, 2, "/ckpt/r/step-100", 2, 4);
  std::vector<std::pair<std::string, std::string>> expected = {
      {"SAFE_NNODES", "2"},          {"SAFE_FULL_NNODES", "4"},
      {"SAFE_WORKSPACE", "ml"},      {"SAFE_ATTEMPT", "3"},
      {"SAFE_MAX_RETRIES", "3"},     {"SAFE_CKPT_DIR", "/ckpt/r"},
      {"SAFE_RESUME_FROM", "/ckpt/r/step-100"}, {"SAFE_CKPT_SIGNAL", "USR1@120"},
      {"SAFE_HEARTBEAT_FILE", "/ckpt/r/.safe-heartbeat"},
  };
  EXPECT_EQ(env, expected);
}

TEST(JobEnvironment, FullSizeIsTheNodeCountWhenNotKnownOrSmaller) {
  JobSettings s;
  auto env = safe_job_environment(s, 0, "", 3, 0);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"SAFE_NNODES", "3"}));
  EXPECT_EQ(env[1], (std::pair<std::string, std::string>{"SAFE_FULL_NNODES", "3"}));
  env = safe_job_environment(s, 0, "", 0, 0);  // no SLURM_JOB_NUM_NODES: one node
  EXPECT_EQ(env[0].second, "1");
}

TEST(JobEnvironment, NodeAppliesTheSamePolicyAsTheController) {
  SafeConfig c = config();
  SafeOptions o;
  o.workspace = "ml";
  o.retries = 9;
  JobSettings s = job_settings_on_node(o, &c, &kAlice);
  EXPECT_EQ(s.retries, 4);  // capped like job_submit caps it
  EXPECT_EQ(s.ckpt_signal.to_string(), "USR1@120");
  // A user the node's config no longer admits: the options as given, with built-in defaults.
  JobUser stranger{"zed", {}};
  JobSettings as_given = job_settings_on_node(o, &c, &stranger);
  EXPECT_EQ(as_given.workspace, "ml");
  EXPECT_EQ(as_given.retries, 9);
  // No config at all.
  JobSettings bare = job_settings_on_node(o, nullptr, nullptr);
  EXPECT_EQ(bare.retries, 9);
  EXPECT_EQ(bare.health, HealthLevel::standard);
}

CheckpointCandidate candidate(const std::string& name, bool complete, std::time_t mtime) {
  CheckpointCandidate c;
  c.name = name;
  c.complete = complete;
  c.marker_mtime = mtime;
  return c;
}

TEST(CheckpointScan, PicksNewestCompleteNeverTorn) {
  std::vector<CheckpointCandidate> c = {candidate("step-100", true, 1000), candidate("step-300", false, 0),
                                        candidate("step-200", true, 2000), candidate("step-150", true, 2000)};
  EXPECT_EQ(pick_resume_checkpoint(c), 2);  // same mtime as step-150: the greater name wins
  EXPECT_EQ(pick_resume_checkpoint({candidate("a", false, 0)}), -1);
  EXPECT_EQ(pick_resume_checkpoint({}), -1);
}

TEST(CheckpointScan, ScansADirectory) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("safe-ckpt-" + std::to_string(getpid()));
  fs::remove_all(dir);
  EXPECT_FALSE(newest_complete_checkpoint(dir.string(), "COMPLETE", std::nullopt).ok());  // missing dir
  fs::create_directories(dir / "step-10");
  fs::create_directories(dir / "step-20");
  fs::create_directories(dir / "step-30");  // torn: no marker
  std::ofstream(dir / "step-10" / "COMPLETE").put('x');
  std::ofstream(dir / "step-20" / "COMPLETE").put('x');
  std::ofstream(dir / "notadir").put('x');
  struct utimbuf old_time {1000, 1000};
  utime((dir / "step-10" / "COMPLETE").c_str(), &old_time);
  fs::create_directory_symlink(dir / "step-10", dir / "latest");  // symlinks are not followed
  EXPECT_EQ(newest_complete_checkpoint(dir.string() + "/", "COMPLETE", std::nullopt)->path, (dir / "step-20").string());
  fs::remove_all(dir);
}

TEST(SlurmFragments, RendersLicensesAndPlugins) {
  SlurmFragments f =
      render_slurm_fragments(config(), {"/etc/safe/other.yaml", "/plugins", "/sbin", "/etc/slurm/plugstack.conf"});
  EXPECT_NE(f.slurm_conf.find("PlugStackConfig=/etc/slurm/plugstack.conf\n"), std::string::npos);
  EXPECT_NE(f.slurm_conf.find("\nJobSubmitPlugins=safe\n"), std::string::npos);
  EXPECT_NE(f.slurm_conf.find("\nLicenses=safe_ws_ml:8\n"), std::string::npos);
  EXPECT_NE(f.plugstack_conf.find("required /plugins/spank_safe.so config=/etc/safe/other.yaml\n"), std::string::npos);
  EXPECT_NE(f.slurm_conf.find("\nHealthCheckProgram=/sbin/safe-healthcheck\nHealthCheckInterval=300\n"
                              "HealthCheckNodeState=ANY\nProlog=/sbin/safe-prolog\nEpilog=/sbin/safe-epilog\n"),
            std::string::npos);
  EXPECT_NE(f.slurm_conf.find("\nSchedulerParameters=nohold_on_prolog_fail\n"), std::string::npos);
  SlurmFragments plain = render_slurm_fragments(SafeConfig{}, {SAFE_DEFAULT_CONFIG_PATH, "/p", "/s", ""});
  EXPECT_EQ(plain.slurm_conf.find("Licenses="), std::string::npos);
  EXPECT_EQ(plain.slurm_conf.find("PlugStackConfig="), std::string::npos);
  EXPECT_NE(plain.plugstack_conf.find("required /p/spank_safe.so\n"), std::string::npos);
}

}  // namespace
}  // namespace safe
