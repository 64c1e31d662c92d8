#!/usr/bin/env bash
# The README's main command: installs what is missing, builds dl-launch and dl-train alone (the
# programs preset, in build/programs: no tests, no benchmarks), installs them and the Python
# modules (env/install.sh: /usr/local as root, ~/.local otherwise), creates ./workspace with
# `dl-launch init` when absent, and has dl-launch train there on the embedded default data.
# Where dl-train was not built (no LibTorch), dl-launch shows the plan it would run instead.
# The closing lines say what was installed where, and how to remove it (env/uninstall.sh).
#
#   env/demo.sh [dl-launch options...]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The image and deploy checks' tools (buildah, Slurm, cloud-init, Node...) are the test suite's,
# not the demo's.
"$root/env/install-native.sh" --no-image-tools --no-deploy-tools
"$root/env/build.sh" programs

build="$root/build/programs"
# Installed before the run, said after it (the run's output is long).
installed=$("$root/env/install.sh" "$build")
launch="$build/launcher/dl-launch"
workspace="$root/workspace"
# This checkout's template, not one installed elsewhere (/opt/dl/workspace_template).
[ -d "$workspace" ] || DL_TEMPLATE_DIR="$root/workspace_template" "$launch" init "$workspace"

# The build system knows a dl-train target only where LibTorch was found (a file left by an
# earlier build does not count).
rc=0
if cmake --build "$build" --target dl-train >/dev/null 2>&1 && [ -x "$build/trainer/dl-train" ]; then
  "$launch" --workspace "$workspace" "$@" || rc=$?
else
  # Without LibTorch there is no trainer to start: show the plan it would get.
  echo "demo.sh: dl-train was not built (no LibTorch found); showing the plan only" >&2
  "$launch" --workspace "$workspace" --dry-run "$@" || rc=$?
fi
printf '%s\n' "$installed"
exit "$rc"
