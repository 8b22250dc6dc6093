// The workloads pages: the list (#/workloads) and one workload (#/workloads/ID) with its
// attempts (Slurm's events and safed's) and its log.
import { $, api, cell, definitions, errorText, link, setStatus, state, timeText } from "./api.js";

let workloads = [];   // the list as last read
let current = null;   // the workload on its page

// ---- the list

export async function showWorkloads() {
  setStatus("Loading workloads…");
  const items = [];
  for (let offset = 0; offset !== null && offset !== undefined;) {
    const r = await api("GET", "/api/v1/workloads?limit=1000&offset=" + offset);
    if (r.status === 401) return;
    if (r.status !== 200) return setStatus("Cannot list workloads: " + errorText(r), true);
    items.push(...r.data.items);
    offset = r.data.nextOffset;
  }
  workloads = items;
  renderWorkloads();
  setStatus("");
}

export function forgetWorkloads() {
  workloads = [];
  current = null;
  $("workloads-body").replaceChildren();
}

function matchesFilters(w) {
  const text = $("filter-text").value.trim().toLowerCase();
  const phase = $("filter-phase").value, target = $("filter-target").value;
  if (phase && w.phase !== phase) return false;
  if (target && w.target !== target) return false;
  if (!text) return true;
  return [w.name, w.id, w.nodes].some((v) => typeof v === "string" && v.toLowerCase().includes(text));
}

export function renderWorkloads() {
  const started = performance.now();
  const rows = document.createDocumentFragment();
  let shown = 0;
  for (const w of workloads) {
    if (!matchesFilters(w)) continue;
    shown++;
    const row = document.createElement("tr");
    row.dataset.id = w.id;
    cell(row, "").appendChild(link("#/workloads/" + encodeURIComponent(w.id), w.name));
    cell(row, w.id);
    cell(row, w.target);
    cell(row, w.workspace);
    cell(row, w.phase, "phase-" + w.phase);
    // A service has replicas, not attempts on a set of nodes.
    cell(row, w.kind === "service" ? "—" : w.attempt);
    cell(row, w.kind === "service" ? w.replicas.ready + " of " + w.replicas.desired + " replicas ready" : w.nodes);
    const actions = cell(row, "");
    if (w.phase === "Running" || w.phase === "Pending") {
      const stop = document.createElement("button");
      stop.type = "button";
      stop.textContent = "Stop";
      stop.setAttribute("aria-label", "Stop " + w.name + " (" + w.id + ")");
      stop.addEventListener("click", () => stopFromList(w));
      actions.appendChild(stop);
    }
    rows.appendChild(row);
  }
  $("workloads-body").replaceChildren(rows);
  $("workloads-count").textContent = shown + " of " + workloads.length + " workloads";
  // The browser test reads how long the table took (docs/benchmarks.md).
  document.body.dataset.workloadsRenderMs = (performance.now() - started).toFixed(1);
  document.body.dataset.workloadsRenderedAtMs = performance.now().toFixed(1);  // since navigation began
}

async function stopFromList(w) {
  const r = await api("POST", "/api/v1/workloads/" + encodeURIComponent(w.id) + "/stop");
  if (r.status === 401) return;
  if (r.status !== 202 && r.status !== 200) return setStatus("Cannot stop " + w.name + ": " + errorText(r), true);
  await showWorkloads();
  setStatus("Stopping " + w.name + " (" + w.id + ").");
}

// ---- one workload

const eventOrder = { Submitted: 0, Requeued: 1, Started: 2, Attempt: 3, Failover: 4 };

export async function showWorkload(id) {
  current = null;
  $("workload-title").textContent = id;
  for (const el of ["workload-summary", "attempts-body", "log-attempt", "log-text"]) $(el).replaceChildren();
  $("workload-delete-confirm").hidden = true;
  setStatus("Loading " + id + "…");
  const path = "/api/v1/workloads/" + encodeURIComponent(id);
  const [w, events] = await Promise.all([api("GET", path), api("GET", path + "/events")]);
  if (w.status === 401) return;
  if (w.status === 404) return setStatus("There is no workload " + id + " that you may see.", true);
  if (w.status !== 200) return setStatus("Cannot read " + id + ": " + errorText(w), true);
  current = w.data;
  renderSummary(w.data);
  renderAttempts(events.status === 200 ? events.data.items : []);
  if (w.data.kind === "service") {
    // A service's logs are its replicas' (each replica's current job, or its last one).
    for (const r of w.data.replicas.items) {
      const option = document.createElement("option");
      option.value = String(r.replica);
      option.textContent = "replica " + r.replica;
      $("log-attempt").appendChild(option);
    }
  } else {
    for (let n = 1; n <= Math.max(1, w.data.attempt); n++) {
      const option = document.createElement("option");
      option.value = String(n);
      option.textContent = "attempt " + n;
      $("log-attempt").appendChild(option);
    }
    $("log-attempt").value = String(Math.max(1, w.data.attempt));
  }
  $("workload-stop").disabled = !(w.data.phase === "Running" || w.data.phase === "Pending");
  setStatus(events.status === 200 ? "" : "The events of " + id + " cannot be read: " + errorText(events), events.status !== 200);
}

