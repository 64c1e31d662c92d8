#!/usr/bin/env bash
# End to end, Fashion-MNIST, small CNN, batch 64, 1 epoch, 2 compute threads: dl-train against the
# PyTorch reference (workspace_template/python/train.py), side by side in one sitting. Runs
# alternate A and B (ABBA from one repetition to the next, worker counts interleaved) so that load
# from other work on the machine falls on both; prints a markdown table of medians and ratios.
#
# Spans compared (see trainer/train/run/trainer.cpp and the reference's docstring):
#   train s    training part of the epoch: dl-train's samples / samples_per_second (its clock runs
#              from after Loader::start_epoch to after the last step), the reference's
#              train_seconds (after iter(loader) to after the last step). Targets: ratio <= 0.8.
#   epoch s    the same plus validation on t10k (both programs' epoch_seconds).
#   wait %     time blocked fetching the next batch / train s. Target for dl-train: <= 2%.
#
# Before each run it waits (up to --settle-max, default 900 s) for the rest of the machine to use
# fewer than --settle cores (default 0.25; 0 = never wait), and a run during which others used
# --settle cores or more is redone, --retries times at most (default 2); the table shows what
# others used during the counted runs. --keep DIR keeps every run's logs and the raw rows.
#
# Usage: bench/epoch_bench.sh [--repeat N] [--workers "0 1"] [--dl-train PATH] [--quick]
#                             [--settle CORES] [--settle-max S] [--retries N] [--data DIR]
#                             [--python PATH] [--keep DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=""
workers="0 1"
dl_train="$repo/build/release/trainer/dl-train"
python=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist
quick=0
keep=""
settle=0.25
settle_max=900
retries=2
batch=64
threads=2

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "epoch_bench: $*" >&2; exit 64; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) [[ $# -ge 2 ]] || die "--repeat needs a number"; repeat="$2"; shift 2 ;;
    --workers) [[ $# -ge 2 ]] || die "--workers needs a list, e.g. \"0 1\""; workers="$2"; shift 2 ;;
    --dl-train) [[ $# -ge 2 ]] || die "--dl-train needs a path"; dl_train="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --data) [[ $# -ge 2 ]] || die "--data needs a directory"; data="$2"; shift 2 ;;
    --keep) [[ $# -ge 2 ]] || die "--keep needs a directory"; keep="$2"; shift 2 ;;
    --settle) [[ $# -ge 2 ]] || die "--settle needs a number of cores (0 for no waiting)"; settle="$2"; shift 2 ;;
    --settle-max) [[ $# -ge 2 ]] || die "--settle-max needs seconds"; settle_max="$2"; shift 2 ;;
    --retries) [[ $# -ge 2 ]] || die "--retries needs a number"; retries="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ -z "$repeat" ]] && { [[ $quick -eq 1 ]] && repeat=1 || repeat=3; }
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat $repeat: expected a whole number >= 1"
[[ "$settle" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--settle $settle: expected a number of cores, e.g. 0.25"
[[ "$settle_max" =~ ^[0-9]+$ ]] || die "--settle-max $settle_max: expected whole seconds"
[[ "$retries" =~ ^[0-9]+$ ]] || die "--retries $retries: expected a whole number"
for w in $workers; do [[ "$w" =~ ^[0-9]+$ ]] || die "--workers: $w is not a whole number"; done
[[ -n "${workers// /}" ]] || die "--workers: give at least one worker count"
[[ -x "$dl_train" ]] || die "--dl-train $dl_train: not an executable (build it: cmake --build build/release)"
[[ -x "$python" ]] || die "--python $python: not an executable"
"$python" -c 'import torch, torchvision' 2>/dev/null \
  || die "--python $python: cannot import torch and torchvision"
[[ -d "$data" ]] || die "--data $data: no such directory (expected the Fashion-MNIST IDX files)"
dl_train="$(cd "$(dirname "$dl_train")" && pwd)/$(basename "$dl_train")"
reference="$repo/workspace_template/python/train.py"

limit=()
[[ $quick -eq 1 ]] && limit=(--limit-batches 200)

work="$(mktemp -d "${TMPDIR:-/tmp}/epoch_bench.XXXXXX")"
cleanup() { [[ -n "$keep" ]] && { mkdir -p "$keep"; cp -r "$work"/. "$keep"/; }; rm -rf "$work"; }
trap cleanup EXIT
results="$work/results.tsv"
rejected="$work/rejected.tsv"  # runs redone because others used the machine meanwhile
row="$work/row"
# Every run uses this copy: a rebuild of the original during the bench cannot mix two binaries.
cp "$dl_train" "$work/dl-train"
dl_train_origin="$dl_train"
dl_train="$work/dl-train"
printf 'program\tworkers\trep\ttrain_s\tepoch_s\twait_pct\tval_acc\twall_s\tothers\tcpu_s\tminflt\n' \
  | tee "$rejected" >"$results"

# A clean environment for both: no DL_* from the caller, no dl.conf or data/ in the working
# directory (dl-train would read them), the same data directory passed explicitly.
clean_env=(env)
while IFS= read -r name; do clean_env+=(-u "$name"); done < <(compgen -e | grep '^DL_' || true)

now() { date +%s.%N; }
# Jiffies (1/100 s) the whole machine spent busy so far, every process in every container counted.
busy_jiffies() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
# Before each run, waits (at most --settle-max seconds) until the rest of the machine used fewer
# than --settle cores over 5 s: on a shared machine, other work in the middle of a run can make it
# several times slower, and 2 compute threads on 2 cores are hit hardest.
settle_down() {
  [[ "$settle" == 0 || "$settle" == 0.0 ]] && return 0
  local start=$SECONDS j0 j1 cores
  while :; do
    j0=$(busy_jiffies); sleep 5; j1=$(busy_jiffies)
    cores=$(awk -v d=$((j1 - j0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", d / hz / 5 }')
    if awk -v c="$cores" -v s="$settle" 'BEGIN { exit !(c < s) }'; then return 0; fi
    if (( SECONDS - start >= settle_max )); then
      echo "  (machine still busy after ${settle_max} s: $cores cores in use; running anyway)" >&2
      return 0
    fi
  done
}
# Wraps a program with /usr/bin/time when there is one: its CPU seconds and page faults.
timed=()
[[ -x /usr/bin/time ]] && timed=(/usr/bin/time -f '%U %S %R' -o)
# "others cpu_s minflt": cores the rest of the machine kept busy during the run (busy jiffies
# minus this program's CPU time, over the wall time), the program's CPU seconds, minor faults.
usage_of() {  # dir j0 j1 t0 t1
  "$python" - "$@" <<'PY'
import os, sys
d, j0, j1, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
cpu, faults = float("nan"), float("nan")
if os.path.exists(os.path.join(d, "time")):
    u, s, f = open(os.path.join(d, "time")).read().split()[-3:]
    cpu, faults = float(u) + float(s), int(f)
ticks = os.sysconf("SC_CLK_TCK")
print(f"{((j1 - j0) / ticks - cpu) / (t1 - t0):.2f}\t{cpu:.2f}\t{faults}")
PY
}

run_dl_train() {  # workers rep try: appends one row to $row
  local w="$1" rep="$2" dir="$work/dl-train-w$1-r$2-t$3"
  mkdir -p "$dir/cwd"
  local t0 t1 j0 j1
  j0=$(busy_jiffies) t0=$(now)
  if ! (cd "$dir/cwd" && "${timed[@]}" ${timed:+"$dir/time"} \
        "${clean_env[@]}" DL_RUN_DIR="$dir/run" "$dl_train" --data "$data" \
        --epochs 1 --batch-size "$batch" --threads "$threads" --workers "$w" \
        --monitor-every 0 --log-every 100000 "${limit[@]}" >"$dir/log" 2>&1); then
    tail -n 20 "$dir/log" >&2
    die "dl-train failed (workers $w); log above"
  fi
  t1=$(now) j1=$(busy_jiffies)
  # metrics.csv, by column name: val_acc, epoch_seconds (training + validation),
  # samples_per_second (over the training span), data_wait_percent (of the training span).
  # Samples trained: whole batches of the training set (drop_last), at most --limit-batches.
  local size batches samples
  size=$(sed -n 's/.* data: .* (\([0-9]*\) training, .*/\1/p' "$dir/log" | head -n 1)
  [[ -n "$size" ]] || die "dl-train's log does not name its training set size: $dir/log"
  batches=$(( size / batch ))
  (( ${#limit[@]} > 0 && limit[1] < batches )) && batches=${limit[1]}
  samples=$(( batches * batch ))
  awk -F, -v w="$w" -v rep="$rep" -v t0="$t0" -v t1="$t1" -v n="$samples" \
      -v usage="$(usage_of "$dir" "$j0" "$j1" "$t0" "$t1")" '
      NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i }
      NR == 2 {
        printf "dl-train\t%s\t%s\t%.3f\t%s\t%s\t%s\t%.3f\t%s\n", w, rep,
               n / $col["samples_per_second"], $col["epoch_seconds"], $col["data_wait_percent"],
               $col["val_acc"], t1 - t0, usage
      }' "$dir/run/metrics.csv" >"$row"
}

run_reference() {  # workers rep try: appends one row to $row
  local w="$1" rep="$2" dir="$work/reference-w$1-r$2-t$3"
  mkdir -p "$dir"
  local t0 t1 j0 j1
  j0=$(busy_jiffies) t0=$(now)
  if ! (cd "$dir" && "${timed[@]}" ${timed:+"$dir/time"} \
        "${clean_env[@]}" PYTHONPATH="$repo/python" "$python" "$reference" --data "$data" --epochs 1 \
        --batch-size "$batch" --threads "$threads" --workers "$w" --json "${limit[@]}" \
        >"$dir/out.json" 2>"$dir/log"); then
    tail -n 20 "$dir/log" >&2
    die "reference failed (workers $w); log above"
  fi
  t1=$(now) j1=$(busy_jiffies)
  "$python" - "$dir/out.json" "$w" "$rep" "$t0" "$t1" "$(usage_of "$dir" "$j0" "$j1" "$t0" "$t1")" \
      >"$row" <<'EOF'
import json, sys
m = json.loads(open(sys.argv[1]).read().splitlines()[-1])
w, rep, t0, t1, usage = sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
print(f"reference\t{w}\t{rep}\t{m['train_seconds']:.3f}\t{m['epoch_seconds']:.3f}\t"
      f"{m['data_wait_percent']:.2f}\t{m['val_acc']:.6f}\t{t1 - t0:.3f}\t{usage}")
EOF
}

# Both drop the last short batch, so both train on the same number of samples.
echo "epoch_bench: $repeat repetition(s), workers {$workers}, batch $batch, $threads threads$(
  [[ $quick -eq 1 ]] && echo ", quick: 200 batches")" >&2
echo "epoch_bench: dl-train $dl_train_origin ($(git -C "$repo" describe --always --dirty 2>/dev/null \
  || echo "no git")), reference $reference with $python" >&2
[[ "$settle" == 0 || "$settle" == 0.0 ]] || echo "epoch_bench: waiting before each run for others to use < $settle cores (at most $settle_max s)" >&2
echo "epoch_bench: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
load_start="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((rep = 1; rep <= repeat; ++rep)); do
  for w in $workers; do
    if (( rep % 2 == 1 )); then order=(run_dl_train run_reference); else order=(run_reference run_dl_train); fi
    for f in "${order[@]}"; do
      for ((try = 0; ; ++try)); do
        settle_down
        "$f" "$w" "$rep" "$try"
        awk -F'\t' '{printf "  %-9s workers %s rep %s: train %6.2f s, epoch %6.2f s, wait %5.2f%%, val %.4f, CPU %s s, others %s cores", $1, $2, $3, $4, $5, $6, $7, $10, $9}' "$row" >&2
        # A run during which others kept more than --settle cores busy is redone (--retries times
        # at most; the last try counts whatever happened).
        if (( try < retries )) && awk -F'\t' -v s="$settle" '{ exit !(s > 0 && $9 >= s) }' "$row"; then
          echo " (others were busy: redone)" >&2
          cat "$row" >>"$rejected"
        else
          echo >&2
          cat "$row" >>"$results"
          break
        fi
      done
    done
  done
done
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "epoch_bench: load average at end: $load_end" >&2

"$python" - "$results" "$repeat" "$load_start" "$load_end" "$rejected" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
repeat, load_start, load_end = sys.argv[2], sys.argv[3], sys.argv[4]
redone = len(list(csv.DictReader(open(sys.argv[5]), delimiter="\t")))
def med(prog, w, key):
    return statistics.median(float(r[key]) for r in rows if r["program"] == prog and r["workers"] == w)
workers = []
for r in rows:
    if r["workers"] not in workers:
        workers.append(r["workers"])
print(f"Medians of {repeat} run(s) each ({redone} more redone because others were busy); load "
      f"average {load_start} at start, {load_end} at end.")
print("Others' load: cores the rest of the machine kept busy during the runs (dl-train / reference).\n")
print("| workers | dl-train train s | reference train s | ratio (<= 0.8) | dl-train epoch s "
      "| reference epoch s | dl-train wait % (<= 2) | reference wait % | dl-train val acc "
      "| reference val acc | others' load, cores |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for w in workers:
    a, b = med("dl-train", w, "train_s"), med("reference", w, "train_s")
    ratio = a / b
    wa = med("dl-train", w, "wait_pct")
    print(f"| {w} | {a:.2f} | {b:.2f} | {ratio:.3f} {'ok' if ratio <= 0.8 else 'MISSED'} "
          f"| {med('dl-train', w, 'epoch_s'):.2f} | {med('reference', w, 'epoch_s'):.2f} "
          f"| {wa:.2f} {'ok' if wa <= 2.0 else 'MISSED'} | {med('reference', w, 'wait_pct'):.2f} "
          f"| {100 * med('dl-train', w, 'val_acc'):.2f}% | {100 * med('reference', w, 'val_acc'):.2f}% "
          f"| {med('dl-train', w, 'others'):.2f} / {med('reference', w, 'others'):.2f} |")
EOF
