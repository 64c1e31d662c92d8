#!/usr/bin/env bash
# Installs the companion module dl_plan and dl_loader (python/, copied to PREFIX/python by
# env/install-dl.sh with dl_loader's compiled module)
# into the image's Python environment: the conda env `dl` (CONDA=micromamba), else Debian's
# python3 (CONDA=debian). With pip and setuptools there, `pip install` offline (no index, no build
# isolation: nothing is downloaded), so that `pip show dl-plan` knows it; without them, a .pth file
# in that Python's site-packages. Where the image has no Python (CONDA=none), it says so.
#
#   env/install-companion.sh [PREFIX]     (default /opt/dl)
#
# Exit codes: 64 bad arguments, 66 PREFIX/python missing; a failing pip passes its own code on.
set -euo pipefail

prefix=${1:-/opt/dl}
if [ "$#" -gt 1 ] || [[ "$prefix" == -* ]]; then
  echo "install-companion.sh: expected at most one argument, the install prefix" >&2
  exit 64
fi
source=$prefix/python
if [ ! -f "$source/pyproject.toml" ]; then
  echo "install-companion.sh: $source/pyproject.toml not found (env/install-dl.sh copies python/ there)" >&2
  exit 66
fi

python=
for candidate in "${MAMBA_ROOT_PREFIX:-/opt/conda}/envs/dl/bin/python" /usr/bin/python3; do
  if [ -x "$candidate" ]; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "install-companion.sh: no Python environment in this image (CONDA=none): dl_plan not installed"
  exit 0
fi

if "$python" -c 'import pip, setuptools' >/dev/null 2>&1; then
  # A copy: pip writes build/ and *.egg-info next to the sources.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$source" "$work/src"
  "$python" -m pip install -q --no-deps --no-index --no-build-isolation "$work/src"
else
  site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$source" >"$site/dl_plan.pth"
fi
"$python" -c 'import dl_plan; print("install-companion.sh: dl_plan", dl_plan.__version__, "in", dl_plan.__file__)'
# dl_loader where its compiled module was built for this Python (the image's dl env).
if ls "$source"/dl_loader/_core*.so >/dev/null 2>&1; then
  "$python" -c 'import dl_loader; print("install-companion.sh: dl_loader", dl_loader.__version__, "in", dl_loader.__file__)'
fi
