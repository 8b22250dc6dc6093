// SaFE console (docs/console.md): signing in and out, and which page the address shows. The
// session cookie is HttpOnly: this script never sees the token, only the CSRF token that
// GET /console/session hands to the bridge's own pages.
import { $, api, errorText, setStatus, show, state } from "./api.js";
import { showCluster } from "./cluster.js";
import { showFailovers } from "./failovers.js";
import { forgetWorkloads, renderWorkloads, showLog, showWorkload, showWorkloads, stopOrDelete } from "./workloads.js";
import { showWorkspaces } from "./workspaces.js";

const pages = ["workloads", "workload", "cluster", "workspaces", "failovers"];

function signedOut(message) {
  state.user = state.csrf = null;
  state.admin = false;
  forgetWorkloads();
  for (const page of pages) show(page, false);
  show("nav", false); show("who", false); show("sign-in", true);
  setStatus(message || "", Boolean(message));
  $("token").focus();
}
state.onSignedOut = signedOut;

async function signedIn(session) {
  state.user = session.user;
  state.admin = session.admin;
  state.csrf = session.csrf;
  $("who-name").textContent = session.user + (session.admin ? " (admin)" : "");
  show("sign-in", false); show("nav", true); show("who", true);
  await route();
}

// Pages by the address's fragment: #/workloads (the default), #/workloads/ID, #/cluster,
// #/workspaces, #/failovers.
async function route() {
  if (!state.user) return;
  const one = /^#\/workloads\/(.+)$/.exec(location.hash);
  const page = one ? "workload" : ["#/cluster", "#/workspaces", "#/failovers"].includes(location.hash) ? location.hash.slice(2) : "workloads";
  for (const p of pages) show(p, p === page);
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.id === "nav-" + (page === "workload" ? "workloads" : page)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (page === "workload") await showWorkload(decodeURIComponent(one[1]));
  else if (page === "cluster") await showCluster();
  else if (page === "workspaces") await showWorkspaces();
  else if (page === "failovers") await showFailovers();
  else await showWorkloads();
}

async function signIn(event) {
  event.preventDefault();
  // The header makes this a request no other site's page can send (docs/console.md).
  const response = await fetch("/console/session", {
    method: "POST", credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": "sign-in" },
    body: JSON.stringify({ token: $("token").value }),
  });
  $("token").value = "";
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (response.status !== 200) return signedOut("Sign-in failed: " + errorText({ status: response.status, data }));
  await signedIn(data);
}

async function signOut() {
  await api("DELETE", "/console/session");
  signedOut("Signed out.");
}

async function start() {
  $("sign-in").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", signOut);
  for (const id of ["filter-text", "filter-phase", "filter-target"]) $(id).addEventListener("input", renderWorkloads);
  $("log-show").addEventListener("click", showLog);
  $("workload-stop").addEventListener("click", () => stopOrDelete(false));
  $("workload-delete").addEventListener("click", () => { $("workload-delete-confirm").hidden = false; $("workload-delete-confirm").focus(); });
  $("workload-delete-confirm").addEventListener("click", () => stopOrDelete(true));
  window.addEventListener("hashchange", route);
  const r = await api("GET", "/console/session");
  if (r.status === 200) await signedIn(r.data);
  else signedOut();
}

start();
