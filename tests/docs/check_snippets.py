#!/usr/bin/env python3
"""Checks that every C++ snippet of the documentation is code the build compiles.

Every ```cpp block in README.md and docs/*.md must be preceded (blank lines allowed) by

    <!-- snippet: PATH NAME -->

naming a region of a compiled source file (PATH relative to the repository root), marked there
with

    // [snippet:NAME]
    ...the lines the block shows...
    // [snippet-end]

The block must equal the region line for line, with the region's indentation (that of its
opening marker) removed. A block without such a comment, a missing file or region, or a line that
differs fails the check, naming the Markdown file and line.

Usage: check_snippets.py [--root DIR]   (default: the repository holding this script)
Exit status: 0 every block matches, 1 otherwise.
"""

import argparse
import pathlib
import re
import sys

SNIPPET_COMMENT = re.compile(r"^<!--\s*snippet:\s*(\S+)\s+(\S+)\s*-->\s*$")
REGION_START = re.compile(r"^(\s*)//\s*\[snippet:([\w.-]+)\]\s*$")
REGION_END = re.compile(r"^\s*//\s*\[snippet-end\]\s*$")
COMPILED_SUFFIXES = {".cpp", ".cc", ".hpp", ".h", ".cu"}


def markdown_files(root):
    """README.md and every docs/*.md, sorted."""
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def cpp_blocks(path):
    """(line of the opening fence, the block's lines, the snippet comment's (file, name) or None)
    for every ```cpp block of a Markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```cpp":
            i += 1
            continue
        start = i
        reference = None
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            m = SNIPPET_COMMENT.match(lines[j].strip())
            if m:
                reference = (m.group(1), m.group(2))
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        blocks.append((start + 1, body, reference))
        i += 1
    return blocks


def regions(path):
    """{name: (line of the first region line, the region's lines, dedented)} of a source file;
    raises ValueError on an unclosed, nested or repeated region or a line left of its marker."""
    found = {}
    current = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        start = REGION_START.match(line)
        if start:
            if current:
                raise ValueError(f"{path}:{number}: region '{start.group(2)}' inside "
                                 f"region '{current[0]}'")
            if start.group(2) in found:
                raise ValueError(f"{path}:{number}: region '{start.group(2)}' twice")
            current = (start.group(2), start.group(1), number + 1, [])
            continue
        if REGION_END.match(line):
            if not current:
                raise ValueError(f"{path}:{number}: [snippet-end] outside a region")
            found[current[0]] = (current[2], current[3])
            current = None
            continue
        if current:
            indent = current[1]
            if line.strip() and not line.startswith(indent):
                raise ValueError(f"{path}:{number}: line left of its region's marker")
            current[3].append(line[len(indent):].rstrip() if line.strip() else "")
    if current:
        raise ValueError(f"{path}: region '{current[0]}' has no [snippet-end]")
    return found


def check_block(root, md, line, body, reference):
    """The problems of one block, as messages naming where they are (empty when it matches)."""
    where = f"{md.relative_to(root)}:{line}"
    if reference is None:
        return [f"{where}: a ```cpp block that is not a region of a compiled file; put "
                "<!-- snippet: PATH NAME --> before it and mark the region in PATH with "
                "// [snippet:NAME] ... // [snippet-end]"]
    source_name, name = reference
    source = root / source_name
    if source.suffix not in COMPILED_SUFFIXES:
        return [f"{where}: {source_name} is not a C++ source file"]
    if not source.is_file():
        return [f"{where}: {source_name} does not exist"]
    try:
        found = regions(source)
    except ValueError as error:
        return [f"{where}: {error}"]
    if name not in found:
        return [f"{where}: no region '{name}' in {source_name} (// [snippet:{name}])"]
    first, region = found[name]
    shown = [text.rstrip() for text in body]
    for k in range(max(len(shown), len(region))):
        ours = shown[k] if k < len(shown) else "(the block ends)"
        theirs = region[k] if k < len(region) else "(the region ends)"
        if ours != theirs:
            return [f"{md.relative_to(root)}:{line + 1 + k}: differs from "
                    f"{source_name}:{first + k} (region '{name}'):\n"
                    f"    doc:    {ours}\n    source: {theirs}"]
    return []


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    root = args.root.resolve()
    problems = []
    count = 0
    for md in markdown_files(root):
        for line, body, reference in cpp_blocks(md):
            count += 1
            problems += check_block(root, md, line, body, reference)
    for problem in problems:
        print(problem)
    print(f"{count} C++ snippets in README.md and docs/*.md, {len(problems)} not matching a "
          "region of a compiled file")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
