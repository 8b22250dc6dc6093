// The Kubernetes objects of a workload. Their schema validity is checked against the official
// Kubernetes schemas by tests/kube (kubernetes-models); here: what SaFE puts in them.
#include <gtest/gtest.h>


#include "kube-bridge/kube_manifests.hpp"
#include "tests/kube/sample_workload.hpp"

namespace safe::bridge {
namespace {

using samples::context;
using samples::spec;

std::string at(const json_t* j, const char* path) {
  json_t* v = json_object_get(const_cast<json_t*>(j), path);
  return json_is_string(v) ? json_string_value(v) : json_is_integer(v) ? std::to_string(json_integer_value(v)) : json_text(v);
}

TEST(KubeManifests, IndexedJobCarriesSafeSettings) {
  Json job = kube_job_manifest(spec(), context());
  std::string text = json_text(job.get());
  json_t* s = json_object_get(job.get(), "spec");
  EXPECT_EQ(at(s, "completionMode"), "Indexed");
  EXPECT_EQ(at(s, "completions"), "4");
  EXPECT_EQ(at(s, "parallelism"), "4");
  EXPECT_EQ(at(s, "backoffLimit"), "0");
  EXPECT_EQ(at(s, "activeDeadlineSeconds"), "3600");
  EXPECT_EQ(at(json_object_get(job.get(), "metadata"), "name"), "train-a2");
  for (const char* needle :
       {R"("safe-for-slurm.io/workspace":"ml")", R"("safe-for-slurm.io/attempt":"2")", R"("team":"llm")",
        R"({"name":"SAFE_ATTEMPT","value":"2"})", R"({"name":"SAFE_CKPT_DIR","value":"/ckpt/r1"})",
        R"({"name":"SAFE_CKPT_SIGNAL","value":"USR1@120"})", R"({"name":"SAFE_MAX_RETRIES","value":"2"})",
        R"({"name":"LR","value":"0.1"})", R"("amd.com/gpu":"8")", R"("memory":"65536Mi")",
        R"({"key":"safe-for-slurm.io/unhealthy","operator":"DoesNotExist"})",
        R"({"key":"kubernetes.io/hostname","operator":"NotIn","values":["k3"]})",
        R"("persistentVolumeClaim":{"claimName":"ckpt"})", R"("mountPath":"/ckpt/r1")", R"("restartPolicy":"Never")",
        R"("subdomain":"train-a2")", R"({"name":"MASTER_ADDR","value":"train-a2-0.train-a2"})"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
}

TEST(KubeManifests, EntrypointGracePeriodAndRecord) {
  KubeWorkloadContext c = context();
  c.checkpoint.complete_marker = "DONE";
  c.record = R"({"version":1})";
  Json job = kube_job_manifest(spec(), c);
  json_t* pod = json_object_get(json_object_get(json_object_get(job.get(), "spec"), "template"), "spec");
  EXPECT_EQ(at(pod, "terminationGracePeriodSeconds"), "120") << "the checkpoint signal's lead time";
  json_t* command = json_object_get(json_array_get(json_object_get(pod, "containers"), 0), "command");
  ASSERT_EQ(json_array_size(command), 6u);
  EXPECT_EQ(json_string_value(json_array_get(command, 0)), std::string("/bin/sh"));
  EXPECT_NE(std::string(json_string_value(json_array_get(command, 2))).find("safe_marker='DONE'"), std::string::npos);
  EXPECT_EQ(json_string_value(json_array_get(command, 4)), std::string("python"));
  EXPECT_EQ(at(json_object_get(json_object_get(job.get(), "metadata"), "annotations"), "safe-for-slurm.io/record"), c.record);
  std::string svc = json_text(kube_service_manifest(spec(), c).get());
  EXPECT_EQ(svc.find("safe-for-slurm.io/record"), std::string::npos) << "the record lives on the Job only: " << svc;
  c.settings.ckpt_signal.seconds.reset();
  c.checkpoint.grace_s = 33;
  Json fallback = kube_job_manifest(spec(), c);
  EXPECT_NE(json_text(fallback.get()).find(R"("terminationGracePeriodSeconds":33)"), std::string::npos);
}

// Each workload sees its own directory of the checkpoint volume and runs as its user: no workload
// can load (or plant) another's checkpoint, and none runs as root.
TEST(KubeManifests, EachWorkloadRunsAsItsUserOnItsOwnCheckpointDirectory) {
  Json job = kube_job_manifest(spec(), context());
  json_t* pod = json_object_get(json_object_get(json_object_get(job.get(), "spec"), "template"), "spec");
  EXPECT_EQ(json_text(json_object_get(pod, "securityContext")), R"({"runAsUser":1001,"runAsGroup":1001,"runAsNonRoot":true})");
  json_t* worker = json_array_get(json_object_get(pod, "containers"), 0);
  std::string worker_text = json_text(worker);
  EXPECT_NE(worker_text.find(R"("mountPath":"/ckpt/r1","subPath":"ml/alice/train")"), std::string::npos) << worker_text;
  EXPECT_NE(worker_text.find(R"("allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]})"), std::string::npos)
      << worker_text;
  json_t* init = json_array_get(json_object_get(pod, "initContainers"), 0);
  ASSERT_NE(init, nullptr);
  std::string init_text = json_text(init);
  EXPECT_NE(init_text.find(R"("image":"busybox:1.36")"), std::string::npos) << "the admin's image, not the user's";
  EXPECT_NE(init_text.find(R"("ml/alice/train","1001","1001"])"), std::string::npos) << init_text;
  EXPECT_NE(init_text.find(R"("capabilities":{"drop":["ALL"],"add":["CHOWN"]})"), std::string::npos) << init_text;
  KubeWorkloadContext bob = context();
  bob.user = "bob";
  bob.uid = bob.gid = 1002;
  EXPECT_NE(json_text(kube_job_manifest(spec(), bob).get()).find(R"("subPath":"ml/bob/train")"), std::string::npos)
      << "another user's workload of the same name: another directory";
  EXPECT_EQ("-/alice/train", kube_checkpoint_subpath("", "alice", "train"));
}

TEST(KubeManifests, HostPathVolumeAndHeadlessService) {
  KubeWorkloadContext c = context();
  c.kube.checkpoint_pvc.clear();
  c.kube.checkpoint_host_path = "/data/ckpt";
  std::string job = json_text(kube_job_manifest(spec(), c).get());
  EXPECT_NE(job.find(R"("hostPath":{"path":"/data/ckpt","type":"DirectoryOrCreate"})"), std::string::npos) << job;
  std::string svc = json_text(kube_service_manifest(spec(), c).get());
  EXPECT_NE(svc.find(R"("clusterIP":"None")"), std::string::npos) << svc;
  EXPECT_NE(svc.find(R"("selector":{"safe-for-slurm.io/workload":"train","safe-for-slurm.io/attempt":"2"})"), std::string::npos) << svc;
}

}  // namespace
}  // namespace safe::bridge
