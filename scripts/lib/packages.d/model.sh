# The model checker's Debian packages (sourced by scripts/lib/common.sh): spin, which turns the
# Promela models of tests/model/ into a verifier, and a C compiler to build it (docs/model.md).
STAGING_DEBIAN_PACKAGES+=(spin gcc)
