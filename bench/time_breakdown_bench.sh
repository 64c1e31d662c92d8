#!/usr/bin/env bash
# Where the time goes (issue 38), measured by training, one sitting, A and B alternated:
#   1. the breakdown's cost: the small CNN on a Fashion-MNIST subset, --time-breakdown true
#      against false, samples/s from metrics.csv;
#   2. three runs slow on purpose, each with its verdict line and prescriptions as dl-train
#      printed them, and the samples/s before and after applying the prescription:
#      a. data-bound: photo-sized JPEGs (800-1000 px) loaded by the training thread (--workers
#         0) for 32 px crops; after: the prescribed `dl-train pack --max-side`, trained from the
#         shards;
#      b. checkpoint-bound: ResNet-18 writing last.pt every 2 steps; after: the prescribed
#         --checkpoint-every interval;
#      c. compute-bound: ResNet-18 on 28 px Fashion-MNIST at --threads 1 (a core idle); after:
#         the prescribed --threads, and the verdict with every core in use (no prescription).
# With --script, the same through the template's python/train.py on dl_plan (the tutorial's
# script, as a user runs it; its DataLoader is torch's, --loader torch), with the prescriptions
# dl_plan.time_report() printed: a. no DataLoader workers (--workers 0 --threads 2) and after the
# prescribed dl_loader (--loader dl, measured on the files); b. --checkpoint-every 2 and after the prescribed interval; c. as
# above. The cost is time-breakdown = false (DL_TIME_BREAKDOWN) against on.
# Prints markdown tables: medians over --repeat rounds, ratios after/before.
#
# Usage: bench/time_breakdown_bench.sh [--repeat 3] [--build DIR] [--keep DIR] [--script]
#                                      [--only cost|data|checkpoint|compute]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(dirname "$here")/build/release"
repeat=3
keep=""
only=""
script=false
die() { echo "time_breakdown_bench: $*" >&2; exit 64; }
# want SECTION: whether --only leaves it in.
want() { [[ -z "$only" || "$only" == "$1" ]]; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) repeat="${2:?}"; shift 2 ;;
    --build) build="${2:?}"; shift 2 ;;
    --keep) keep="${2:?}"; shift 2 ;;
    --only) only="${2:?}"; shift 2 ;;
    --script) script=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ -z "$only" || "$only" =~ ^(cost|data|checkpoint|compute)$ ]] ||
  die "--only: expected cost, data, checkpoint or compute, got $only"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat: expected a whole number >= 1, got $repeat"
repo=$(dirname "$here")
train=$build/trainer/dl-train
make_set=$build/bench/make_jpeg_set
[[ -x "$train" && -x "$make_set" ]] || die "no dl-train and make_jpeg_set in $build (env/build.sh release)"
fashion=/usr/share/datasets/fashion-mnist
[[ -f "$fashion/train-images-idx3-ubyte.gz" ]] || die "$fashion missing (apt-get install dataset-fashion-mnist)"
ws=${keep:-$(mktemp -d)}
mkdir -p "$ws"
[[ -n "$keep" ]] || trap 'rm -rf "$ws"' EXIT
cd "$ws"
if $script; then echo "Through workspace_template/python/train.py on dl_plan (torch's DataLoader)"; echo; fi

mkdir -p fashion && /usr/bin/python3 "$here/fashion_subset.py" "$fashion" fashion 4096 512
if want data && [[ ! -d photos ]]; then  # train/ and val/ of class folders
  "$make_set" --out photos --per-class 40 --sides 800-1000 >/dev/null
fi

# rate NAME: samples/s of runs/NAME's last epoch.
rate() {
  /usr/bin/python3 -c 'import csv,sys; print(list(csv.DictReader(open(sys.argv[1])))[-1]["samples_per_second"])' \
    "runs/$1/metrics.csv"
}
# run NAME ARGS...: one dl-train run (or, with --script, one of train.py), its log kept as
# NAME.log, its metrics.csv in runs/NAME; fails loudly.
run() {
  local name=$1
  shift
  if $script; then
    PYTHONPATH="$build/python" /usr/bin/python3 "$repo/workspace_template/python/train.py" \
      --epochs 1 --run-dir "runs/$name" --overwrite --log-every 0 "$@" >"$name.log" 2>&1
  else
    "$train" --monitor-every 0 --epochs 1 --name "$name" --overwrite "$@" >"$name.log" 2>&1
  fi || { tail -5 "$name.log" >&2; die "run $name failed (log: $ws/$name.log)"; }
}
# table TITLE A_LABEL "A_RATES" B_LABEL "B_RATES"
table() {
  /usr/bin/python3 - "$@" <<'PY'
import statistics, sys
title, a_label, a, b_label, b = sys.argv[1:6]
a = [float(x) for x in a.split()]
b = [float(x) for x in b.split()]
print(f"### {title}\n\n| run | samples/s (median) | runs | ratio |\n|---|---|---|---|")
ma, mb = statistics.median(a), statistics.median(b)
print(f"| {a_label} | {ma:.0f} | {' '.join('%.0f' % x for x in a)} | 1.00x |")
print(f"| {b_label} | {mb:.0f} | {' '.join('%.0f' % x for x in b)} | {mb / ma:.2f}x |\n")
PY
}
# verdict NAME: the verdict line and the prescriptions of runs NAME's log.
verdict() {
  echo '```text'
  grep -E -- '-bound: |  -> ' "$1.log" | sed 's/^\[[0-9:]*\] info //'
  echo '```'
  echo
}

