#!/usr/bin/env bash
# Data at scale, one command, one sitting, every side alternating: photo-sized JPEGs (300-1000 px
# sides) and megapixel photos (1600-4000 px: 2.6-16 MP), RandomResizedCrop 224 + flip into
# normalised float32 batches of 64 in a Python process (bench/reference/py_loader_side.py), at 0
# and 2 workers, read four ways:
#   torchvision   torch's DataLoader + torchvision's ImageFolder and transforms, the folder
#   dl folder     dl_loader on the same folder (crop-only JPEG decoding at the scale the crop needs)
#   dl shards     dl_loader on the folder packed into WebDataset shards (`dl-train pack`, copies)
#   dl re-encoded dl_loader on shards packed with `--max-side` (512 photo-sized, 768 megapixel)
#                 `--quality 90`: FFCV's writer setting, photos stored at the size training needs;
#                 other pixels than the originals' (a JPEG of a shrunk copy), said in the table
# Prints a Markdown table of medians with each side's ratio to torchvision (goals: 6x on the
# photo-sized set, 10x on the megapixel set) and the packing rates.
#
# Each run times the last of --epochs epochs (2: the second, whose JPEG index holds one earlier
# crop per file; more: nearer the steady state a long training run sees).
#
# Usage: bench/shard_speed_bench.sh [--repeat N] [--epochs N] [--build DIR] [--python PATH]
#                                   [--per-class N] [--mega-per-class N] [--workers "0 2"]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=3
epochs=2
build="$repo/build/release"
python=/usr/bin/python3
per_class=60
mega_per_class=13
workers="0 2"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "shard_speed_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) [[ $# -ge 2 ]] || die "--repeat needs a number"; repeat="$2"; shift 2 ;;
    --epochs) [[ $# -ge 2 ]] || die "--epochs needs a number"; epochs="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || die "--build needs a directory"; build="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --per-class) [[ $# -ge 2 ]] || die "--per-class needs a number"; per_class="$2"; shift 2 ;;
    --mega-per-class) [[ $# -ge 2 ]] || die "--mega-per-class needs a number"; mega_per_class="$2"; shift 2 ;;
    --workers) [[ $# -ge 2 ]] || die "--workers needs a list, e.g. \"0 2\""; workers="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for n in "$repeat" "$per_class" "$mega_per_class"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "$n: expected a whole number >= 1"
done
[[ -x "$build/bench/make_jpeg_set" ]] || die "--build $build: no bench/make_jpeg_set (cmake --build $build)"
[[ -x "$build/trainer/dl-train" ]] || die "--build $build: no trainer/dl-train"
[[ -d "$build/python/dl_loader" ]] || die "--build $build: no python/dl_loader (python3-dev and pybind11-dev, then rebuild)"
"$python" -c 'import torch, torchvision' 2>/dev/null ||
  die "--python $python: cannot import torch and torchvision"

work="$(mktemp -d "${TMPDIR:-/tmp}/shard_speed_bench.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# The programs copied once: a rebuild during the bench cannot mix two versions.
cp -rL "$build/python" "$work/python"
cp "$build/trainer/dl-train" "$work/dl-train"
"$build/bench/make_jpeg_set" --out "$work/photo" --per-class "$per_class" --sides 300-1000 >&2
"$build/bench/make_jpeg_set" --out "$work/mega" --per-class "$mega_per_class" --sides 1600-4000 >&2

packs="$work/packs.txt"
: >"$packs"
pack() {  # pack SET OUT [pack options]: the pack's summary line goes to $packs
  local set="$1" out="$2"
  shift 2
  "$work/dl-train" pack --data "$work/$set/train" --out "$work/$out" "$@" 2>&1 |
    awk -v set="$set" -v opts="$*" '/^packed/ {print "- " set (opts == "" ? "" : " (" opts ")") ": " $0}' >>"$packs"
}
pack photo photo-shards
pack photo photo-small --max-side 512 --quality 90
pack mega mega-shards
pack mega mega-small --max-side 768 --quality 90

rows="$work/rows.tsv"
: >"$rows"
side() {  # side SIDE DATA WORKERS -> images/s
  env -u PYTHONPATH -u OMP_NUM_THREADS "$python" "$here/reference/py_loader_side.py" \
    --side "$1" --data "$2" --workers "$3" --module-dir "$work/python" --epochs "$epochs" |
    awk '/^images_per_second/ {print $2}'
}
for set in photo mega; do
  case "$set" in photo) small=photo-small ;; mega) small=mega-small ;; esac
  for w in $workers; do
    for rep in $(seq 1 "$repeat"); do
      order=(torchvision folder shards small)
      ((rep % 2)) || order=(small shards folder torchvision)
      for s in "${order[@]}"; do
        case "$s" in
          torchvision) v=$(side torchvision "$work/$set/train" "$w") ;;
          folder) v=$(side dl "$work/$set/train" "$w") ;;
          shards) v=$(side dl "$work/$set-shards" "$w") ;;
          small) v=$(side dl "$work/$small" "$w") ;;
        esac
        printf '%s\t%s\t%s\t%s\n' "$set" "$w" "$s" "$v" >>"$rows"
        echo "shard_speed_bench: $set workers $w $s: $v images/s" >&2
      done
    done
  done
done

"$python" - "$rows" "$repeat" "$epochs" <<'PY'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
def med(s, w, side):
    return statistics.median(float(r[3]) for r in rows if r[:3] == [s, w, side])
names = {"photo": ("photo-sized, 300-1000 px", "6x", "512"),
         "mega": ("megapixel, 1600-4000 px", "10x", "768")}
print("| JPEG set (goal) | workers | torchvision, folder | dl_loader, folder | dl_loader, shards "
      "| dl_loader, re-encoded shards (max side) |")
print("|---|---|---|---|---|---|")
for s in ("photo", "mega"):
    name, goal, side = names[s]
    for w in sorted({r[1] for r in rows if r[0] == s}, key=int):
        t = med(s, w, "torchvision")
        cells = [f"{med(s, w, k):.1f} ({med(s, w, k) / t:.2f}x)" for k in ("folder", "shards", "small")]
        print(f"| {name} ({goal}) | {w} | {t:.1f} | {cells[0]} | {cells[1]} | {cells[2]} ({side} px) |")
print(f"\nimages/s, medians of {sys.argv[2]} alternated runs each (each run times epoch "
      f"{sys.argv[3]} of {sys.argv[3]}); in brackets, the ratio to torchvision.")
PY
echo
echo "Packing (dl-train pack, one thread):"
cat "$packs"
