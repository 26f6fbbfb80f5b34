// The rapidcheck parameters of the core's property tests: each test's own defaults, plus a fixed
// seed when STAGING_RC_SEED is set (scripts/mutate sets it, so that every mutant meets the same
// random cases and a run's score can be reproduced). An RC_PARAMS set by the caller wins over
// both. rapidcheck reads RC_PARAMS on first use, after static initialisation, so a test sets it
// from a static initialiser: `const int kDefaultParams = staging::test::set_rc_params("...");`.
#pragma once

#include <cstdlib>
#include <string>

namespace staging::test {

/// Sets RC_PARAMS to `defaults` (plus " seed=$STAGING_RC_SEED" when that is set) unless the
/// caller already set RC_PARAMS. Returns setenv's result.
inline int set_rc_params(const char* defaults) {
  std::string params = defaults;
  if (const char* seed = std::getenv("STAGING_RC_SEED"); seed != nullptr && *seed != '\0') {
    params += " seed=";
    params += seed;
  }
  return setenv("RC_PARAMS", params.c_str(), 0);
}

}  // namespace staging::test
