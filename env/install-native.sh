#!/usr/bin/env bash
# Installs what the native build, the demo and the tests need on Debian 12 or Ubuntu
# 20.04/22.04/24.04, from the distribution's archive. Idempotent: installs only what is missing and
# touches the package lists only when something is. Used by the README's commands, CI and the
# Dockerfile's build stage (which passes --no-torch --no-test-data --no-image-tools
# --no-deploy-tools: it brings its own LibTorch and data, and builds and deploys no images).
# --no-test-data also leaves out the fuzz build's clang and libFuzzer (NATIVE_FUZZ_PACKAGES).
# The deploy tools are the validators of tests/deploy, and the GitHub Actions workflow validator
# (@action-validator/cli, $ACTION_VALIDATOR_VERSION) from the npm registry with node's npm.
#
#   env/install-native.sh [--no-torch] [--no-test-data] [--no-image-tools] [--no-deploy-tools]
#
# The build (CMakePresets.json, env/build.sh) needs CMake 3.21 or newer: Debian 12 (3.25), Ubuntu
# 22.04 (3.22) and 24.04 have it. On Ubuntu 20.04 (3.16) env/build.sh stops with a one-line error
# naming the version needed; a newer CMake first on PATH then does (pip install cmake, or
# env/install-conda.sh micromamba tools, as the Dockerfile's build stage does).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

want_torch=1
want_test=1
want_image_tools=1
want_deploy_tools=1
for arg in "$@"; do
  case "$arg" in
    --no-torch) want_torch=0 ;;
    --no-test-data) want_test=0 ;;
    --no-image-tools) want_image_tools=0 ;;
    --no-deploy-tools) want_deploy_tools=0 ;;
    *) echo "install-native.sh: unknown argument '$arg' (expected --no-torch, --no-test-data, --no-image-tools or --no-deploy-tools)" >&2; exit 64 ;;
  esac
done

# Root, or sudo, only where something must be installed: a user on a machine that has it all (an
# administrator installed the packages) builds without either.
sudo=()
can_install() {
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    return 1
  fi
}

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-native.sh: apt-get not found: this script supports Debian 12 and Ubuntu 20.04-24.04" >&2
  exit 69
fi

# shellcheck disable=SC2206
packages=($NATIVE_BUILD_PACKAGES $NATIVE_LIB_PACKAGES $NATIVE_REMOTE_PACKAGES $NATIVE_PYTHON_MODULE_PACKAGES)
# shellcheck disable=SC2206
[ "$want_torch" -eq 1 ] && packages+=($NATIVE_TORCH_PACKAGES)
# shellcheck disable=SC2206
[ "$want_test" -eq 1 ] && packages+=($NATIVE_TEST_PACKAGES $NATIVE_FUZZ_PACKAGES)
# shellcheck disable=SC2206
[ "$want_image_tools" -eq 1 ] && packages+=($NATIVE_IMAGE_TEST_PACKAGES)
# shellcheck disable=SC2206
[ "$want_deploy_tools" -eq 1 ] && packages+=($NATIVE_DEPLOY_TEST_PACKAGES)
# A node that carries npm (NodeSource's) conflicts with Debian's npm package: only where npm is
# missing do node and npm come from the archive.
# shellcheck disable=SC2206
[ "$want_deploy_tools" -eq 1 ] && ! command -v npm >/dev/null 2>&1 && packages+=($NATIVE_NODE_PACKAGES)

# The workflow validator from the npm registry, at the pinned version (its cli needs the core
# package of the same version). Idempotent: reinstalled only when another version is there.
install_action_validator() {
  local bin installed=''
  # The command is a link to the package's cli.mjs, beside its package.json (npm is slow to ask).
  if bin=$(command -v action-validator 2>/dev/null); then
    installed=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$(dirname "$(readlink -f "$bin")")/package.json" 2>/dev/null || true)
  fi
  [ "$installed" = "$ACTION_VALIDATOR_VERSION" ] && return 0
  if ! can_install; then
    echo "install-native.sh: @action-validator/cli@$ACTION_VALIDATOR_VERSION is not installed, and this user is not root and has no sudo: the workflow check (tests/deploy) is skipped" >&2
    return 0
  fi
  echo "install-native.sh: installing @action-validator/cli@$ACTION_VALIDATOR_VERSION from npm"
  "${sudo[@]}" npm install -g --no-fund --no-audit --loglevel=error \
    "@action-validator/cli@$ACTION_VALIDATOR_VERSION" "@action-validator/core@$ACTION_VALIDATOR_VERSION"
}

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-native.sh: all ${#packages[@]} packages present"
  [ "$want_deploy_tools" -eq 0 ] || install_action_validator
  exit 0
fi

if ! can_install; then
  echo "install-native.sh: ${#missing[@]} of ${#packages[@]} packages are missing, and this user is not root and has no sudo: as root, apt-get install ${missing[*]}; then run this again" >&2
  exit 77
fi
echo "install-native.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q

# Older releases lack some packages (Ubuntu 20.04 has no libtorch-dev): install what the archive
# has and say what it lacks; the build and the tests then skip what needs the missing parts.
available=()
for p in "${missing[@]}"; do
  # Captured first: with pipefail, `apt-cache policy | grep -q` fails whenever grep exits before
  # apt-cache has written its version table (SIGPIPE), and the package would count as missing.
  policy=$(apt-cache policy "$p" 2>/dev/null || true)
  if grep -q 'Candidate: [^(]' <<<"$policy"; then
    available+=("$p")
  else
    echo "install-native.sh: '$p' is not in this distribution's archive; parts that need it are skipped" >&2
  fi
done
if [ "${#available[@]}" -gt 0 ]; then
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${available[@]}"
fi
if [ "$want_deploy_tools" -eq 1 ]; then
  if command -v npm >/dev/null 2>&1; then
    install_action_validator
  else
    echo "install-native.sh: npm is not available: the workflow check (tests/deploy) is skipped" >&2
  fi
fi
