#include "kube-bridge/kube_manifests.hpp"

#include "common/job_environment.hpp"
#include "kube-bridge/kube_entrypoint.hpp"

namespace safe::bridge {
namespace {

constexpr int kRendezvousPort = 29500;

std::string key(std::string_view name) { return std::string(kKubePrefix) + std::string(name); }

json_t* labels_for(const WorkloadSpec& spec, const KubeWorkloadContext& ctx) {
  json_t* l = json_object();
  for (const auto& [k, v] : spec.labels) json_set(l, k.c_str(), json_str(v));
  json_set(l, key("workload").c_str(), json_str(spec.name));
  json_set(l, key("attempt").c_str(), json_str(std::to_string(ctx.attempt)));
  if (!ctx.settings.workspace.empty()) json_set(l, key("workspace").c_str(), json_str(ctx.settings.workspace));
  return l;
}

json_t* annotations_for(const KubeWorkloadContext& ctx) {
  json_t* a = json_object();
  json_set(a, key("user").c_str(), json_str(ctx.user));
  json_set(a, key("max-retries").c_str(), json_str(std::to_string(ctx.settings.retries)));
  std::string avoid;
  for (const auto& n : ctx.avoid_nodes) avoid += (avoid.empty() ? "" : ",") + n;
  json_set(a, key("excluded-nodes").c_str(), json_str(avoid));
  if (!ctx.record.empty()) json_set(a, std::string(kRecordAnnotation).c_str(), json_str(ctx.record));
  return a;
}

json_t* env_var(const std::string& name, const std::string& value) {
  json_t* e = json_object();
  json_set(e, "name", json_str(name));
  json_set(e, "value", json_str(value));
  return e;
}

json_t* strings(std::initializer_list<const char*> items) {
  json_t* a = json_array();
  for (const char* i : items) json_array_append_new(a, json_string(i));
  return a;
}

// The workload's containers: no privilege escalation, no capabilities, the runtime's seccomp.
json_t* locked_down(bool root_with_chown) {
  json_t* c = json_object();
  json_set(c, "allowPrivilegeEscalation", json_false());
  json_t* caps = json_object();
  json_set(caps, "drop", strings({"ALL"}));
  if (root_with_chown) json_set(caps, "add", strings({"CHOWN"}));
  json_set(c, "capabilities", caps);
  json_t* seccomp = json_object();
  json_set(seccomp, "type", json_string("RuntimeDefault"));
  json_set(c, "seccompProfile", seccomp);
  return c;
}

// Makes the workload's own directory on the checkpoint volume and gives it to its user: the one
// step that runs as root, in the admin's setup image (never the user's), with CAP_CHOWN alone.
// The volume's directories above it stay root's (0755), so no user can put anything next to
// another's; a link already in its place is refused, not followed.
json_t* checkpoint_setup_container(const KubeWorkloadContext& ctx, const std::string& subpath) {
  json_t* c = json_object();
  json_set(c, "name", json_string("safe-checkpoint-dir"));
  json_set(c, "image", json_str(ctx.kube.setup_image));
  json_t* command = json_array();
  for (const char* a : {"/bin/sh", "-c",
                        "set -eu; umask 022; d=/safe-volume/$1; [ ! -L \"$d\" ] || exit 1; mkdir -p \"$d\"; "
                        "chown -h \"$2:$3\" \"$d\"; chmod 0700 \"$d\"",
                        "safe-checkpoint-dir"})
    json_array_append_new(command, json_string(a));
  json_array_append_new(command, json_str(subpath));
  json_array_append_new(command, json_str(std::to_string(ctx.uid)));
  json_array_append_new(command, json_str(std::to_string(ctx.gid)));
  json_set(c, "command", command);
  json_t* sc = locked_down(true);
  json_set(sc, "runAsUser", json_integer(0));
  json_set(sc, "runAsNonRoot", json_false());
  json_set(sc, "readOnlyRootFilesystem", json_true());
  json_set(c, "securityContext", sc);
  json_t* mounts = json_array();
  json_t* mount = json_object();
  json_set(mount, "name", json_string("checkpoint"));
  json_set(mount, "mountPath", json_string("/safe-volume"));
  json_array_append_new(mounts, mount);
  json_set(c, "volumeMounts", mounts);
  return c;
}

json_t* metadata(const std::string& name, const WorkloadSpec& spec, const KubeWorkloadContext& ctx) {
  json_t* m = json_object();
  json_set(m, "name", json_str(name));
  json_set(m, "namespace", json_str(ctx.kube.namespace_));
  json_set(m, "labels", labels_for(spec, ctx));
  json_set(m, "annotations", annotations_for(ctx));
  return m;
}

}  // namespace

std::string kube_object_name(const std::string& workload, int attempt) { return workload + "-a" + std::to_string(attempt); }

std::string kube_checkpoint_subpath(const std::string& workspace, const std::string& user, const std::string& workload) {
  return (workspace.empty() ? "-" : workspace) + "/" + user + "/" + workload;
}

Json kube_job_manifest(const WorkloadSpec& spec, const KubeWorkloadContext& ctx) {
  const std::string name = kube_object_name(spec.name, ctx.attempt);
  Json job = json_take(json_object());
  json_set(job.get(), "apiVersion", json_string("batch/v1"));
  json_set(job.get(), "kind", json_string("Job"));
  json_set(job.get(), "metadata", metadata(name, spec, ctx));

  json_t* js = json_object();
  json_set(js, "completionMode", json_string("Indexed"));
  json_set(js, "completions", json_integer(spec.nodes));
  json_set(js, "parallelism", json_integer(spec.nodes));
  json_set(js, "backoffLimit", json_integer(0));
  if (spec.time_limit_minutes > 0) json_set(js, "activeDeadlineSeconds", json_integer(spec.time_limit_minutes * 60LL));

  json_t* pod = json_object();
  json_set(pod, "restartPolicy", json_string("Never"));
  // Pod deletion (failover, stop) sends SIGTERM, which the entrypoint turns into the checkpoint
  // signal; the kubelet kills the container after this many seconds: the signal's lead time.
  json_set(pod, "terminationGracePeriodSeconds",
           json_integer(ctx.settings.ckpt_signal.seconds.value_or(ctx.checkpoint.grace_s)));
  json_set(pod, "subdomain", json_str(name));  // with the headless Service: NAME-INDEX.NAME
  // Every container runs as the workload's user (its POSIX identity on the Slurm side too).
  json_t* pod_security = json_object();
  json_set(pod_security, "runAsUser", json_integer(ctx.uid));
  json_set(pod_security, "runAsGroup", json_integer(ctx.gid));
  json_set(pod_security, "runAsNonRoot", json_true());
  json_set(pod, "securityContext", pod_security);
  // Never on a node SaFE marked unhealthy, nor on one this workload lost or excluded.
  json_t* expressions = json_array();
  json_t* unhealthy = json_object();
  json_set(unhealthy, "key", json_str(kUnhealthyKey));
  json_set(unhealthy, "operator", json_string("DoesNotExist"));
  json_array_append_new(expressions, unhealthy);
  if (!ctx.avoid_nodes.empty()) {
    json_t* avoid = json_object();
    json_set(avoid, "key", json_string("kubernetes.io/hostname"));
    json_set(avoid, "operator", json_string("NotIn"));
    json_t* values = json_array();
    for (const auto& n : ctx.avoid_nodes) json_array_append_new(values, json_str(n));
    json_set(avoid, "values", values);
    json_array_append_new(expressions, avoid);
  }
  json_t* term = json_object();
  json_set(term, "matchExpressions", expressions);
  json_t* terms = json_array();
  json_array_append_new(terms, term);
  json_t* selector = json_object();
  json_set(selector, "nodeSelectorTerms", terms);
  json_t* node_affinity = json_object();
  json_set(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", selector);
  json_t* affinity = json_object();
  json_set(affinity, "nodeAffinity", node_affinity);
  json_set(pod, "affinity", affinity);

  json_t* c = json_object();
  json_set(c, "name", json_string("worker"));
  json_set(c, "image", json_str(spec.image));
  json_t* command = json_array();
  for (const auto& a : kube_container_command(spec, ctx.checkpoint.complete_marker, ctx.settings.ckpt_signal.signo))
    json_array_append_new(command, json_str(a));
  json_set(c, "command", command);
  json_t* env = json_array();
  // The same SAFE_* the SPANK plugin gives a Slurm job's tasks; SAFE_RESUME_FROM is set in the
  // pod by the entrypoint, which can see the checkpoint volume.
  // The Kubernetes target never shrinks a workload (docs/kubernetes.md): it runs at its full size.
  for (const auto& [k, v] : safe_job_environment(ctx.settings, ctx.attempt - 1, "", spec.nodes, spec.nodes))
    json_array_append_new(env, env_var(k, v));
  json_array_append_new(env, env_var("SAFE_WORKLOAD_NAME", spec.name));
  json_array_append_new(env, env_var("MASTER_ADDR", name + "-0." + name));
  json_array_append_new(env, env_var("MASTER_PORT", std::to_string(kRendezvousPort)));
  json_t* rank = json_object();
  json_set(rank, "name", json_string("SAFE_NODE_RANK"));
  json_t* field = json_object();
  json_set(field, "fieldPath", json_string("metadata.annotations['batch.kubernetes.io/job-completion-index']"));
  json_t* from = json_object();
  json_set(from, "fieldRef", field);
  json_set(rank, "valueFrom", from);
  json_array_append_new(env, rank);
  for (const auto& [k, v] : spec.env) json_array_append_new(env, env_var(k, v));
  json_set(c, "env", env);

  json_t* limits = json_object();
  if (spec.gpus_per_node > 0) json_set(limits, ctx.kube.gpu_resource.c_str(), json_str(std::to_string(spec.gpus_per_node)));
  if (spec.memory_mb > 0) json_set(limits, "memory", json_str(std::to_string(spec.memory_mb) + "Mi"));
  json_t* requests = json_deep_copy(limits);
  json_set(requests, "cpu", json_str(std::to_string(spec.cpus_per_task)));
  json_t* resources = json_object();
  json_set(resources, "limits", limits);
  json_set(resources, "requests", requests);
  json_set(c, "resources", resources);
  json_t* ports = json_array();
  json_t* port = json_object();
  json_set(port, "name", json_string("rendezvous"));
  json_set(port, "containerPort", json_integer(kRendezvousPort));
  json_array_append_new(ports, port);
  json_set(c, "ports", ports);
  json_set(c, "securityContext", locked_down(false));

  bool has_volume = !ctx.kube.checkpoint_pvc.empty() || !ctx.kube.checkpoint_host_path.empty();
  if (has_volume && !ctx.settings.ckpt_dir.empty()) {
    // The workload sees its own directory of the volume only: it can neither load another
    // workload's checkpoint (pickles are code) nor plant one there.
    std::string subpath = kube_checkpoint_subpath(ctx.settings.workspace, ctx.user, spec.name);
    json_t* mounts = json_array();
    json_t* mount = json_object();
    json_set(mount, "name", json_string("checkpoint"));
    json_set(mount, "mountPath", json_str(ctx.settings.ckpt_dir));
    json_set(mount, "subPath", json_str(subpath));
    json_array_append_new(mounts, mount);
    json_set(c, "volumeMounts", mounts);
    json_t* init = json_array();
    json_array_append_new(init, checkpoint_setup_container(ctx, subpath));
    json_set(pod, "initContainers", init);
    json_t* volumes = json_array();
    json_t* volume = json_object();
    json_set(volume, "name", json_string("checkpoint"));
    if (!ctx.kube.checkpoint_pvc.empty()) {
      json_t* pvc = json_object();
      json_set(pvc, "claimName", json_str(ctx.kube.checkpoint_pvc));
      json_set(volume, "persistentVolumeClaim", pvc);
    } else {
      json_t* host = json_object();
      json_set(host, "path", json_str(ctx.kube.checkpoint_host_path));
      json_set(host, "type", json_string("DirectoryOrCreate"));
      json_set(volume, "hostPath", host);
    }
    json_array_append_new(volumes, volume);
    json_set(pod, "volumes", volumes);
  }
  json_t* containers = json_array();
  json_array_append_new(containers, c);
  json_set(pod, "containers", containers);

  json_t* tmeta = json_object();
  json_set(tmeta, "labels", labels_for(spec, ctx));
  json_t* tmpl = json_object();
  json_set(tmpl, "metadata", tmeta);
  json_set(tmpl, "spec", pod);
  json_set(js, "template", tmpl);
  json_set(job.get(), "spec", js);
  return job;
}

Json kube_service_manifest(const WorkloadSpec& spec, const KubeWorkloadContext& ctx) {
  const std::string name = kube_object_name(spec.name, ctx.attempt);
  Json svc = json_take(json_object());
  json_set(svc.get(), "apiVersion", json_string("v1"));
  json_set(svc.get(), "kind", json_string("Service"));
  KubeWorkloadContext without_record = ctx;  // the record lives on the Job only
  without_record.record.clear();
  json_set(svc.get(), "metadata", metadata(name, spec, without_record));
  json_t* s = json_object();
  json_set(s, "clusterIP", json_string("None"));
  json_set(s, "publishNotReadyAddresses", json_true());
  json_t* selector = json_object();
  json_set(selector, key("workload").c_str(), json_str(spec.name));
  json_set(selector, key("attempt").c_str(), json_str(std::to_string(ctx.attempt)));
  json_set(s, "selector", selector);
  json_t* ports = json_array();
  json_t* port = json_object();
  json_set(port, "name", json_string("rendezvous"));
  json_set(port, "port", json_integer(kRendezvousPort));
  json_set(port, "targetPort", json_integer(kRendezvousPort));
  json_array_append_new(ports, port);
  json_set(s, "ports", ports);
  json_set(svc.get(), "spec", s);
  return svc;
}

}  // namespace safe::bridge
