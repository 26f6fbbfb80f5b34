#!/usr/bin/env python3
"""End-to-end checks of the staging-sim command line, run by CTest (label "sim").

Each subcommand runs build/bin/staging-sim and checks what it promises:
  workload NAME  every compared policy on NAME: exit 0, "invariant_violations": 0 in the JSON,
                 peak held bytes <= the cap (and <= the capacity for policies that never grow)
  acceptance     the issue's acceptance command (sizes-edge, byte ring, split)
  trace          --trace is JSON in the trace-event format, spans carry offset and size
  plot           --plot is a well-formed SVG (and renders, when rsvg-convert is installed)
  replay         the example CSV and JSON traces replay to the same result
  determinism    the same seed gives byte-identical JSON; another seed does not
  fault          --inject-fault early-completion exits 1 naming the violated invariant
  policy-doc     docs/policy.md's table is exactly what the command it states prints
  soak           a short soak (--soak 5s): random workloads, policies and configurations, zero
                 violations, no leak, memory flat
  soak-fault     a soak with a planted fault fails naming the violation, and the command line it
                 prints repeats the failing run
  hostile CASE   a hostile input (HOSTILE below) is refused with exit 2 and a clear message, or
                 runs in bounded time with sane (never negative) totals
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

POLICIES = [("byte", "defer"), ("byte", "wait"), ("byte", "split"), ("byte", "grow"),
            ("byte", "fallback"), ("slot", "fallback"), ("slot", "wait")]


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def run(args, sim, expect=0):
    cmd = [sim] + args + ["--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if expect is not None and proc.returncode != expect:
        fail("%s exited %d (expected %d)\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(cmd), proc.returncode, expect, proc.stdout[-3000:], proc.stderr[-3000:]))
    return proc


def load(path):
    with open(path) as f:
        return json.load(f)


def check_run(report, label, strict_capacity):
    if report["invariant_violations"] != 0:
        fail("%s: invariant_violations %d: %s" % (label, report["invariant_violations"],
                                                   report["checks"]["violations"][:3]))
    if report["checks"]["stat_mismatches"]:
        fail("%s: stats mismatches %s" % (label, report["checks"]["stat_mismatches"]))
    peak, cap, capacity = report["peak_held_bytes"], report["cap"], report["capacity"]
    if peak > cap:
        fail("%s: peak held %d > cap %d" % (label, peak, cap))
    if strict_capacity and peak > capacity:
        fail("%s: peak held %d > capacity %d" % (label, peak, capacity))
    if report["checks"]["byte_checks_corrupted"] != 0:
        fail("%s: corrupted bytes" % label)
    print("ok  %-40s peak %d / cap %d, %d reservations checked" %
          (label, peak, cap, report["checks"]["reservations_checked"]))


def cmd_workload(a):
    for strategy, policy in POLICIES:
        out = os.path.join(a.work, "%s-%s-%s.json" % (a.name, strategy, policy))
        run(["--workload", a.name, "--strategy", strategy, "--policy", policy, "--json", out, "-q"],
            a.sim)
        report = load(out)
        strict = strategy == "byte" and policy in ("defer", "wait", "split")
        check_run(report, "%s %s/%s" % (a.name, strategy, policy), strict)


def cmd_acceptance(a):
    out = os.path.join(a.work, "r.json")
    run(["--workload", "sizes-edge", "--strategy", "byte", "--policy", "split", "--json", out], a.sim)
    report = load(out)
    check_run(report, "sizes-edge byte/split (acceptance)", strict_capacity=True)
    if report["stats"]["splits"] == 0:
        fail("sizes-edge under split never split: the edge sizes did not reach the ring")


def cmd_trace(a):
    out = os.path.join(a.work, "trace.json")
    run(["--workload", "asset-burst", "--policy", "fallback", "--trace", out, "-q"], a.sim)
    trace = load(out)
    events = trace.get("traceEvents")
    if not isinstance(events, list) or not events:
        fail("no traceEvents array")
    for e in events:
        if "ph" not in e or "pid" not in e:
            fail("event without ph/pid: %r" % e)
        if e["ph"] in ("X", "i", "C") and not isinstance(e.get("ts"), (int, float)):
            fail("event without a numeric ts: %r" % e)
        if e["ph"] == "X" and e.get("dur", -1) < 0:
            fail("span with a negative duration: %r" % e)
    spans = [e for e in events if e.get("cat") == "reservation"]
    if not spans or any("offset" not in s["args"] or "size" not in s["args"] for s in spans):
        fail("reservation spans must carry offset and size")
    names = {e["name"].split(" (")[0] for e in events if e.get("cat") == "policy"}
    for wanted in ("fallback", "cap refusal", "direct"):
        if wanted not in names:
            fail("no %r event in an asset-burst/fallback trace (have %s)" % (wanted, sorted(names)))
    print("ok  %d events, %d reservation spans, policy events %s" %
          (len(events), len(spans), sorted(names)))


def cmd_plot(a):
    out = os.path.join(a.work, "plot.svg")
    run(["--workload", "stalled-queue", "--policy", "wait", "--plot", out, "-q"], a.sim)
    root = ET.parse(out).getroot()
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        fail("root element is %s, not svg" % root.tag)
    text = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    for wanted in ("held bytes", "bytes in flight", "capacity", "simulated time (s)",
                   "staging memory (MiB)", "waits", "fallbacks", "queue stalled"):
        if wanted not in text:
            fail("the plot has no %r label" % wanted)
    check_plot_readable(root, "stalled-queue wait")
    # The demo's run: held bytes lie on the capacity all along, and waits and splits come in pairs
    # closer than a pixel.
    demo = os.path.join(a.work, "plot-mixed.svg")
    run(["--workload", "mixed", "--strategy", "byte", "--policy", "split", "--seed", "1",
         "--plot", demo, "-q"], a.sim)
    check_plot_readable(ET.parse(demo).getroot(), "mixed split")
    if shutil.which("rsvg-convert"):
        png = os.path.join(a.work, "plot.png")
        subprocess.run(["rsvg-convert", out, "-o", png], check=True)
        if os.path.getsize(png) < 10000:
            fail("rsvg-convert produced a suspiciously small PNG")
        print("ok  rendered with rsvg-convert: %s" % png)
    print("ok  well-formed SVG with axes, legend and lanes")


def check_plot_readable(root, label):
    """What a reader must be able to see: held bytes and the capacity as different lines (held
    solid and thicker, capacity dashed) below the chart's top, wait bands that show, and every
    event of a lane that has room for them drawn as a marker of its own."""
    ns = "{http://www.w3.org/2000/svg}"
    by_class = {}
    for e in root.iter():
        by_class.setdefault(e.get("class"), []).append(e)
    held, capacity, chart = by_class.get("held"), by_class.get("capacity"), by_class.get("chart")
    if not held or not capacity or not chart:
        fail("%s: the plot has no held line, capacity line or chart frame" % label)
    held, capacity, chart = held[0], capacity[0], chart[0]
    if held.get("stroke") == capacity.get("stroke") or not capacity.get("stroke-dasharray") \
            or held.get("stroke-dasharray"):
        fail("%s: held bytes and capacity are not told apart (colour, dashes)" % label)
    if float(held.get("stroke-width")) <= float(capacity.get("stroke-width")):
        fail("%s: the held line is not wider than the capacity's (it hides under it)" % label)
    top, height = float(chart.get("y")), float(chart.get("height"))
    for line in by_class.get("capacity", []) + by_class.get("cap", []):
        if float(line.get("y1")) < top + 0.08 * height:
            fail("%s: no headroom above the %s line" % (label, line.get("class")))
    for band in by_class.get("wait-band", []):
        if float(band.get("fill-opacity")) < 0.4 or float(band.get("width")) < 3:
            fail("%s: a wait band is too faint or too thin to see" % label)
    width = float(chart.get("width"))
    for lane in by_class.get("lane", []):
        n = int(lane.get("data-count"))
        markers = list(lane)
        if n * 4 <= width and len(markers) != n:
            fail("%s: lane %s shows %d markers for %d events" %
                 (label, lane.get("data-lane"), len(markers), n))
        xs = sorted(float(m.get("x") or m.get("x1") or m.get("d", "M0").split()[0][1:])
                    for m in markers)
        if n * 4 <= width and any(b - x < 1 for x, b in zip(xs, xs[1:])):
            fail("%s: lane %s draws two markers at the same place" % (label, lane.get("data-lane")))
    print("ok  %s: held and capacity apart, headroom, every event visible" % label)


def cmd_replay(a):
    examples = os.path.join(a.source, "tools", "staging-sim", "examples")
    reports = []
    for name in ("upload-trace.csv", "upload-trace.json"):
        out = os.path.join(a.work, name + ".report.json")
        run(["--replay", os.path.join(examples, name), "--policy", "split", "--json", out, "-q"],
            a.sim)
        report = load(out)
        check_run(report, "replay " + name, strict_capacity=True)
        reports.append(report)
    a_stats, b_stats = reports[0]["stats"], reports[1]["stats"]
    if a_stats != b_stats:
        diff = {k: (a_stats[k], b_stats[k]) for k in a_stats if a_stats[k] != b_stats.get(k)}
        fail("the CSV and JSON examples replay differently: %s" % diff)
    bad = os.path.join(a.work, "bad.csv")
    with open(bad, "w") as f:
        f.write("time_us,size\n0,100\n1,zero\n")
    proc = run(["--replay", bad], a.sim, expect=2)
    if "bad.csv:3:" not in proc.stderr:
        fail("a bad trace line is not named: %r" % proc.stderr)
    print("ok  CSV and JSON examples agree; a bad line is named")


def cmd_determinism(a):
    outs = []
    for i, seed in enumerate(("5", "5", "6")):
        out = os.path.join(a.work, "det%d.json" % i)
        trace = os.path.join(a.work, "det%d.trace.json" % i)
        run(["--workload", "mixed", "--policy", "split", "--seed", seed, "--json", out, "--trace",
             trace, "-q"], a.sim)
        outs.append((open(out, "rb").read(), open(trace, "rb").read()))
    if outs[0] != outs[1]:
        fail("two runs with seed 5 differ")
    if outs[0][0] == outs[2][0]:
        fail("seeds 5 and 6 gave the same run")
    print("ok  byte-identical JSON and trace for one seed")


def cmd_fault(a):
    out = os.path.join(a.work, "fault.json")
    proc = run(["--workload", "chunk-stream", "--inject-fault", "early-completion", "--json", out],
               a.sim, expect=1)
    if "I3 violated: reservation #" not in proc.stderr:
        fail("the violation is not named on stderr: %r" % proc.stderr)
    report = load(out)
    if report["invariant_violations"] == 0 or report["checks"]["violations_by_invariant"]["I3"] == 0:
        fail("the JSON does not report the I3 violation")
    print("ok  exit 1: " + proc.stderr.strip().splitlines()[0][:160])


def cmd_policy_doc(a):
    doc = open(os.path.join(a.source, "docs", "policy.md")).read()
    m = re.search(r"<!-- compare-command: (.*?) -->", doc)
    if not m:
        fail("docs/policy.md states no <!-- compare-command: ... --> ")
    begin, end = "<!-- compare-table:begin -->", "<!-- compare-table:end -->"
    if begin not in doc or end not in doc:
        fail("docs/policy.md has no compare-table markers")
    table = doc.split(begin, 1)[1].split(end, 1)[0].strip()
    args = shlex.split(m.group(1))
    if args[0] != "staging-sim":
        fail("the stated command must start with staging-sim")
    proc = run(args[1:], a.sim)
    if proc.stdout.strip() != table:
        got, want = proc.stdout.strip().splitlines(), table.splitlines()
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                fail("docs/policy.md line %d of the table differs:\n  doc: %s\n  now: %s" %
                     (i + 1, w, g))
        fail("docs/policy.md's table has %d lines, the command prints %d" % (len(want), len(got)))
    print("ok  docs/policy.md's table is reproduced by: %s" % m.group(1))


# Hostile inputs. Each: (trace file or None, arguments, expected exit status, text expected on
# stderr (or stdout for exit 0), seconds it may take). A trace is (name, bytes).
BIG_CSV = "time_us,size\n0,%d\n"
HOSTILE = {
    # Sizes far beyond the ring: routed around it, copy time simulated, not ticked through.
    "size-2p60-csv": (("t.csv", BIG_CSV % 2**60), [], 0, "1 (1048576 TiB)", 20),
    "size-2p63-json": (("t.json", '[{"time_us": 0, "size": %d}]' % (2**63 - 1)), [], 0,
                       "simulated time       17.0 years", 20),
    "size-2p64-csv": (("t.csv", BIG_CSV % (2**64 - 1)), ["--policy", "grow"], 0,
                      "direct (caller)      1", 20),
    "size-2p60-split": (("t.csv", BIG_CSV % 2**60), ["--policy", "split"], 2,
                        "passes under split", 20),
    # Totals that overflowed: saturated, never negative.
    "bandwidth-1b": (None, ["--bandwidth", "1B", "--duration", "1s"], 0,
                     "total more than 292 years", 20),
    "bandwidth-1b-10gb": (("t.csv", BIG_CSV % 10**10), ["--bandwidth", "1B"], 2,
                          "73.1 years of virtual time", 20),
    "delay-31-years": (None, ["--delay", "fixed:1000000000s", "--duration", "1s"], 2,
                       "73.1 years of virtual time", 20),
    # The command line.
    "seed-negative": (None, ["--seed", "-1"], 2, "--seed: expected an integer", 10),
    "frames-in-flight-negative": (None, ["--frames-in-flight", "-1"], 2,
                                  "--frames-in-flight: expected an integer", 10),
    "markdown-alone": (None, ["--markdown"], 2, "--markdown requires --compare", 10),
    "unknown-flag": (None, ["--bogus"], 2, "--bogus", 10),
    "capacity-2p64": (None, ["--capacity", str(2**64 - 1)], 2, "above 16 GiB", 10),
    "duration-2h": (None, ["--duration", "7200s"], 2, "at most 1 hour", 10),
    "stall-option-huge": (None, ["--stall", "1s:1000000000000s"], 2, "--stall: expected AT:FOR",
                          10),
    "bursty-2p32": (None, ["--delay", "bursty:1ms:2ms:4294967296"], 2, "bursty:FAST:SLOW:N", 10),
    # Traces.
    "stall-at-1e30": (("t.json", '{"uploads": [{"time_us": 0, "size": 1}], '
                                 '"stalls": [{"at_us": 1e30, "for_us": 1}]}'), [], 2,
                      "t.json: stall 0: ", 10),
    "stall-for-1e30": (("t.json", '{"uploads": [{"time_us": 0, "size": 1}], '
                                  '"stalls": [{"at_us": 0, "for_us": 1e30}]}'), [], 2,
                       "t.json: stall 0: ", 10),
    "frame-2p64": (("t.json", '[{"time_us": 0, "size": 1, "frame": %d}]' % (2**64 - 1)), [], 2,
                   "t.json: upload 0: frame must be", 10),
    "hex-time": (("t.csv", "time_us,size\n0x10,5\n"), [], 2, "t.csv:2: time_us must be", 10),
    "cut-line": (("t.csv", "time_us,size\n0,40"), [], 2, "t.csv:2: the last line has no newline",
                 10),
    "binary-garbage": (("t.bin", bytes((i * 131 + 7) % 256 for i in range(4096))), [], 2,
                       "t.bin:1: unknown column", 10),
    # Time goes by events: gaps and tiny ticks cost nothing, a retry storm is bounded.
    "time-gap-1e13us": (("t.csv", "time_us,size\n0,5\n10000000000000,5\n"), [], 0,
                        "simulated time       10000000.00 s", 10),
    "poll-interval-1ns": (None, ["--poll-interval", "1ns", "--duration", "1s"], 0,
                          "invariant violations 0", 20),
    "wait-timeout-0": (None, ["--wait-timeout", "0s", "--workload", "sizes-edge",
                              "--duration", "2s"], 0, "invariant violations 0", 20),
    "retry-storm": (None, ["--poll-interval", "1ns", "--workload", "sizes-edge", "--policy",
                           "defer", "--duration", "1s"], 2, "steps (reservation attempts", 60),
    "million-kinds": (("t.csv", "time_us,size,kind\n" +
                       "".join("%d,64,k%d\n" % (i, i) for i in range(1000000))), [], 0,
                      "uploads              1,000,000", 90),
}


def negative_numbers(value, path="$"):
    """Paths of negative numbers in a JSON document (a total that overflowed)."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in negative_numbers(v, path + "." + k)]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in negative_numbers(v, "%s[%d]" % (path, i))]
    return [path] if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0 \
        else []


