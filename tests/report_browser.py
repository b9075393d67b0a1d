#!/usr/bin/env python3
"""`dtsim report`'s page in a real browser (headless Chromium, Debian package chromium).

    python3 tests/report_browser.py DTSIM_BINARY

Runs a tiny sweep of 4 runs whose name tries to inject markup (<script>, &, quotes) into a
temporary database, writes its page with `dtsim report`, and checks in Chromium that:
  - the page loads without a single console message: it has no script, so any message is an
    error (a script that ran, a fetch or inline code the page's Content-Security-Policy
    blocked);
  - the DOM holds one <figure id="fig-NAME"> with an <svg> for every figure that
    `dtsim plot` draws from the same database (a second program's answer), and no other
    <svg>; no <script> element came from the run name;
  - laid out in a 1280-pixel window and in a 700-pixel one, the page is no wider than the
    window and every figure fits inside it; at 1280 pixels no table needs its scroll bar;
  - a screenshot is not blank (many colours, the figures' own curve colours among them) and
    not cut (its right edge is page background).
Exits 77 (skipped, for ctest) when chromium or gnuplot is not installed; 1 on a failure.
"""
import base64
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
SCENARIO = """[run]
name = <script>alert(1)</script> & "q" 'x'
steps = 6
eval_every = 2
[model]
arch = logreg
batch = 16
[data]
source = synthetic
train_samples = 512
test_samples = 128
synthetic_dim = 16
synthetic_classes = 4
[cluster]
workers = 2
[sweep]
strategy.kind = allreduce, sync-ps
cluster.bandwidth = 1Gbps, 10Gbps
"""
# The measurements the test adds to a copy of the page (allowed by its hash in the CSP).
MEASURE = """
var w = window.innerWidth, out = {width: w, scroll: document.documentElement.scrollWidth,
  boxes: [], figures: {}};
document.querySelectorAll('.scroll').forEach(function (b) {
  out.boxes.push([b.scrollWidth, b.clientWidth]); });
document.querySelectorAll('figure svg').forEach(function (s) {
  var r = s.getBoundingClientRect();
  out.figures[s.closest('figure').id] = [r.left, r.right, r.height]; });
var pre = document.createElement('pre'); pre.id = 'measured';
pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
"""
# gnuplot's first curve colours (results/figures/gnuplot.c's palette): a drawn figure shows them.
CURVE_COLOURS = {(0x4e, 0x79, 0xa7), (0xf2, 0x8e, 0x2b)}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def chromium(browser, profile, url, extra):
    """Runs headless Chromium on url; returns (stdout, console lines of stderr)."""
    args = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--enable-logging=stderr", "--v=0", "--user-data-dir=" + profile,
            "--no-first-run", "--force-device-scale-factor=1"] + extra + [url]
    p = run(args)
    if p.returncode != 0:
        failures.append("chromium exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    # Chromium logs a page's console as "...:INFO:CONSOLE(LINE)] \"message\", source: ..."
    # (CONSOLE:LINE in newer versions), errors and CSP violations included.
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return p.stdout, console


