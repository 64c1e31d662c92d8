#!/usr/bin/env bash
# The Python loader benchmark, one command, one sitting, the two sides alternating (A B, then
# B A): a Python process turning an ImageFolder of JPEGs into normalised float32 batches of
# 64 x 3 x 224 x 224 (RandomResizedCrop 224 + flip), through dl_loader (dl-train's C++ pipeline
# as a Python module, worker threads) and through torch's DataLoader with torchvision's
# transforms (worker processes), at equal cores: 0 workers (one thread does everything) and 2
# workers (bench/reference/py_loader_side.py). Two sets, made by bench/make_jpeg_set: 256 px
# squares and photo-sized images (sides 300-1000 px). dl_loader runs twice: as it is (JPEGs
# decoded at the scale the crop needs, libjpeg's 1/8, 1/4 or 1/2) and with scaled_decode=False
# (full size, torchvision's pixels exactly). Prints a Markdown table of medians and ratios, then
# the decode scales used. Goal: dl_loader >= 4x torchvision.
#
# Each run times the last of --epochs epochs (2: the second, whose JPEG index holds one earlier
# crop per file; more: nearer the steady state a long training run sees).
#
# Usage: bench/py_loader_bench.sh [--repeat N] [--epochs N] [--build DIR] [--python PATH]
#                                 [--per-class N] [--workers "0 2"] [--keep DIR]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=3
epochs=2
build="$repo/build/release"
python=/usr/bin/python3
per_class=60
workers="0 2"
keep=""

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "py_loader_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) [[ $# -ge 2 ]] || die "--repeat needs a number"; repeat="$2"; shift 2 ;;
    --epochs) [[ $# -ge 2 ]] || die "--epochs needs a number"; epochs="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || die "--build needs a directory"; build="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --per-class) [[ $# -ge 2 ]] || die "--per-class needs a number"; per_class="$2"; shift 2 ;;
    --workers) [[ $# -ge 2 ]] || die "--workers needs a list, e.g. \"0 2\""; workers="$2"; shift 2 ;;
    --keep) [[ $# -ge 2 ]] || die "--keep needs a directory"; keep="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat $repeat: expected a whole number >= 1"
[[ "$epochs" =~ ^[2-9]$|^[1-9][0-9]+$ ]] || die "--epochs $epochs: expected a whole number >= 2"
[[ "$per_class" =~ ^[1-9][0-9]*$ ]] || die "--per-class $per_class: expected a whole number >= 1"
[[ -x "$build/bench/make_jpeg_set" ]] || die "--build $build: no bench/make_jpeg_set (cmake --build $build)"
[[ -d "$build/python/dl_loader" ]] || die "--build $build: no python/dl_loader (python3-dev and pybind11-dev, then rebuild)"
"$python" -c 'import torch, torchvision' 2>/dev/null ||
  die "--python $python: cannot import torch and torchvision"
PYTHONPATH="$build/python" "$python" -c 'import dl_loader' ||
  die "$build/python: dl_loader does not import under $python"

work="$(mktemp -d "${TMPDIR:-/tmp}/py_loader_bench.XXXXXX")"
cleanup() { [[ -n "$keep" ]] && { mkdir -p "$keep"; cp -r "$work"/. "$keep"/; }; rm -rf "$work"; }
trap cleanup EXIT
# The module copied once: a rebuild during the bench cannot mix two versions.
cp -rL "$build/python" "$work/python"
"$build/bench/make_jpeg_set" --out "$work/sq256" --per-class "$per_class" >&2
"$build/bench/make_jpeg_set" --out "$work/photo" --per-class "$per_class" --sides 300-1000 >&2

rows="$work/rows.tsv"
: >"$rows"
scales="$work/scales.tsv"
: >"$scales"
side() {  # side SET SIDE WORKERS -> images/s (the decode scales go to $scales)
  local out
  out=$(env -u PYTHONPATH -u OMP_NUM_THREADS "$python" "$here/reference/py_loader_side.py" \
    --side "$2" --data "$work/$1/train" --workers "$3" --module-dir "$work/python" --epochs "$epochs")
  awk -v set="$1" -v side="$2" '/^decode_scales/ {sub(/^decode_scales /, ""); print set "\t" side "\t" $0}' \
    <<<"$out" >>"$scales"
  awk '/^images_per_second/ {print $2}' <<<"$out"
}
for set in sq256 photo; do
  for w in $workers; do
    for rep in $(seq 1 "$repeat"); do
      if ((rep % 2)); then order=(dl torchvision dl-full); else order=(dl-full torchvision dl); fi
      for s in "${order[@]}"; do
        v=$(side "$set" "$s" "$w")
        printf '%s\t%s\t%s\t%s\n' "$set" "$w" "$s" "$v" >>"$rows"
        echo "py_loader_bench: $set workers $w $s: $v images/s" >&2
      done
    done
  done
done

"$python" - "$rows" "$repeat" "$scales" "$epochs" <<'PY'
import ast, statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
def med(s, w, side):
    return statistics.median(float(r[3]) for r in rows if r[:3] == [s, w, side])
names = {"sq256": "256 px squares", "photo": "photo-sized, 300-1000 px"}
print("| JPEG set | workers | dl_loader (images/s) | torchvision DataLoader (images/s) | ratio "
      "(goal >= 4x) | dl_loader, full-size decode (images/s) | its ratio |")
print("|---|---|---|---|---|---|---|")
for s in ("sq256", "photo"):
    for w in sorted({r[1] for r in rows if r[0] == s}, key=int):
        a, b, c = med(s, w, "dl"), med(s, w, "torchvision"), med(s, w, "dl-full")
        print(f"| {names[s]} | {w} | {a:.0f} | {b:.0f} | {a / b:.2f}x | {c:.0f} | {c / b:.2f}x |")
print(f"\nMedians of {sys.argv[2]} alternated runs each; each run times epoch {sys.argv[4]} of "
      f"{sys.argv[4]}.")
print("\nJPEG decode scales, dl_loader's default (M/8: share of decodes, over every run):")
for s in ("sq256", "photo"):
    total = {}
    for line in open(sys.argv[3]).read().splitlines():
        set_, side, counts = line.split("\t")
        if set_ == s and side == "dl":
            for m, n in ast.literal_eval(counts).items():
                total[m] = total.get(m, 0) + n
    n = sum(total.values()) or 1
    print(f"- {names[s]}: " + ", ".join(f"{m}/8 {100 * total[m] / n:.1f}%"
                                        for m in sorted(total, reverse=True)))
PY