def cmd_hostile(a):
    trace, args, expect, says, seconds = HOSTILE[a.name]
    if trace:
        path = os.path.join(a.work, a.name + "-" + trace[0])
        with open(path, "wb") as f:
            f.write(trace[1] if isinstance(trace[1], bytes) else trace[1].encode())
        args = ["--replay", path] + args
    out = os.path.join(a.work, a.name + ".json")
    cmd = [a.sim] + args + ["--no-progress", "--json", out]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        fail("%s did not finish within %d s" % (" ".join(cmd[:12]), seconds))
    stdout, stderr = proc.stdout.decode("ascii", "replace"), proc.stderr.decode("ascii", "replace")
    if proc.returncode != expect:
        fail("exit %d (expected %d)\nstdout:\n%s\nstderr:\n%s" %
             (proc.returncode, expect, stdout[-2000:], stderr[-2000:]))
    text = stdout if expect == 0 else stderr
    if says not in text:
        fail("expected %r in the output:\n%s" % (says, text[-3000:]))
    if any(b >= 0x7f or (b < 0x20 and b not in (9, 10)) for b in proc.stderr):
        fail("stderr has unprintable bytes: %r" % proc.stderr[:300])
    if expect == 0:
        bad = negative_numbers(load(out))
        if bad or re.search(r"(?<![\w.])-\d", stdout):
            fail("negative totals: %s\n%s" % (bad[:5], stdout))
    print("ok  %s: exit %d, %r" % (a.name, proc.returncode, says))


