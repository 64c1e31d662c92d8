#!/usr/bin/env bash
# Builds dl-launch and dl-train with the image preset (env/build.sh image: build/image, no
# benchmarks) against the LibTorch at hand (/opt/libtorch when env/install-libtorch.sh unpacked
# the download there, else the system's), runs the unit tests (ctest --preset image),
# and installs what the image's runtime stage takes into PREFIX: bin/ (the two programs),
# workspace_template/, env/ (these scripts), python/ (the companion module dl_plan, which the
# runtime stage installs into its Python with env/install-companion.sh), runtime-packages.txt
# (env/runtime-packages.sh).
# The Dockerfile's build stage runs it; it works natively too (any PREFIX).
#
#   env/install-dl.sh [PREFIX]      (default /opt/dl)
#
# Exit codes: 64 bad arguments, 69 no CMake new enough for the presets (env/build.sh), 70 dl-train
# was not built (no LibTorch found); a failing build or test passes its own code on.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${1:-/opt/dl}
if [ "$#" -gt 1 ] || [[ "$prefix" == -* ]]; then
  echo "install-dl.sh: expected at most one argument, the install prefix" >&2
  exit 64
fi
build=$root/build/image

# Benchmarks stay out of the image (they want the Python reference and time).
# dl_loader is compiled for the dl env's Python: the build tools' (the same version), where the
# build stage has them (CONDA=micromamba); otherwise the distribution's python3.
tools_python=${MAMBA_ROOT_PREFIX:-/opt/conda}/envs/build-tools/bin/python
[ -x "$tools_python" ] && export DL_PYTHON=$tools_python
"$root/env/build.sh" image
# The build system knows a dl-train target only where LibTorch was found (a file left by an
# earlier build does not count).
if ! cmake --build "$build" --target dl-train >/dev/null 2>&1 || [ ! -x "$build/trainer/dl-train" ]; then
  echo "install-dl.sh: dl-train was not built: LibTorch was not found (env/install-libtorch.sh)" >&2
  exit 70
fi
(cd "$root" && ctest --preset image --parallel "$(nproc)")

mkdir -p "$prefix/bin"
install -m 0755 -s "$build/launcher/dl-launch" "$build/trainer/dl-train" "$prefix/bin/"
rm -rf "$prefix/workspace_template" "$prefix/env" "$prefix/python"
cp -r "$root/workspace_template" "$prefix/workspace_template"
cp -r "$root/env" "$prefix/env"
cp -r "$root/python" "$prefix/python"
find "$prefix/python" -name __pycache__ -prune -exec rm -rf {} +
# dl_loader's compiled module, where the build made one (Python's headers and pybind11 found).
programs=("$prefix/bin/dl-launch" "$prefix/bin/dl-train")
for module in "$build"/python/dl_loader/_core*.so; do
  [ -e "$module" ] || continue
  install -m 0755 -s "$module" "$prefix/python/dl_loader/"
  programs+=("$prefix/python/dl_loader/$(basename "$module")")
done
"$root/env/runtime-packages.sh" "${programs[@]}" >"$prefix/runtime-packages.txt"
echo "install-dl.sh: installed into $prefix; the runtime needs: $(tr '\n' ' ' <"$prefix/runtime-packages.txt")"
