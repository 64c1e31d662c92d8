# Sourced by interactive bash shells of the image (/etc/bash.bashrc): makes the tutorial's
# `conda activate dl` work and activates `dl`. micromamba stands behind `conda`; in an image built
# with CONDA=debian the system Python (Debian's python3-torch) is the env, with CONDA=none there is
# none. Installed by env/install-conda.sh.
# shellcheck shell=bash

if [ -x /opt/conda/bin/micromamba ]; then
  export MAMBA_ROOT_PREFIX=/opt/conda
  eval "$(/opt/conda/bin/micromamba shell hook --shell bash)"
  conda() { micromamba "$@"; }
  micromamba activate dl
else
  conda() {
    case "${1:-}" in
      activate | deactivate)
        if [ -f /opt/dl/python-env ]; then return 0; fi
        echo "conda: this image was built without a Python environment (CONDA=none)" >&2
        return 69
        ;;
      *)
        echo "conda: only 'conda activate dl' is provided here; the Python packages are Debian's" >&2
        return 64
        ;;
    esac
  }
fi