def png_pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG, decoded here."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, head = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = head
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("PNG of depth %d, colour type %d, interlace %d" % (depth, ctype,
                                                                            interlace))
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, rows, i = bytearray(stride), [], 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    dtsim = os.path.abspath(sys.argv[1])
    browser = os.environ.get("DTSIM_CHROMIUM") or shutil.which("chromium")
    if not browser:
        print("skipped: chromium is not installed (Debian package chromium)")
        return SKIP
    if not shutil.which("gnuplot"):
        print("skipped: gnuplot is not installed (Debian package gnuplot-nox): no figures")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="dtsim-report-browser-")
    try:
        return test(dtsim, browser, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test(dtsim, browser, tmp):
    db, page = os.path.join(tmp, "r.db"), os.path.join(tmp, "page.html")
    with open(os.path.join(tmp, "s.ini"), "w") as f:
        f.write(SCENARIO)
    p = run([dtsim, "run", os.path.join(tmp, "s.ini"), "-j", "2", "--db", db])
    if p.returncode != 0:
        print("dtsim run failed: " + p.stderr)
        return 1
    p = run([dtsim, "report", "--db", db, "--out", page])
    check(p.returncode == 0 and p.stdout == page + "\n",
          "dtsim report: exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr))
    # the figures dtsim plot draws from the same runs: the ones the page must show
    p = run([dtsim, "plot", "--db", db, "--out", os.path.join(tmp, "plots")])
    check(p.returncode == 0, "dtsim plot: " + p.stderr)
    drawn = sorted(os.path.basename(l)[:-4] for l in p.stdout.split() if l.endswith(".png"))
    check(len(drawn) >= 4, "dtsim plot drew only %s" % drawn)
    html = open(page, encoding="utf-8").read()

    # a copy with the measurements, its script allowed by its hash
    digest = base64.b64encode(hashlib.sha256(MEASURE.encode()).digest()).decode()
    csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    check(csp in html, "the page's Content-Security-Policy is not " + csp)
    measured = html.replace(csp, csp + "; script-src 'sha256-%s'" % digest)
    measured = measured.replace("</body>", "<script>%s</script>\n</body>" % MEASURE)
    mpath = os.path.join(tmp, "measured.html")
    with open(mpath, "w", encoding="utf-8") as f:
        f.write(measured)

    profile = os.path.join(tmp, "profile")
    for width in (1280, 700):
        dom, console = chromium(browser, profile, "file://" + mpath,
                                ["--window-size=%d,900" % width, "--dump-dom"])
        check(not console, "console messages at width %d: %s" % (width, console))
        m = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
        check(m is not None, "no measurements in the DOM at width %d" % width)
        if not m:
            continue
        got = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
        check(got["width"] == width, "window %d wide, asked %d" % (got["width"], width))
        check(got["scroll"] <= width, "page %d wide in a %d window" % (got["scroll"], width))
        for sw, cw in got["boxes"] if width == 1280 else []:  # narrower, tables scroll
            check(sw <= cw, "a table %d wide in a box of %d at width %d" % (sw, cw, width))
        check(sorted(got["figures"]) == ["fig-" + d for d in drawn],
              "figures with an <svg> %s, dtsim plot drew %s" % (sorted(got["figures"]), drawn))
        for fig, (left, right, height) in got["figures"].items():
            check(0 <= left < right <= width and height > 100,
                  "%s at x %g..%g, %g high, at width %d" % (fig, left, right, height, width))
        if width == 1280:
            check(dom.count("<svg") == len(drawn), "%d <svg> in the DOM, %d figures drawn"
                  % (dom.count("<svg"), len(drawn)))
            check("<script>alert" not in dom and "&lt;script&gt;alert(1)" in dom,
                  "the run name is not plain text in the DOM")
            for d in drawn:
                check(re.search(r'<figure id="fig-%s">\s*<h3>[^<]+</h3>\s*<svg' % d, dom),
                      "figure %s has no <svg> under its heading" % d)

    # the page itself, as a reader opens it
    shot = os.path.join(tmp, "shot.png")
    _, console = chromium(browser, profile, "file://" + page,
                          ["--window-size=1000,1300", "--screenshot=" + shot])
    check(not console, "console messages: %s" % console)
    w, h, rows = png_pixels(shot)
    check((w, h) == (1000, 1300), "screenshot %dx%d, asked 1000x1300" % (w, h))
    colours = set()
    background = 0
    for row in rows:
        colours.update(row)
        background += row.count((255, 255, 255))
    check(len(colours) >= 50, "a blank screenshot: %d colours" % len(colours))
    check(background < 0.97 * w * h, "a blank screenshot: %.1f%% background"
          % (100.0 * background / (w * h)))
    check(CURVE_COLOURS & colours, "no figure's curve colour in the screenshot")
    edge = {px for row in rows for px in row[-6:]}
    check(edge == {(255, 255, 255)}, "the screenshot's right edge is not background: "
          "something is cut (%d colours there)" % len(edge))
    if os.environ.get("KEEP"):
        shutil.copy(shot, os.environ["KEEP"])
    if failures:
        print("%d failures; page kept as %s" % (len(failures), shutil.copy(page, "/tmp")))
        return 1
    print("ok: %d figures, no console message, fits 1280 and 700 pixels, screenshot of %d "
          "colours" % (len(drawn), len(colours)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
