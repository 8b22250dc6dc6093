// The cluster page (#/cluster): every node, Slurm's and Kubernetes', with what SaFE or an admin
// did to it, in words, and a Slurm node's fault history as safed recorded it.
import { $, api, cell, errorText, setStatus, show, timeText } from "./api.js";

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
