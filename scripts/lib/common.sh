# Shared by scripts/test and scripts/demo: package installation and build helpers.
# Sourced, not run. Works on a fresh Debian 12 machine as root (or with sudo).

# The Debian packages the build and every test need. One list for the whole project: a package
# missing here is a CI failure waiting to happen.
STAGING_DEBIAN_PACKAGES=(
  # toolchain and test frameworks
  build-essential cmake ninja-build git pkg-config clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev
  # output checks (SVG rendering), the demo report, the API reference
  librsvg2-bin python3 doxygen
)

# Layers add their own needs in scripts/lib/packages.d/<layer>.sh: packages appended to
# STAGING_DEBIAN_PACKAGES, and optionally a function staging_setup_<layer> (npm installs, ...)
# that staging_install_packages runs after apt-get.
for _f in "$(dirname "${BASH_SOURCE[0]}")"/packages.d/*.sh; do
  [ -e "$_f" ] && source "$_f"
done

staging_log() { printf '\n==> %s\n' "$*"; }

# staging_install_packages [extra packages...]: apt-get installs whatever is missing.
staging_install_packages() {
  local wanted=("${STAGING_DEBIAN_PACKAGES[@]}" "$@") missing=() p
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    staging_log "all ${#wanted[@]} Debian packages present"
  else
    staging_log "installing: ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
  local setup
  for setup in $(declare -F | awk '{print $3}' | grep '^staging_setup_' || true); do
    "$setup"
  done
}

# Build parallelism: every core, at least 2.
staging_jobs() { local n; n=$(nproc 2>/dev/null || echo 2); [ "$n" -lt 2 ] && n=2; echo "$n"; }

# staging_demo_targets BUILD_DIR: the targets scripts/demo builds in BUILD_DIR (configured), one
# per line: every library `cmake --install` installs (staging-libraries), the demo's binaries and,
# when the build has them, the Vulkan examples and the API reference. scripts/test installs from
# exactly this set, so a build made by scripts/demo can be installed.
staging_demo_targets() {
  local available t
  available=$(cmake --build "$1" --target help)
  printf '%s\n' staging-libraries staging-demo staging-sim
  for t in staging-example-vulkan staging-example-streaming staging-docs; do
    if grep -q "^$t:" <<<"$available"; then echo "$t"; fi
  done
}

# The CUDA toolkit's compiler, when this machine has one (for the cuda backend's build): nvcc on
# PATH, else under CUDA_PATH or the toolkit's usual install location.
staging_cuda_args() {
  local nvcc
  nvcc=$(command -v nvcc 2>/dev/null || true)
  for nvcc in "$nvcc" "${CUDA_PATH:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
    if [ -n "$nvcc" ] && [ -x "$nvcc" ]; then
      echo "-DCMAKE_CUDA_COMPILER=$nvcc"
      return
    fi
  done
}

# A clang++ for the libFuzzer build (Debian's clang package provides clang++; versioned names
# where only those exist).
staging_clangxx() {
  local c
  for c in clang++ clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return
    fi
  done
  return 1
}

# staging_fresh_home: sets STAGING_FRESH_HOME to a new, empty directory, removed when the script
# exits, to run a command in as HOME and XDG_CACHE_HOME: a machine where nothing (the Vulkan
# validation layer's cache file, ...) has run before.
# Each call makes another; all of them are removed at exit.
STAGING_FRESH_HOMES=()
staging_fresh_home() {
  STAGING_FRESH_HOME=$(mktemp -d "${TMPDIR:-/tmp}/staging-fresh-home.XXXXXX")
  STAGING_FRESH_HOMES+=("$STAGING_FRESH_HOME")
  trap 'rm -rf "${STAGING_FRESH_HOMES[@]}"' EXIT
}
