// Validates every manifest in DIR (*.json, one object each) against the official Kubernetes
// schemas from kubernetes-models, by kind. Also checks that a known-bad Job is rejected, so a
// validator that accepts everything cannot pass. Usage: node validate_manifests.mjs DIR
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { Service } from 'kubernetes-models/v1/Service';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { ClusterRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole';
import { ClusterRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding';
import { Namespace } from 'kubernetes-models/v1/Namespace';

const kinds = { Job, Service, DaemonSet, Deployment, ServiceAccount, ClusterRole, ClusterRoleBinding, Namespace };
const dir = process.argv[2];
let failures = 0, checked = 0;

function validate(obj, where) {
  const Model = kinds[obj.kind];
  if (!Model) throw new Error(`${where}: no schema for kind ${obj.kind}`);
  new Model(obj).validate();
}

// A workload's pods: as its user, never root, no escalation; its checkpoint volume only through
// its own subPath (the bridge's isolation between users, docs/security.md).
function checkIsolation(job, where) {
  const pod = job.spec.template.spec;
  const sc = pod.securityContext || {};
  if (sc.runAsNonRoot !== true || !(sc.runAsUser > 0) || !(sc.runAsGroup >= 0))
    throw new Error(`${where}: pod securityContext must set runAsNonRoot, a non-root runAsUser and runAsGroup`);
  for (const c of pod.containers) {
    if (c.securityContext?.allowPrivilegeEscalation !== false)
      throw new Error(`${where}: container ${c.name} allows privilege escalation`);
    for (const m of c.volumeMounts || [])
      if (m.name === 'checkpoint' && !m.subPath) throw new Error(`${where}: container ${c.name} mounts the whole checkpoint volume`);
  }
  if ((pod.volumes || []).some((v) => v.name === 'checkpoint') && !(pod.initContainers || []).length)
    throw new Error(`${where}: a checkpoint volume without the init container that makes the workload's directory`);
}

for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const parsed = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  // kubectl's List (etc/kubernetes/*.json): each item is validated by its own kind.
  const docs = parsed.kind === 'List' ? parsed.items : [parsed];
  docs.forEach((obj, i) => {
    const where = `${file}[${i}] ${obj.kind}/${obj.metadata?.name}`;
    try {
      validate(obj, where);
      if (obj.kind === 'Job' && file.startsWith('job-')) checkIsolation(obj, where);
      checked++;
      console.log(`ok   ${where}`);
    } catch (e) {
      failures++;
      console.log(`FAIL ${where}: ${e.message}`);
    }
  });
}

// The validator itself must catch a bad object.
const bad = JSON.parse(readFileSync(join(dir, 'job-pvc.json'), 'utf8'));
bad.spec.completions = '4';
try {
  validate(bad, 'bad job');
  failures++;
  console.log('FAIL the validator accepted a Job whose spec.completions is a string');
} catch (e) {
  console.log(`ok   a bad Job is rejected: ${e.message}`);
}
// And the isolation check must catch a pod without it.
const open_pod = JSON.parse(readFileSync(join(dir, 'job-pvc.json'), 'utf8'));
delete open_pod.spec.template.spec.containers[0].volumeMounts[0].subPath;
try {
  checkIsolation(open_pod, 'open job');
  failures++;
  console.log('FAIL the isolation check accepted a Job mounting the whole checkpoint volume');
} catch (e) {
  console.log(`ok   a Job sharing the checkpoint volume is rejected: ${e.message}`);
}
if (checked === 0) { console.log('FAIL no manifests found'); failures++; }
console.log(`${checked} manifests valid, ${failures} failures`);
process.exit(failures ? 1 : 0);
