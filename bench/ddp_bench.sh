#!/usr/bin/env bash
# Data-parallel step time on one machine: 1 rank x 2 threads (batch B) against 2 ranks x 1 thread
# (batch B/2 each, the same global batch), with the gradient buckets reduced during backward
# (overlap) and after it, and with overlap and each rank pinned to one core (dl-launch's
# --cpu-bind cores), over Gloo on loopback. Configurations alternate within each repetition
# (A B C, then C B A, ...) so that load from other work falls on all; prints a markdown table of
# medians over the repetitions.
#
# Columns (rank 0's "epoch 1 steps:" line, trainer/train/run/trainer.cpp):
#   step ms     time per step: upload, forward, backward, bucket wait, optimizer
#   comm ms     time per step waiting after backward for the gradient buckets and the step's
#               flags (communication that overlap did not hide); 0 for one rank
#   comm %      comm ms / step ms
#   ratio       step ms / the 1-rank step ms of the same model
#
# Usage: bench/ddp_bench.sh [--repeat N] [--models "cnn resnet18"] [--batch B] [--steps N]
#                           [--dl-train PATH] [--data DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=3
models="cnn resnet18"
batch=64
steps=30
dl_train="$repo/build/release/trainer/dl-train"
data=/usr/share/datasets/fashion-mnist

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "ddp_bench: $*" >&2; exit 64; }
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat="${2:?}"; shift 2 ;;
    --models) models="${2:?}"; shift 2 ;;
    --batch) batch="${2:?}"; shift 2 ;;
    --steps) steps="${2:?}"; shift 2 ;;
    --dl-train) dl_train="${2:?}"; shift 2 ;;
    --data) data="${2:?}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option $1 (--help lists them)" ;;
  esac
done
[ -x "$dl_train" ] || die "dl-train not found at $dl_train (env/build.sh, or --dl-train)"
[ -d "$data" ] || die "data $data not found (Debian's dataset-fashion-mnist, or --data)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows="$work/rows"

# A subset as raw IDX files (4096 training, 256 validation samples): loads at once.
subset="$work/data"
mkdir -p "$subset"
python3 - "$data" "$subset" <<'EOF_SUBSET'
import gzip, struct, sys
src, dst = sys.argv[1:3]
for kind, n in (("train", 4096), ("t10k", 256)):
    with gzip.open(f"{src}/{kind}-images-idx3-ubyte.gz") as f:
        head = f.read(16)
        _, _, rows, cols = struct.unpack(">IIII", head)
        pixels = f.read(n * rows * cols)
    with open(f"{dst}/{kind}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, rows, cols) + pixels)
    with gzip.open(f"{src}/{kind}-labels-idx1-ubyte.gz") as f:
        f.read(8)
        labels = f.read(n)
    with open(f"{dst}/{kind}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels)
EOF_SUBSET

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The "steps:" figures of one run: "<step ms> <comm ms>".
step_figures() {
  sed -n 's/.*epoch 1 steps: [0-9]* x \([0-9.]*\) ms, communication wait \([0-9.]*\) ms.*/\1 \2/p' "$1" | tail -1
}

common() {
  echo --data "$subset" --model "$1" --epochs 1 --limit-batches "$steps" --workers 0 --device cpu \
    --monitor-every 0 --log-every 1000 --seed 1
}

one_rank() {  # model
  local log="$work/one.log"
  # shellcheck disable=SC2046
  DL_RUN_DIR="$work/run-one" "$dl_train" $(common "$1") --threads 2 --batch-size "$batch" >"$log" 2>&1
  step_figures "$log"
}

two_ranks() {  # model overlap [pin]
  local port; port=$(free_port)
  for r in 0 1; do
    local pin=()
    if [ "${3:-}" = pin ]; then pin=(taskset -c "$r"); fi
    # shellcheck disable=SC2046
    WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      DL_RUN_DIR="$work/run-two" "${pin[@]}" "$dl_train" $(common "$1") --threads 1 \
      --batch-size $((batch / 2)) --overlap "$2" >"$work/two-$r.log" 2>&1 &
  done
  wait
  step_figures "$work/two-0.log"
}

for model in $models; do
  for ((i = 0; i < repeat; i++)); do
    order=("one" "overlap" "after" "pinned")
    if ((i % 2 == 1)); then order=("pinned" "after" "overlap" "one"); fi
    for c in "${order[@]}"; do
      case "$c" in
        one) echo "$model one $(one_rank "$model")" >>"$rows" ;;
        overlap) echo "$model overlap $(two_ranks "$model" true)" >>"$rows" ;;
        after) echo "$model after $(two_ranks "$model" false)" >>"$rows" ;;
        pinned) echo "$model pinned $(two_ranks "$model" true pin)" >>"$rows" ;;
      esac
    done
  done
done

python3 - "$rows" "$repeat" "$batch" "$steps" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4]
repeat, batch, steps = sys.argv[2:5]
names = {"one": "1 rank x 2 threads", "overlap": "2 ranks x 1 thread, overlap",
         "after": "2 ranks x 1 thread, no overlap",
         "pinned": "2 ranks x 1 thread, overlap, each pinned to a core"}
print(f"Global batch {batch}, {steps} steps, CPU, Gloo on loopback; medians of {repeat} runs.\n")
print("| model | configuration | step ms | comm ms | comm % | ratio |")
print("| --- | --- | --- | --- | --- | --- |")
for model in dict.fromkeys(r[0] for r in rows):
    base = None
    for c in ("one", "overlap", "after", "pinned"):
        got = [(float(r[2]), float(r[3]) if c != "one" else 0.0) for r in rows if r[0] == model and r[1] == c]
        if not got:
            continue
        step = statistics.median(g[0] for g in got)
        comm = statistics.median(g[1] for g in got)
        base = base or step
        print(f"| {model} | {names[c]} | {step:.1f} | {comm:.1f} | {100 * comm / step:.1f} | {step / base:.2f} |")
EOF
