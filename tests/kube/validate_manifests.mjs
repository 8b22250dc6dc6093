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

for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const parsed = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  // kubectl's List (etc/kubernetes/*.json): each item is validated by its own kind.
  const docs = parsed.kind === 'List' ? parsed.items : [parsed];
  docs.forEach((obj, i) => {
    const where = `${file}[${i}] ${obj.kind}/${obj.metadata?.name}`;
    try {
      validate(obj, where);
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
if (checked === 0) { console.log('FAIL no manifests found'); failures++; }
console.log(`${checked} manifests valid, ${failures} failures`);
process.exit(failures ? 1 : 0);
