#!/usr/bin/env bash
# The GPU check (DESIGN.md, "The GPU check"): on any CUDA machine with PyTorch and CMake, without
# Debian dev packages or a network, builds the trainer against the LibTorch that PyTorch carries
# (a newer one than the image's 1.13: the autocast compatibility header's other branch) and checks
# in a few minutes what only a GPU can show:
#
#   * fp16 and bf16 training steps against fp32 (losses within tolerance);
#   * the GradScaler's fused CUDA ops against its plain implementation (same scale sequence,
#     gradients and weights on injected inf/NaN), and against PyTorch's expected sequence;
#   * ResNet-50 at 224x224: peak memory of fp32 vs fp16 at equal batch (goal: AMP <= 0.55x), and
#     samples/s at each precision's largest batch;
#   * dl-train itself on CUDA (fp16, then auto precision with an injected out-of-memory) and the
#     unit tests, where the C++ ABI lets dl-train link (see below);
#   * the time breakdown's GPU columns: the copy and the optimizer timed on CUDA events (their
#     shares in metrics.csv, the phases adding up to the epoch), and its cost, off against on;
#   * dl-launch's batch-size search over a user's own script's step probes (dl_plan, the peak
#     reserved memory per batch, the answer), then that script at the answer with validation;
#   * dl_loader (the Python module over the loader, pinned buffers) feeding a ResNet-50 fp16 step
#     against torch's DataLoader with torchvision's transforms (tests/gpu/loader_feed.py);
#   * dl-launch doctor --full: pinned and pageable host-to-device copies against the PCIe link's
#     limit, the GPU's clocks and link as NVML gives them;
#   * exact resume on CUDA: ResNet-50's step stall for a checkpoint inside an epoch, a SIGTERM's
#     time to exit with last.pt saved, and --resume going on at the next batch.
#
# It prints a short table last and writes it to $OUT/gpu_check.md when OUT is set; the results go
# to bench/RESULTS.md with the GPU named. The measurements come from tests/gpu/gpu_check.cpp
# (dl_gpu_check): dl-train's probe mode measures fp32 only for now.
#
#   tests/gpu/gpu_check.sh [--cpu-only] [--build-dir DIR] [--deps DIR] [--python PY]
#                          [--max-batch N] [--batch N]
#
# --cpu-only: for a machine without a GPU (the development machine): builds dl_gpu_check against
#   the LibTorch found (PyTorch's, else the system's) and runs the scaler check on the CPU, where
#   LibTorch 1.13 has no fused kernels, so the plain path is checked against PyTorch's sequence.
# --deps DIR: what env/gpu-deps.sh prepared (default <repo>/.gpu-deps): spdlog, fmt, Boost,
#   GoogleTest, zlib, nlohmann/json as Debian 12 packs them; DIR/root.tar.xz is unpacked when
#   DIR/root is missing. Without it the system's packages are used.
#
# It configures with CMakePresets.json's `gpu` preset (CMake 3.21 or newer; pip install cmake where
# the machine's is older), adding on the command line what belongs to the machine: the generator
# (Ninja where installed), PyTorch's LibTorch, the dependency folders, spdlog's linkage.
#
# Boost.program_options and spdlog from Debian use the C++11 ABI. PyTorch wheels before 2.7 use
# the old one (torch._C._GLIBCXX_USE_CXX11_ABI == False): then dl-train and the unit tests cannot
# link and are skipped with a note; dl_gpu_check (no Boost, spdlog header-only) still builds.
# Debian 12's libspdlog also needs glibc >= 2.34 and GCC 12's libstdc++: where dl-train fails to
# build for such a reason, the failure is reported and the measurements still run.
#
# Exit status: 0 all checks passed; 1 a check failed; 64 bad option; 69 no CUDA device (without
# --cpu-only) or a build prerequisite missing.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cpu_only=0
build=""
deps="$root/.gpu-deps"
python=${PYTHON:-python3}
max_batch=2048
batch=64
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu-only) cpu_only=1 ;;
    --build-dir) build=$2; shift ;;
    --deps) deps=$2; shift ;;
    --python) python=$2; shift ;;
    --max-batch) max_batch=$2; shift ;;
    --batch) batch=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check.sh: unknown option '$1' (see --help)" >&2; exit 64 ;;
  esac
  shift
