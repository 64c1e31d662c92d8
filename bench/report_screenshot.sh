#!/usr/bin/env bash
# Regenerates docs/report.png: a real run's report (dl-launch + dl-train on a Fashion-MNIST
# subset, a few short epochs on the CPU) photographed by headless Chromium at a laptop's
# 1366-pixel width. Takes a couple of minutes.
#
#   bench/report_screenshot.sh [BUILD_DIR] [OUT.png]     (defaults: build/release, docs/report.png)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build/release}
out=${2:-$root/docs/report.png}
fashion=/usr/share/datasets/fashion-mnist
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
# A folder named for the data set: an IDX folder whose path says fashion gets Fashion-MNIST's
# class names.
mkdir -p "$ws/data/fashion-mnist"
python3 "$root/bench/fashion_subset.py" "$fashion" "$ws/data/fashion-mnist" 20000 2000
"$build/launcher/dl-launch" --workspace "$ws" --name fashion-cnn --epochs 8 --limit-batches 60 \
  --data data/fashion-mnist \
  --monitor-every 1 --nvml-library /nonexistent
sandbox=()
[ "$(id -u)" -ne 0 ] || sandbox=(--no-sandbox)
chromium --headless "${sandbox[@]}" --disable-gpu --user-data-dir="$ws/profile" \
  --host-resolver-rules="MAP * ~NOTFOUND" --hide-scrollbars --window-size=1366,900 \
  --screenshot="$out" "file://$ws/runs/fashion-cnn/report.html"
echo "wrote $out"
