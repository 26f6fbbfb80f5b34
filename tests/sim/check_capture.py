#!/usr/bin/env python3
"""Real GFXReconstruct captures, end to end, run by CTest (labels "sim" and "capture").

  check_capture.py --sim SIM --work DIR NAME -- PROGRAM [ARGS...]

captures PROGRAM on the machine's Vulkan device (lavapipe here) through the capture layer
VK_LAYER_LUNARG_gfxreconstruct, uncompressed, with HOME in a new empty directory (a first run),
converts it with gfxrecon-convert, imports it with
  staging-sim --gfxr NAME.jsonl --gfxr-binary NAME.gfxr --export-trace NAME.trace.csv
              --import-stats NAME.stats.json --json NAME.answer.json
and checks the import both ways against an independent count written here: the copy commands
(vkCmdCopyBuffer, vkCmdCopyBufferToImage, vkCmdUpdateBuffer, and their "2" forms) and their bytes,
counted by streaming the same JSON Lines, and the fill-memory commands and their bytes, read from
the capture's blocks; that the exported trace holds exactly the imported uploads and bytes and
replays (--replay); and that the answer names a clean ring for every byte-ring policy. It leaves
DIR/NAME.trace.csv for the tests that replay it (CTest fixture gfxr_imports).

A missing tool, layer or display, or a program that writes no capture, fails the test with a
message saying what to install: these tests never skip.
"""
import argparse
import csv
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

COMMANDS = {"vkCmdCopyBuffer": "vkCmdCopyBuffer", "vkCmdCopyBuffer2": "vkCmdCopyBuffer",
            "vkCmdCopyBuffer2KHR": "vkCmdCopyBuffer",
            "vkCmdCopyBufferToImage": "vkCmdCopyBufferToImage",
            "vkCmdCopyBufferToImage2": "vkCmdCopyBufferToImage",
            "vkCmdCopyBufferToImage2KHR": "vkCmdCopyBufferToImage",
            "vkCmdUpdateBuffer": "vkCmdUpdateBuffer"}
# Bytes per texel of the formats these programs upload (a different one fails the check).
TEXEL_BYTES = {"VK_FORMAT_R8G8B8A8_UNORM": 4, "VK_FORMAT_R8G8B8A8_SRGB": 4,
               "VK_FORMAT_B8G8R8A8_UNORM": 4, "VK_FORMAT_B8G8R8A8_SRGB": 4,
               "VK_FORMAT_R8_UNORM": 1, "VK_FORMAT_R8G8_UNORM": 2,
               "VK_FORMAT_R16G16B16A16_SFLOAT": 8, "VK_FORMAT_R32G32B32A32_SFLOAT": 16}
INSTALL = "install Debian's gfxreconstruct, xvfb, xauth and vulkan-tools (scripts/lib/packages.d)"


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def tool(name):
    path = shutil.which(name)
    if path is None:
        fail("%s not found: %s" % (name, INSTALL))
    return path


def capture(name, program, work):
    path = os.path.join(work, name + ".gfxr")
    for stale in (path, os.path.join(work, name + ".jsonl")):
        if os.path.exists(stale):
            os.remove(stale)
    home = tempfile.mkdtemp(prefix="staging-capture-home.")
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"),
               VK_INSTANCE_LAYERS="VK_LAYER_LUNARG_gfxreconstruct",
               GFXRECON_CAPTURE_FILE=path, GFXRECON_CAPTURE_FILE_TIMESTAMP="false",
               GFXRECON_CAPTURE_COMPRESSION_TYPE="NONE")
    try:
        proc = subprocess.run(program, env=env, capture_output=True, text=True, timeout=240,
                              cwd=work)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    log = "stdout:\n%s\nstderr:\n%s" % (proc.stdout[-3000:], proc.stderr[-3000:])
    if not os.path.exists(path):
        fail("%s wrote no capture %s (exit %d): is the layer VK_LAYER_LUNARG_gfxreconstruct "
             "installed (%s), and is there a display (xvfb-run)?\n%s"
             % (" ".join(program), path, proc.returncode, INSTALL, log))
    if proc.returncode != 0:
        print("note: %s exited %d under the capture layer; the capture was written\n%s"
              % (program[0], proc.returncode, log[-1500:]))
    conv = subprocess.run([tool("gfxrecon-convert"), path], capture_output=True, text=True,
                          timeout=240, cwd=work)
    jsonl = os.path.join(work, name + ".jsonl")
    if conv.returncode != 0 or not os.path.exists(jsonl):
        fail("gfxrecon-convert %s failed (exit %d): %s" % (path, conv.returncode, conv.stderr))
    return path, jsonl


