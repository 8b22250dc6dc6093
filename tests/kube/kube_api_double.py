#!/usr/bin/env python3
"""A Kubernetes API double for SaFE's tests: NOT a Kubernetes API server.

It speaks real HTTP/1.1 with the status codes, Status objects, resourceVersion semantics, watch
streams (?watch=1, JSON lines, 410 Gone for compacted versions, ERROR events) and equality label
selectors of the real API, for the resources the bridge uses: batch/v1 Jobs, v1 Services, Pods
(and pods/log, with sinceSeconds and limitBytes) and coordination.k8s.io/v1 Leases (PUT replaces
an object only while metadata.resourceVersion is current, else 409 Conflict, as optimistic
concurrency on the real API) in namespaces, and Nodes (GET, merge-patch). Deletion follows the real rules:
DeleteOptions (body or query) with propagationPolicy (a batch/v1 Job orphans its pods unless
told Background or Foreground) and gracePeriodSeconds; a pod bound to a node is deleted
gracefully (deletionTimestamp, deletionGracePeriodSeconds, 202, MODIFIED) with its
terminationGracePeriodSeconds unless the options say otherwise, and is removed once its kubelet
confirms; a Foreground deletion keeps the Job (finalizer foregroundDeletion) until its pods are
gone. Suspending a Job (spec.suspend: true) deletes its active pods gracefully, as the Job
controller does. Instead of a scheduler and kubelets it plays them crudely: a created Job gets
`completions` pods placed on Ready nodes that its required node affinity allows (NotIn,
DoesNotExist), Running at once; a kubelet stops a terminating pod's container after
--kubelet-stop-seconds (at most its grace period) if its node is Ready, and not while the node is
NotReady (the pod stays Terminating, as on a real cluster, until the node is back). Tests drive
the rest through /_double/ endpoints: pod phase, exit code and conditions, node readiness (which,
like the node lifecycle controller, marks that node's pods not Ready), a Job's deadline passing
(condition Failed/DeadlineExceeded, its running pods deleted gracefully), dropping open watches,
compacting history, reading every deletion and the full change history, and refusing the
requests of one method on one kind with 500, or applying them and losing the answer (an API
server or network that fails: /_double/refuse).

Usage: kube_api_double.py --port-file FILE [--nodes k1,k2,k3] [--token TOKEN] [--kubelet-stop-seconds S]
"""
import argparse
import json
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LOCK = threading.Condition()
STORE = {}        # (kind, namespace, name) -> object
EVENTS = []       # (rv, kind, namespace, type, object)
HISTORY = []      # {"rv", "kind", "type", "name"} for every change, never compacted (/_double/history)
DELETIONS = []    # every DELETE and Job-controller deletion with its effective options (/_double/deletions)
STATE = {"rv": 100, "oldest": 0, "generation": 0, "refuse": None}  # refuse: {"method", "kind"} answered 500
LOG_WRITES = {}   # (namespace, pod) -> [(time, text)]: when each piece of its log was written (sinceSeconds)
TOKEN = None
KUBELET_STOP_SECONDS = 0.3

COLLECTIONS = {  # path pattern parts -> kind
    ("apis", "batch", "v1", "jobs"): "Job",
    ("api", "v1", "services"): "Service",
    ("api", "v1", "pods"): "Pod",
    ("apis", "coordination.k8s.io", "v1", "leases"): "Lease",
}


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def bump(kind, ns, etype, obj):
    """Records a change; the caller holds LOCK."""
    STATE["rv"] += 1
    obj["metadata"]["resourceVersion"] = str(STATE["rv"])
    EVENTS.append((STATE["rv"], kind, ns, etype, json.loads(json.dumps(obj))))
    HISTORY.append({"rv": STATE["rv"], "kind": kind, "type": etype, "name": obj["metadata"]["name"]})
    LOCK.notify_all()


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}