done
[ -n "$build" ] || build="$root/build/gpu$([ $cpu_only -eq 1 ] && echo -cpu)"
logs="$build/gpu_check_logs"
start=$(date +%s)

say() { echo "gpu_check.sh: $*"; }
die() { echo "gpu_check.sh: $2" >&2; exit "$1"; }

# --- dependencies prepared by env/gpu-deps.sh --------------------------------------------------
cmake_deps=()
if [ -d "$deps" ]; then
  if [ ! -d "$deps/root" ] && [ -f "$deps/root.tar.xz" ]; then
    say "unpacking $deps/root.tar.xz"
    tar -C "$deps" -xJf "$deps/root.tar.xz" || die 69 "cannot unpack $deps/root.tar.xz"
  fi
  if [ -f "$deps/env.sh" ] && [ -d "$deps/root" ]; then
    # shellcheck source=/dev/null
    source "$deps/env.sh"
    cmake_lib="$deps/root/usr/lib/x86_64-linux-gnu"
    # Named one by one: CMake looks in lib/<arch>/cmake only where it knows the architecture
    # triplet (Debian-style systems), and FindZLIB wants its root.
    cmake_deps=(
      "-Dspdlog_DIR=$cmake_lib/cmake/spdlog" "-Dfmt_DIR=$cmake_lib/cmake/fmt"
      "-DBoost_DIR=$(echo "$cmake_lib"/cmake/Boost-*)" "-DGTest_DIR=$cmake_lib/cmake/GTest"
      "-DZLIB_ROOT=$deps/root/usr"
      "-Dnlohmann_json_DIR=$deps/root/usr/share/cmake/nlohmann_json"
      # PyTorch 2.x wheels carry their own, newer fmt in torch/include, a system folder of
      # LibTorch's searched before these; Debian's spdlog 1.10 needs Debian's fmt 9 (fmt 11 has
      # no fmt::basic_runtime). A folder holding fmt alone goes first as -I (GCC ignores an -I
      # for a folder that is also -isystem, so not root/usr/include itself).
      "-DCMAKE_CXX_FLAGS=-I$deps/fmt-first")
    mkdir -p "$deps/fmt-first" && ln -sfn "$deps/root/usr/include/fmt" "$deps/fmt-first/fmt"
    say "dependencies from $deps"
  fi
fi