def cmd_soak(a):
    proc = run(["--soak", "5s", "--seed", "1"], a.sim)
    if "passed: no violation, no stats mismatch, no leak" not in proc.stdout:
        fail("the soak did not pass:\n" + proc.stdout)
    print(proc.stdout.strip())


def cmd_soak_fault(a):
    proc = run(["--soak", "1s", "--seed", "2", "--inject-fault", "early-completion"], a.sim, expect=1)
    m = re.search(r"repeat it with: staging-sim (.*)", proc.stderr)
    if "FAILED at run" not in proc.stderr or "I3 violated" not in proc.stderr or not m:
        fail("the soak did not report the planted fault:\n" + proc.stderr)
    again = run(shlex.split(m.group(1)) + ["-q"], a.sim, expect=1)
    if "I3 violated" not in again.stderr:
        fail("the printed command does not repeat the failure:\n" + again.stderr)
    print("ok  soak failed on the planted fault; its command line repeats it")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sim", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True)
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("workload")
    w.add_argument("name")
    h = sub.add_parser("hostile")
    h.add_argument("name", choices=sorted(HOSTILE))
    for name in ("acceptance", "trace", "plot", "replay", "determinism", "fault", "policy-doc",
                 "soak", "soak-fault"):
        sub.add_parser(name)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    {"workload": cmd_workload, "acceptance": cmd_acceptance, "trace": cmd_trace,
     "plot": cmd_plot, "replay": cmd_replay, "determinism": cmd_determinism,
     "fault": cmd_fault, "policy-doc": cmd_policy_doc, "hostile": cmd_hostile,
     "soak": cmd_soak, "soak-fault": cmd_soak_fault}[a.cmd](a)


if __name__ == "__main__":
    main()
