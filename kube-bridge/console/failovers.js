// The failovers page (#/failovers): safed's failovers of the user's jobs (an admin: all), with the
// distribution of MTTR (the fault to the job running again), the failovers of each day by class,
// and the ETTR of each workspace the user belongs to, each day (of the jobs that ended that day).
import { $, api, cell, errorText, headerRow, link, setStatus, timeText } from "./api.js";

// The buckets of safed's MTTR histogram (safe_mttr_seconds), in seconds.
const buckets = [1, 2, 3, 5, 7.5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, Infinity];

function count(n, thing) { return n + " " + thing + (n === 1 ? "" : "s"); }

function bucketName(upper, lower) {
  if (upper === Infinity) return "over " + lower + " s";
  return (lower === 0 ? "up to " : lower + "–") + upper + " s";
}

export async function showFailovers() {
  setStatus("Loading failovers…");
  const r = await api("GET", "/api/v1/failovers");
  if (r.status === 401) return;
  if (r.status !== 200) return setStatus("Cannot read failovers: " + errorText(r), true);
  const items = r.data.items;
  renderMttr(items.filter((f) => f.mttrSeconds !== null));
  renderByDay(items);
  renderList(items);
  $("failovers-count").textContent = items.length === 0 ? "No failovers." : count(items.length, "failover");
  setStatus("");
  await showEttr();
}

// The last 30 days, each a UTC day.
async function showEttr() {
  const day = 86400;
  const since = Math.floor(Date.now() / 1000 / day) * day - 29 * day;
  const r = await api("GET", "/api/v1/ettr-history?since=" + since + "&step=" + day);
  if (r.status === 401) return;
  if (r.status !== 200) {
    $("ettr-summary").textContent = "Cannot read ETTR: " + errorText(r);
    $("ettr-head").replaceChildren();
    $("ettr-body").replaceChildren();
    return;
  }
  const name = (p) => p.workspace === null ? "(no workspace)" : p.workspace;
  const workspaces = [...new Set(r.data.items.map(name))].sort();
  const days = new Map();
  for (const p of r.data.items) {
    const d = p.start.slice(0, 10);
    if (!days.has(d)) days.set(d, new Map());
    days.get(d).set(name(p), p);
  }
  $("ettr-head").replaceChildren(headerRow(["Day (UTC)", ...workspaces]));
  const rows = document.createDocumentFragment();
  for (const [d, byWorkspace] of [...days].sort()) {
    const row = document.createElement("tr");
    row.dataset.day = d;
    cell(row, d);
    for (const w of workspaces) {
      const p = byWorkspace.get(w);
      const td = cell(row, p ? p.ettr.toFixed(3) + " (" + count(p.jobs, "job") + ")" : "—");
      if (p) {
        td.dataset.workspace = w;
        // A bar under the figure, as long as the ETTR: the figure says it, the bar shows it.
        const bar = document.createElement("div");
        bar.className = "bar";
        bar.style.width = (100 * Math.min(1, Math.max(0, p.ettr))).toFixed(1) + "%";
        td.appendChild(bar);
      }
    }
    rows.appendChild(row);
  }
  $("ettr-body").replaceChildren(rows);
  $("ettr-summary").textContent = r.data.items.length === 0
    ? "No job of your workspaces ended in the last 30 days."
    : "Productive time over wall time since each job first ran, of the jobs that ended each day; a job counts on the day it ended.";
}

function renderMttr(done) {
  const counts = buckets.map(() => 0);
  for (const f of done) counts[buckets.findIndex((b) => f.mttrSeconds <= b)]++;
  const most = Math.max(1, ...counts);
  const rows = document.createDocumentFragment();
  let lower = 0;
  buckets.forEach((upper, i) => {
    const name = bucketName(upper, lower);
    lower = upper;
    if (counts[i] === 0 && (upper === Infinity || upper > 600)) return;  // the long tail, when empty
    const row = document.createElement("tr");
    row.dataset.bucket = name;
    cell(row, name);
    cell(row, counts[i]);
    // The bar repeats the count (which is in the cell before it): its width, set through the
    // CSSOM, which the page's Content Security Policy allows (it forbids style attributes).
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = (100 * counts[i] / most).toFixed(1) + "%";
    cell(row, "").appendChild(bar);
    rows.appendChild(row);
  });
  $("mttr-body").replaceChildren(rows);
  const sorted = done.map((f) => f.mttrSeconds).sort((a, b) => a - b);
  $("mttr-summary").textContent = sorted.length === 0 ? "No failover has the job running again yet."
    : count(sorted.length, "job") + " running again; median " + sorted[Math.floor((sorted.length - 1) / 2)] + " s, longest " + sorted[sorted.length - 1] + " s";
}

function renderByDay(items) {
  const classes = [...new Set(items.map((f) => f.class))].sort();
  const days = new Map();
  for (const f of items) {
    const day = f.faultTime ? f.faultTime.slice(0, 10) : "unknown";
    if (!days.has(day)) days.set(day, new Map());
    days.get(day).set(f.class, (days.get(day).get(f.class) || 0) + 1);
  }
  $("by-day-head").replaceChildren(headerRow(["Day (UTC)", ...classes, "All"]));
  const rows = document.createDocumentFragment();
  for (const [day, byClass] of [...days].sort()) {
    const row = document.createElement("tr");
    row.dataset.day = day;
    cell(row, day);
    let all = 0;
    for (const c of classes) {
      all += byClass.get(c) || 0;
      cell(row, byClass.get(c) || 0);
    }
    cell(row, all);
    rows.appendChild(row);
  }
  $("by-day-body").replaceChildren(rows);
}

function renderList(items) {
  const rows = document.createDocumentFragment();
  for (const f of items.slice().reverse()) {
    const row = document.createElement("tr");
    row.dataset.workload = f.workloadId;
    row.dataset.class = f.class;
    cell(row, timeText(f.faultTime));
    cell(row, "").appendChild(link("#/workloads/" + encodeURIComponent(f.workloadId), f.workloadId));
    cell(row, f.attempt);
    cell(row, f.class);
    cell(row, f.badNodes);
    cell(row, f.evidence);
    cell(row, f.phase + (f.usesRetry ? "" : " (no retry used)"));
    cell(row, f.mttrSeconds === null ? "—" : f.mttrSeconds + " s");
    rows.appendChild(row);
  }
  $("failovers-body").replaceChildren(rows);
}