def matches(obj, selector):
    labels = obj.get("metadata", {}).get("labels", {}) or {}
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def node_ready(node):
    for c in node.get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def allowed(node, pod_spec):
    terms = (pod_spec.get("affinity", {}).get("nodeAffinity", {})
             .get("requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms", []))
    labels = dict(node["metadata"].get("labels", {}))
    labels["kubernetes.io/hostname"] = node["metadata"]["name"]
    for term in terms:  # one term must match fully (we generate one)
        ok = True
        for e in term.get("matchExpressions", []):
            key, op, values = e["key"], e["operator"], e.get("values", [])
            if op == "NotIn" and labels.get(key) in values:
                ok = False
            if op == "In" and labels.get(key) not in values:
                ok = False
            if op == "DoesNotExist" and key in labels:
                ok = False
            if op == "Exists" and key not in labels:
                ok = False
        if ok:
            return True
    if any(t.get("effect") == "NoSchedule" for t in node.get("spec", {}).get("taints", []) or []):
        return False
    return not terms


def start_job_pods(job):
    """Plays the Job controller and scheduler; the caller holds LOCK."""
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    tmpl = job["spec"]["template"]
    nodes = sorted((o for (k, _, _), o in STORE.items() if k == "Node"), key=lambda n: n["metadata"]["name"])
    usable = [n for n in nodes if node_ready(n) and allowed(n, tmpl["spec"])]
    for i in range(job["spec"].get("completions", 1)):
        pod_name = f"{name}-{i}-{uuid.uuid4().hex[:5]}"
        labels = dict(tmpl.get("metadata", {}).get("labels", {}))
        labels["batch.kubernetes.io/job-name"] = name
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": pod_name, "namespace": ns, "uid": str(uuid.uuid4()), "labels": labels,
                            "annotations": {"batch.kubernetes.io/job-completion-index": str(i)},
                            "creationTimestamp": now(),
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                                 "uid": job["metadata"]["uid"]}]},
               "spec": json.loads(json.dumps(tmpl["spec"])),
               "status": {"phase": "Pending", "conditions": []}}
        if usable:
            pod["spec"]["nodeName"] = usable[i % len(usable)]["metadata"]["name"]
            pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                             "containerStatuses": [{"name": "worker", "ready": True, "state": {"running": {}}}]}
        STORE[("Pod", ns, pod_name)] = pod
        bump("Pod", ns, "ADDED", pod)


def remove_object(kind, ns, name):
    """The object leaves the store (the end of any deletion); the caller holds LOCK."""
    obj = STORE.pop((kind, ns, name))
    bump(kind, ns, "DELETED", obj)
    return obj


def pods_of_job(ns, job_name):
    return [(pns, pname) for (k, pns, pname), pod in list(STORE.items())
            if k == "Pod" and pns == ns and pod["metadata"]["labels"].get("batch.kubernetes.io/job-name") == job_name]


def kubelet_stops(ns, name):
    """The kubelet has stopped the pod's container and confirms the deletion."""
    with LOCK:
        pod = STORE.get(("Pod", ns, name))
        if pod is None or "deletionTimestamp" not in pod["metadata"]:
            return
        node = STORE.get(("Node", None, pod["spec"].get("nodeName")))
        if node is None or not node_ready(node):
            return  # no kubelet to confirm: the pod stays Terminating
        remove_object("Pod", ns, name)
        finish_foreground_jobs(ns)