function renderSummary(w) {
  $("workload-title").textContent = w.name + " (" + w.id + ")";
  if (w.kind === "service") {
    const r = w.replicas;
    definitions($("workload-summary"), [
      ["Phase", w.phase], ["User", w.user], ["Workspace", w.workspace || "none"], ["Target", w.target],
      ["Kind", "service"], ["Replicas", r.ready + " of " + r.desired + " ready (scaling " + r.min + " to " + r.max + ")"],
      ...r.items.map((x) => ["Replica " + x.replica,
        x.state + (x.node ? " on " + x.node + ":" + x.port : "") + (x.reason ? " (" + x.reason + ")" : "") +
        ", " + x.restarts + " restarts" + (x.crashLooping ? ", crash-looping: " + x.lastFailure : "")]),
      ["Submitted", timeText(w.submitTime)],
    ]);
    return;
  }
  definitions($("workload-summary"), [
    ["Phase", w.phase + (w.slurmState ? " (Slurm: " + w.slurmState + (w.reason ? ", " + w.reason : "") + ")" : "")],
    ["User", w.user], ["Workspace", w.workspace || "none"], ["Target", w.target],
    ["Attempt", w.attempt + (w.maxRetries !== null && w.maxRetries !== undefined ? " (retries allowed: " + w.maxRetries + ")" : "")],
    ["Nodes", w.nodes || "—"], ["Nodes excluded after failures", w.excludedNodes || "none"],
    ["Health level", w.health || "—"], ["Checkpoint directory", w.checkpointDir || "none"],
    ["Submitted", timeText(w.submitTime)], ["Started", timeText(w.startTime)], ["Ended", timeText(w.endTime)],
  ]);
}

function renderAttempts(items) {
  const sorted = items.slice().sort((a, b) =>
    (a.attempt - b.attempt) || ((eventOrder[a.type] ?? 9) - (eventOrder[b.type] ?? 9)));
  const rows = document.createDocumentFragment();
  for (const e of sorted) {
    const row = document.createElement("tr");
    row.className = "event-" + e.type;
    row.dataset.attempt = String(e.attempt);
    row.dataset.type = e.type;
    cell(row, e.attempt ?? (e.replica !== undefined ? "replica " + e.replica : "—"));
    cell(row, timeText(e.time));
    cell(row, e.type + (e.source === "safed" ? " (SaFE)" : ""));
    cell(row, e.message);
    rows.appendChild(row);
  }
  $("attempts-body").replaceChildren(rows);
}

export async function showLog() {
  if (!current) return;
  const attempt = $("log-attempt").value;
  const which = current.kind === "service" ? "replica" : "attempt";
  const response = await fetch("/api/v1/workloads/" + encodeURIComponent(current.id) + "/logs?" + which + "=" + encodeURIComponent(attempt),
    { credentials: "same-origin" });
  const text = await response.text();
  if (response.status === 401) return state.onSignedOut("Your session has ended: sign in again.");
  if (response.status !== 200) {
    let message = "HTTP " + response.status;
    try { message = JSON.parse(text).error || message; } catch (e) { /* not JSON */ }
    $("log-text").textContent = "";
    return setStatus("No log for " + which + " " + attempt + ": " + message, true);
  }
  $("log-text").textContent = text;
  setStatus("The log of " + which + " " + attempt + " (" + text.length + " bytes).");
}

export async function stopOrDelete(remove) {
  const w = current;
  if (!w) return;
  const path = "/api/v1/workloads/" + encodeURIComponent(w.id);
  const r = remove ? await api("DELETE", path) : await api("POST", path + "/stop");
  if (r.status === 401) return;
  if (r.status !== 200 && r.status !== 202) return setStatus("Cannot " + (remove ? "delete " : "stop ") + w.name + ": " + errorText(r), true);
  if (remove) {
    location.hash = "#/workloads";
    setStatus("Deleted " + w.name + " (" + w.id + ").");
    return;
  }
  await showWorkload(w.id);
  setStatus("Stopping " + w.name + " (" + w.id + ").");
}
