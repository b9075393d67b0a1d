#!/usr/bin/env python3
"""`dtsim serve`'s live page in a real browser (headless Chromium, Debian package chromium).

    python3 tests/serve_browser.py DTSIM_BINARY [SCREENSHOT.png]

In a temporary folder: one stored run, then a second one started with --publish and a pace
(it runs for about ten seconds of wall time, faults.live_links = yes), and `dtsim serve` on
a free port of 127.0.0.1. Checks that:
  - a link change asked over HTTP (POST /api/link, as the page's button sends it) reaches
    the run: a link-degrade row of its faults table, and the published links' bandwidth;
    without the page's X-Dtsim header the server refuses it (403);
  - Chromium loads the page with no console message and no error in the page's own
    collector (#errors); the page's figures agree with what they come from: the live
    panel's hosts and node names with the published state, the runs table's evals counts
    and last accuracies with the database, the links to change with the published ones;
    the stored run replayed (?replay=1) with its lesson's text beside it, each host's shares
    against its timeline rows;
  - the screenshot (SCREENSHOT.png, default serve_browser.png in the current folder) is a
    PNG of the window's size;
  - once the run is over, a rerun of the same scenario with the faults row's link_degrade
    item gives the same evals, timeline and workers rows.
Exits 77 (skipped, for ctest) when chromium is not installed or dtsim serve was built
without libmicrohttpd; 1 on a failure.
"""
import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
SCENARIO = """[run]
name = serve-browser
steps = {steps}
eval_every = 5
seed = 3
[model]
arch = mlp
hidden = 32
batch = 16
lr = 0.1
[data]
source = synthetic
train_samples = 512
test_samples = 128
synthetic_dim = 16
synthetic_classes = 4
[cluster]
platform = star
workers = 3
bandwidth = 1Gbps
latency = 5us
[strategy]
kind = sync-ps
servers = 1
[faults]
live_links = yes
live_hosts = yes
"""
# a language model's run: the page draws its loss on a chart of its own
GPT = """[run]
name = serve-browser-gpt
steps = 20
eval_every = 5
seed = 1
[model]
arch = gpt
layers = 1
hidden = 16
heads = 2
seq = 16
lr = 0.2
[data]
source = text
text = fortunes
test_samples = 64
[cluster]
platform = star
workers = 2
latency = 5us
[strategy]
kind = allreduce
"""
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def http(port, path, method="GET", headers=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def rows(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def main():
    if len(sys.argv) < 2:
        print("usage: serve_browser.py DTSIM_BINARY [SCREENSHOT.png]", file=sys.stderr)
        return 2
    dtsim = os.path.abspath(sys.argv[1])
    shot = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "serve_browser.png")
    browser = shutil.which("chromium")
    if not browser:
        print("skipped: chromium is not installed (Debian package chromium)")
        return SKIP
    probe = subprocess.run([dtsim, "serve", "--db", "/nonexistent/x.db"], capture_output=True,
                           text=True)
    if "not built" in probe.stderr:
        print("skipped: dtsim serve was built without libmicrohttpd")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="dtsim-serve-browser-")
    db = os.path.join(tmp, "runs.db")
    procs = []
    try:
        ini = os.path.join(tmp, "s.ini")
        with open(ini, "w") as f:
            f.write(SCENARIO.format(steps=40))
        # a sweep member's long name, as a lesson's runs have
        subprocess.run([dtsim, "run", ini, "--db", db, "--set",
                        "run.name=lesson-bandwidth/kind=allreduce,bandwidth=100Mbps,"
                        "latency=5us,algorithm=ring,stored"], check=True, capture_output=True)
        with open(ini, "w") as f:
            f.write(SCENARIO.format(steps=200))
        # paced: about 10 s of wall time whatever the machine
        log = open(os.path.join(tmp, "run.log"), "w+")
        live = subprocess.Popen([dtsim, "run", ini, "--db", db, "--publish", "--pace", "0.06"],
                                stdout=log, stderr=log)
        procs.append(live)
        server = subprocess.Popen([dtsim, "serve", "--db", db, "--port", "0"],
                                  stdout=subprocess.PIPE, text=True)
        procs.append(server)
        m = re.match(r"dtsim serve: http://127\.0\.0\.1:(\d+)/", server.stdout.readline())
        if not check(m, "dtsim serve printed no address"):
            return 1
        port = int(m.group(1))
        state_path = db + ".live-2.json"
        for _ in range(100):
            if os.path.exists(state_path):
                break
            time.sleep(0.05)
        check(os.path.exists(state_path), "no published state " + state_path)

        status, _ = http(port, "/api/link?run=2&link=star_link_3&bw=100Mbps", "POST")
        check(status == 403, "a POST without X-Dtsim answered %d, not 403" % status)
        status, body = http(port, "/api/link?run=2&link=star_link_3&bw=fast", "POST",
                            {"X-Dtsim": "1"})
        check(status == 400, "bw=fast answered %d, not 400" % status)
        status, body = http(port, "/api/link?run=2&link=star_link_3&bw=100Mbps", "POST",
                            {"X-Dtsim": "1"})
        check(status == 202, "the link change answered %d: %s" % (status, body))
        changed = None
        for _ in range(60):
            status, body = http(port, "/api/live?run=2")
            if status == 200:
                s = json.loads(body)
                bws = {l["name"]: l["bandwidth"] for l in s["links"]}
                if "star_link_3" in s["note"] and bws.get("star_link_3_UP") == 12.5e6:
                    changed = s
                    break
            time.sleep(0.1)
        check(changed, "the published state never showed star_link_3 at 100Mbps")
        fault = rows(db, "SELECT sim_time, detail FROM faults WHERE run = 2"
                         " AND kind = 'link-degrade'")
        check(len(fault) == 1, "faults rows of the change: %r" % (fault,))
        # a crash asked as the page's button asks it (POST /api/change): a host-crash row
        # naming the item that replays it; a straggler's factor checked before it is asked
        status, body = http(port, "/api/change?run=2&do=straggler&target=worker-2&value=4",
                            "POST", {"X-Dtsim": "1"})
        check(status == 400, "straggler value=4 answered %d, not 400" % status)
        status, body = http(port, "/api/change?run=2&do=crash&target=worker-1&for=5ms", "POST",
                            {"X-Dtsim": "1"})
        check(status == 202, "the crash answered %d: %s" % (status, body))
        crash = []
        for _ in range(60):
            crash = rows(db, "SELECT detail FROM faults WHERE run = 2 AND kind = 'host-crash'")
            if crash:
                break
            time.sleep(0.1)
        check(len(crash) == 1 and "replay: crash = worker-1 at " in crash[0][0],
              "faults rows of the crash: %r" % (crash,))

        # the page, with the run still under way
        state = json.loads(http(port, "/api/live?run=2")[1])
        common = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                  "--enable-logging=stderr", "--v=0", "--no-first-run",
                  "--user-data-dir=" + os.path.join(tmp, "profile"),
                  "--virtual-time-budget=4000", "--window-size=1920,1080"]
        url = "http://127.0.0.1:%d/" % port
        dom = subprocess.run([browser] + common + ["--dump-dom", url], capture_output=True,
                             text=True, timeout=60)
        console = [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
        check(not console, "console messages: %s" % console[:5])
        html = dom.stdout
        errs = re.search(r'<pre id="errors">(.*?)</pre>', html, re.S)
        check(errs and errs.group(1).strip() == "", "page errors: %s" %
              (errs.group(1)[:500] if errs else "no #errors element"))
        hosts = re.search(r'<tbody id="hosts">(.*?)</tbody>', html, re.S)
        if check(hosts, "no live hosts table"):
            cells = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td class=\"(\w+)\">", hosts.group(1))
            want = [(n["host"], n["name"]) for n in state["nodes"]]
            check([(h, n) for h, n, _ in cells] == want,
                  "live hosts %r, published %r" % (cells, want))
            check(all(c in ("compute", "comm", "idle", "down", "done") for _, _, c in cells),
                  "host states %r" % (cells,))
        sel = re.search(r'<select id="linkname">(.*?)</select>', html, re.S)
        names = re.findall(r'<option value="([^"]*)">', sel.group(1)) if sel else []
        check(names == state["link_names"] and "star_link_3_UP" in names,
              "links to change on the page %r, published %r" % (names, state["link_names"]))
        # the host controls, with the nodes the run published; no line about controls off
        sel = re.search(r'<select id="nodename">(.*?)</select>', html, re.S)
        nodes = re.findall(r'<option value="([^"]*)">', sel.group(1)) if sel else []
        check(nodes == state["node_names"] and "worker-1" in nodes,
              "nodes to crash on the page %r, published %r" % (nodes, state["node_names"]))
        check(re.search(r'<p id="hostchange" style="display: block;">', html),
              "the crash and straggler controls are hidden")
        check(re.search(r'<p id="controlsoff" class="off"></p>', html),
              "a line about controls off for a run that takes them all")
        check(re.search(r'id="head">serve-browser \(sync-ps, run 2\)', html),
              "the live panel names no run 2")
        # the chart shows the live run's own runs (no sweep: itself), so it spans at least
        # half the time axis (x from 110 to 1170), not a sliver beside a longer stored run
        line = re.search(r'<polyline points="([^"]*)"[^>]*data-run="2"', html)
        if check(line, "no curve of the live run"):
            xs = [float(p.split(",")[0]) for p in line.group(1).split()]
            check(max(xs) - 110 >= 0.5 * (1170 - 110),
                  "the live run's curve ends at x = %.0f of 110..1170" % max(xs))
        check(not re.search(r'data-run="1"', html),
              "the stored run (another sweep) drawn beside the live one")
        runs_body = re.search(r'<tbody id="runs">(.*?)</tbody>', html, re.S)
        if check(runs_body, "no runs table"):
            trs = re.findall(r"<tr[^>]*>(.*?)</tr>", runs_body.group(1))
            for tr in trs:
                td = re.findall(r"<td>(.*?)</td>", tr)
                if td[1] != "1":
                    continue
                n, acc = rows(db, "SELECT count(*), (SELECT test_acc FROM evals WHERE run = 1"
                                  " ORDER BY sim_time DESC, step DESC LIMIT 1)"
                                  " FROM evals WHERE run = 1")[0]
                check(td[5] == str(n) and td[6] == "%.4f" % acc,
                      "run 1 on the page: %s evals, accuracy %s; database %d, %.4f" %
                      (td[5], td[6], n, acc))
            check(len(trs) == 2, "%d runs on the page, 2 in the database" % len(trs))
        check('id="lesson" style="display: none;"' in html or
              re.search(r'<div id="lesson">\s*</div>', html), "a lesson shown for no lesson")

        # the stored run replayed (?replay=1&pace=1: over one second, over before the
        # virtual time runs out): its lesson's text beside it, and each host's shares over
        # the timeline rows as the database has them
        dom = subprocess.run([browser] + common + ["--dump-dom",
                                                   url + "?replay=1&pace=1&layout=check"],
                             capture_output=True, text=True, timeout=60)
        console = [l for l in dom.stderr.splitlines() if ":CONSOLE" in l]
        check(not console, "console messages (replay): %s" % console[:5])
        html = dom.stdout
        # nothing overlaps the lesson column or runs off the page (the page's own check,
        # ?layout=check: element boxes against the lesson's), at 1920 x 1080 and 1280 x 800
        errs = re.search(r'<pre id="errors">(.*?)</pre>', html, re.S)
        check(errs and errs.group(1).strip() == "", "layout at 1920x1080: %s" %
              (errs.group(1)[:500] if errs else "no #errors element"))
        small = [a if not a.startswith("--window-size") else "--window-size=1280,800"
                 for a in common]
        dom_small = subprocess.run([browser] + small + ["--dump-dom",
                                                        url + "?replay=1&pace=1&layout=check"],
                                   capture_output=True, text=True, timeout=60)
        errs = re.search(r'<pre id="errors">(.*?)</pre>', dom_small.stdout, re.S)
        check(errs and errs.group(1).strip() == "", "layout at 1280x800: %s" %
              (errs.group(1)[:500] if errs else "no #errors element"))
        check("<h1>Communication overhead against bandwidth</h1>" in html,
              "no lesson text beside run 1")
        # its Markdown rendered, none left raw: list items, code, no ** or ](# or "- " lines
        box = re.search(r'<div id="lesson"[^>]*>(.*?)</div>', html, re.S)
        if check(box, "no lesson box"):
            text = re.sub(r"<[^>]+>", "", box.group(1))
            check("<li>" in box.group(1) and "<code>" in box.group(1),
                  "the lesson's list items or code not rendered")
            raw = [m for m in ("**", "](#", "\n- ", "`") if m in text]
            check(not raw, "raw Markdown in the lesson: %s" % raw)
        # the pace list says the bookmark's pace (1 s, an option of its own), not 30 s
        sel = re.search(r'<select id="pace">(.*?)</select>', html, re.S)
        check(sel and re.findall(r'<option value="(\d+)" selected="">', sel.group(1)) == ["1"],
              "the pace list for ?pace=1: %s" % (sel.group(1) if sel else None))
        box = re.search(r'<div id="replayhosts">(.*?)</table>', html, re.S)
        if check(box, "no replayed hosts"):
            got = re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td><td class=\"\w+\">\w+</td>"
                             r"<td></td><td>.*?<span> (\d+)% / (\d+)% / (\d+)%</span>",
                             box.group(1))
            want = {}
            for host, role, rank, st, a, b in rows(db, "SELECT host, role, rank, state, start,"
                                                       " end FROM timeline WHERE run = 1"):
                k = (host, "%s-%d" % (role, rank))
                want.setdefault(k, {"compute": 0, "comm": 0, "idle": 0})[st] += b - a
            check(len(got) == len(want) > 0, "replayed hosts %d, timeline hosts %d" %
                  (len(got), len(want)))
            for host, name, c, m, i in got:
                w = want.get((host, name))
                tot = sum(w.values()) if w else 0
                ok = w and all(abs(int(x) - 100 * w[k] / tot) <= 0.51
                               for x, k in ((c, "compute"), (m, "comm"), (i, "idle")))
                check(ok, "replayed %s %s: %s/%s/%s%%, timeline %r" % (host, name, c, m, i, w))
        shot_run = subprocess.run([browser] + common + ["--screenshot=" + shot, url],
                                  capture_output=True, text=True, timeout=60)
        console = [l for l in shot_run.stderr.splitlines() if ":CONSOLE" in l]
        check(not console, "console messages (screenshot): %s" % console[:5])
        if check(os.path.exists(shot), "no screenshot"):
            head = open(shot, "rb").read(24)
            check(head[:8] == b"\x89PNG\r\n\x1a\n" and
                  struct.unpack(">II", head[16:24]) == (1920, 1080),
                  "the screenshot is not a 1920x1080 PNG")
            print("screenshot: " + shot)

        # a projector (?projector=1, as dtsim serve --projector serves it): nothing overlaps,
        # each chart at least half the window high with type of 28 px, at both sizes
        for size in ("1920,1080", "1280,800"):
            proj = [a if not a.startswith("--window-size") else "--window-size=" + size
                    for a in common]
            dom = subprocess.run([browser] + proj + ["--dump-dom", url +
                                                     "?replay=1&pace=1&layout=check&projector=1"],
                                 capture_output=True, text=True, timeout=60)
            errs = re.search(r'<pre id="errors">(.*?)</pre>', dom.stdout, re.S)
            check('<body class="projector">' in dom.stdout, "?projector=1 left the body plain")
            check(errs and errs.group(1).strip() == "", "projector layout at %s: %s" %
                  (size, errs.group(1)[:500] if errs else "no #errors element"))
        if len(sys.argv) > 3:
            subprocess.run([browser] + common + ["--screenshot=" + sys.argv[3],
                                                 url + "?projector=1"],
                           capture_output=True, text=True, timeout=60)

        # reproducible: the rerun with the recorded items gives the same rows
        live.wait(timeout=120)
        log.seek(0)
        check(live.returncode == 0, "the published run exited %d: %s" %
              (live.returncode, log.read()[-500:]))
        check(not os.path.exists(state_path), "the state file outlived the run")
        item = re.search(r"replay: link_degrade = (.*)$", fault[0][1]).group(1) if fault else ""
        crashed = re.search(r"replay: crash = (.*)$", crash[0][0]).group(1) if crash else ""
        subprocess.run([dtsim, "run", ini, "--db", db, "--set", "faults.link_degrade=" + item,
                        "--set", "faults.crash=" + crashed], check=True, capture_output=True)
        # the evaluations the same; each host's seconds in each state and the workers' rows
        # to within 2 us (the crash's actor, made inside a step, can move the start of one
        # interval by its 1 us delay)
        for table, cols in (("evals", "step, sim_time, test_acc, test_loss"),
                            ("timeline", "host, role, rank, state, sum(end - start)"),
                            ("workers", "worker, role, steps, compute_s, comm_s, idle_s")):
            group = " GROUP BY 1, 2, 3, 4" if table == "timeline" else ""
            a = rows(db, "SELECT %s FROM %s WHERE run = 2%s ORDER BY 1, 2, 3, 4" %
                     (cols, table, group))
            b = rows(db, "SELECT %s FROM %s WHERE run = 3%s ORDER BY 1, 2, 3, 4" %
                     (cols, table, group))
            tol = 0 if table == "evals" else 2e-6
            same = len(a) == len(b) > 0 and all(
                len(x) == len(y) and all(u == v or (isinstance(u, float) and abs(u - v) <= tol)
                                         for u, v in zip(x, y)) for x, y in zip(a, b))
            check(same, "%s: the rerun with %r and %r differs (%d and %d rows)" %
                  (table, item, crashed, len(a), len(b)))

        # a language model's run: its loss on a chart of its own, a loss column
        with open(ini, "w") as f:
            f.write(GPT)
        subprocess.run([dtsim, "run", ini, "--db", db], check=True, capture_output=True)
        dom = subprocess.run([browser] + common + ["--dump-dom", url + "?replay=4&pace=1"],
                             capture_output=True, text=True, timeout=60)
        check('<div id="lossscreen" class="screen" style="display: block;">' in dom.stdout,
              "no loss chart for the gpt's run")
        check(re.search(r'<svg id="losschart"[^>]*>.*<polyline points="[^"]+"[^>]*data-run="4"',
                        dom.stdout, re.S), "the loss chart draws no curve of run 4")
        loss = rows(db, "SELECT test_loss FROM evals WHERE run = 4 ORDER BY sim_time DESC,"
                        " step DESC LIMIT 1")
        check(loss and ("<td>%.4f</td></tr>" % loss[0][0]) in dom.stdout,
              "the runs table lacks run 4's last loss %r" % (loss,))

        # a whole sweep named as a lesson's (runs 5 and 6): the lesson's numbers checked
        # against it as dtsim report checks them, those it contradicts marked in the text
        with open(ini, "w") as f:
            f.write(SCENARIO.format(steps=20).replace("name = serve-browser",
                                                      "name = lesson-bandwidth") +
                    "[sweep]\nmodel.momentum = 0, 0.5\n")
        subprocess.run([dtsim, "run", ini, "--db", db], check=True, capture_output=True)
        status, body = http(port, "/api/lesson?run=5")
        j = json.loads(body) if status == 200 else {}
        check(j.get("contradicted", 0) > 0 and '<span class="drift">' in j.get("html", ""),
              "the lesson beside a sweep it does not describe marks nothing: %r" %
              {k: j.get(k) for k in ("lesson", "contradicted")})
        status, body = http(port, "/api/lesson?run=1")
        j = json.loads(body) if status == 200 else {}
        check(j.get("contradicted") == 0 and "drift" not in j.get("html", "drift"),
              "a lesson beside a run alone is not checked: %r" % j.get("contradicted"))
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
