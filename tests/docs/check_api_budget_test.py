#!/usr/bin/env python3
"""scripts/check-api-budget on small repositories made here: it counts the headers under
include/staging/ outside detail/ and testing/, and the classes, structs and enums they define
(nested ones too; not forward declarations, aliases, template parameters or names in comments);
it fails above either limit and passes at it."""

import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "check-api-budget"

PUBLIC = """// A header. struct InAComment { int x; };
#pragma once
#include <cstdint>
namespace staging {
class Forward;                          // a declaration, not a definition
template <class T, typename U>          // template parameters
struct Pair {
  T first;
  U second;
};
enum class Kind : std::uint8_t { A, B };
enum Plain { C };
class Outer final : public Base<int> {
 public:
  struct Nested {
    int x;
  };
  friend class Forward;
 private:
  struct alignas(64) Padded {
    int y;
  };
};
using Alias = Outer;
inline const char* text = "struct InAString { };";
template <>
struct std::hash<Kind> {};              // a specialization: no new name
}  // namespace staging
"""

INTERNAL = "#pragma once\nnamespace staging { struct Internal {}; struct Other {}; }\n"


def run(*limits):
    """(exit status, output) of the checker on a repository of one public header (6 types), an
    umbrella header (none) and internal headers under detail/ and testing/."""
    with tempfile.TemporaryDirectory() as tmp:
        include = pathlib.Path(tmp) / "include" / "staging"
        for folder in ("core", "detail/core", "testing"):
            (include / folder).mkdir(parents=True)
        (include / "core" / "types.hpp").write_text(PUBLIC)
        (include / "core.hpp").write_text('#pragma once\n#include "staging/core/types.hpp"\n')
        (include / "detail" / "core" / "internal.hpp").write_text(INTERNAL)
        (include / "testing" / "fake.hpp").write_text(INTERNAL)
        done = subprocess.run([sys.executable, str(CHECKER), "--root", tmp, *limits],
                              capture_output=True, text=True, check=False)
        return done.returncode, done.stdout + done.stderr


class CheckApiBudget(unittest.TestCase):
    def test_counts_public_headers_and_the_types_they_define(self):
        status, out = run()
        self.assertEqual(status, 0, out)
        self.assertRegex(out,
                         r"staging/core/types\.hpp +6  Pair, Kind, Plain, Outer, Nested, Padded")
        self.assertIn("public headers:    2  (no limit; goal 20)", out)
        self.assertIn("public types:      6  (no limit; goal 70)", out)
        self.assertNotIn("Internal", out)
        self.assertNotIn("InA", out)

    def test_passes_at_its_limits(self):
        status, out = run("--max-headers", "2", "--max-types", "6")
        self.assertEqual(status, 0, out)
        self.assertIn("limit 6: OK", out)

    def test_fails_above_the_header_limit(self):
        status, out = run("--max-headers", "1")
        self.assertEqual(status, 1)
        self.assertIn("limit 1: OVER by 1", out)

    def test_fails_above_the_type_limit(self):
        status, out = run("--max-types", "5")
        self.assertEqual(status, 1)
        self.assertIn("limit 5: OVER by 1", out)

    def test_refuses_a_negative_limit(self):
        status, out = run("--max-types", "-1")
        self.assertEqual(status, 2)
        self.assertIn("--max-types must be 0 or more", out)


if __name__ == "__main__":
    unittest.main()
