#!/usr/bin/env bash
# The workspace template's train.py with dl_loader and with torch's DataLoader (--loader dl /
# --loader torch), alternated in one sitting (A B, then B A): on Fashion-MNIST (its first
# --fashion-train training and 2000 test images, bench/fashion_subset.py; the small CNN, batch 64) and on an ImageFolder of photo-sized JPEGs (bench/make_jpeg_set --sides 300-1000,
# 10 classes, a tenth held out, crop 128, the small CNN), each run --epochs epochs with the same
# seed. Prints a Markdown table of medians: training seconds of the last epoch, its data wait, and
# the final validation accuracy (which should agree within noise).
#
# Usage: bench/template_loader_bench.sh [--repeat N] [--build DIR] [--python PATH]
#                                       [--epochs N] [--per-class N] [--fashion DIR]
#                                       [--fashion-train N]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=3
build="$repo/build/release"
python=/usr/bin/python3
epochs=2
per_class=60
fashion=/usr/share/datasets/fashion-mnist
fashion_train=20000

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "template_loader_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) [[ $# -ge 2 ]] || die "--repeat needs a number"; repeat="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || die "--build needs a directory"; build="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --epochs) [[ $# -ge 2 ]] || die "--epochs needs a number"; epochs="$2"; shift 2 ;;
    --per-class) [[ $# -ge 2 ]] || die "--per-class needs a number"; per_class="$2"; shift 2 ;;
    --fashion) [[ $# -ge 2 ]] || die "--fashion needs a directory"; fashion="$2"; shift 2 ;;
    --fashion-train) [[ $# -ge 2 ]] || die "--fashion-train needs a number"; fashion_train="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat $repeat: expected a whole number >= 1"
[[ "$epochs" =~ ^[1-9][0-9]*$ ]] || die "--epochs $epochs: expected a whole number >= 1"
[[ -d "$fashion" ]] || die "--fashion $fashion: no such directory (apt-get install dataset-fashion-mnist)"
[[ -x "$build/bench/make_jpeg_set" ]] || die "--build $build: no bench/make_jpeg_set"
PYTHONPATH="$build/python" "$python" -c 'import dl_loader, torchvision' ||
  die "$build/python: dl_loader (or torchvision) does not import under $python"

work="$(mktemp -d "${TMPDIR:-/tmp}/template_loader_bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -rL "$build/python" "$work/python"
"$build/bench/make_jpeg_set" --out "$work/photo" --per-class "$per_class" --sides 300-1000 >&2
mkdir -p "$work/fashion"
"$python" "$here/fashion_subset.py" "$fashion" "$work/fashion" "$fashion_train" 2000
rows="$work/rows.tsv"
: >"$rows"
run() {  # run SET LOADER -> one TSV row: set, loader, train_seconds, wait, val_acc
  local data=$work/fashion extra=()
  [[ $1 == photo ]] && { data=$work/photo/train; extra=(--image-size 128); }
  env -u PYTHONPATH PYTHONPATH="$work/python" "$python" "$repo/workspace_template/python/train.py" \
    --data "$data" --loader "$2" --model cnn --epochs "$epochs" --batch-size 64 --workers 0 \
    --threads 2 --seed 1 --log-every 0 --json "${extra[@]}" 2>/dev/null | tail -1 |
    "$python" -c '
import json, sys
e = json.loads(sys.stdin.read())
t, w, a = e["train_seconds"], e["data_wait_seconds"], e["val_acc"]
print(f"{sys.argv[1]}\t{sys.argv[2]}\t{t:.2f}\t{100 * w / t:.1f}\t{a:.4f}")' "$1" "$2"
}
for set in fashion photo; do
  for rep in $(seq 1 "$repeat"); do
    if ((rep % 2)); then order=(dl torch); else order=(torch dl); fi
    for l in "${order[@]}"; do
      run "$set" "$l" | tee -a "$rows" >&2
    done
  done
done
"$python" - "$rows" "$repeat" "$epochs" "$fashion_train" <<'PY'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
names = {"fashion": f"Fashion-MNIST ({sys.argv[4]} train, 2000 test), 28 px",
         "photo": "photo-sized JPEGs, 10% held out, crop 128"}
print("| data | loader | last epoch's training s | data wait % | final val acc |")
print("|---|---|---|---|---|")
for s in ("fashion", "photo"):
    for l, name in (("dl", "dl_loader"), ("torch", "DataLoader + torchvision")):
        r = [x for x in rows if x[:2] == [s, l]]
        med = lambda k: statistics.median(float(x[k]) for x in r)
        print(f"| {names[s]} | {name} | {med(2):.2f} | {med(3):.1f} | {100 * med(4):.2f}% |")
print(f"\nMedians of {sys.argv[2]} alternated runs of {sys.argv[3]} epochs each, 0 workers, "
      "2 threads, seed 1.")
PY
