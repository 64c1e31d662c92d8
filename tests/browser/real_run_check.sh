#!/usr/bin/env bash
# The run report of a real run, opened in headless Chromium: dl-launch plans and starts dl-train
# on a Fashion-MNIST subset for 2 short epochs, then report_check.py checks the page it left
# (two markers per curve, the plan from plan.json, state finished, no reload, a silent console).
#
#   real_run_check.sh DL_LAUNCH FASHION_MNIST_DIR
#
# Exit 77 (skipped) when Debian's dataset-fashion-mnist or chromium is missing.
set -euo pipefail
launch=$1 fashion=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || { echo "skipped: no Fashion-MNIST in $fashion"; exit 77; }
command -v chromium >/dev/null || { echo "skipped: chromium is not installed"; exit 77; }
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
mkdir "$ws/data"
python3 "$here/../../bench/fashion_subset.py" "$fashion" "$ws/data" 2048 500
"$launch" --workspace "$ws" --name browser --epochs 2 --limit-batches 5 --monitor-every 0.2 \
  --nvml-library /nonexistent >"$ws/launch.out" 2>&1 || { cat "$ws/launch.out"; exit 1; }
# dl-launch names the report when the run starts.
grep -q "report     $ws/runs/browser/report.html" "$ws/launch.out" || {
  echo "dl-launch did not name the report:"; cat "$ws/launch.out"; exit 1; }
python3 "$here/report_check.py" "$ws/runs/browser/report.html" --epochs 2 --classes 0 --plan yes \
  --state finished
