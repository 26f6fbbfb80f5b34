#!/usr/bin/env python3
"""Writes scripts/demo's report: one self-contained HTML page from staging-sim's outputs.

  demo_report.py --out out/report.html --command "..." --summary out/summary.txt \
      --json out/sim.json --plot out/plot.svg --trace out/trace.json \
      [--compare out/compare.json] [--vulkan out/vulkan.txt --vulkan-status N]

The page: what ran (and the command that reproduces it), the simulator's summary, the SVG plot
inline, every stat and cause count from the JSON, the policy table for the workload, and the real
Vulkan upload session's output when there was one. Needs only the Python standard library.
"""
import argparse
import html
import json
import os


def table(rows, header=None, numeric_from=1):
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join("<th>%s</th>" % html.escape(str(h)) for h in header) + "</tr>")
    for row in rows:
        cells = []
        for i, c in enumerate(row):
            cls = ' class="num"' if i >= numeric_from else ""
            cells.append("<td%s>%s</td>" % (cls, html.escape(str(c))))
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def ms(ns):
    return "%.1f" % (ns / 1e6)


def mib(b):
    return "%.1f" % (b / 1048576.0)


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
    a = p.parse_args()

    report = json.load(open(a.json))
    summary = open(a.summary).read()
    svg = open(a.plot).read()
    stats = report["stats"]
    violations = report["invariant_violations"]
    verdict = ("<span class=ok>0 invariant violations</span>" if violations == 0 else
               "<span class=bad>%d INVARIANT VIOLATIONS</span>" % violations)

    parts = []
    parts.append("<h1>staging — demo report</h1>")
    parts.append("<p>Workload <b>%s</b>, %s ring, policy <b>%s</b>, capacity %s MiB, cap %s MiB, "
                 "seed %d — %s.</p>" %
                 (html.escape(report["workload"]), html.escape(report["strategy"]),
                  html.escape(report["policy"]), mib(report["capacity"]), mib(report["cap"]),
                  report["config"]["seed"], verdict))
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
    rows = [[k.replace("_", "-"), v["InFlight"], v["Fragmentation"], v["Cap"], v["total"]]
            for k, v in causes.items()]
    parts.append(table(rows, ["event", "InFlight (GPU holds the bytes)", "Fragmentation", "Cap",
                              "total"]))

    parts.append("<h2>Every stat</h2>")
    rows = [[k, json.dumps(v) if isinstance(v, bool) else v] for k, v in stats.items()]
    parts.append(table(rows, ["stat", "value"]))
    ring = report.get("byte_ring_stats") or report.get("slot_ring_stats") or {}
    if ring:
        parts.append("<h3>The core's own stats (%s)</h3>" %
                     ("ByteRingStats" if "byte_ring_stats" in report else "StagingStats"))
        rows = [[k, json.dumps(v) if isinstance(v, dict) else v] for k, v in ring.items()]
        parts.append(table(rows, ["stat", "value"]))
    checks = report["checks"]
    parts.append("<h3>Checks</h3>")
    parts.append(table([["reservations checked (InvariantChecker, Record mode)",
                         checks["reservations_checked"]],
                        ["byte checks after the GPU read", checks["byte_checks"]],
                        ["byte checks corrupted", checks["byte_checks_corrupted"]]] +
                       [["violations of " + k, v]
                        for k, v in checks["violations_by_invariant"].items()],
                       ["check", "count"]))
    for v in checks["violations"][:20]:
        parts.append("<p class=bad>%s</p>" % html.escape(v["message"]))

    if a.compare:
        cmp = json.load(open(a.compare))["compare"]
        rows = [["%s/%s" % (r["strategy"], r["policy"]), ms(r["wait_total_ns"]),
                 ms(r["wait_longest_ns"]), r["would_blocks"], r["timeouts"], r["fallbacks"],
                 mib(r["fallback_bytes"]), r["direct"], mib(r["direct_bytes"]),
                 mib(r["bytes_skipped"]), mib(r["peak_held_bytes"]), ms(r["upload_delay_max_ns"]),
                 "%.1f" % r["throughput_mib_s"], r["invariant_violations"]]
                for r in cmp["rows"] if r["workload"] == report["workload"]]
        parts.append("<h2>Every policy on this workload</h2>")
        if a.compare_command:
            parts.append("<p>Reproduce: <code>%s</code> (docs/policy.md has the table over all "
                         "workloads)</p>" % html.escape(a.compare_command))
        parts.append(table(rows, ["ring/policy", "wait total ms", "wait max ms", "would-blocks",
                                  "timeouts", "fallbacks", "fallback MiB", "direct", "direct MiB",
                                  "skipped MiB", "peak held MiB", "max delay ms", "MiB/s",
                                  "violations"]))

    parts.append("<h2>Real upload session (Vulkan)</h2>")
    if a.vulkan:
        status = ("<span class=ok>exit status 0</span>" if a.vulkan_status == 0 else
                  "<span class=bad>exit status %s</span>" % a.vulkan_status)
        parts.append("<p><code>build/bin/staging-example-vulkan</code> on the default Vulkan "
                     "device (lavapipe when there is no GPU): %s</p>" % status)
        parts.append("<pre>%s</pre>" % html.escape(open(a.vulkan, errors="replace").read()))
    else:
        parts.append("<p>Not run: <code>build/bin/staging-example-vulkan</code> was not built "
                     "(the Vulkan backend's example is not in this tree).</p>")

    page = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>staging demo report</title>
<style>
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #222;
       max-width: 1300px; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; }
th { background: #f6f8fa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #c1121f; font-weight: bold; }
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
