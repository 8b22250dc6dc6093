// The workspaces page (#/workspaces): the workspaces the user belongs to (an admin: all), with
// their GPU quota, the GPUs their running jobs hold now, the pending jobs the quota holds back,
// and safed's ETTR and time lost to faults ("—" without a controller's answer).
import { $, api, cell, durationText, errorText, setStatus } from "./api.js";

export async function showWorkspaces() {
  setStatus("Loading workspaces…");
  const r = await api("GET", "/api/v1/workspaces");
  if (r.status === 401) return;
  if (r.status !== 200) return setStatus("Cannot list workspaces: " + errorText(r), true);
  const rows = document.createDocumentFragment();
  for (const w of r.data.items) {
    const row = document.createElement("tr");
    row.dataset.workspace = w.name;
    cell(row, w.name);
    const quota = w.gpuQuota === null || w.gpuQuota === undefined ? null : w.gpuQuota;
    cell(row, quota === null ? "no quota" : quota);
    cell(row, w.gpusInUse + (quota ? " (" + Math.round(100 * w.gpusInUse / quota) + " %)" : ""));
    cell(row, w.pendingHeldByQuota === null ? "—" : w.pendingHeldByQuota);
    cell(row, w.ettr === null ? "—" : w.ettr.toFixed(3));
    cell(row, w.timeLostSeconds === null ? "—" : durationText(w.timeLostSeconds));
    cell(row, [w.partition && "partition " + w.partition, w.account && "account " + w.account, w.qos && "QOS " + w.qos]
      .filter(Boolean).join(", ") || "cluster defaults");
    cell(row, w.defaultRetries + " (at most " + w.maxRetries + ")");
    cell(row, w.defaultHealth);
    cell(row, [...(w.members.users || []), ...(w.members.groups || []).map((g) => "group " + g)].join(", "));
    rows.appendChild(row);
  }
  $("workspaces-body").replaceChildren(rows);
  $("workspaces-count").textContent = r.data.items.length === 0
    ? "You belong to no workspace." : r.data.items.length + " workspaces";
  setStatus("");
}
