#!/usr/bin/env python3
"""scripts/check-function-length on small files made here, with a limit of 5 lines: a function
over the limit fails, naming file, line and function; braces in comments and literals are not
code; lambdas and local blocks count towards their function; members, constructors (brace
initializers too) and templates are found where their signature starts."""

import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check-function-length"


def run(source, name="a.cpp"):
    """(exit status, output) of the checker, limit 5, on a folder holding `source` as `name`."""
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / name).write_text(source)
        done = subprocess.run([sys.executable, str(CHECKER), "--limit", "5", tmp],
                              capture_output=True, text=True, check=False)
        return done.returncode, done.stdout.replace(tmp + "/", "")


def body(lines):
    """A function body of `lines` lines in all, signature and closing brace included."""
    return "int f(int x) {\n" + "  x += 1;\n" * (lines - 3) + "  return x;\n}\n"


class CheckFunctionLength(unittest.TestCase):
    def test_a_function_at_the_limit_passes(self):
        self.assertEqual(run(body(5)), (0, ""))

    def test_one_line_over_fails_naming_file_line_and_function(self):
        status, out = run("// one\n\n" + body(6))
        self.assertEqual(status, 1)
        self.assertEqual(out, "a.cpp:3: f is 6 lines (limit 5)\n")

    def test_braces_in_comments_and_literals_are_not_code(self):
        source = ('int f() {\n  // }\n  /* } */ const char* s = "}";\n  char c = \'}\';\n'
                  '  const char* r = R"x(} ")x";\n  return 1\'000;\n}\n'
                  'int g() {\n  return 0;\n}\n')
        status, out = run(source)
        self.assertEqual(status, 1)
        self.assertEqual(out, "a.cpp:1: f is 7 lines (limit 5)\n")

    def test_lambdas_and_blocks_count_towards_their_function(self):
        source = ("void f() {\n  auto l = [](int x) {\n    return x;\n  };\n"
                  "  if (l(1)) {\n  }\n}\n")
        self.assertEqual(run(source), (1, "a.cpp:1: f is 7 lines (limit 5)\n"))

    def test_members_constructors_and_templates_start_at_their_signature(self):
        source = ("namespace n {\nclass C : public B {\n public:\n"
                  "  C(int a) : a_{a}, b_(std::vector<int>{1, 2}) {\n    a_ += 1;\n"
                  "    a_ += 2;\n    a_ += 3;\n    a_ += 4;\n  }\n"
                  "  int get() const noexcept { return a_; }\n\n private:\n  int a_{0};\n};\n"
                  "template <typename T>\nT g(T x)\n  requires std::integral<T>\n{\n"
                  "  return x;\n}\n}  // namespace n\n")
        status, out = run(source, "c.hpp")
        self.assertEqual(status, 1)
        self.assertEqual(out, "c.hpp:4: C is 6 lines (limit 5)\n"
                              "c.hpp:15: g is 6 lines (limit 5)\n")

    def test_a_missing_path_is_a_usage_error(self):
        done = subprocess.run([sys.executable, str(CHECKER), "/nonexistent/folder"],
                              capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 2)
        self.assertIn("/nonexistent/folder", done.stderr)


if __name__ == "__main__":
    unittest.main()
