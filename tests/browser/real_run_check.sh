#!/usr/bin/env bash
# The run report of real runs, opened in headless Chromium, checked by report_check.py:
#  * dl-launch plans and starts dl-train on a Fashion-MNIST subset for 2 short epochs: two
#    markers per curve, the plan from plan.json, state finished, no reload, a silent console;
#  * dl-train alone with a learning rate that makes the loss diverge (exit 80): state failed with
#    the error, the note that there is no plan.json;
#  * dl-train alone stopped by SIGTERM as soon as it names its report (exit 143): state stopped.
#
#   real_run_check.sh DL_LAUNCH DL_TRAIN FASHION_MNIST_DIR
#
# Exit 77 (skipped) when Debian's dataset-fashion-mnist or chromium is missing.
set -euo pipefail
launch=$1 train=$2 fashion=$3
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
python3 "$here/report_check.py" "$ws/runs/browser/report.html" --epochs 2 --classes 10 --plan yes \
  --state finished

# A run that fails: the page says so, with the error, and no longer reloads.
cd "$ws"
code=0
"$train" --data data --epochs 2 --limit-batches 8 --workers 0 --threads 1 --lr 1e6 --name failed \
  >failed.out 2>&1 || code=$?
[ "$code" -eq 80 ] || { echo "expected exit 80 (diverged), got $code:"; cat failed.out; exit 1; }
grep -q 'id="state-detail" class="muted">loss became' runs/failed/report.html || {
  echo "the failed run's page does not show the error"; exit 1; }
python3 "$here/report_check.py" runs/failed/report.html --epochs 0 --classes 0 --plan no \
  --state failed

# A run stopped by a signal.
code=0
python3 "$here/run_and_stop.py" "report: " "$train" --data data --epochs 2 --workers 0 --threads 1 \
  --name stopped >stopped.out 2>&1 || code=$?
[ "$code" -eq 143 ] || { echo "expected exit 143 (SIGTERM), got $code:"; cat stopped.out; exit 1; }
grep -q 'received in epoch 1; --resume continues the run' runs/stopped/report.html || {
  echo "the stopped run's page does not say why"; exit 1; }
python3 "$here/report_check.py" runs/stopped/report.html --epochs 0 --classes 0 --plan no \
  --state stopped
