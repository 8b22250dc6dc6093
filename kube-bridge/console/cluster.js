// The cluster page (#/cluster): every node, Slurm's and Kubernetes', with what SaFE or an admin
// did to it, in words.
import { $, api, cell, errorText, setStatus } from "./api.js";

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
    rows.appendChild(row);
  }
  $("nodes-body").replaceChildren(rows);
  $("nodes-count").textContent = r.data.items.length + " nodes: " +
    [...counts].map(([status, count]) => count + " " + status).join(", ");
  setStatus("");
}
