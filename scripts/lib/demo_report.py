#!/usr/bin/env python3
"""Writes scripts/demo's report: one self-contained HTML page from staging-sim's outputs.

  demo_report.py --out out/report.html --command "..." --summary out/summary.txt \
      --json out/sim.json --plot out/plot.svg --trace out/trace.json \
      [--compare out/compare.json] [--vulkan out/vulkan.txt --vulkan-status N] \
      [--streaming out/streaming --streaming-status N] [--webgpu out/webgpu-demo.png] \
      [--api api/index.html]

The page: what ran (and the command that reproduces it), the simulator's summary, the SVG plot
inline, every stat and cause count from the JSON, the policy table for the workload, the real
Vulkan upload session's output when there was one, the streaming example's last frame and
frame-time plot, the WebGPU page's screenshot, and a link to the API reference. Files named by
--streaming, --webgpu and --api are linked relative to the report. Numbers are shown with their
units (report_format.py). Needs only the Python standard library.
"""
import argparse
import html
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_format as rf  # noqa: E402


def table(rows, header=None, numeric_from=1, text_cols=(), row_class=None):
    """An HTML table; columns from numeric_from on are right-aligned, except text_cols."""
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join("<th>%s</th>" % html.escape(str(h)) for h in header) + "</tr>")
    for n, row in enumerate(rows):
        cells = []
        for i, c in enumerate(row):
            cls = ' class="num"' if i >= numeric_from and i not in text_cols else ""
            cls = ' class="notice"' if header and header[i] == "what to notice" else cls
            cells.append("<td%s>%s</td>" % (cls, html.escape(str(c))))
        tr = ' class="%s"' % row_class(n) if row_class and row_class(n) else ""
        out.append("<tr%s>" % tr + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def with_anchor(part):
    """Gives each <h2>/<h3> an id from its text ("every-policy-on-this-workload"), so sections
    can be linked."""
    def anchor(m):
        slug = re.sub(r"[^a-z0-9]+", "-", re.sub(r"<[^>]+>", "", m.group(2)).lower()).strip("-")
        return '<%s id="%s">%s</%s>' % (m.group(1), slug, m.group(2), m.group(1))
    return re.sub(r"<(h[23])>(.*?)</\1>", anchor, part)


def stat_rows(stats):
    """[(key, formatted value)] of a stats object, nested objects flattened into one cell."""
    return [(k, rf.value(k, v)) for k, v in stats.items()]


def stats_section(report):
    parts = ["<h2>Every stat</h2>",
             "<p>Durations and byte counts in their units (three significant digits); hover a "
             "value for its raw number in the JSON.</p>"]
    parts.append(raw_table(report["stats"]))
    ring = report.get("byte_ring_stats") or report.get("slot_ring_stats") or {}
    if ring:
        parts.append("<h3>The core's own stats (%s)</h3>" %
                     ("ByteRingStats" if "byte_ring_stats" in report else "StagingStats"))
        parts.append(raw_table(ring))
    return "\n".join(parts)


def raw_table(stats):
    """A stat / value table, the raw JSON value in each value's title."""
    out = ["<table>", "<tr><th>stat</th><th>value</th></tr>"]
    for key, shown in stat_rows(stats):
        raw = json.dumps(stats[key])
        cls = "num" if shown[:1].isdigit() else "text"  # (causes: "InFlight 5, ...")
        out.append('<tr><td>%s</td><td class="%s" title="%s">%s</td></tr>' %
                   (html.escape(key), cls, html.escape(raw), html.escape(shown)))
    out.append("</table>")
    return "\n".join(out)


def checks_section(report):
    checks = report["checks"]
    parts = ["<h3>Checks: the safety invariants I1–I6 (docs/safety.md)</h3>",
             "<p>I1–I5 are checked by the core's InvariantChecker (Record mode) on every "
             "reservation against the simulated queue's true completion; I6 is a property of the "
             "ring's answers, read from the run's stats.</p>"]
    rows = []
    for name, meaning, result, ok in rf.invariant_rows(report):
        rows.append('<tr><td>%s</td><td>%s</td><td class="%s">%s</td></tr>' %
                    (name, html.escape(meaning), "ok" if ok else "bad", html.escape(result)))
    parts.append("<table><tr><th>invariant</th><th>what it says</th><th>this run</th></tr>\n" +
                 "\n".join(rows) + "</table>")
    parts.append(table([["byte checks after the GPU read (every reservation's bytes stamped and "
                         "verified)", rf.count(checks["byte_checks"])],
                        ["byte checks corrupted", rf.count(checks["byte_checks_corrupted"])]],
                       ["check", "count"]))
    for v in checks["violations"][:20]:
        parts.append("<p class=bad>%s</p>" % html.escape(v["message"]))
    return "\n".join(parts)


def compare_section(cmp, report, command):
    capacity = cmp["config"]["capacity"]
    rows, classes = [], []
    for r in cmp["rows"]:
        if r["workload"] != report["workload"]:
            continue
        label = "%s/%s" % (r["strategy"], r["policy"])
        this = r["strategy"] == report["strategy"] and r["policy"] == report["policy"]
        causes = r["causes"]["all"]
        rows.append([label + (" (this run)" if this else ""), rf.notice(r, capacity),
                     "%s (%s)" % (rf.duration(r["wait_total_ns"]), rf.duration(r["wait_longest_ns"]))
                     if r["wait_total_ns"] else "0",
                     rf.count(r["would_blocks"]), rf.count(r["timeouts"]),
                     with_bytes(r["fallbacks"], r["fallback_bytes"]),
                     with_bytes(r["direct"], r["direct_bytes"]),
                     rf.size(r["bytes_skipped"]), rf.size(r["peak_held_bytes"]),
                     rf.duration(r["upload_delay_max_ns"]), rf.sig3(r["throughput_mib_s"]),
                     "%s / %s / %s" % (rf.count(causes["InFlight"]),
                                       rf.count(causes["Fragmentation"]), rf.count(causes["Cap"])),
                     rf.count(r["invariant_violations"])])
        classes.append("this" if this else "")
    parts = ["<h2>Every policy on this workload</h2>"]
    if command:
        parts.append("<p>Reproduce: <code>%s</code> (docs/policy.md has the table over all "
                     "workloads). <i>What to notice</i> is drawn from each row's figures; causes "
                     "are counted per event: InFlight (the GPU still holds the bytes) / "
                     "Fragmentation / Cap.</p>" % html.escape(command))
    parts.append(table(rows, ["ring/policy", "what to notice", "wait total (longest)",
                              "would-blocks", "timeouts", "fallbacks (bytes)", "direct (bytes)",
                              "skipped", "peak held", "max delay", "MiB/s",
                              "causes InFlight / Frag. / Cap", "violations"],
                       numeric_from=2, row_class=lambda n: classes[n]))
    return "\n".join(parts)


def with_bytes(n, b):
    """"1,850 (952 MiB)", or "0"."""
    return "%s (%s)" % (rf.count(n), rf.size(b)) if n else "0"


def exit_status(code):
    """A program's exit status, green when 0."""
    if code == 0:
        return "<span class=ok>exit status 0</span>"
    return "<span class=bad>exit status %s</span>" % code


def streaming_section(a, link):
    parts = ["<h2>Streaming while rendering (Vulkan)</h2>"]
    shown = a.streaming and os.path.exists(os.path.join(a.streaming, "summary.txt"))
    if not shown:
        parts.append("<p>Not run: <code>build/bin/staging-example-streaming</code> was not built "
                     "(it needs the Vulkan backend, glslangValidator and zlib).</p>")
        return "\n".join(parts)
    status = exit_status(a.streaming_status)
    parts.append("<p><code>build/bin/staging-example-streaming --check</code>: producer "
                 "threads stream the scene's textures and meshes through a Streamer on the "
                 "transfer queue while it renders; every streamed byte is read back and "
                 "checked. %s</p>" % status)
    parts.append("<p>The two phases are compared like with like: frames are measured in "
                 "alternating blocks — a block streams a new version of every object while the "
                 "scene renders, then the scene renders as many frames again without streaming — "
                 "until each phase has at least 100 frames, so both rows of percentiles are over "
                 "the same number of frames, interleaved in time.</p>")
    summary = os.path.join(a.streaming, "summary.json")
    info = {}
    if os.path.exists(summary):
        try:
            info = json.load(open(summary))
        except ValueError:
            info = {}
    if info.get("cpu_device") or "llvmpipe" in str(info.get("device", "")):
        parts.append("<p class=note>The device here is <b>%s</b>, lavapipe: a CPU rasteriser. "
                     "Its frame times are CPU time on this machine's cores, shared by the "
                     "rendering, the streamer's copies, the producer threads and whatever else "
                     "runs here — they show what streaming costs the host, not what a GPU's "
                     "frame time would do. On a GPU the copies run on the device (a transfer "
                     "queue where there is one).</p>" % html.escape(str(info.get("device", ""))))
    parts.append("<pre class=wrap>%s</pre>" % html.escape(
        open(os.path.join(a.streaming, "summary.txt"), errors="replace").read()))
    svg_path = os.path.join(a.streaming, "frame_times.svg")
    if os.path.exists(svg_path):
        parts.append("<p>Frame times, streaming blocks shaded "
                     "(<a href=\"%s\">CSV</a>):</p>" %
                     link(os.path.join(a.streaming, "frame_times.csv")))
        parts.append("<div class=plot>%s</div>" % open(svg_path).read())
    png = os.path.join(a.streaming, "last_frame.png")
    if os.path.exists(png):
        parts.append("<p>The last frame rendered:</p>")
        parts.append('<p><a href="%s"><img class=shot src="%s" alt="the last frame rendered">'
                     "</a></p>" % (link(png), link(png)))
    return "\n".join(parts)


def capture_section(a, link):
    parts = ["<h2>A real application's uploads: sizing the ring from a capture</h2>"]
    answer = a.capture and os.path.join(a.capture, "answer.txt")
    if not answer or not os.path.exists(answer):
        parts.append("<p>Not run: GFXReconstruct (<code>gfxrecon-convert</code>), "
                     "<code>vkcube</code> or <code>xvfb-run</code> is not installed here.</p>")
        return "\n".join(parts)
    status = exit_status(a.capture_status)
    parts.append("<p><code>vkcube --use_staging --c 30</code> (Debian's vulkan-tools: a program "
                 "not written here) captured on the default device with GFXReconstruct's layer, "
                 "converted with <code>gfxrecon-convert</code> and imported by <code>staging-sim "
                 "--gfxr vkcube.jsonl --gfxr-binary vkcube.gfxr</code> (docs/sim.md, \"Sizing a "
                 "ring for a captured application\"): %s. First what was imported — its copies, "
                 "its writes into mapped memory, its frames and when it learned the GPU was done "
                 "—, then per policy the smallest ring that never waits or refuses, what a "
                 "256 KiB ring (<code>--ring-bytes</code>, a little under what vkcube needs) does, "
                 "and the smallest clean ring against the application's own staging memory.</p>"
                 % status)
    parts.append("<pre>%s</pre>" % html.escape(open(answer, errors="replace").read()))
    svg_path = os.path.join(a.capture, "plot.svg")
    if os.path.exists(svg_path):
        svg = open(svg_path).read()
        parts.append("<p>The imported uploads through the 256 KiB byte ring under the default "
                     "policy (<a href=\"%s\">JSON</a>):</p>" %
                     link(os.path.join(a.capture, "answer.json")))
        parts.append('<div class="plot">%s</div>' % svg[svg.find("<svg"):])
    return "\n".join(parts)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--summary", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--plot", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--compare")
    p.add_argument("--compare-command")
    p.add_argument("--vulkan")
    p.add_argument("--vulkan-status", type=int)
    p.add_argument("--streaming")
    p.add_argument("--streaming-status", type=int)
    p.add_argument("--capture")
    p.add_argument("--capture-status", type=int)
    p.add_argument("--webgpu")
    p.add_argument("--api")
    a = p.parse_args()
    here = os.path.dirname(os.path.abspath(a.out))

    def link(path):  # a file next to the report, as a relative URL
        return html.escape(os.path.relpath(os.path.abspath(path), here))

    report = json.load(open(a.json))
    summary = open(a.summary).read()
    svg = open(a.plot).read()
    stats = report["stats"]
    violations = report["invariant_violations"]
    verdict = ("<span class=ok>0 invariant violations</span>" if violations == 0 else
               "<span class=bad>%d INVARIANT VIOLATIONS</span>" % violations)

    parts = []
    parts.append("<h1>staging — demo report</h1>")
    parts.append("<p>Workload <b>%s</b>, %s ring, policy <b>%s</b>, capacity %s, cap %s, "
                 "seed %d — %s.</p>" %
                 (html.escape(report["workload"]), html.escape(report["strategy"]),
                  html.escape(report["policy"]), rf.size(report["capacity"]),
                  rf.size(report["cap"]), report["config"]["seed"], verdict))
    if a.api:
        parts.append("<p>API reference: <a href=\"%s\">every public type and function, with its "
                     "contract</a> (generated by Doxygen from <code>include/staging</code>).</p>" %
                     link(a.api))
    parts.append("<p>Reproduce: <code>%s</code><br>Timeline: open <code>%s</code> in "
                 "<a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a> (or chrome://tracing): "
                 "every reservation is a span from reserve to retire with its offset and size; "
                 "waits, wraps, splits, grows and fallbacks are events with their cause.</p>" %
                 (html.escape(a.command), html.escape(os.path.basename(a.trace))))
    parts.append("<h2>Staging memory over time</h2>")
    parts.append('<div class="plot">%s</div>' % svg[svg.find("<svg"):])

    parts.append("<h2>Summary</h2><pre>%s</pre>" % html.escape(summary))

    parts.append("<h2>Causes</h2>")
    causes = report["causes"]
    rows = [[k.replace("_", "-")] + [rf.count(v[c]) for c in
                                      ("InFlight", "Fragmentation", "Cap", "total")]
            for k, v in causes.items()]
    parts.append(table(rows, ["event", "InFlight (GPU holds the bytes)", "Fragmentation", "Cap",
                              "total"]))

    parts.append(stats_section(report))
    parts.append(checks_section(report))
    if a.compare:
        parts.append(compare_section(json.load(open(a.compare))["compare"], report,
                                     a.compare_command))

    parts.append("<h2>Real upload session (Vulkan)</h2>")
    if a.vulkan:
        status = exit_status(a.vulkan_status)
        parts.append("<p><code>build/bin/staging-example-vulkan</code> on the default Vulkan "
                     "device (lavapipe when there is no GPU): %s</p>" % status)
        parts.append("<pre class=wrap>%s</pre>" %
                     html.escape(open(a.vulkan, errors="replace").read()))
    else:
        parts.append("<p>Not run: <code>build/bin/staging-example-vulkan</code> was not built "
                     "(the Vulkan backend's example is not in this tree).</p>")

    parts.append(streaming_section(a, link))
    parts.append(capture_section(a, link))

    parts.append("<h2>The slot ring in a browser (WebGPU)</h2>")
    if a.webgpu and os.path.exists(a.webgpu):
        parts.append("<p>The demo page (<code>scripts/webgpu-demo --serve</code> serves it) after "
                     "its frames in headless Chromium: the texture streamed through the ring, the "
                     "slots' states over time, the stats and the scripted events. "
                     "<a href=\"%s\">Full size</a>.</p>" % link(a.webgpu))
        parts.append('<p><a href="%s"><img class=shot src="%s" alt="the WebGPU demo page"></a>'
                     "</p>" % (link(a.webgpu), link(a.webgpu)))
    else:
        parts.append("<p>Not run: Emscripten or Chromium is not installed here.</p>")

    parts = [with_anchor(p) for p in parts]
    page = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>staging demo report</title>
<style>
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #222;
       max-width: 1300px; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; }
pre.wrap { white-space: pre-wrap; overflow-wrap: anywhere; overflow-x: visible; }
img.shot { max-width: 100%%; border: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.notice { min-width: 280px; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #c1121f; font-weight: bold; }
td.ok, td.bad { font-weight: normal; }
tr.this td { background: #fff8e1; }
p.note { background: #eef4ff; border-left: 4px solid #5b8def; padding: 6px 10px; }
.plot svg { max-width: 100%%; height: auto; border: 1px solid #d0d7de; }
code { background: #f6f8fa; padding: 1px 4px; }
</style></head><body>
%s
</body></html>
""" % "\n".join(parts)
    with open(a.out, "w") as f:
        f.write(page)


if __name__ == "__main__":
    main()
