#!/usr/bin/env bash
# Installs the image's Python environment `dl` or the build stage's tools.
#
#   env/install-conda.sh micromamba|debian|none dl|tools
#
#   micromamba dl     micromamba ($MICROMAMBA_VERSION) in /opt/conda/bin, the env `dl` from the
#                     lock env/lock/ when one is committed (env/lock.sh: exact URLs and checksums),
#                     else from env/environment.yml; the system libraries opencv-python needs, the
#                     shell hook that makes `conda activate dl` work (env/conda-shell.sh)
#   micromamba tools  the env `build-tools` from env/build-tools.yml (CMake, Ninja), linked into
#                     /usr/local/bin
#   debian dl         Debian's python3-torch and friends stand in for `dl` (an offline build)
#   none dl           no Python at all; `conda activate dl` says so
#   debian|none tools nothing: the distribution's CMake and Ninja (env/install-native.sh)
#
# Needs root and apt lists (apt-get update) for `micromamba dl` and `debian dl`.
# Exit codes: 64 bad arguments, 69 a download failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

kind=${1:-}
what=${2:-}
case "$kind/$what" in
  micromamba/dl | micromamba/tools | debian/dl | none/dl | debian/tools | none/tools) ;;
  *)
    echo "install-conda.sh: unknown '$kind $what' (expected micromamba|debian|none, then dl|tools)" >&2
    exit 64
    ;;
esac

export MAMBA_ROOT_PREFIX=/opt/conda
micromamba=$MAMBA_ROOT_PREFIX/bin/micromamba

install_micromamba() {
  [ -x "$micromamba" ] && return 0
  local url=https://github.com/mamba-org/micromamba-releases/releases/download/${MICROMAMBA_VERSION}-0/micromamba-linux-64
  mkdir -p "$MAMBA_ROOT_PREFIX/bin"
  if ! curl -fsSL --retry 3 -o "$micromamba" "$url"; then
    echo "install-conda.sh: could not download $url" >&2
    exit 69
  fi
  chmod 755 "$micromamba"
}

install_shell_hook() {
  install -m 0644 "$here/conda-shell.sh" /etc/dl-conda-shell.sh
  # Debian's and Ubuntu's /etc/bash.bashrc is read by interactive shells only (it returns early
  # otherwise), which is where `conda activate` belongs.
  grep -q dl-conda-shell /etc/bash.bashrc 2>/dev/null ||
    echo 'if [ -f /etc/dl-conda-shell.sh ]; then . /etc/dl-conda-shell.sh; fi' >>/etc/bash.bashrc
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

case "$kind/$what" in
  micromamba/tools)
    install_micromamba
    "$micromamba" create -y -q -f "$here/build-tools.yml"
    for tool in cmake ctest ninja; do
      ln -sf "$MAMBA_ROOT_PREFIX/envs/build-tools/bin/$tool" /usr/local/bin/$tool
    done
    "$micromamba" clean -a -y -q
    ;;
  micromamba/dl)
    # libgl1 and libglib2.0-0: opencv-python's wheel links libGL.so.1 and libgthread-2.0.so.0.
    apt_install libgl1 libglib2.0-0
    install_micromamba
    if [ -f "$here/lock/conda-linux-64.lock" ] && [ -f "$here/lock/pip.lock" ]; then
      # The lock: every package by URL and md5, the wheel by sha256; nothing is resolved again.
      "$micromamba" create -y -q -n dl -f "$here/lock/conda-linux-64.lock"
      "$MAMBA_ROOT_PREFIX/envs/dl/bin/pip" install -q --no-deps --require-hashes -r "$here/lock/pip.lock"
    else
      "$micromamba" create -y -q -f "$here/environment.yml"
    fi
    # The package caches are not needed once the env exists (several GB with CUDA's libraries).
    "$micromamba" clean -a -f -y -q
    install_shell_hook
    ;;
  debian/dl)
    # python-is-python3: `python`, as the tutorial and `dl-launch -- python train.py` spell it.
    apt_install python3 python-is-python3 python3-torch python3-torchvision python3-numpy python3-pandas \
      python3-matplotlib python3-seaborn python3-tqdm python3-psutil python3-opencv
    mkdir -p /opt/dl && touch /opt/dl/python-env
    install_shell_hook
    ;;
  none/dl)
    install_shell_hook
    ;;
  */tools)
    echo "install-conda.sh: $kind: the distribution's CMake and Ninja are used"
    ;;
esac
echo "install-conda.sh: $kind $what ready"
