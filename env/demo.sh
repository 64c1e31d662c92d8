#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and has dl-launch train on the
# embedded default data in ./workspace (created from workspace_template/ when absent).
#
#   env/demo.sh [dl-launch options...]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/env/install-native.sh" --no-image-tools
"$root/env/build.sh" release

bin="$root/build/release/launcher"
workspace="$root/workspace"
[ -d "$workspace" ] || cp -r "$root/workspace_template" "$workspace"

if [ -x "$root/build/release/trainer/dl-train" ]; then
  exec "$bin/dl-launch" --workspace "$workspace" "$@"
fi
# Without LibTorch there is no trainer to start: show the plan it would get.
echo "demo.sh: dl-train was not built (no LibTorch found); showing the plan only" >&2
exec "$bin/dl-launch" --workspace "$workspace" --dry-run "$@"