def delete_pod(ns, name, grace, by):
    """Graceful pod deletion as the API server does it; the caller holds LOCK. Returns (code, obj)."""
    pod = STORE[("Pod", ns, name)]
    spec_grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    effective = spec_grace if grace is None else grace
    DELETIONS.append({"kind": "Pod", "namespace": ns, "name": name, "by": by, "gracePeriodSeconds": effective,
                      "terminationGracePeriodSeconds": pod["spec"].get("terminationGracePeriodSeconds"),
                      "node": pod["spec"].get("nodeName", ""), "rv": STATE["rv"]})
    if effective == 0 or not pod["spec"].get("nodeName") or pod["status"].get("phase") in ("Succeeded", "Failed"):
        return 200, remove_object("Pod", ns, name)  # nothing runs that could be stopped gracefully
    meta = pod["metadata"]
    if "deletionTimestamp" in meta:
        return 202, pod  # already terminating (a real server would let a shorter grace period win)
    meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + effective))
    meta["deletionGracePeriodSeconds"] = effective
    bump("Pod", ns, "MODIFIED", pod)
    timer = threading.Timer(min(effective, KUBELET_STOP_SECONDS), kubelet_stops, (ns, name))
    timer.daemon = True
    timer.start()
    return 202, pod


def finish_foreground_jobs(ns):
    """A Job deleted in the foreground goes once its pods are gone; the caller holds LOCK."""
    for (k, jns, jname), job in list(STORE.items()):
        if k == "Job" and jns == ns and "foregroundDeletion" in job["metadata"].get("finalizers", []) \
                and not pods_of_job(ns, jname):
            remove_object("Job", ns, jname)


def delete_object(kind, ns, name, options):
    """DELETE with DeleteOptions; the caller holds LOCK. Returns (code, obj)."""
    grace = options.get("gracePeriodSeconds")
    if kind == "Pod":
        return delete_pod(ns, name, grace, "client")
    policy = options.get("propagationPolicy") or ("Orphan" if kind == "Job" else "Background")
    DELETIONS.append({"kind": kind, "namespace": ns, "name": name, "by": "client", "propagationPolicy": policy,
                      "gracePeriodSeconds": grace, "rv": STATE["rv"]})
    if kind != "Job":
        return 200, remove_object(kind, ns, name)
    pods = pods_of_job(ns, name)
    if policy == "Orphan":
        for pns, pname in pods:
            STORE[("Pod", pns, pname)]["metadata"].pop("ownerReferences", None)
            bump("Pod", pns, "MODIFIED", STORE[("Pod", pns, pname)])
        return 200, remove_object(kind, ns, name)
    if policy == "Foreground" and pods:
        job = STORE[(kind, ns, name)]
        job["metadata"]["deletionTimestamp"] = now()
        job["metadata"].setdefault("finalizers", []).append("foregroundDeletion")
        bump(kind, ns, "MODIFIED", job)
        for pns, pname in pods:
            delete_pod(pns, pname, None, "garbage-collector")
        finish_foreground_jobs(ns)
        return 202, job
    obj = remove_object(kind, ns, name)
    for pns, pname in pods:  # Background: the garbage collector deletes the pods, each with its own grace
        delete_pod(pns, pname, None, "garbage-collector")
    return 200, obj


def suspend_job(job):
    """The Job controller on spec.suspend: true; the caller holds LOCK."""
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    conditions = job.setdefault("status", {}).setdefault("conditions", [])
    if not any(c.get("type") == "Suspended" for c in conditions):
        conditions.append({"type": "Suspended", "status": "True", "reason": "JobSuspended", "lastTransitionTime": now()})
        bump("Job", ns, "MODIFIED", job)
    stop_active_pods(ns, name)


def stop_active_pods(ns, job_name):
    """The Job controller deletes a Job's running pods (suspension, deadline); the caller holds LOCK."""
    for pns, pname in pods_of_job(ns, job_name):
        pod = STORE[("Pod", pns, pname)]
        if pod["status"].get("phase") not in ("Succeeded", "Failed") and "deletionTimestamp" not in pod["metadata"]:
            delete_pod(pns, pname, None, "job-controller")


