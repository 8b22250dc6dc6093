#!/usr/bin/env python3
"""A Kubernetes API double for SaFE's tests: NOT a Kubernetes API server.

It speaks real HTTP/1.1 with the status codes, Status objects, resourceVersion semantics, watch
streams (?watch=1, JSON lines, 410 Gone for compacted versions, ERROR events) and equality label
selectors of the real API, for the resources the bridge uses: batch/v1 Jobs, v1 Services, Pods
(and pods/log) in namespaces, and Nodes (GET, merge-patch). Instead of a scheduler and kubelets it
plays them crudely: a created Job gets `completions` pods placed on Ready nodes that its required
node affinity allows (NotIn, DoesNotExist), Running at once. Tests drive everything else through
/_double/ endpoints: pod phase and exit code, node readiness (which, like the node lifecycle
controller, marks that node's pods not Ready), dropping open watches, compacting history.

Usage: kube_api_double.py --port-file FILE [--nodes k1,k2,k3] [--token TOKEN]
"""
import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

LOCK = threading.Condition()
STORE = {}        # (kind, namespace, name) -> object
EVENTS = []       # (rv, kind, namespace, type, object)
STATE = {"rv": 100, "oldest": 0, "generation": 0}
TOKEN = None

COLLECTIONS = {  # path pattern parts -> kind
    ("apis", "batch", "v1", "jobs"): "Job",
    ("api", "v1", "services"): "Service",
    ("api", "v1", "pods"): "Pod",
}


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def bump(kind, ns, etype, obj):
    """Records a change; the caller holds LOCK."""
    STATE["rv"] += 1
    obj["metadata"]["resourceVersion"] = str(STATE["rv"])
    EVENTS.append((STATE["rv"], kind, ns, etype, json.loads(json.dumps(obj))))
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


def delete_object(kind, ns, name):
    obj = STORE.pop((kind, ns, name))
    bump(kind, ns, "DELETED", obj)
    if kind == "Job":  # background propagation: the Job's pods go too
        for (k, pns, pname), pod in list(STORE.items()):
            if k == "Pod" and pns == ns and pod["metadata"]["labels"].get("batch.kubernetes.io/job-name") == name:
                delete_object("Pod", pns, pname)
    return obj


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
                data = obj["metadata"].get("annotations", {}).get("double/log", "").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                return self.wfile.write(data)
            if method == "GET":
                return self.send_json(200, obj)
            if method == "DELETE":
                self.body()
                return self.send_json(200, delete_object(kind, ns, name))
            if method == "PATCH":
                if self.headers.get("Content-Type") != "application/merge-patch+json":
                    return self.send_json(*status(415, "UnsupportedMediaType", "use application/merge-patch+json"))
                merge(obj, self.body())
                bump(kind, ns, "MODIFIED", obj)
                return self.send_json(200, obj)
        return self.send_json(*status(405, "MethodNotAllowed", "method not allowed"))

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
                    pod["status"]["containerStatuses"] = [{"name": "worker", "ready": False,
                                                          "state": {"terminated": {"exitCode": body["exitCode"]}}}]
                if "log" in body:
                    pod["metadata"].setdefault("annotations", {})["double/log"] = body["log"]
                bump("Pod", parts[1], "MODIFIED", pod)
            elif parts[:1] == ["nodes"]:  # /_double/nodes/NAME {"ready": false}
                node = STORE[("Node", None, parts[1])]
                node["status"]["conditions"] = [{"type": "Ready", "status": "True" if body["ready"] else "Unknown"}]
                bump("Node", None, "MODIFIED", node)
                for (k, pns, pname), pod in list(STORE.items()):
                    if k == "Pod" and pod["spec"].get("nodeName") == parts[1]:
                        pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
                        bump("Pod", pns, "MODIFIED", pod)
            elif parts == ["drop-watches"]:
                STATE["generation"] += 1
                LOCK.notify_all()
            elif parts == ["compact"]:
                STATE["oldest"] = STATE["rv"] + 1
                EVENTS.clear()
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


def main():
    global TOKEN
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--nodes", default="k1,k2,k3")
    ap.add_argument("--token", default="")
    args = ap.parse_args()
    TOKEN = args.token or None
    for n in args.nodes.split(","):
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}, "uid": str(uuid.uuid4())},
                "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        with LOCK:
            STORE[("Node", None, n)] = node
            bump("Node", None, "ADDED", node)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