# --- LibTorch: PyTorch's -------------------------------------------------------------------------
torch_prefix=""
abi=1
torch_version="(system LibTorch)"
gpu_name=""
if "$python" -c 'import torch' >/dev/null 2>&1; then
  prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  if [ -d "$prefix/Torch" ]; then
    torch_prefix=$prefix
    abi=$("$python" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
    torch_version="PyTorch $("$python" -c 'import torch; print(torch.__version__)')"
  fi
  gpu_name=$("$python" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>/dev/null)
fi
if [ $cpu_only -eq 0 ]; then
  [ -n "$torch_prefix" ] || die 69 "$python has no PyTorch with CMake files (torch.utils.cmake_prefix_path); use --python"
  [ -n "$gpu_name" ] || die 69 "PyTorch sees no CUDA device; use --cpu-only on a machine without one"
  # A CUDA LibTorch's CMake files look for the CUDA toolkit (nvcc).
  if ! command -v nvcc >/dev/null 2>&1; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
      [ -x "$d/nvcc" ] && export PATH="$d:$PATH" && break
    done
  fi
  command -v nvcc >/dev/null 2>&1 || die 69 "no nvcc on PATH or in /usr/local/cuda*: CUDA LibTorch's CMake files need the CUDA toolkit"
fi
say "LibTorch: $torch_version${torch_prefix:+ ($torch_prefix)}, C++11 ABI $abi${gpu_name:+, GPU $gpu_name}"

# --- configure and build -------------------------------------------------------------------------
need=$(sed -n 's/.*"cmakeMinimumRequired": *{ *"major": *\([0-9]*\), *"minor": *\([0-9]*\).*/\1.\2/p' \
  "$root/CMakePresets.json")
have=$(cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9]*\.[0-9]*\).*/\1/p')
[ -n "$have" ] || die 69 "no cmake on PATH (pip install cmake)"
[ "$(printf '%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ] ||
  die 69 "CMake $have is too old: CMakePresets.json needs CMake $need or newer (pip install cmake)"
mkdir -p "$logs"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
full=1
[ $cpu_only -eq 1 ] && full=0
if [ "$abi" = "0" ]; then
  full=0
  say "PyTorch uses the pre-C++11 ABI: Debian's Boost cannot link with it; building dl_gpu_check only"
fi
configure=(cmake -S "$root" --preset gpu -B "$build" "${generator[@]}" "${cmake_deps[@]}")
[ -n "$torch_prefix" ] && configure+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
# dl_loader for the Python that runs the checks (pybind11's headers: PyTorch's own).
configure+=("-DDL_PYTHON=$(command -v "$python")")
# Explicit either way: a build directory remembers the last value.
configure+=("-DDL_SPDLOG_HEADER_ONLY=$([ "$abi" = "0" ] && echo ON || echo OFF)")
say "configuring $build"
"${configure[@]}" >"$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; die 69 "configure failed (log: $logs/configure.log)"; }
grep -E "dl-train:|dl::data:|dl_loader:" "$logs/configure.log" | sed 's/^-- /  /'
rows=()
failed=0
targets=(dl_gpu_check)
[ $full -eq 1 ] && targets+=(dl-train dl_train_unit_tests dl-launch)
# dl_loader where the configure step found Python's headers and pybind11 (PyTorch's own).
[ $full -eq 1 ] && grep -q "dl_loader: Python" "$logs/configure.log" && targets+=(dl_loader_core)
say "building ${targets[*]}"
if ! cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}" >"$logs/build.log" 2>&1; then
  grep -m 20 -E "error|Error|undefined reference" "$logs/build.log"
  [ $full -eq 1 ] || die 69 "build failed (log: $logs/build.log)"
  # Debian's compiled spdlog and Boost need glibc >= 2.34 and GCC 12's libstdc++: on an older
  # system dl-train cannot link, but the measurements (spdlog header-only, no Boost) still can.
  failed=1
  full=0
  rows+=("| build dl-train against $torch_version | FAIL | log $logs/build.log; measurements continue |")
  say "dl-train did not build; building dl_gpu_check alone (spdlog header-only)"
  if ! { "${configure[@]}" -DDL_SPDLOG_HEADER_ONLY=ON >"$logs/configure-fallback.log" 2>&1 &&
    cmake --build "$build" --parallel "$(nproc)" --target dl_gpu_check \
      >"$logs/build-fallback.log" 2>&1; }; then
    die 69 "dl_gpu_check did not build either (logs: $logs/*-fallback.log)"
  fi
fi
say "built in $(( $(date +%s) - start )) s"

# --- checks ----------------------------------------------------------------------------------------
check_bin="$build/tests/gpu/dl_gpu_check"
# run NAME COMMAND...: runs a check with its output shown and logged; collects its table rows.
run() {
  local name=$1 rc=0
  shift
  say "== $name"
  "$@" 2>&1 | tee "$logs/$name.log" || rc=$?
  while IFS= read -r line; do rows+=("${line#row: }"); done < <(grep '^row: ' "$logs/$name.log")
  if [ $rc -ne 0 ]; then
    failed=1
    grep -q '^row: ' "$logs/$name.log" || rows+=("| $name | FAIL | exit $rc, log $logs/$name.log |")
  fi
}

run scaler-cpu "$check_bin" scaler --device cpu
if [ $cpu_only -eq 0 ]; then
  run scaler-cuda "$check_bin" scaler --device cuda
  run precision "$check_bin" precision --device cuda
  run memory "$check_bin" memory --device cuda --batch "$batch"
  run throughput "$check_bin" throughput --device cuda --max-batch "$max_batch"
  run grid "$check_bin" grid --device cuda --max-batch 256
fi

