#!/usr/bin/env python3
"""Opens a run report (runs/<name>/report.html) in headless Chromium and checks the page the
browser built: one marker per epoch on each curve, the confusion matrix K x K with its class
names, the plan section (or the note that there is none), the state and the reload, the page's
script ran (data-script="ok") and the console stayed silent, and nothing points at the network.

    report_check.py REPORT.html --epochs N --classes K --plan yes|no --state running|finished|...
                    [--expect-failure WORD]

--expect-failure: the page is spoiled on purpose; exit 0 only when a check fails with WORD in its
message (the negative control that shows the check can fail). Exit 77 when Chromium is missing.
"""
import argparse
import html
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

CURVES = {"loss": 2, "accuracy": 2, "lr": 1, "throughput": 1, "data-wait": 1, "epoch-time": 1}


class Dom(html.parser.HTMLParser):
    """The elements of the dumped DOM, each as (tag, attrs, parents' tags and ids)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []  # (tag, attrs dict, stack copy)
        self.stack = []
        self.text = {}  # id(element) -> text
        self.style_text = ""
        self._in_style = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        element = (tag, a, list(self.stack))
        self.elements.append(element)
        if tag not in ("meta", "br", "img", "input", "link", "col"):
            self.stack.append((tag, a, [""]))
        self._in_style = tag == "style"

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs), list(self.stack)))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break
        self._in_style = False

    def handle_data(self, data):
        for _, _, buf in self.stack:
            buf[0] += data
        if self._in_style:
            self.style_text += data


def inside(element, tag=None, **attrs):
    """The nearest open parent of `element` with `tag` and `attrs`, or None."""
    for ptag, pattrs, buf in reversed(element[2]):
        if (tag is None or ptag == tag) and all(pattrs.get(k) == v for k, v in attrs.items()):
            return ptag, pattrs, buf
    return None


def run_chromium(path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("report_check.py: chromium is not installed (env/versions.env NATIVE_TEST_PACKAGES)")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as profile:
        argv = [chromium, "--headless", "--disable-gpu", "--user-data-dir=" + profile,
                # Any name lookup fails: a page that reaches for the network cannot get it.
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--enable-logging=stderr", "--v=0", "--dump-dom", "file://" + os.path.abspath(path)]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")  # Chromium refuses root without it
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit("report_check.py: chromium failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    return p.stdout, p.stderr


def check(dom_text, log, args):
    failures = []
    fail = failures.append
    dom = Dom()
    dom.feed(dom_text)
    els = dom.elements

    # The page's own script ran to its end, and nothing was logged to the console (the report
    # logs nothing; Chromium logs every console message and uncaught error as CONSOLE).
    html_el = next((e for e in els if e[0] == "html"), None)
    if html_el is None or html_el[1].get("data-script") != "ok":
        fail("the page's script did not run to its end (no data-script=\"ok\" on <html>)")
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    if console:
        fail("console messages: " + " | ".join(console))
    scripts = [e for e in els if e[0] == "script"]
    if len(scripts) != 1:
        fail("expected the report's one <script>, found %d (unescaped text?)" % len(scripts))

    # Nothing from the network: no http(s) or protocol-relative URL in any src/href, no
    # external stylesheet or url() in the CSS.
    for tag, attrs, _ in els:
        for name in ("src", "href", "xlink:href", "action", "poster", "data", "srcset"):
            v = (attrs.get(name) or "").strip().lower()
            if v.startswith(("http:", "https:", "//", "ftp:", "ws:", "wss:")):
                fail("network: <%s %s=\"%s\">" % (tag, name, attrs.get(name)))
        if tag == "link":
            fail("network: a <link> element (%s)" % attrs)
    if re.search(r"url\(|@import", dom.style_text):
        fail("network: the CSS loads a resource (url() or @import)")

    # State and reload.
    body = next((e for e in els if e[0] == "body"), None)
    state = body[1].get("data-state") if body else None
    if state != args.state:
        fail("state: body data-state=%r, expected %r" % (state, args.state))
    refresh = [e for e in els if e[0] == "meta" and e[1].get("http-equiv", "").lower() == "refresh"]
    if (args.state == "running") != (len(refresh) == 1):
        fail("reload: %d refresh <meta> for a %s run" % (len(refresh), args.state))

    # One marker per epoch on every curve, at x = 1..N.
    for chart, series_count in CURVES.items():
        pts = [e for e in els if e[0] == "circle" and "pt" in e[1].get("class", "").split()
               and inside(e, "figure", **{"data-chart": chart})]
        by_series = {}
        for e in pts:
            by_series.setdefault(e[1].get("data-series"), []).append(e[1].get("data-x"))
        if args.epochs == 0:
            if pts:
                fail("chart %s: %d markers before any epoch" % (chart, len(pts)))
            continue
        if len(by_series) != series_count:
            fail("chart %s: %d series, expected %d" % (chart, len(by_series), series_count))
        want = [str(i) for i in range(1, args.epochs + 1)]
        for name, xs in by_series.items():
            if xs != want:
                fail("chart %s, series %s: markers at epochs %s, expected %s" % (chart, name, xs, want))
        ticks = [e for e in els if e[0] == "text" and "tick" in e[1].get("class", "").split()
                 and inside(e, "figure", **{"data-chart": chart})]
        if len(ticks) < 4:
            fail("chart %s: %d tick labels" % (chart, len(ticks)))

    # Where the time went: a band a phase that took time (at least data, compute and validation
    # in any run), stacked, with a marker a phase at every epoch.
    bands = [e for e in els if e[0] == "polygon" and "band" in e[1].get("class", "").split()
             and inside(e, "figure", **{"data-chart": "time-breakdown"})]
    pts = [e for e in els if e[0] == "circle" and "pt" in e[1].get("class", "").split()
           and inside(e, "figure", **{"data-chart": "time-breakdown"})]
    phases = {e[1].get("data-series") for e in pts}
    if args.epochs > 0:
        if len(bands) < 3 or len(bands) != len(phases):
            fail("time breakdown: %d bands for %d phases %s, expected one a phase, at least 3"
                 % (len(bands), len(phases), sorted(phases)))
        if not {"data", "compute", "eval"} <= phases:
            fail("time breakdown: phases %s lack data, compute or eval" % sorted(phases))
        if len(pts) != len(phases) * args.epochs:
            fail("time breakdown: %d markers, expected %d phases x %d epochs"
                 % (len(pts), len(phases), args.epochs))
    elif bands:
        fail("time breakdown: %d bands before any epoch" % len(bands))

    # The confusion matrix: K x K counts, the class names on both axes.
    table = [e for e in els if e[0] == "table" and e[1].get("id") == "confusion"]
    if args.classes == 0:
        if table or not any(e[1].get("id") == "no-confusion" for e in els):
            fail("confusion: expected the note that there is no validation yet")
    elif len(table) != 1:
        fail("confusion: no table id=confusion")
    else:
        rows = [e for e in els if e[0] == "tr" and inside(e, "tbody") and inside(e, "table", id="confusion")]
        cols = [e for e in els if e[0] == "th" and e[1].get("scope") == "col" and inside(e, "table", id="confusion")]
        heads = [e for e in els if e[0] == "th" and e[1].get("scope") == "row" and inside(e, "table", id="confusion")]
        cells = [e for e in els if e[0] == "td" and "recall" not in e[1].get("class", "")
                 and inside(e, "table", id="confusion")]
        if len(rows) != args.classes or len(heads) != args.classes:
            fail("confusion: %d rows, expected %d" % (len(rows), args.classes))
        if len(cols) != args.classes + 1:  # the classes and the recall column
            fail("confusion: %d column heads, expected %d + recall" % (len(cols), args.classes))
        if len(cells) != args.classes * args.classes:
            fail("confusion: %d cells, expected %d" % (len(cells), args.classes ** 2))
        if args.class_names:
            want = args.class_names.split(",")
            got = re.findall(r'<th scope="row">(.*?)</th>', dom_text)
            got = [html.unescape(g) for g in got]
            if got != want:
                fail("confusion: row names %s, expected %s" % (got, want))

    # The plan: dl-launch's machine and plan tables, or the note that dl-train ran alone.
    has_machine = any(e[0] == "table" and e[1].get("id") == "machine" for e in els)
    plan_rows = [e for e in els if e[0] == "tr" and inside(e, "table", id="plan-table")]
    if args.plan == "yes" and (not has_machine or len(plan_rows) < 3):
        fail("plan: expected the machine table and the plan's rows, found %d rows" % len(plan_rows))
    if args.plan == "no" and not any(e[1].get("id") == "no-plan" for e in els):
        fail("plan: expected the note that there is no plan.json")

    # The best checkpoint, once an epoch is done.
    if args.epochs > 0 and not any(e[0] == "table" and e[1].get("id") == "best" for e in els):
        fail("best checkpoint: no table id=best")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--class-names", default="")
    ap.add_argument("--plan", choices=["yes", "no"], required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--expect-failure", default="")
    args = ap.parse_args()
    dom_text, log = run_chromium(args.report)
    failures = check(dom_text, log, args)
    if args.expect_failure:
        hit = [f for f in failures if args.expect_failure in f]
        if hit:
            print("report_check.py: the spoiled page failed as it should: " + hit[0])
            return 0
        print("report_check.py: the spoiled page was not caught (%s); failures: %s"
              % (args.expect_failure, failures or "none"))
        return 1
    for f in failures:
        print("report_check.py: FAIL " + f)
    if failures:
        return 1
    print("report_check.py: %s ok: %d epoch(s) on 6 charts (8 series), %dx%d confusion, plan %s, state %s, "
          "script ran, console silent, no network URL" % (args.report, args.epochs, args.classes,
                                                          args.classes, args.plan, args.state))
    return 0


if __name__ == "__main__":
    sys.exit(main())