def merge(target, patch):
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            merge(target[k], v)
        else:
            target[k] = v


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet; the bridge logs its side
        pass

    def send_json(self, code, body):
        if getattr(self, "drop_answer", False):  # /_double/refuse with "apply": done, never told
            self.close_connection = True
            return
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}") if n else {}

    def route(self):
        url = urlparse(self.path)
        parts = [p for p in url.path.split("/") if p]
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if parts[:1] == ["_double"]:
            return "control", parts[1:], q
        if TOKEN and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return "unauthorized", parts, q
        if parts[:3] == ["api", "v1", "nodes"]:
            return ("Node", None, parts[3] if len(parts) > 3 else None, parts[4:]), parts, q
        for prefix, kind in COLLECTIONS.items():
            n = len(prefix) - 1
            if tuple(parts[:n]) == prefix[:n] and len(parts) > n + 2 and parts[n] == "namespaces" and parts[n + 2] == prefix[-1]:
                return (kind, parts[n + 1], parts[n + 3] if len(parts) > n + 3 else None, parts[n + 4:]), parts, q
        return None, parts, q

    def dispatch(self, method):
        target, parts, q = self.route()
        if target == "control":
            return self.control(parts)
        if target == "unauthorized":
            return self.send_json(*status(401, "Unauthorized", "Unauthorized"))
        if target is None:
            return self.send_json(*status(404, "NotFound", f"the server could not find the requested resource {self.path}"))
        kind, ns, name, sub = target
        refuse = STATE["refuse"]
        if refuse and refuse["method"] == method and refuse["kind"] == kind:
            if not refuse.get("apply"):
                return self.send_json(*status(500, "InternalError", "refused by the test (/_double/refuse)"))
            self.drop_answer = True  # the request takes effect; its answer is lost on the way
        if method == "GET" and name is None and q.get("watch") in ("1", "true"):
            return self.watch(kind, ns, q)
        with LOCK:
            if method == "GET" and name is None:
                items = [o for (k, n, _), o in sorted(STORE.items()) if k == kind and (ns is None or n == ns)
                         and matches(o, q.get("labelSelector"))]
                return self.send_json(200, {"kind": kind + "List", "apiVersion": "v1",
                                            "metadata": {"resourceVersion": str(STATE["rv"])}, "items": items})
            if method == "POST" and name is None:
                obj = self.body()
                oname = obj.get("metadata", {}).get("name")
                if not oname or obj.get("kind") != kind:
                    return self.send_json(*status(422, "Invalid", f"{kind} is invalid: metadata.name: Required value"))
                if (kind, ns, oname) in STORE:
                    return self.send_json(*status(409, "AlreadyExists", f'{kind.lower()}s "{oname}" already exists'))
                obj["metadata"].update({"namespace": ns, "uid": str(uuid.uuid4()), "creationTimestamp": now()})
                STORE[(kind, ns, oname)] = obj
                bump(kind, ns, "ADDED", obj)
                if kind == "Job":
                    start_job_pods(obj)
                return self.send_json(201, obj)
            key = (kind, ns, name)
            if key not in STORE:
                return self.send_json(*status(404, "NotFound", f'{kind.lower()}s "{name}" not found'))
            obj = STORE[key]
            if method == "GET" and sub == ["log"]:
                return self.pod_log(ns, name, obj, q)
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                return self.wfile.write(data)
            if method == "GET":
                return self.send_json(200, obj)
            if method == "DELETE":
                options = self.body()
                for k in ("propagationPolicy", "gracePeriodSeconds"):
                    if k in q:
                        options[k] = int(q[k]) if k == "gracePeriodSeconds" else q[k]
                if options.get("propagationPolicy") not in (None, "Orphan", "Background", "Foreground"):
                    return self.send_json(*status(422, "Invalid", "DeleteOptions.propagationPolicy: Unsupported value"))
                return self.send_json(*delete_object(kind, ns, name, options))
            if method == "PUT":
                new = self.body()
                if new.get("kind") != kind or new.get("metadata", {}).get("name") != name:
                    return self.send_json(*status(400, "BadRequest", "the name in the body does not match the name in the URL"))
                sent_rv = new["metadata"].get("resourceVersion")
                if not sent_rv:
                    return self.send_json(*status(422, "Invalid", "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"))
                if sent_rv != obj["metadata"]["resourceVersion"]:
                    return self.send_json(*status(409, "Conflict", f'Operation cannot be fulfilled on {kind.lower()}s "{name}": '
                                                  "the object has been modified; please apply your changes to the latest version and try again"))
                for k in ("namespace", "uid", "creationTimestamp"):
                    new["metadata"][k] = obj["metadata"][k]
                STORE[key] = new
                bump(kind, ns, "MODIFIED", new)
                return self.send_json(200, new)
            if method == "PATCH":
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self.send_json(*status(415, "UnsupportedMediaType", "use application/merge-patch+json"))
                merge(obj, self.body())
                bump(kind, ns, "MODIFIED", obj)
                if kind == "Job" and obj.get("spec", {}).get("suspend"):
                    suspend_job(obj)
                return self.send_json(200, obj)
        return self.send_json(*status(405, "MethodNotAllowed", "method not allowed"))

    def pod_log(self, ns, name, pod, q):
        """pods/log with the PodLogOptions the bridge uses: sinceSeconds (only what was written in
        the last N seconds; the kubelet filters by each line's timestamp, the double by the time each
        piece was set through /_double/pods) and limitBytes (the output cut after N bytes)."""
        unmodeled = sorted(set(q) - {"sinceSeconds", "limitBytes"})
        if unmodeled:
            return self.send_json(*status(400, "BadRequest", f"the double does not model pods/log options {unmodeled}"))
        options = {}
        for k in ("sinceSeconds", "limitBytes"):
            if k in q:
                try:
                    options[k] = int(q[k])
                except ValueError:
                    return self.send_json(*status(400, "BadRequest", f'{k}: Invalid value: "{q[k]}": not an integer'))
                if options[k] < 1:
                    return self.send_json(*status(422, "Invalid", f'PodLogOptions "{name}" is invalid: {k}: '
                                                  f'Invalid value: {options[k]}: must be greater than 0'))
        if "sinceSeconds" in options:
            since = time.time() - options["sinceSeconds"]
            text = "".join(t for when, t in LOG_WRITES.get((ns, name), []) if when >= since)
        else:
            text = pod["metadata"].get("annotations", {}).get("double/log", "")
        data = text.encode()[:options.get("limitBytes", len(text.encode()))]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        return self.wfile.write(data)

    def watch(self, kind, ns, q):
        rv = int(q.get("resourceVersion") or 0)
        deadline = time.time() + int(q.get("timeoutSeconds") or 300)
        with LOCK:
            if rv and rv < STATE["oldest"]:
                return self.send_json(*status(410, "Expired", f"too old resource version: {rv} ({STATE['oldest']})"))
            generation = STATE["generation"]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        try:
            while time.time() < deadline:
                with LOCK:
                    if STATE["generation"] != generation:
                        break  # /_double/drop-watches: the connection just ends, as on a network cut
                    pending = [e for e in EVENTS if e[0] > rv and e[1] == kind and (ns is None or e[2] == ns)
                               and matches(e[4], q.get("labelSelector"))]
                    if not pending:
                        LOCK.wait(0.5)
                        continue
                for erv, _, _, etype, obj in pending:
                    chunk(json.dumps({"type": etype, "object": obj}).encode() + b"\n")
                    rv = erv
            chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def control(self, parts):
        body = self.body()
        with LOCK:
            if parts[:1] == ["pods"]:  # /_double/pods/NS/NAME
                pod = STORE[("Pod", parts[1], parts[2])]
                pod["status"]["phase"] = body["phase"]
                if "exitCode" in body:
                    terminated = {"exitCode": body["exitCode"], "finishedAt": now(),
                                  "reason": body.get("reason", "Completed" if body["exitCode"] == 0 else "Error")}
                    pod["status"]["containerStatuses"] = [{"name": "worker", "ready": False,
                                                          "state": {"terminated": terminated}}]
                if "conditions" in body:  # e.g. [{"type": "DisruptionTarget", "status": "True", "reason": ...}]
                    pod["status"]["conditions"] = pod["status"].get("conditions", []) + body["conditions"]
                if "log" in body:  # the pod's whole log so far; what extends the previous one was just written
                    annotations = pod["metadata"].setdefault("annotations", {})
                    before = annotations.get("double/log", "")
                    writes = LOG_WRITES.setdefault((parts[1], parts[2]), [])
                    if not body["log"].startswith(before):
                        writes.clear()
                        before = ""
                    if len(body["log"]) > len(before):
                        writes.append((time.time(), body["log"][len(before):]))
                    annotations["double/log"] = body["log"]
                bump("Pod", parts[1], "MODIFIED", pod)
            elif parts[:1] == ["jobs"]:  # /_double/jobs/NS/NAME {"deadlineExceeded": true}: activeDeadlineSeconds passed
                job = STORE[("Job", parts[1], parts[2])]
                if body.get("deadlineExceeded"):
                    job.setdefault("status", {}).setdefault("conditions", []).append(
                        {"type": "Failed", "status": "True", "reason": "DeadlineExceeded", "lastTransitionTime": now()})
                    bump("Job", parts[1], "MODIFIED", job)
                    stop_active_pods(parts[1], parts[2])
            elif parts[:1] == ["nodes"]:  # /_double/nodes/NAME {"ready": false}
                node = STORE[("Node", None, parts[1])]
                node["status"]["conditions"] = [{"type": "Ready", "status": "True" if body["ready"] else "Unknown"}]
                bump("Node", None, "MODIFIED", node)
                for (k, pns, pname), pod in list(STORE.items()):
                    if k == "Pod" and pod["spec"].get("nodeName") == parts[1]:
                        pod["status"]["conditions"] = [{"type": "Ready", "status": "True" if body["ready"] else "False"}]
                        bump("Pod", pns, "MODIFIED", pod)
                        if body["ready"] and "deletionTimestamp" in pod["metadata"]:
                            timer = threading.Timer(KUBELET_STOP_SECONDS, kubelet_stops, (pns, pname))
                            timer.daemon = True
                            timer.start()
            elif parts == ["refuse"]:  # {"method": "PATCH", "kind": "Job" [, "apply": true]}; {} ends it
                STATE["refuse"] = body if body.get("method") else None
            elif parts == ["drop-watches"]:
                STATE["generation"] += 1
                LOCK.notify_all()
            elif parts == ["compact"]:
                STATE["oldest"] = STATE["rv"] + 1
                EVENTS.clear()
            elif parts == ["deletions"]:
                return self.send_json(200, DELETIONS)
            elif parts == ["history"]:
                return self.send_json(200, HISTORY)
            elif parts == ["objects"]:
                return self.send_json(200, [o for (k, _, _), o in sorted(STORE.items(), key=lambda kv: str(kv[0]))
                                             if k in (body.get("kinds") or [k])])
            else:
                return self.send_json(404, {"error": "unknown control"})
        return self.send_json(200, {"ok": True})

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_PUT(self):
        self.dispatch("PUT")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # the client went away mid-answer (a bridge stopped by a test): not the double's error
        super().handle_error(request, client_address)


def main():
    global TOKEN, KUBELET_STOP_SECONDS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--nodes", default="k1,k2,k3")
    ap.add_argument("--token", default="")
    ap.add_argument("--kubelet-stop-seconds", type=float, default=0.3)
    args = ap.parse_args()
    TOKEN = args.token or None
    KUBELET_STOP_SECONDS = args.kubelet_stop_seconds
    for n in args.nodes.split(","):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}, "uid": str(uuid.uuid4())},
                "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        with LOCK:
            STORE[("Node", None, n)] = node
            bump("Node", None, "ADDED", node)
    server = Server(("127.0.0.1", 0), Handler)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