# in_turn R A B: A then B in odd rounds, B then A in even ones.
in_turn() { if (($1 % 2)); then echo "$2 $3"; else echo "$3 $2"; fi; }

declare -A rates
if want cost; then
echo "## 1. The breakdown's cost (CNN, 4096 Fashion-MNIST samples, batch 64)"
echo
for r in $(seq "$repeat"); do
  for mode in $(in_turn "$r" true false); do
    if $script; then
      DL_TIME_BREAKDOWN=$mode run "cost-$mode" --data fashion --batch-size 64 --loader torch
    else
      run "cost-$mode" --data fashion --batch-size 64 --time-breakdown "$mode"
    fi
    rates[cost-$mode]+="$(rate "cost-$mode") "
  done
done
table "--time-breakdown false against true" "false" "${rates[cost-false]}" "true" "${rates[cost-true]}"
fi

if want data && $script; then
echo "## 2a. Data-bound: 800-1000 px JPEGs, torch's DataLoader with 0 workers, 32 px crops"
echo
data=(--data photos --image-size 32 --batch-size 32 --loader torch --threads 2)
run data-before "${data[@]}" --workers 0
verdict data-before
grep -q 'dl_loader (dl-train.s pipeline.*--loader dl in the template' data-before.log ||
  die "the data-bound run prescribed no dl_loader (log: $ws/data-before.log)"
for r in $(seq "$repeat"); do
  for which in $(in_turn "$r" before after); do
    if [[ $which == before ]]; then loader=torch; else loader=dl; fi
    run "data-$which" "${data[@]}" --workers 0 --loader "$loader"
    rates[data-$which]+="$(rate "data-$which") "
  done
done
table "data-bound: torch's DataLoader against the prescribed --loader dl (both 0 workers)" \
  "--loader torch" "${rates[data-before]}" "--loader dl" "${rates[data-after]}"
verdict data-after
elif want data; then
echo "## 2a. Data-bound: 800-1000 px JPEGs, --workers 0, 32 px crops"
echo
data=(--image-size 32 --batch-size 32 --workers 0)
run data-before --data photos/train "${data[@]}"
verdict data-before
side=$(grep -o 'pack --max-side [0-9]*' data-before.log | head -1 | awk '{print $3}')
[[ -n "$side" ]] || die "the data-bound run prescribed no pack (log: $ws/data-before.log)"
rm -rf shards && mkdir shards
"$train" pack --data photos/train --out shards --max-side "$side" >pack.log 2>&1 || die "pack failed"
for r in $(seq "$repeat"); do
  for which in $(in_turn "$r" before after); do
    if [[ $which == before ]]; then src=photos/train; else src=shards; fi
    run "data-$which" --data "$src" "${data[@]}"
    rates[data-$which]+="$(rate "data-$which") "
  done
done
table "data-bound: as stored against dl-train pack --max-side $side" \
  "as stored" "${rates[data-before]}" "packed" "${rates[data-after]}"
verdict data-after
fi

if want checkpoint; then
echo "## 2b. Checkpoint-bound: ResNet-18, last.pt every 2 steps"
echo
ck=(--data fashion --model resnet18 --batch-size 16 --limit-batches 24)
if $script; then ck+=(--loader torch); fi
run ck-before "${ck[@]}" --checkpoint-every 2
verdict ck-before
every=$(grep -o 'checkpoint-every [0-9]*[sm]' ck-before.log | head -1 | awk '{print $2}')
[[ -n "$every" ]] || die "the checkpoint-bound run prescribed no interval (log: $ws/ck-before.log)"
for r in $(seq "$repeat"); do
  for which in $(in_turn "$r" before after); do
    if [[ $which == before ]]; then interval=2; else interval=$every; fi
    run "ck-$which" "${ck[@]}" --checkpoint-every "$interval"
    rates[ck-$which]+="$(rate "ck-$which") "
  done
done
table "checkpoint-bound: --checkpoint-every 2 against $every" \
  "every 2 steps" "${rates[ck-before]}" "every $every" "${rates[ck-after]}"
fi

if want compute; then
echo "## 2c. Compute-bound: ResNet-18 on 28 px Fashion-MNIST, --threads 1"
echo
cp=(--data fashion --model resnet18 --batch-size 32 --limit-batches 24 --workers 0)
if $script; then cp+=(--loader torch); fi
run compute-before "${cp[@]}" --threads 1
verdict compute-before
threads=$(grep -o -- '--threads [0-9]* gives the steps' compute-before.log | head -1 | awk '{print $2}')
[[ -n "$threads" ]] || die "the compute-bound run prescribed no threads (log: $ws/compute-before.log)"
for r in $(seq "$repeat"); do
  for which in $(in_turn "$r" before after); do
    if [[ $which == before ]]; then t=1; else t=$threads; fi
    run "compute-$which" "${cp[@]}" --threads "$t"
    rates[compute-$which]+="$(rate "compute-$which") "
  done
done
table "compute-bound: --threads 1 against $threads" \
  "1 thread" "${rates[compute-before]}" "$threads threads" "${rates[compute-after]}"
verdict compute-after
fi
