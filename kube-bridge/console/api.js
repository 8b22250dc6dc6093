// What every page of the console shares: the session's state, requests to the bridge, and the
// few DOM helpers. The DOM is built with createElement and textContent only, never from HTML
// strings, so whatever a user named (a job, a comment, a log line) renders as text.

export const state = { user: null, admin: false, csrf: null, onSignedOut: null };

export const $ = (id) => document.getElementById(id);

export function show(id, visible) { $(id).hidden = !visible; }

export function setStatus(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

// fetch on the bridge's origin with the session cookie; state-changing requests carry the CSRF
// token. The answer's status and its JSON (null when it is not JSON). A 401 ends the session.
export async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = state.csrf || "";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (response.status === 401 && path !== "/console/session" && state.onSignedOut)
    state.onSignedOut("Your session has ended: sign in again.");
  return { status: response.status, data };
}

export function errorText(r) {
  return (r.data && r.data.error) ? r.data.error : "HTTP " + r.status;
}

// A table cell holding `text` as text.
export function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

// A header row of column headings, as text.
export function headerRow(titles) {
  const row = document.createElement("tr");
  for (const title of titles) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = title;
    row.appendChild(th);
  }
  return row;
}

export function link(href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  return a;
}

export function timeText(t) { return t ? new Date(t).toLocaleString() : "—"; }

// Seconds as "45 s", "12 min 3 s" or "3 h 4 min".
export function durationText(seconds) {
  const s = Math.round(seconds);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

// A definition list's items from [name, value] pairs.
export function definitions(list, pairs) {
  const items = document.createDocumentFragment();
  for (const [name, value] of pairs) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = name;
    dd.textContent = value === null || value === undefined ? "" : String(value);
    items.append(dt, dd);
  }
  list.replaceChildren(items);
}
