#!/usr/bin/env bash
# What exact resume costs a ResNet-50 run (about 280 MB of checkpoint: weights and AdamW's two
# moments) on this machine's CPU:
#   1. the step stall of a clock checkpoint: dl-train --checkpoint-every K (steps) reports, per
#      write, how long training waited for the copy of the state and how long the write took
#      beside it; and the epoch's wall time with --checkpoint-every K against 0, the two
#      alternated, so the writer thread's share of the cores shows up too;
#   2. the time to save at a stop signal: SIGTERM at a random step, the seconds until the process
#      exited with last.pt in place (the step in progress is finished first), and the save's own
#      seconds as dl-train reports them.
# Prints one table per part, medians over the repetitions.
#
# Usage: bench/checkpoint_bench.sh [--repeat N (3)] [--steps S (24)] [--every K (6)]
#        [--batch B (8)] [--dl-train PATH] [--dir DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=3 steps=24 every=6 batch=8
dl_train="$repo/build/release/trainer/dl-train"
dir=""
die() { echo "checkpoint_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) repeat="${2:?}"; shift 2 ;;
    --steps) steps="${2:?}"; shift 2 ;;
    --every) every="${2:?}"; shift 2 ;;
    --batch) batch="${2:?}"; shift 2 ;;
    --dl-train) dl_train="${2:?}"; shift 2 ;;
    --dir) dir="${2:?}"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
for n in "$repeat" "$steps" "$every" "$batch"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "expected whole numbers >= 1, got $n"
done
[[ -x "$dl_train" ]] || die "$dl_train is not an executable (build it, or pass --dl-train)"
fashion=/usr/share/datasets/fashion-mnist
[[ -f "$fashion/train-images-idx3-ubyte.gz" ]] || die "$fashion missing (apt-get install dataset-fashion-mnist)"
if [[ -z "$dir" ]]; then dir="$(mktemp -d "${TMPDIR:-/tmp}/dl-ckpt.XXXXXX")"; trap 'rm -rf "$dir"' EXIT; fi
mkdir -p "$dir/data" "$dir/ws"
python3 "$here/fashion_subset.py" "$fashion" "$dir/data" $((steps * batch)) 16

median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# Every run starts in the workspace; the stop runs in the background are dl-train itself ($!).
cd "$dir/ws"
common=(--model resnet50 --data "$dir/data" --epochs 1 --batch-size "$batch" --threads 2
  --workers 1 --monitor-every 0 --log-every 1 --overwrite)
train() {  # NAME EVERY
  "$dl_train" "${common[@]}" --name "$1" --checkpoint-every "$2"
}

# 1. The clock checkpoint, alternated with none.
: >"$dir/copy_ms"; : >"$dir/write_s"; : >"$dir/epoch_on"; : >"$dir/epoch_off"
for ((i = 0; i < repeat; i++)); do
  for mode in on off; do
    start=$(date +%s.%N)
    if [[ $mode == on ]]; then
      train clock "$every" >"$dir/out" 2>&1 || die "training failed: $(tail -3 "$dir/out")"
      sed -n 's/.*training waited \([0-9.]*\) ms for the copy, the write took \([0-9.]*\) s.*/\1 \2/p' \
        "$dir/out" | while read -r c w; do echo "$c" >>"$dir/copy_ms"; echo "$w" >>"$dir/write_s"; done
    else
      train clock 0 >"$dir/out" 2>&1 || die "training failed: $(tail -3 "$dir/out")"
    fi
    # The epoch's own seconds, from its line (start-up and validation excluded).
    sed -n 's/.*epoch 1\/1: .* | \([0-9.]*\) s, .*/\1/p' "$dir/out" >>"$dir/epoch_$mode"
  done
done
writes=$(wc -l <"$dir/copy_ms")
echo "ResNet-50, batch $batch, $steps steps an epoch, last.pt every $every steps, $repeat runs each (alternated)"
echo "| writes | step stall: copy (median ms) | write beside training (median s) | epoch with (median s) | epoch without (median s) | cost per write (s) |"
echo "|---|---|---|---|---|---|"
on=$(median <"$dir/epoch_on"); off=$(median <"$dir/epoch_off")
per_run=$((writes / repeat))
awk -v w="$writes" -v c="$(median <"$dir/copy_ms")" -v s="$(median <"$dir/write_s")" -v on="$on" -v off="$off" -v k="$per_run" \
  'BEGIN {printf "| %d | %.0f | %.2f | %.2f | %.2f | %.2f |\n", w, c, s, on, off, (k > 0 ? (on - off) / k : 0)}'

# 2. SIGTERM at a random step.
: >"$dir/exit_s"; : >"$dir/save_s"
RANDOM=$$
for ((i = 0; i < repeat; i++)); do
  at=$((2 + RANDOM % (steps - 4)))
  "$dl_train" "${common[@]}" --name stop --checkpoint-every 0 >"$dir/out" 2>&1 &
  pid=$!
  until grep -q " batch $at/" "$dir/out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || die "the run ended before step $at: $(tail -3 "$dir/out")"
    sleep 0.05
  done
  sent=$(date +%s.%N)
  kill -TERM "$pid"
  code=0; wait "$pid" || code=$?
  done_at=$(date +%s.%N)
  [[ $code -eq 143 ]] || die "exit $code after SIGTERM, expected 143: $(tail -3 "$dir/out")"
  awk -v a="$sent" -v b="$done_at" 'BEGIN {print b - a}' >>"$dir/exit_s"
  sed -n 's/.*: saved .* in \([0-9.]*\) s; --resume.*/\1/p' "$dir/out" >>"$dir/save_s"
done
echo
echo "SIGTERM at a random step, $repeat times"
echo "| signal to exit, last.pt written (median s) | of which the save (median s) | slowest exit (s) |"
echo "|---|---|---|"
awk -v e="$(median <"$dir/exit_s")" -v s="$(median <"$dir/save_s")" -v m="$(sort -g "$dir/exit_s" | tail -1)" \
  'BEGIN {printf "| %.2f | %.2f | %.2f |\n", e, s, m}'
