#!/usr/bin/env python3
"""Checks SaFE's Grafana dashboards (etc/grafana/dashboards) the way Grafana would use them.

Without --prometheus: the structure Grafana needs and SaFE's own rules: unique uids and panel ids,
panels on the 24-column grid without overlaps, every panel on the provisioned data source, with a
unit, and every query with a legend. With --prometheus URL --start S --end E: every query of every
panel, run through Prometheus's HTTP API over that window (as Grafana does, with
$__rate_interval and $__interval replaced), must return data. Exits 1 with the list of problems.
"""
import argparse
import json
import math
import pathlib
import re
import sys
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]
PANEL_KINDS = {"timeseries", "stat", "bargauge", "table"}


def provisioned_uid():
    text = (ROOT / "etc/grafana/provisioning/datasources/safe.yaml").read_text()
    match = re.search(r"^\s*uid:\s*(\S+)", text, re.M)
    if not match:
        sys.exit("etc/grafana/provisioning/datasources/safe.yaml names no uid")
    return match.group(1)


def dashboards():
    for path in sorted((ROOT / "etc/grafana/dashboards").glob("*.json")):
        yield path, json.loads(path.read_text())


def structure_problems():
    problems, uids = [], set()
    uid = provisioned_uid()
    for path, d in dashboards():
        name = path.name
        for key in ("uid", "title", "panels", "schemaVersion"):
            if not d.get(key):
                problems.append(f"{name}: no {key}")
        if d.get("uid") in uids:
            problems.append(f"{name}: uid {d.get('uid')} used twice")
        uids.add(d.get("uid"))
        ids, cells = set(), {}
        for p in d.get("panels", []):
            where = f"{name}: panel {p.get('id')} '{p.get('title')}'"
            if p.get("id") in ids:
                problems.append(f"{where}: id used twice")
            ids.add(p.get("id"))
            if p.get("type") not in PANEL_KINDS:
                problems.append(f"{where}: type {p.get('type')} is not one of {sorted(PANEL_KINDS)}")
            if not p.get("title") or not p.get("description"):
                problems.append(f"{where}: needs a title and a description")
            g = p.get("gridPos", {})
            if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
                problems.append(f"{where}: gridPos {g} is not on the 24-column grid")
            else:
                mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
                others = sorted({cells[c] for c in mine & cells.keys()})
                if others:
                    problems.append(f"{where}: overlaps panel(s) {others}")
                cells.update({c: p.get("id") for c in mine})
            if p.get("datasource", {}).get("uid") != uid:
                problems.append(f"{where}: data source {p.get('datasource')} is not the provisioned '{uid}'")
            if not p.get("fieldConfig", {}).get("defaults", {}).get("unit"):
                problems.append(f"{where}: no unit")
            targets = p.get("targets") or []
            if not targets:
                problems.append(f"{where}: no query")
            for t in targets:
                if not t.get("expr"):
                    problems.append(f"{where}: query {t.get('refId')} has no expr")
                if not t.get("legendFormat"):
                    problems.append(f"{where}: query {t.get('refId')} has no legend")
                if t.get("datasource", {}).get("uid") != uid:
                    problems.append(f"{where}: query {t.get('refId')} is not on the data source '{uid}'")
    if not uids:
        problems.append("no dashboards in etc/grafana/dashboards")
    return problems


def query_range(url, expr, start, end, step):
    args = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{url}/api/v1/query_range?{args}", timeout=30) as r:
        answer = json.load(r)
    if answer.get("status") != "success":
        raise RuntimeError(answer.get("error", answer))
    return answer["data"]["result"]


def data_problems(url, start, end):
    problems, checked = [], 0
    step = max(1, (end - start) // 200)
    for path, d in dashboards():
        for p in d["panels"]:
            for t in p["targets"]:
                # Grafana's $__rate_interval is at least 4 scrape intervals; the test scrapes every second.
                expr = t["expr"].replace("$__rate_interval", "15s").replace("$__interval", f"{step}s")
                where = f"{path.name}: '{p['title']}' {t['refId']}: {expr}"
                try:
                    series = query_range(url, expr, start, end, step)
                except Exception as e:  # noqa: BLE001 - every failure is reported the same way
                    problems.append(f"{where}: query failed: {e}")
                    continue
                values = [float(v) for s in series for _, v in s["values"]]
                if not any(not math.isnan(v) for v in values):
                    problems.append(f"{where}: no data")
                checked += 1
    return problems, checked


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prometheus", help="Prometheus's URL: run every panel's query there")
    parser.add_argument("--start", type=int, help="window start (unix seconds)")
    parser.add_argument("--end", type=int, help="window end (unix seconds)")
    args = parser.parse_args()
    problems = structure_problems()
    if args.prometheus and not problems:
        more, checked = data_problems(args.prometheus.rstrip("/"), args.start, args.end)
        problems += more
        if not more:
            print(f"check_dashboards: all {checked} panel queries returned data from {args.prometheus}")
    for p in problems:
        print(f"check_dashboards: {p}", file=sys.stderr)
    if not problems and not args.prometheus:
        print("check_dashboards: every dashboard is well formed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
