#!/usr/bin/env python3
"""scripts/demo's report (scripts/lib/demo_report.py, report_format.py), run by CTest (label
tools): the number formatting, the invariant list, the policy notes, and — given --sim — a real
staging-sim run through demo_report.py: no raw nanosecond or byte counts, no JSON in cells, I1-I6
each with a result, a "what to notice" per policy row.

  demo_report_test.py [--sim build/bin/staging-sim --work DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(HERE, "..", "..", "scripts", "lib")
sys.path.insert(0, LIB)
import report_format as rf  # noqa: E402


class Formatting(unittest.TestCase):
    def test_three_significant_digits_without_exponents(self):
        self.assertEqual(rf.sig3(253.5), "254")
        self.assertEqual(rf.sig3(1234.5), "1,230")
        self.assertEqual(rf.sig3(0.012345), "0.0123")
        self.assertEqual(rf.sig3(251.43217061234), "251")
        self.assertEqual(rf.sig3(0), "0")

    def test_durations_in_their_unit(self):
        self.assertEqual(rf.duration(1508927052), "1.51 s")
        self.assertEqual(rf.duration(7275627), "7.28 ms")
        self.assertEqual(rf.duration(850000), "850 \u00b5s")
        self.assertEqual(rf.duration(12), "12 ns")
        self.assertEqual(rf.duration(0), "0 s")

    def test_bytes_in_binary_units(self):
        self.assertEqual(rf.size(1508927052), "1.41 GiB")
        self.assertEqual(rf.size(997774509), "952 MiB")
        self.assertEqual(rf.size(9216), "9.00 KiB")
        self.assertEqual(rf.size(17), "17 B")

    def test_a_value_by_its_key(self):
        self.assertEqual(rf.value("wait_total_ns", 4411400000), "4.41 s")
        self.assertEqual(rf.value("bytes_reserved", 1508927052), "1.41 GiB")
        self.assertEqual(rf.value("capacity", 33554432), "32.0 MiB")
        self.assertEqual(rf.value("bandwidth_bytes_per_s", 17179869184), "16.0 GiB/s")
        self.assertEqual(rf.value("throughput_mib_s", 251.43217061234), "251 MiB/s")
        self.assertEqual(rf.value("reservations", 8924), "8,924")
        self.assertEqual(rf.value("drained", True), "yes")
        self.assertEqual(rf.value("waits_by_cause", {"InFlight": 5, "Fragmentation": 0, "Cap": 0}),
                         "InFlight 5, Fragmentation 0, Cap 0")

    def test_the_notice_names_direct_uploads_and_waiting(self):
        row = {"invariant_violations": 0, "direct": 1850, "direct_bytes": 997774509,
               "fallbacks": 0, "fallback_bytes": 0, "wait_total_ns": 0, "wait_longest_ns": 0,
               "would_blocks": 0, "timeouts": 0, "peak_held_bytes": 18874368, "bytes_skipped": 0,
               "upload_delay_max_ns": 0}
        self.assertIn("1,850 uploads (952 MiB) sent direct", rf.notice(row, 33554432))
        row.update(direct=0, direct_bytes=0, wait_total_ns=4411400000, wait_longest_ns=11900000)
        self.assertIn("4.41 s spent waiting (longest 11.9 ms)", rf.notice(row, 33554432))
        row.update(wait_total_ns=0, wait_longest_ns=0)
        self.assertTrue(rf.notice(row, 33554432).startswith("nothing"))


class WholeReport(unittest.TestCase):
    def test_a_real_run_reads_well(self):
        if not os.environ.get("DEMO_REPORT_SIM"):
            self.skipTest("no --sim given")
        sim, work = os.environ["DEMO_REPORT_SIM"], os.environ["DEMO_REPORT_WORK"]
        os.makedirs(work, exist_ok=True)
        p = lambda name: os.path.join(work, name)  # noqa: E731
        with open(p("summary.txt"), "w") as out:
            subprocess.run([sim, "--workload", "mixed", "--strategy", "byte", "--policy", "split",
                            "--seed", "1", "--json", p("sim.json"), "--trace", p("trace.json"),
                            "--plot", p("plot.svg"), "--no-progress"], stdout=out, check=True)
        subprocess.run([sim, "--compare", "--workload", "mixed", "--seed", "1", "--json",
                        p("compare.json"), "--no-progress"], stdout=subprocess.DEVNULL,
                       check=True)
        subprocess.run([sys.executable, os.path.join(LIB, "demo_report.py"), "--out",
                        p("report.html"), "--command", "staging-sim ...", "--summary",
                        p("summary.txt"), "--json", p("sim.json"), "--plot", p("plot.svg"),
                        "--trace", p("trace.json"), "--compare", p("compare.json"),
                        "--compare-command", "staging-sim --compare"], check=True)
        with open(p("report.html")) as f:
            page = f.read()
        cells = re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)
        for c in cells:
            self.assertNotRegex(c, r"\d{7,}", "a raw count in a cell: %r" % c)
            self.assertNotRegex(c, r"\d\.\d{5,}", "a float with many digits: %r" % c)
            self.assertNotIn("{", c, "JSON in a cell: %r" % c)
        for name in ("I1", "I2", "I3", "I4", "I5", "I6"):
            self.assertRegex(page, r"<td>%s</td><td>[^<]+</td><td class=\"ok\">holds" % name)
        with open(p("compare.json")) as f:
            rows = json.load(f)["compare"]["rows"]
        self.assertIn("uploads (952 MiB) sent direct", page)  # slot/fallback
        self.assertIn("spent waiting", page)  # slot/wait
        self.assertEqual(page.count("<tr"), page.count("</tr>"))
        self.assertGreaterEqual(len(rows), 8)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim")
    ap.add_argument("--work")
    args, rest = ap.parse_known_args()
    if args.sim:
        os.environ["DEMO_REPORT_SIM"] = args.sim
        os.environ["DEMO_REPORT_WORK"] = args.work or "demo-report-work"
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