def count_jsonl(jsonl):
    """Copy commands, regions and bytes, counted from the JSON Lines one line at a time."""
    commands = {k: 0 for k in set(COMMANDS.values())}
    nbytes = dict(commands)
    formats = {}
    with open(jsonl) as f:
        for line in f:
            call = json.loads(line).get("vkFunc")
            if not call:
                continue
            name, args = call["name"], call.get("args", {})
            if name == "vkCreateImage":
                formats[args["pImage"]] = args["pCreateInfo"]["format"]
            if name not in COMMANDS:
                continue
            key = COMMANDS[name]
            commands[key] += 1
            info = args.get("pCopyBufferInfo") or args.get("pCopyBufferToImageInfo") or args
            if key == "vkCmdUpdateBuffer":
                nbytes[key] += args["dataSize"]
            elif key == "vkCmdCopyBuffer":
                nbytes[key] += sum(r["size"] for r in info["pRegions"])
            else:
                fmt = formats[info["dstImage"]]
                if fmt not in TEXEL_BYTES:
                    fail("the check does not know format %s" % fmt)
                for r in info["pRegions"]:
                    e = r["imageExtent"]
                    w = r["bufferRowLength"] or e["width"]
                    h = r["bufferImageHeight"] or e["height"]
                    layers = r["imageSubresource"]["layerCount"]
                    nbytes[key] += w * h * e["depth"] * layers * TEXEL_BYTES[fmt]
    return commands, nbytes


def count_fills(gfxr):
    """Fill-memory commands and their bytes, read from the capture's blocks."""
    with open(gfxr, "rb") as f:
        data = f.read()
    fourcc, _, _, options = struct.unpack_from("<4I", data, 0)
    if fourcc != 0x52584647:
        fail("%s is not a GFXReconstruct capture" % gfxr)
    pos, fills, nbytes = 16 + 8 * options, 0, 0
    while pos < len(data):
        size, kind = struct.unpack_from("<QI", data, pos)
        if kind == 3 and struct.unpack_from("<I", data, pos + 12)[0] & 0xFFFF == 2:
            fills += 1
            nbytes += struct.unpack_from("<Q", data, pos + 16 + 24)[0]
        pos += 12 + size
    return fills, nbytes


def expect(what, got, want):
    if got != want:
        fail("%s: the importer says %r, the independent count %r" % (what, got, want))
    print("ok  %-44s %r" % (what, got))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("name")
    ap.add_argument("program", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    program = a.program[1:] if a.program[:1] == ["--"] else a.program
    os.makedirs(a.work, exist_ok=True)
    if not program:
        fail("no program to capture")
    if program[0] == "xvfb-run":  # xvfb-run [-a] PROGRAM ...: the display, then the program
        tool("xvfb-run")
        tool("xauth")
        tool(next(p for p in program[1:] if not p.startswith("-")))
    else:
        tool(program[0])
    gfxr, jsonl = capture(a.name, program, a.work)
    out = {k: os.path.join(a.work, a.name + suffix) for k, suffix in
           [("trace", ".trace.csv"), ("stats", ".stats.json"), ("answer", ".answer.json")]}
    cmd = [a.sim, "--gfxr", jsonl, "--gfxr-binary", gfxr, "--export-trace", out["trace"],
           "--import-stats", out["stats"], "--json", out["answer"], "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    print(proc.stdout)
    if proc.returncode != 0:
        fail("%s exited %d\n%s" % (" ".join(cmd), proc.returncode, proc.stderr))
    with open(out["stats"]) as f:
        stats = json.load(f)
    commands, nbytes = count_jsonl(jsonl)
    fills, fill_bytes = count_fills(gfxr)
    for key in sorted(commands):
        expect("copy_commands." + key, stats["copy_commands"][key], commands[key])
        expect("bytes." + key, stats["bytes"][key], nbytes[key])
        if stats["imported"]["bytes"][key] > 0 and stats["imported"]["bytes"][key] < nbytes[key]:
            print("note: %s: %d of %d bytes imported (the rest from device-local memory)"
                  % (key, stats["imported"]["bytes"][key], nbytes[key]))
    expect("host_writes", stats["host_writes"], fills)
    expect("host_write_bytes", stats["host_write_bytes"], fill_bytes)
    if sum(commands.values()) == 0 or sum(stats["imported"]["uploads"].values()) == 0:
        fail("the capture holds no copy imported as an upload: %s" % json.dumps(stats))
    with open(out["trace"]) as f:
        rows = list(csv.DictReader(f))
    imported = stats["imported"]
    expect("trace rows = uploads imported", len(rows),
           sum(imported["uploads"].values()) + imported["host_writes"])
    expect("trace bytes = bytes imported", sum(int(r["size"]) for r in rows),
           sum(imported["bytes"].values()) + imported["host_write_bytes"])
    with open(out["answer"]) as f:
        answer = json.load(f)["gfxr"]["answer"]
    for p in answer["policies"]:
        label = "%s/%s" % (p["strategy"], p["policy"])
        if p["strategy"] == "byte" and p["smallest_clean_bytes"] is None:
            fail("%s: no clean ring found" % label)
        if p["at_ring"]["invariant_violations"] != 0:
            fail("%s: invariant violations" % label)
    print("ok  answer for %d policies" % len(answer["policies"]))
    replay = subprocess.run([a.sim, "--replay", out["trace"], "-q", "--no-progress"],
                            capture_output=True, text=True, timeout=300)
    if replay.returncode != 0:
        fail("--replay %s exited %d: %s" % (out["trace"], replay.returncode, replay.stderr))
    print("ok  the exported trace replays: %s" % out["trace"])


if __name__ == "__main__":
    main()
