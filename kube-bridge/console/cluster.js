// The cluster page (#/cluster): every node, Slurm's and Kubernetes', with what SaFE or an admin
// did to it, in words; each node's GPU grid (which GPU failed which check in its health
// checker's last run); and a Slurm node's fault history as safed recorded it.
import { $, api, cell, errorText, headerRow, setStatus, show, timeText } from "./api.js";

// What a node's state means for the people who run jobs on it.
export function nodeStatus(n) {
  const state = n.state || "";
  if ((n.reason || "").startsWith("SaFE-quarantine:")) return "quarantined by SaFE";
  if (/DOWN|FAIL|NOT_RESPONDING/.test(state)) return "down";
  if (n.safeDrained) return n.target === "kubernetes" ? "marked unhealthy by SaFE" : "drained by SaFE";
  if (/DRAIN/.test(state)) return "drained by an admin";
  if (n.health === "unhealthy") return "not ready";
  return "in service";
}

export async function showCluster() {
  setStatus("Loading nodes…");
  const r = await api("GET", "/api/v1/nodes");
  if (r.status === 401) return;
  if (r.status !== 200) return setStatus("Cannot list nodes: " + errorText(r), true);
  const counts = new Map();
  const rows = document.createDocumentFragment();
  for (const n of r.data.items) {
    const status = nodeStatus(n);
    counts.set(status, (counts.get(status) || 0) + 1);
    const row = document.createElement("tr");
    row.dataset.node = n.name;
    row.dataset.status = status;
    cell(row, n.name);
    cell(row, n.target);
    cell(row, status, "node-" + status.split(" ")[0]);
    cell(row, n.state);
    cell(row, n.reason);
    cell(row, n.gres);
    cell(row, n.cpus);
    const actions = cell(row, "");
    if (n.target === "slurm") {
      const faults = document.createElement("button");
      faults.type = "button";
      faults.textContent = "Faults";
      faults.setAttribute("aria-label", "Fault history of " + n.name);
      faults.addEventListener("click", () => showNodeFaults(n.name));
      actions.appendChild(faults);
    }
    rows.appendChild(row);
  }
  $("nodes-body").replaceChildren(rows);
  show("node-faults", false);
  $("nodes-count").textContent = r.data.items.length + " nodes: " +
    [...counts].map(([status, count]) => count + " " + status).join(", ");
  setStatus("");
  await showGpuGrid();
}

// A row per node that reported, a column per GPU index; a cell says "ok" or names the checks the
// GPU failed (their details in its tooltip).
async function showGpuGrid() {
  const r = await api("GET", "/api/v1/gpu-health");
  if (r.status === 401) return;
  if (r.status !== 200) {
    $("gpu-grid-summary").textContent = "Cannot read the GPU grid: " + errorText(r);
    $("gpu-grid-head").replaceChildren();
    $("gpu-grid-body").replaceChildren();
    return;
  }
  const nodes = r.data.items;
  const width = Math.max(0, ...nodes.map((n) => Math.max(-1, ...n.gpus.map((g) => g.index)) + 1));
  $("gpu-grid-head").replaceChildren(headerRow(["Node", "Checked", ...Array.from({ length: width }, (_, i) => "GPU " + i), "Node-wide"]));
  const rows = document.createDocumentFragment();
  let failing = 0;
  for (const n of nodes) {
    const row = document.createElement("tr");
    row.dataset.node = n.node;
    const name = document.createElement("th");
    name.scope = "row";
    name.textContent = n.node;
    row.appendChild(name);
    cell(row, timeText(n.checkedAt));
    const byIndex = new Map(n.gpus.map((g) => [g.index, g]));
    for (let i = 0; i < width; i++) {
      const g = byIndex.get(i);
      const failed = g ? g.failed.map((f) => f.check) : [];
      const td = cell(row, !g ? "—" : failed.length ? "failed: " + failed.join(", ") : "ok",
        !g ? "" : failed.length ? "gpu-failed" : "gpu-ok");
      td.dataset.gpu = String(i);
      if (g && failed.length) {
        td.dataset.failed = failed.join(" ");
        td.title = g.failed.map((f) => f.detail).join("; ");
        failing++;
      }
    }
    cell(row, n.unknown ? "not judged: " + n.unknown : n.gpuCount ? n.gpuCount : "",
      n.unknown || n.gpuCount ? "gpu-failed" : "");
    rows.appendChild(row);
  }
  $("gpu-grid-body").replaceChildren(rows);
  const checks = [...new Set(nodes.flatMap((n) => n.checks))];
  $("gpu-grid-summary").textContent = nodes.length === 0
    ? "No node's health checker has reported its GPUs yet (health.controller_url)."
    : failing + (failing === 1 ? " GPU" : " GPUs") + " failing a check in its node's last health check; checks: " + checks.join(", ") + ".";
}

async function showNodeFaults(node) {
  const r = await api("GET", "/api/v1/nodes/" + encodeURIComponent(node) + "/faults");
  if (r.status === 401) return;
  if (r.status !== 200) return setStatus("Cannot read the faults of " + node + ": " + errorText(r), true);
  $("node-faults-title").textContent = "Fault history of " + node;
  const rows = document.createDocumentFragment();
  for (const f of r.data.items.slice().reverse()) {
    const row = document.createElement("tr");
    row.dataset.kind = f.kind;
    cell(row, timeText(f.time));
    cell(row, f.kind);
    cell(row, f.detail);
    rows.appendChild(row);
  }
  $("node-faults-body").replaceChildren(rows);
  $("node-faults-count").textContent = r.data.items.length === 0 ? "No faults recorded." : r.data.items.length + " faults, newest first";
  show("node-faults", true);
  $("node-faults-title").focus();
  setStatus("");
}
