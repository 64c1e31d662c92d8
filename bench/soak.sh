#!/usr/bin/env bash
# Soak: a long dl-train run (default 30 epochs of the small CNN on 4096 Fashion-MNIST training and
# 1000 test images, 2 loader workers, resource monitor every 5 s), sampled at each epoch's line:
# /proc/<pid>/status (VmRSS, VmHWM, Threads) and the number of open descriptors
# (/proc/<pid>/fd). Prints one row per epoch, then a verdict: resident memory growth from epoch 2
# to the last (MiB and %, and the least-squares slope over those epochs), descriptors and threads
# at epoch 2 and at the end. Epoch 1 is the warm-up (allocator pools, first checkpoint buffers),
# so growth is counted from epoch 2. The run has one epoch more than sampled: at the last epoch's
# line the program is already shutting down (loader threads joined), which is not a steady state.
# Passes when the growth is at most --max-growth MiB (default 8) and the descriptor and thread
# counts are those of epoch 2; exit status 1 otherwise.
#
# Usage: bench/soak.sh [--epochs N] [--train N] [--val N] [--model NAME] [--workers N]
#                      [--threads N] [--max-growth MIB] [--dl-train PATH] [--python PATH] [--keep]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
epochs=30
train=4096
val=1000
model=cnn
workers=2
threads=1
max_growth=8
dl_train="$repo/build/release/trainer/dl-train"
python=/usr/bin/python3
keep=0

die() { echo "soak: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --epochs) [[ $# -ge 2 ]] || die "--epochs needs a number"; epochs="$2"; shift 2 ;;
    --train) [[ $# -ge 2 ]] || die "--train needs a number"; train="$2"; shift 2 ;;
    --val) [[ $# -ge 2 ]] || die "--val needs a number"; val="$2"; shift 2 ;;
    --model) [[ $# -ge 2 ]] || die "--model needs a name"; model="$2"; shift 2 ;;
    --workers) [[ $# -ge 2 ]] || die "--workers needs a number"; workers="$2"; shift 2 ;;
    --threads) [[ $# -ge 2 ]] || die "--threads needs a number"; threads="$2"; shift 2 ;;
    --max-growth) [[ $# -ge 2 ]] || die "--max-growth needs MiB"; max_growth="$2"; shift 2 ;;
    --dl-train) [[ $# -ge 2 ]] || die "--dl-train needs a path"; dl_train="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
for n in "$epochs" "$train" "$val"; do [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "$n: expected a whole number >= 1"; done
((epochs >= 3)) || die "--epochs $epochs: at least 3 (growth is counted from epoch 2)"
[[ -x "$dl_train" ]] || die "$dl_train is not an executable (build it, or pass --dl-train)"
fashion=/usr/share/datasets/fashion-mnist
[[ -f "$fashion/train-images-idx3-ubyte.gz" ]] || die "$fashion missing (apt-get install dataset-fashion-mnist)"

dir="$(mktemp -d "${TMPDIR:-/tmp}/dl-soak.XXXXXX")"
pid=""
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null
  if [[ $keep -eq 1 ]]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
mkdir -p "$dir/data" "$dir/ws"

# The first `train` and `val` images of Fashion-MNIST as raw IDX files.
"$python" "$here/fashion_subset.py" "$fashion" "$dir/data" "$train" "$val"

status_kib() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$pid/status"; }
mkfifo "$dir/out"
(cd "$dir/ws" && exec "$dl_train" --data "$dir/data" --model "$model" --epochs $((epochs + 1)) \
   --workers "$workers" --threads "$threads" --monitor-every 5 --log-every 1000 --name soak) \
   > "$dir/out" 2>&1 &
pid=$!
exec 3< "$dir/out"

printf '%5s %9s %9s %7s %5s %8s\n' epoch "RSS MiB" "HWM MiB" threads fds "epoch s"
declare -a rss threads_at fds_at
started=$(date +%s)
while IFS= read -r line <&3; do
  echo "$line" >> "$dir/train.out"
  # "epoch 7/30: train loss ... | 1.9 s, ..." is printed after the epoch's checkpoints.
  [[ "$line" =~ info\ epoch\ ([0-9]+)/[0-9]+:.*\|\ ([0-9.]+)\ s, ]] || continue
  e=${BASH_REMATCH[1]}
  ((e <= epochs)) || continue
  rss[$e]=$(status_kib VmRSS)
  hwm=$(status_kib VmHWM)
  threads_at[$e]=$(status_kib Threads)
  fds_at[$e]=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
  awk -v e="$e" -v r="${rss[$e]}" -v h="$hwm" -v t="${threads_at[$e]}" -v f="${fds_at[$e]}" \
    -v s="${BASH_REMATCH[2]}" 'BEGIN { printf "%5d %9.1f %9.1f %7d %5d %8s\n", e, r / 1024, h / 1024, t, f, s }'
done
set +e
wait "$pid"
code=$?
set -e
pid=""
[[ $code -eq 0 ]] || { tail -n 5 "$dir/train.out"; echo "verdict: dl-train exited $code"; exit 1; }
[[ -n "${rss[2]:-}" && -n "${rss[$epochs]:-}" ]] || { echo "verdict: epoch lines missing"; exit 1; }

# Growth from epoch 2 to the last, and the least-squares slope over epochs 2..N (MiB per epoch).
read -r growth pct slope < <(
  for ((e = 2; e <= epochs; e++)); do echo "$e ${rss[$e]}"; done | awk -v first="${rss[2]}" -v last="${rss[$epochs]}" '
    { n++; sx += $1; sy += $2 / 1024; sxx += $1 * $1; sxy += $1 * $2 / 1024 }
    END { printf "%.1f %.1f %.3f\n", (last - first) / 1024, 100 * (last - first) / first,
          (n * sxy - sx * sy) / (n * sxx - sx * sx) }')
ok=1
awk -v g="$growth" -v m="$max_growth" 'BEGIN { exit !(g <= m) }' || ok=0
[[ "${fds_at[2]}" == "${fds_at[$epochs]}" && "${threads_at[2]}" == "${threads_at[$epochs]}" ]] || ok=0
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
echo "verdict: $([[ $ok -eq 1 ]] && echo flat || echo GROWTH): RSS epoch 2 -> $epochs: $(mib "${rss[2]}") -> $(mib "${rss[$epochs]}") MiB (${growth} MiB, ${pct}%; slope ${slope} MiB/epoch), fds ${fds_at[2]} -> ${fds_at[$epochs]}, threads ${threads_at[2]} -> ${threads_at[$epochs]}; $(( $(date +%s) - started )) s"
[[ $ok -eq 1 ]]
