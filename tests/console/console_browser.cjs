// The console in headless Chromium, driven over the DevTools protocol (puppeteer-core), for
// tests/integration/console_browser.sh, which sets up the workloads and checks the outcome with
// the API. Each step that fails throws with what it saw; the exit code says whether all passed.
"use strict";
const puppeteer = require("puppeteer-core");

const env = (name) => {
  if (!process.env[name]) throw new Error(name + " is not set (run tests/integration/console_browser.sh)");
  return process.env[name];
};
const consoleUrl = env("SAFE_CONSOLE_URL");
const origin = new URL(consoleUrl).origin;
const shots = env("SAFE_SHOTS");
const ids = { xss: env("SAFE_XSS_ID"), stop: env("SAFE_STOP_ID"), target: env("SAFE_TARGET_ID"), failedOver: env("SAFE_FAILED_OVER_ID"),
  service: env("SAFE_SERVICE_ID") };
const faultNode = env("SAFE_FAULT_NODE");
const xssName = "<img src=x onerror=alert(1)>";

function check(ok, what) {
  if (!ok) throw new Error(what);
  console.log("ok: " + what.replace(/^expected /, ""));
}

// A console page: fails on a dialog (a script that should not run), a page error, or a request
// to anywhere but the bridge (the console fetches nothing elsewhere).
async function consolePage(context, name) {
  const page = await context.newPage();
  page.problems = [];
  page.on("dialog", async (d) => { page.problems.push(name + ": a dialog opened: " + d.message()); await d.dismiss(); });
  page.on("pageerror", (e) => page.problems.push(name + ": page error: " + e.message));
  page.on("request", (r) => {
    if (!r.url().startsWith(origin + "/") && !r.url().startsWith("data:"))
      page.problems.push(name + ": requested " + r.url() + ", not from the bridge");
  });
  await page.setViewport({ width: 1280, height: 720 });
  return page;
}

async function signIn(page, token) {
  await page.goto(consoleUrl, { waitUntil: "networkidle0" });
  await page.waitForSelector("#sign-in", { visible: true });
  await page.focus("#token");
  await page.keyboard.type("SLURM_JWT=" + token);
  await page.keyboard.press("Enter");
  // Seen as a person sees it: the list shown, the sign-in form gone.
  await page.waitForSelector("#workloads", { visible: true });
  await page.waitForSelector("#sign-in", { hidden: true });
  await page.waitForFunction(() => document.getElementById("status").textContent === "");
}

