# The library's version: one place for the main build and the WebAssembly one (included before
# project()). From 1.0 on, a change that breaks a caller's code needs a new major version, and
# every change to the public API is an entry in CHANGELOG.md.
set(STAGING_RELEASE_VERSION 1.0.0)
