# staging::webgpu: Debian's emscripten (em++ 3.1.6 with webgpu/webgpu.h) builds the WebAssembly
# side; Debian's chromium runs the browser tests and the demo headless (WebGPU on SwiftShader);
# playwright-core from npm drives it (tools/webgpu-harness, no browser download).
# Sourced by scripts/lib/common.sh.

STAGING_DEBIAN_PACKAGES+=(emscripten chromium nodejs)

# npm ci in tools/webgpu-harness (playwright-core, pinned by its package-lock.json). Skipped when
# node_modules already matches the lock file. Node.js 20+ and npm come with the machine; where
# npm is missing, Debian's is installed.
staging_setup_webgpu() {
  local root harness
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
  harness="$root/tools/webgpu-harness"
  [ -f "$harness/package-lock.json" ] || return 0
  if ! command -v npm >/dev/null 2>&1; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends npm
  fi
  if [ -f "$harness/node_modules/.package-lock.json" ] &&
     [ "$harness/node_modules/.package-lock.json" -nt "$harness/package-lock.json" ]; then
    staging_log "webgpu: playwright-core already installed"
    return 0
  fi
  staging_log "webgpu: npm ci in tools/webgpu-harness (playwright-core)"
  (cd "$harness" && npm ci --no-audit --no-fund --loglevel=error)
}