const rowIds = (page) => page.$$eval("#workloads-body tr", (rows) => rows.map((r) => r.dataset.id));

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.SAFE_CHROMIUM || "/usr/bin/chromium",
    headless: true,
    // Root needs --no-sandbox; the rest keeps a headless run on a small machine lean.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
  });
  const pages = [];
  try {
    // 1. Sign in with a token from `scontrol token`, by keyboard.
    const user = await browser.createBrowserContext();
    const page = await consolePage(user, "safeconsole");
    pages.push(page);
    await page.goto(consoleUrl, { waitUntil: "networkidle0" });
    await page.waitForSelector("#sign-in", { visible: true });
    await page.waitForSelector("#workloads", { hidden: true });
    await page.screenshot({ path: shots + "/sign-in.png" });
    await signIn(page, env("SAFE_USER_JWT"));
    check((await page.$eval("#who-name", (e) => e.textContent)) === "safeconsole", "expected the console to name the signed-in user");

    // 2. The session cookie: HttpOnly (no script sees it), SameSite=Strict.
    const cookie = (await user.cookies()).find((c) => c.name === "safe_session");
    check(cookie && cookie.httpOnly && cookie.sameSite === "Strict" && cookie.path === "/",
      "expected the session cookie HttpOnly, SameSite=Strict, Path=/ (" + JSON.stringify(cookie && { httpOnly: cookie.httpOnly, sameSite: cookie.sameSite }) + ")");
    check(!(await page.evaluate(() => document.cookie)).includes("safe_session"), "expected document.cookie not to show the session");

    // 3. The list: the user's three workloads; the one named like markup is text.
    const listed = await rowIds(page);
    for (const id of Object.values(ids)) check(listed.includes(id), "expected workload " + id + " in the list (" + listed.join(" ") + ")");
    const shownName = await page.$eval(`#workloads-body tr[data-id="${ids.xss}"] td`, (td) => td.textContent);
    check(shownName === xssName, "expected the markup-like name shown as text (" + JSON.stringify(shownName) + ")");
    check((await page.$$("img")).length === 0, "expected no <img> element made from a workload's name");
    await page.screenshot({ path: shots + "/workloads.png", fullPage: true });

    // 4. The filter (name, id or node).
    await page.type("#filter-text", "console-sleep");
    const filtered = await rowIds(page);
    const names = await page.$$eval("#workloads-body tr td:first-child", (tds) => tds.map((td) => td.textContent));
    check(filtered.includes(ids.stop) && filtered.includes(ids.target) && !filtered.includes(ids.xss) &&
      names.every((n) => n.includes("console-sleep")), "expected the name filter to leave the console-sleep workloads (" + filtered.join(" ") + ")");
    await page.click("#filter-text", { count: 3 });
    await page.keyboard.type(ids.stop);
    const byId = await rowIds(page);
    check(byId.length === 1 && byId[0] === ids.stop, "expected the id filter to leave " + ids.stop + " alone (" + byId.join(" ") + ")");
    await page.click("#filter-text", { count: 3 });
    await page.keyboard.press("Backspace");

    // 5. The workload a GPU fault failed over: its page (reached by keyboard from the list) shows
    //    both attempts and the node fault, and the log of attempt 1 is the first run's.
    await page.focus(`#workloads-body tr[data-id="${ids.failedOver}"] a`);
    await page.keyboard.press("Enter");
    await page.waitForSelector("#workload", { visible: true });
    await page.waitForSelector("#attempts-body tr");
    const events = await page.$$eval("#attempts-body tr", (rows) => rows.map((r) => ({ attempt: r.dataset.attempt, type: r.dataset.type, text: r.textContent })));
    const attempts = [...new Set(events.map((e) => e.attempt))];
    check(attempts.includes("1") && attempts.includes("2"), "expected the failed-over workload's page to show attempts 1 and 2 (" + attempts.join(" ") + ")");
    check(events.some((e) => e.attempt === "1" && /node_fault/.test(e.text) && e.text.includes(faultNode)),
      "expected attempt 1's node fault on " + faultNode + " on the page (" + JSON.stringify(events) + ")");
    await page.screenshot({ path: shots + "/workload.png", fullPage: true });
    await page.select("#log-attempt", "1");
    await page.click("#log-show");
    await page.waitForFunction(() => document.getElementById("log-text").textContent.includes("console attempt="), { timeout: 15000 });
    const log = await page.$eval("#log-text", (e) => e.textContent);
    check(log.includes("console attempt=0 node=" + faultNode), "expected attempt 1's log to show its run on " + faultNode + " (" + JSON.stringify(log) + ")");
    await page.screenshot({ path: shots + "/workload-log.png", fullPage: true });
    await page.click('#workload a[href="#/workloads"]');
    await page.waitForSelector("#workloads", { visible: true });
    await page.waitForFunction(() => document.getElementById("status").textContent === "");

    // 5b. A service: its row counts its ready replicas, its page shows each replica, and the log
    //     selector offers replicas, not attempts.
    const serviceRow = await page.$eval(`#workloads-body tr[data-id="${ids.service}"]`, (r) => r.textContent);
    check(serviceRow.includes("1 of 1 replicas ready"), "expected the service's row to count its ready replicas (" + serviceRow + ")");
    await page.click(`#workloads-body tr[data-id="${ids.service}"] a`);
    await page.waitForSelector("#workload", { visible: true });
    await page.waitForFunction(() => document.getElementById("workload-summary").textContent.includes("Replica 0"));
    const summary = await page.$eval("#workload-summary", (e) => e.textContent);
    // (Its port is 23000, or the next when it moved off the node the GPU fault above drained.)
    check(summary.includes("1 of 1 ready") && /Ready on n\d+:2300\d/.test(summary),
      "expected the service's page to show replica 0 ready on its node and port (" + summary + ")");
    await page.screenshot({ path: shots + "/service.png", fullPage: true });
    await page.select("#log-attempt", "0");
    await page.click("#log-show");
    await page.waitForFunction(() => document.getElementById("log-text").textContent.includes("console service replica=0"), { timeout: 15000 });
    check(true, "expected replica 0's log on the service's page");
    await page.click('#workload a[href="#/workloads"]');
    await page.waitForSelector("#workloads", { visible: true });
    await page.waitForFunction(() => document.getElementById("status").textContent === "");

    // 6. The cluster page: the node of the GPU fault, drained by SaFE with its reason, its GPU grid
    //    and its fault history.
    await page.click("#nav-cluster");
    await page.waitForSelector(`#nodes-body tr[data-node="${faultNode}"]`, { visible: true });
    const node = await page.$eval(`#nodes-body tr[data-node="${faultNode}"]`, (r) => ({ status: r.dataset.status, text: r.textContent }));
    check(node.status === "drained by SaFE" && node.text.includes("SaFE: gpu0"), "expected " + faultNode + " shown drained by SaFE with its reason (" + JSON.stringify(node) + ")");
    // Its GPU grid: GPU 0 failed the ECC check in the node's last health check, GPU 1 passed.
    const gpuCell = (i) => `#gpu-grid-body tr[data-node="${faultNode}"] td[data-gpu="${i}"]`;
    await page.waitForSelector(gpuCell(0), { visible: true });
    const gpu0 = await page.$eval(gpuCell(0), (td) => ({ failed: td.dataset.failed || "", text: td.textContent, detail: td.title }));
    const gpu1 = await page.$eval(gpuCell(1), (td) => td.textContent);
    check(gpu0.failed.split(" ").includes("ecc_uncorrectable") && gpu0.text.includes("ecc_uncorrectable") &&
      gpu0.detail.includes("gpu0 uncorrectable ECC") && gpu1 === "ok",
      "expected " + faultNode + "'s GPU 0 shown failing ecc_uncorrectable and GPU 1 ok (" + JSON.stringify([gpu0, gpu1]) + ")");
    await page.click(`button[aria-label="Fault history of ${faultNode}"]`);
    await page.waitForSelector("#node-faults", { visible: true });
    const faults = await page.$$eval("#node-faults-body tr", (rows) => rows.map((r) => r.textContent));
    check(faults.some((f) => f.includes("SaFE: gpu0 uncorrectable ECC")), "expected the fault in " + faultNode + "'s history (" + JSON.stringify(faults) + ")");
    await page.screenshot({ path: shots + "/cluster.png", fullPage: true });

    // 6b. The failovers page: that failover with its class and MTTR, counted in the distribution.
    await page.click("#nav-failovers");
    await page.waitForSelector(`#failovers-body tr[data-workload="${ids.failedOver}"]`, { visible: true });
    const failover = await page.$eval(`#failovers-body tr[data-workload="${ids.failedOver}"]`, (r) => [...r.cells].map((c) => c.textContent));
    check(failover[3] === "node_fault" && failover[4] === faultNode && /^\d+ s$/.test(failover[7]),
      "expected the failover of " + ids.failedOver + " listed with class node_fault on " + faultNode + " and its MTTR (" + JSON.stringify(failover) + ")");
    const counted = await page.$$eval("#mttr-body tr", (rows) => rows.reduce((n, r) => n + Number(r.cells[1].textContent), 0));
    check(counted >= 1, "expected the MTTR distribution to count it (" + counted + ")");
    await page.screenshot({ path: shots + "/failovers.png", fullPage: true });
    await page.click("#nav-workloads");
    await page.waitForSelector("#workloads", { visible: true });
    await page.waitForFunction(() => document.getElementById("status").textContent === "");

    // 7. Stop a workload with its button (a state-changing request: the CSRF token goes with it).
    await page.click(`button[aria-label="Stop console-sleep (${ids.stop})"]`);
    await page.waitForFunction((id) => document.getElementById("status").textContent === "Stopping console-sleep (" + id + ").",
      { timeout: 15000 }, ids.stop);
    check(true, "expected the stop of " + ids.stop + " accepted");

    // 8. Another site's form posts a stop: the browser sends no cookie (SameSite=Strict): 401.
    //    The same site on another origin: the cookie goes, the CSRF token cannot: 403.
    for (const [url, expected, what] of [[env("SAFE_CROSS_SITE_URL"), 401, "cross-site"], [env("SAFE_SAME_SITE_URL"), 403, "same-site, other origin"]]) {
      const attack = await user.newPage();
      const answer = attack.waitForResponse((r) => r.url().endsWith("/" + ids.target + "/stop"), { timeout: 15000 });
      await attack.goto(url);
      const status = (await answer).status();
      check(status === expected, "expected the " + what + " form post of a stop refused with " + expected + " (got " + status + ")");
      await attack.close();
    }

    // 9. A second user, in a browser context of their own: sees none of the first's workloads,
    //    and the API answers a look at one with 404, as for a workload that does not exist.
    const other = await browser.createBrowserContext();
    const page2 = await consolePage(other, "safeconsole2");
    pages.push(page2);
    await signIn(page2, env("SAFE_OTHER_JWT"));
    const theirs = await rowIds(page2);
    check(!Object.values(ids).some((id) => theirs.includes(id)), "expected the second user to see none of the first's workloads (" + theirs.join(" ") + ")");
    await page2.click("#nav-failovers");
    await page2.waitForFunction(() => document.getElementById("failovers-count").textContent !== "");
    const theirFailovers = await page2.$$eval("#failovers-body tr", (rows) => rows.map((r) => r.dataset.workload));
    check(!theirFailovers.includes(ids.failedOver), "expected the second user's failovers page without the first's failover (" + theirFailovers.join(" ") + ")");
    const peek = await page2.evaluate((id) => fetch("/api/v1/workloads/" + id).then((r) => r.status), ids.xss);
    check(peek === 404, "expected the second user's look at the first's workload answered 404 (got " + peek + ")");
    await page2.screenshot({ path: shots + "/second-user.png", fullPage: true });

    // 10. An admin (root) sees every user's workloads, the markup-named one as text too, and the
    //     workspaces with their quotas.
    const admin = await browser.createBrowserContext();
    const page4 = await consolePage(admin, "root");
    pages.push(page4);
    await signIn(page4, env("SAFE_ADMIN_JWT"));
    const adminsName = await page4.$eval(`#workloads-body tr[data-id="${ids.xss}"] td`, (td) => td.textContent);
    check(adminsName === xssName && (await page4.$$("img")).length === 0, "expected the admin to see the markup-named workload as text");
    await page4.click("#nav-workspaces");
    await page4.waitForSelector('#workspaces-body tr[data-workspace="ml"]', { visible: true });
    const ml = await page4.$eval('#workspaces-body tr[data-workspace="ml"]', (r) => [...r.cells].map((c) => c.textContent));
    check(ml[1] === "8", "expected workspace ml with its GPU quota of 8 (" + JSON.stringify(ml) + ")");
    await page4.waitForSelector('#workspaces-body tr[data-workspace="console"]', { visible: true });
    const ws = await page4.$eval('#workspaces-body tr[data-workspace="console"]', (r) => [...r.cells].map((c) => c.textContent));
    check(ws[1] === "1" && ws[2] === "1 (100 %)", "expected workspace console's 1 GPU quota in use (" + JSON.stringify(ws) + ")");
    check(ws[3] === "1", "expected workspace console's one pending job held by its quota (" + JSON.stringify(ws) + ")");
    check(/^[01]\.\d{3}$/.test(ws[4]) && /^\d+ (s|min|h)/.test(ws[5]), "expected console's ETTR and time lost from safed (" + JSON.stringify(ws) + ")");
    await page4.screenshot({ path: shots + "/workspaces.png", fullPage: true });
    // Workspace console's ETTR on the failovers page, on the day (UTC) its job ended: its jobs lost
    // nothing. The newest day's row (the job ended moments ago, perhaps just before midnight).
    await page4.click("#nav-failovers");
    const ettrCell = '#ettr-body tr:last-child td[data-workspace="console"]';
    await page4.waitForSelector(ettrCell, { visible: true });
    const [day, ettr] = await page4.$eval(ettrCell, (td) => [td.parentElement.dataset.day, td.textContent]);
    const age = Date.now() - Date.parse(day + "T00:00:00Z");
    check(age >= 0 && age < 2 * 86400e3 && /^(0\.9\d\d|1\.000) \(\d+ jobs?\)$/.test(ettr),
      "expected console's ETTR of today (or of yesterday, past midnight) near 1 for jobs that ran without a fault (" + day + ": " + ettr + ")");
    await page4.screenshot({ path: shots + "/failovers-admin.png", fullPage: true });

    // 11. Sign out: the cookie is gone and the API answers 401.
    await page.click("#sign-out");
    await page.waitForSelector("#sign-in", { visible: true });
    await page.waitForSelector("#workloads", { hidden: true });
    check(!(await user.cookies()).some((c) => c.name === "safe_session"), "expected sign-out to clear the session cookie");
    const after = await page.evaluate(() => fetch("/api/v1/workloads").then((r) => r.status));
    check(after === 401, "expected the API to answer 401 after sign-out (got " + after + ")");

    // 12. The benchmark: the page with 1,000 workloads, from navigation to the rendered table.
    //    The API's answers are stood in for here (the browser's work is what is measured).
    const bench = await browser.createBrowserContext();
    const page3 = await consolePage(bench, "benchmark");
    pages.push(page3);
    const phases = ["Running", "Pending", "Succeeded", "Failed", "Stopped"];
    const items = Array.from({ length: 1000 }, (_, i) => ({
      id: "slurm-" + (100000 + i), name: "train-" + i, target: i % 10 ? "slurm" : "kubernetes", user: "bench",
      workspace: "ml", phase: phases[i % 5], attempt: i % 3, nodes: "n[" + (i % 64) + "-" + ((i % 64) + 3) + "]" }));
    await page3.setRequestInterception(true);
    page3.on("request", (r) => {
      const path = new URL(r.url()).pathname;
      if (path === "/console/session") return r.respond({ status: 200, contentType: "application/json", body: JSON.stringify({ user: "bench", admin: false, csrf: "x" }) });
      if (path === "/api/v1/workloads") return r.respond({ status: 200, contentType: "application/json", body: JSON.stringify({ items, total: 1000, nextOffset: null }) });
      return r.continue();
    });
    const started = Date.now();
    await page3.goto(consoleUrl);
    await page3.waitForFunction(() => document.querySelectorAll("#workloads-body tr").length === 1000, { timeout: 30000 });
    const loadMs = Date.now() - started;
    const [tableMs, renderedAtMs] = await page3.evaluate(() => [document.body.dataset.workloadsRenderMs, document.body.dataset.workloadsRenderedAtMs]);
    console.log(`benchmark: console workloads page with 1000 workloads: rendered ${renderedAtMs} ms after navigation began ` +
      `(the browser's clock; building the table ${tableMs} ms; ${loadMs} ms as the test saw it, its own round trips included)`);

    for (const p of pages) check(p.problems.length === 0, "expected no dialog, page error or outside request: " + p.problems.join("; "));
  } finally {
    await browser.close();
  }
}

main().then(() => console.log("PASS: console in the browser"), (e) => { console.error("FAIL: " + e.message); process.exit(1); });