# dl-train end to end on CUDA: fp16 (GradScaler, fused path), then auto precision with an injected
# out-of-memory (the caching allocator is emptied and the micro-batch halved); and the unit tests.
# train_run NAME ENV ARGS...: dl-train on the synthetic data, on CUDA, with the environment
# assignment ENV ("" for none) and ARGS; output logged and shown.
train_run() {
  local name=$1 assignment=$2 ws="$build/gpu_check_ws/$1" rc=0
  shift 2
  rm -rf "$ws" && mkdir -p "$ws"
  (cd "$ws" && env ${assignment:+"$assignment"} "$build/trainer/dl-train" \
    --data "$build/gpu_check_ws/data" --device cuda --epochs 1 --limit-batches 20 \
    --batch-size 64 --monitor-every 0 --name r "$@") >"$logs/$name.log" 2>&1 || rc=$?
  cat "$logs/$name.log"
  return $rc
}
if [ $full -eq 1 ]; then
  mkdir -p "$build/gpu_check_ws/data"
  # 1408 synthetic 28x28 images (labels i % 10) and 128 for validation, as MNIST-layout IDX files.
  "$python" - "$build/gpu_check_ws/data" <<'PY'
import os, random, struct, sys
d = sys.argv[1]
rng = random.Random(1)
for prefix, n in (("train", 1408), ("t10k", 128)):
    with open(os.path.join(d, prefix + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + bytes(rng.randrange(256) for _ in range(n * 784)))
    with open(os.path.join(d, prefix + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, n) + bytes(i % 10 for i in range(n)))
PY
  say "== dl-train fp16"
  if train_run train-fp16 "" --precision fp16 && grep -q "precision fp16" "$logs/train-fp16.log"; then
    rows+=("| dl-train fp16 on CUDA | ok | $(grep -o 'overflow step(s) skipped, loss scale [0-9.e+]*' "$logs/train-fp16.log" | head -1) |")
  else
    failed=1; rows+=("| dl-train fp16 on CUDA | FAIL | log $logs/train-fp16.log |")
  fi
  # The time breakdown on CUDA events: the fp16 run's copy and optimizer have columns of their
  # own (the host's clock would have left them in compute), and the phases add up to the epoch.
  # Then its cost: the same run with the breakdown off and on, alternated, 3 times each.
  say "== dl-train time breakdown on CUDA events"
  breakdown=$("$python" - "$build/gpu_check_ws/train-fp16/runs/r/metrics.csv" <<'PY'
import csv, sys
row = list(csv.DictReader(open(sys.argv[1])))[-1]
phases = {k[5:-2]: float(v) for k, v in row.items() if k.startswith("time_") and k.endswith("_s")}
total, epoch = sum(phases.values()), float(row["epoch_seconds"])
shares = " ".join(f"{k}_{100 * v / total:.0f}%" for k, v in phases.items() if v > 0)
ok = phases["copy"] > 0 and phases["optimizer"] > 0 and abs(total - epoch) <= 0.02 * epoch + 0.01
print(("ok " if ok else "FAIL ") + shares)
PY
  ) || breakdown="FAIL metrics.csv unreadable"
  rows+=("| dl-train time breakdown on CUDA events | ${breakdown%% *} | ${breakdown#* } |")
  [ "${breakdown%% *}" = ok ] || failed=1
  rates_off=() rates_on=()
  for i in 1 2 3; do
    for mode in false true; do
      train_run "breakdown-$mode-$i" "" --precision fp16 --time-breakdown "$mode" >/dev/null || true
      rate=$(grep -o 'epoch 1/1: .*| [0-9.]* s, [0-9]* samples/s' "$logs/breakdown-$mode-$i.log" |
        grep -o '[0-9]* samples/s' | grep -o '[0-9]*' | tail -1)
      if [ "$mode" = false ]; then rates_off+=("${rate:-0}"); else rates_on+=("${rate:-0}"); fi
    done
  done
  median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
  rows+=("| time breakdown's cost on CUDA (fp16 CNN, medians of 3) | ok | off $(median "${rates_off[@]}") samples/s, on $(median "${rates_on[@]}") samples/s |")
  say "== dl-train auto precision, injected out-of-memory"
  if train_run train-oom DL_FAULT_OOM_ABOVE=32 && grep -q "continuing with 2 micro-batches of 32" "$logs/train-oom.log"; then
    rows+=("| dl-train auto precision + injected OOM on CUDA | ok | $(grep -o 'precision [a-z0-9]* ([^)]*)' "$logs/train-oom.log" | head -1); halved to 2 x 32 |")
  else
    failed=1; rows+=("| dl-train auto precision + injected OOM on CUDA | FAIL | log $logs/train-oom.log |")
  fi
  # The NCCL path (c10d's ProcessGroupNCCL, the bucketed all-reduce): one rank on one GPU, and
  # two ranks on two GPUs where there are two.
  say "== dl-train over NCCL, world size 1"
  if train_run train-nccl1 "" --dist-backend nccl && grep -q "nccl process group" "$logs/train-nccl1.log"; then
    rows+=("| dl-train over NCCL, 1 rank | ok | $(grep -o 'steps: [0-9]* x [0-9.]* ms, communication wait [0-9.]* ms' "$logs/train-nccl1.log" | head -1) |")
  else
    failed=1; rows+=("| dl-train over NCCL, 1 rank | FAIL | log $logs/train-nccl1.log |")
  fi
  if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
    say "== dl-train over NCCL, 2 ranks on 2 GPUs"
    nccl_port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    nccl_rc=0
    for r in 0 1; do
      WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
        MASTER_PORT=$nccl_port train_run "train-nccl2-$r" "" >/dev/null &
    done
    for r in 0 1; do wait -n || nccl_rc=1; done
    cat "$logs/train-nccl2-0.log"
    if [ $nccl_rc -eq 0 ] && grep -q "rank 0 of 2" "$logs/train-nccl2-0.log"; then
      rows+=("| dl-train over NCCL, 2 ranks | ok | $(grep -o 'steps: [0-9]* x [0-9.]* ms, communication wait [0-9.]* ms' "$logs/train-nccl2-0.log" | head -1) |")
    else
      failed=1; rows+=("| dl-train over NCCL, 2 ranks | FAIL | logs $logs/train-nccl2-*.log |")
    fi
  else
    rows+=("| dl-train over NCCL, 2 ranks | not run | one GPU visible |")
  fi
  # Exact resume on CUDA (ResNet-50, 22 steps of 64): the step's stall for a checkpoint inside
  # the epoch (--checkpoint-every 5: the copy to the host; the write on the writer's thread),
  # SIGTERM after step 12 to exit (the step in progress, then last.pt), and --resume going on at
  # the next batch.
  say "== dl-train ResNet-50 checkpoints inside an epoch (CUDA)"
  ck_ws="$build/gpu_check_ws/ckpt"
  rm -rf "$ck_ws" && mkdir -p "$ck_ws"
  ck_args=(--data "$build/gpu_check_ws/data" --device cuda --model resnet50 --epochs 1
    --limit-batches 22 --batch-size 64 --monitor-every 0 --log-every 1 --checkpoint-every 5
    --name ck)
  (cd "$ck_ws" && exec "$build/trainer/dl-train" "${ck_args[@]}") >"$logs/ckpt-stop.log" 2>&1 &
  ck_pid=$!
  ck_deadline=$((SECONDS + 300))
  until grep -q " batch 12/22" "$logs/ckpt-stop.log" || [ $SECONDS -gt $ck_deadline ] ||
    ! kill -0 $ck_pid 2>/dev/null; do sleep 0.05; done
  ck_sent=$(date +%s.%N)
  kill -TERM $ck_pid 2>/dev/null || true
  ck_rc=0
  wait $ck_pid || ck_rc=$?
  ck_exit=$("$python" -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.2f}')" "$ck_sent")
  ck_resumed=0
  (cd "$ck_ws" && "$build/trainer/dl-train" "${ck_args[@]}" --resume) >"$logs/ckpt-resume.log" 2>&1 || ck_resumed=$?
  cat "$logs/ckpt-stop.log" "$logs/ckpt-resume.log"
  ck_copy=$(sed -n 's/.*training waited \([0-9.]*\) ms for the copy, the write took \([0-9.]*\) s.*/\1 ms copy, \2 s write/p' "$logs/ckpt-stop.log" | head -1)
  ck_save=$(sed -n 's/.*: saved .* in \([0-9.]*\) s; --resume.*/\1/p' "$logs/ckpt-stop.log" | head -1)
  ck_at=$(grep -o 'the epoch goes on at batch [0-9]*' "$logs/ckpt-resume.log" | head -1)
  if [ $ck_rc -eq 143 ] && [ $ck_resumed -eq 0 ] && [ -n "$ck_copy" ] && [ -n "$ck_at" ]; then
    rows+=("| ResNet-50 checkpoint inside an epoch (CUDA, batch 64) | ok | clock checkpoint: $ck_copy; SIGTERM to exit ${ck_exit} s (the save ${ck_save} s); resumed: $ck_at |")
  else
    failed=1; rows+=("| ResNet-50 checkpoint inside an epoch (CUDA) | FAIL | stop exit $ck_rc, resume exit $ck_resumed; logs $logs/ckpt-*.log |")
  fi
  # A command run in a directory (a subshell: the script's own directory stays).
  in_dir() {
    local dir=$1
    shift
    (cd "$dir" && "$@")
  }
  # A table row from a command: ok with the first match of PATTERN in its LOG, or FAIL naming
  # the log.   row_of LABEL PATTERN LOG COMMAND...
  row_of() {
    local label=$1 pattern=$2 log=$3
    shift 3
    if "$@" >"$log" 2>&1; then
      rows+=("| $label | ok | $(grep -o "$pattern" "$log" | head -1) |")
    else
      failed=1
      rows+=("| $label | FAIL | log $log |")
    fi
  }
  # A dl-launch --json plan's batch search in one line, the curve it measured:
  # "BATCH N_probes:_B_->_P_GiB_R_samples/s,_..."
  search_summary() {
    "$python" - "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["batch_search"]
trials = ", ".join(f"{t['batch']} -> " + ("OOM" if t["out_of_memory"] else
                                          f"{t['peak_bytes'] / 2**30:.1f} GiB "
                                          f"{t.get('samples_per_second', 0):.0f} samples/s")
                   for t in s["trials"])
print(s["batch"], f"{len(s['trials'])}_probes:_{trials}".replace(" ", "_"))
PY
  }
  # A user's own script through dl_plan: dl-launch's batch-size search over its step probes on
  # CUDA (the peak reserved memory of each trial, the answer), then the script at that batch for
  # 30 steps and a validation pass: no out-of-memory later.
  say "== dl-launch's batch-size search over a Python script's step probes"
  sws="$build/gpu_check_ws/script"
  rm -rf "$sws" && mkdir -p "$sws" && cp "$root/tests/gpu/step_probe_script.py" "$sws/train.py"
  if (cd "$sws" && PYTHONPATH="$root/python" "$build/launcher/dl-launch" --workspace . --dry-run \
    --json --workers 2 -- "$(command -v "$python")" train.py) >"$logs/script-search.json" \
    2>"$logs/script-search.log"; then
    cat "$logs/script-search.log"
    read -r sbatch strials < <(search_summary "$logs/script-search.json")
    rows+=("| dl-launch search over dl_plan step probes (CUDA) | ok | batch $sbatch; ${strials//_/ } |")
    row_of "the script at batch $sbatch, 30 steps + validation" 'peak reserved [0-9.]* GiB' \
      "$logs/script-run.log" in_dir "$sws" env PYTHONPATH="$root/python" DL_BATCH_SIZE="$sbatch" \
      DL_WORKERS=2 "$python" train.py --steps 30
  else
    cat "$logs/script-search.log"
    failed=1; rows+=("| dl-launch search over dl_plan step probes (CUDA) | FAIL | log $logs/script-search.log |")
  fi
  # The workspace template's python/train.py, as a user runs it: dl-launch's batch-size search
  # over its own step probes (ResNet-50 at 224 px, AMP as the plan says) on a JPEG ImageFolder
  # written here with PIL, then one epoch of 30 batches at the answer with its validation pass:
  # no out-of-memory later, the peak the run reached.
  say "== the template's train.py: batch-size search over its step probes, then a run at it"
  tws="$build/gpu_check_ws/template"
  rm -rf "$tws" && "$build/launcher/dl-launch" init "$tws" >/dev/null
  "$python" - "$tws/photos" <<'PY'
import os, sys
from PIL import Image
for c in range(2):
    d = os.path.join(sys.argv[1], f"class{c}")
    os.makedirs(d, exist_ok=True)
    for i in range(4000):
        Image.new("RGB", (320 + i % 64, 256), (40 + 100 * c, i % 256, 90)).save(f"{d}/{i}.jpg")
PY
  targs=(--data photos --model resnet50 --image-size 224 --log-every 10)
  if (cd "$tws" && "$build/launcher/dl-launch" --workspace . --dry-run --json --workers 4 \
    -- "$(command -v "$python")" python/train.py "${targs[@]}") >"$logs/template-search.json" \
    2>"$logs/template-search.log"; then
    cat "$logs/template-search.log"
    read -r tbatch ttrials < <(search_summary "$logs/template-search.json")
    rows+=("| template train.py: search over its step probes (CUDA) | ok | batch $tbatch; ${ttrials//_/ } |")
    row_of "template train.py at batch $tbatch: an epoch (at most 30 batches) + validation" \
      'epoch 1/1: .*samples/s' "$logs/template-run.log" in_dir "$tws" \
      "$build/launcher/dl-launch" --workspace . --name at-answer --workers 4 \
      --batch-size "$tbatch" --epochs 1 --limit-batches 30 \
      -- "$(command -v "$python")" python/train.py "${targs[@]}"
  else
    cat "$logs/template-search.log"
    failed=1; rows+=("| template train.py: search over its step probes (CUDA) | FAIL | log $logs/template-search.log |")
  fi
  # dl-launch doctor on the GPU: host-to-device copies pinned and pageable against the PCIe
  # link's limit, the GPU's clocks and link from NVML, decoding the template's photos.
  say "== dl-launch doctor --full on the GPU"
  if (cd "$tws" && "$build/launcher/dl-launch" doctor --full --json --workspace . --data photos) \
    >"$logs/doctor.json" 2>"$logs/doctor.log"; then
    drow=$("$python" - "$logs/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c, g = d["copy"], (d["gpus"] or [{}])[0]
print(f"pinned {c.get('pinned_gb_s', 0):.1f} GB/s, pageable {c.get('pageable_gb_s', 0):.1f} GB/s"
      f" (link gen {g.get('pcie_gen')} x{g.get('pcie_width')}, limit {g.get('pcie_limit_gb_s', 0):.1f});"
      f" SM {g.get('sm_clock_mhz')}/{g.get('max_sm_clock_mhz')} MHz;"
      f" JPEG {d['decode'].get('scaled_per_core', 0):.0f}/s a core; {d['seconds']:.1f} s")
PY
)
    cat "$logs/doctor.json"
    rows+=("| dl-launch doctor --full (CUDA) | ok | $drow |")
  else
    cat "$logs/doctor.log"
    failed=1; rows+=("| dl-launch doctor --full (CUDA) | FAIL | log $logs/doctor.log |")
  fi
  # dl_loader (the Python module over the loader) feeding a ResNet-50 fp16 step on CUDA, against
  # torch's DataLoader with torchvision's transforms, on the template's photos (8000 JPEGs).
  if [ -d "$build/python/dl_loader" ] && ls "$build/python/dl_loader"/_core*.so >/dev/null 2>&1; then
    run loader-feed "$python" "$root/tests/gpu/loader_feed.py" --data "$tws/photos" \
      --module-dir "$build/python" --workers "$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))"
  else
    failed=1; rows+=("| dl_loader feeding ResNet-50 (CUDA) | FAIL | the module was not built (log $logs/build.log) |")
  fi
  run unit-tests "$build/tests/unit/train/dl_train_unit_tests" --gtest_brief=1
  if grep -q "PASSED" "$logs/unit-tests.log" && ! grep -q "FAILED" "$logs/unit-tests.log"; then
    rows+=("| dl_train_unit_tests ($torch_version) | ok | $(grep -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$logs/unit-tests.log") |")
  fi
elif [ $cpu_only -eq 0 ]; then
  rows+=("| dl-train and unit tests | skipped | PyTorch's pre-C++11 ABI cannot link Debian's Boost |")
fi

# --- table -----------------------------------------------------------------------------------------
table=$(
  echo "GPU check, $(date -u +%Y-%m-%d), ${gpu_name:-no GPU (--cpu-only)}, $torch_version, $(( $(date +%s) - start )) s"
  echo
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
)
echo
echo "$table"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" && echo "$table" >"$OUT/gpu_check.md" && cp -r "$logs" "$OUT/" 2>/dev/null
fi
exit $failed
