#!/usr/bin/env python3
"""check_snippets.py on small repositories made here: a block equal to its region passes; a block
without a snippet comment, naming a missing region, or differing by one line fails, naming the
Markdown file and line."""

import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).resolve().with_name("check_snippets.py")

SOURCE = """int main() {
  // [snippet:hello]
  int answer = 42;
  return answer - 42;
  // [snippet-end]
}
"""


def run(readme, source=SOURCE):
    """(exit status, output) of the checker on a repository holding `readme` and example.cpp."""
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "docs").mkdir()
        (root / "README.md").write_text(readme)
        (root / "example.cpp").write_text(source)
        done = subprocess.run([sys.executable, str(CHECKER), "--root", str(root)],
                              capture_output=True, text=True, check=False)
        return done.returncode, done.stdout


class CheckSnippets(unittest.TestCase):
    def test_a_block_equal_to_its_region_passes(self):
        status, out = run("# x\n\n<!-- snippet: example.cpp hello -->\n```cpp\n"
                          "int answer = 42;\nreturn answer - 42;\n```\n")
        self.assertEqual(status, 0, out)

    def test_a_block_without_a_snippet_comment_fails_naming_its_line(self):
        status, out = run("# x\n\n```cpp\nint answer = 42;\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("README.md:3: a ```cpp block that is not a region", out)

    def test_a_missing_region_fails(self):
        status, out = run("<!-- snippet: example.cpp bye -->\n```cpp\nint x;\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("README.md:2: no region 'bye' in example.cpp", out)

    def test_a_changed_line_fails_naming_both_lines(self):
        status, out = run("<!-- snippet: example.cpp hello -->\n```cpp\n"
                          "int answer = 41;\nreturn answer - 42;\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("README.md:3: differs from example.cpp:3 (region 'hello')", out)

    def test_a_block_shorter_than_its_region_fails(self):
        status, out = run("<!-- snippet: example.cpp hello -->\n```cpp\nint answer = 42;\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("(the block ends)", out)

    def test_an_unclosed_region_fails(self):
        status, out = run("<!-- snippet: example.cpp hello -->\n```cpp\nint answer = 42;\n```\n",
                          source="// [snippet:hello]\nint answer = 42;\n")
        self.assertEqual(status, 1)
        self.assertIn("has no [snippet-end]", out)


if __name__ == "__main__":
    unittest.main()
