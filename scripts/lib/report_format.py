"""Formatting for scripts/demo's report (demo_report.py): numbers with their units at three
significant digits, nested stats flattened into one readable cell, the safety invariants I1-I6
with their result for one staging-sim run, and a "what to notice" line per policy-table row.
Pure functions over staging-sim's JSON; only the Python standard library.
"""
import math

# Keys holding byte counts that do not say "bytes" in their name (staging-sim's --json).
BYTE_KEYS = {"capacity", "cap", "grow_step", "fallback_cap", "split_min_chunk", "max_slot_bytes",
             "bytes"}


def sig3(x):
    """x at three significant digits, without an exponent: 0.0123 -> "0.0123", 253.5 -> "254",
    1234.5 -> "1,230"."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    decimals = 2 - int(math.floor(math.log10(abs(x))))
    rounded = round(x, decimals)
    if decimals <= 0:
        return "{:,}".format(int(rounded))
    return "%.*f" % (decimals, rounded)


def count(n):
    """An integer with thousands separators: 8924 -> "8,924"."""
    return "{:,}".format(int(n))


def duration(ns):
    """Nanoseconds in the largest unit that keeps the value >= 1: "850 ns", "7.28 ms", "4.41 s"."""
    if ns == 0:
        return "0 s"
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "\u00b5s")):
        if abs(ns) >= scale:
            return "%s %s" % (sig3(ns / scale), unit)
    return "%d ns" % ns if ns == int(ns) else "%s ns" % sig3(ns)


def size(b):
    """Bytes in the largest binary unit that keeps the value >= 1: "17 B", "9 KiB",
    "1.41 GiB"."""
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB"), (1, "KiB")):
        if abs(b) >= 1024 ** power:
            return "%s %s" % (sig3(b / 1024.0 ** power), unit)
    return "%d B" % b


def is_bytes(key):
    return "bytes" in key or key in BYTE_KEYS


def value(key, v):
    """One stat's value, by its key's convention: *_ns a duration, *_bytes_per_s a rate, byte
    counts (is_bytes) a size, *_mib_s MiB/s; other integers counted, floats at three significant
    digits, booleans yes/no, objects one "name value, ..." line."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, dict):
        return ", ".join("%s %s" % (k, value(key, x)) for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(value(key, x) for x in v) if v else "none"
    if not isinstance(v, (int, float)):
        return str(v)
    if key.endswith("_ns"):
        return duration(v)
    if key.endswith("_bytes_per_s"):
        return size(v) + "/s"
    if key.endswith("_mib_s"):
        return sig3(v) + " MiB/s"
    if is_bytes(key):
        return size(v)
    return count(v) if isinstance(v, int) else sig3(v)


# The invariants of docs/safety.md; I1-I5 are the InvariantChecker's, I6 a property of the
# ring's answers.
INVARIANTS = [
    ("I1", "no overlap: a new reservation overlaps no bytes the GPU may still read"),
    ("I2", "aligned, no overflow: offset % alignment == 0, size > 0, offset + size fits"),
    ("I3", "reclaimed only after completion: bytes are reused only once their token completed"),
    ("I4", "in bounds: a reservation lies inside an existing region"),
    ("I5", "under the cap: the bytes of all regions stay <= the cap"),
    ("I6", "bounded exhaustion: a reservation that does not fit is answered in bounded time "
           "(refused, waited for up to the timeout, split, grown or sent another way)"),
]


def invariant_rows(report):
    """[(name, meaning, result, ok)] for I1-I6 of one staging-sim --json report."""
    checks, stats, config = report["checks"], report["stats"], report["config"]
    by = checks["violations_by_invariant"]
    checked = checks["reservations_checked"]
    rows = []
    for name, meaning in INVARIANTS[:5]:
        n = by.get(name, 0)
        result = ("holds: 0 violations in %s reservations checked" % count(checked) if n == 0
                  else "VIOLATED %s times" % count(n))
        if name == "I5":
            result += " (peak held %s, cap %s)" % (size(report["peak_held_bytes"]),
                                                   size(report["cap"]))
        rows.append((name, meaning, result, n == 0))
    rows.append(("I6", INVARIANTS[5][1]) + i6_result(stats, config))
    return rows


def i6_result(stats, config):
    """I6 from the run's answers (the InvariantChecker does not check it): every wait ended within
    the wait timeout (plus one poll), and the queue drained."""
    limit = config["wait_timeout_ns"] + config.get("poll_interval_ns", 0)
    bounded = stats["wait_longest_ns"] <= limit
    ok = bounded and stats["drained"]
    parts = ["%s waits, longest %s (timeout %s)" % (count(stats["waits"]),
                                                    duration(stats["wait_longest_ns"]),
                                                    duration(config["wait_timeout_ns"])),
             "%s timed out" % count(stats["timeouts"]),
             "%s refused at once" % count(stats["would_blocks"]),
             "the queue drained" if stats["drained"] else "the queue never drained"]
    head = "holds" if ok else "VIOLATED"
    return ("%s (from the run's answers, not the checker): %s" % (head, "; ".join(parts)), ok)


def notice(row, capacity):
    """What a reader should notice in one policy-table row (compare.json's rows): the uploads
    that left the ring and their bytes, the time spent waiting, refusals, growth past the
    capacity, skipped bytes, violations; or that there was nothing of the kind."""
    notes = []
    if row["invariant_violations"]:
        notes.append("%s INVARIANT VIOLATIONS" % count(row["invariant_violations"]))
    if row["direct"]:
        notes.append("%s uploads (%s) sent direct by the caller, not through the ring" %
                     (count(row["direct"]), size(row["direct_bytes"])))
    if row["fallbacks"]:
        notes.append("%s fallback allocations (%s) outside the ring" %
                     (count(row["fallbacks"]), size(row["fallback_bytes"])))
    if row["wait_total_ns"]:
        notes.append("%s spent waiting (longest %s)" % (duration(row["wait_total_ns"]),
                                                        duration(row["wait_longest_ns"])))
    if row["would_blocks"]:
        notes.append("%s uploads refused (would-block)" % count(row["would_blocks"]))
    if row["timeouts"]:
        notes.append("%s waits timed out" % count(row["timeouts"]))
    if row["peak_held_bytes"] > capacity:
        notes.append("held up to %s (capacity %s)" % (size(row["peak_held_bytes"]),
                                                      size(capacity)))
    if row["upload_delay_max_ns"] >= 50e6:  # three 60 Hz frames
        notes.append("uploads delayed up to %s before they were placed" %
                     duration(row["upload_delay_max_ns"]))
    if row["bytes_skipped"] >= 1 << 20:
        notes.append("%s skipped at wraps" % size(row["bytes_skipped"]))
    streamer = row.get("streamer")
    if streamer and streamer.get("ring_full"):
        notes.append("the streaming half waited for ring room %s times" %
                     count(streamer["ring_full"]))
    return "; ".join(notes) if notes else "nothing: no waits, refusals or uploads outside the ring"
