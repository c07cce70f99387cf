#!/usr/bin/env bash
# The checks that need a CUDA device, in one command: builds the CUDA configuration and runs the
# GPU test entries, the SAGA solver against scikit-learn on the GPU, the SAGA case study at the
# paper's size, many models on one GPU and the cores one GPU needs. Each stage writes its log to
# OUT and prints one line with its result and seconds; the script stops at the first stage that
# fails and exits with its status.
#
#   tools/gpu_checks.sh [--build DIR] [--out DIR] [--work DIR] [--python PY] [--arch LIST] [--jobs N]
#                       [--repeats N] [--study-arg ARG]... [--device cuda|cpu] [--images N]
#                       [--grid-images N] [--models LIST] [--cores LIST] [--iterations N]
#                       [--photos DIR]
#                       [--time-limit S] [--pack NAME] [--wheels DIR] [STAGE...]
#
# Stages, in the order given (default: build tests saga-reference):
#   build           configure DIR with FFCV_WITH_CUDA=ON for this machine's GPU (or --arch) and
#                   build ffcv and the test programs with a GPU part
#   tests           CTest's CUDA entries: device_parity_cuda (every device step against its CPU
#                   twin; DeviceTransfer's batch-then-error order), gpu_image_decode_cuda (the
#                   GPU image path against the CPU path, where nvJPEG was found) and
#                   trainer_cuda_cases. A
#                   skipped entry fails this stage: on a GPU machine it means the GPU was not seen
#   saga-reference  tests/saga/check_saga_reference.py with saga.device=cuda, once with the SAGA
#                   table on the device and once in pinned host memory (saga.table=host)
#   saga-paper      experiments/saga/saga_study.py --size paper --device cuda (n = 100,000,
#                   d = 50,000 masks: about 5 GB of .npy and a 625 MB .beton under WORK);
#                   its report goes to OUT/saga-paper.{json,md,png}
#   suite           builds all of DIR (`ninja -C DIR`), then runs every CTest entry; with
#                   --time-limit it stops when the script's time is up and says how far it got
#   imagenet-like   the ImageNet-like sets the next two stages read, made here and now: `ffcv
#                   write imagenet-like --count N` cuts ImageNet-sized JPEGs from Debian's
#                   wallpaper photographs, then writes them as results/training-benchmark.md's
#                   set was written (proportion, max 500 px, half JPEG at quality 90): under
#                   WORK, imagenet-like.beton (--images, default 61440: 60 batches of 1024) for
#                   cores-per-gpu, imagenet-like-grid.beton (--grid-images, default 16384) for
#                   many-models' training and imagenet-like-val.beton (2048) for its validation.
#                   The photographs: /usr/share/{wallpapers,backgrounds}
#                   when they hold any, else those of the carried lomiri-wallpapers-16.04 .deb
#                   (gather-debs.sh's argument; 15 MB), unpacked by .devdeps/env.sh under
#                   /tmp/devdeps and copied to /usr/share/backgrounds (or --photos DIR's *.jpg).
#                   A set WORK already holds at its count is kept. The next two stages run this
#                   one first themselves
#   many-models     experiments/many_models/many_models_study.py --device cuda: K = 1, 2, 4, 8
#                   (--models) ResNet-18 at 160 px (recipes/many_models/rn18_4_per_gpu.toml,
#                   2 epochs of the grid set) in `sequential`, `threads` and `shared` on
#                   the one GPU: images/s of all models (whole command and last epoch), decode
#                   core-seconds per model, nvidia-smi's utilisation; then K = 2 once more with
#                   training.deterministic, each placement's weights against sequential's.
#                   Writes OUT/many-models.{json,md,png}
#   cores-per-gpu   experiments/training_benchmark/cores_per_gpu.py: ffcv_training_benchmark of
#                   ResNet-18 (batch 1024) and ResNet-50 (512) of recipes/imagenet_like/ at
#                   160 px, loader-fed against the fixed-batch ceiling, the process pinned with
#                   taskset to 4, 8 and 16 cores (--cores), --iterations timed steps (150) after
#                   20 untimed. Writes OUT/cores-per-gpu.{json,md,png}
#   gpu-decode      the GPU image path (issue: JPEG decode on the GPU), on the imagenet-like
#                   set (made first, as above): ffcv_gpu_image_decode_test (GPU batches against
#                   the CPU path's: windows, flips, labels, pixels within tolerance; a damaged
#                   JPEG mid-batch; the backends) and the trainer's [gpu_decode] cases (training
#                   and evaluation on the GPU path), then ffcv_gpu_decode_benchmark, the image
#                   pipeline to float16 NCHW on the GPU, on the CPU path and the GPU path with
#                   the process pinned to each of --cores (OUT/gpu-decode.jsonl), `ffcv bench
#                   --device cuda --image-decode gpu` and `ffcv doctor --device cuda
#                   --image-decode gpu` once on 8 cores, then cores_per_gpu.py at 8 cores with
#                   data.image_decode = gpu and = cpu, ResNet-18 at 160 px and ResNet-50 at
#                   224 px (OUT/gpu-decode-training-{gpu,cpu}-{rn18,rn50}.json), and ResNet-18
#                   on the GPU path with 6 workers (...-gpu-rn18-w6.json); where nsys is
#                   installed, ResNet-18 on the GPU path under Nsight Systems, its CUDA API,
#                   kernel and OS-runtime sums as CSV (OUT/nsys-rn18_*.csv)
#   python          the Python package on the GPU: a venv of PY (its torch seen through
#                   --system-site-packages) gets nanobind and scikit-build-core from --wheels DIR
#                   (default .devdeps/wheels; fill it here with `.venv/bin/pip download --no-deps
#                   -d .devdeps/wheels nanobind scikit-build-core pathspec packaging` and carry
#                   it), builds ffcv_cpp there with pip, and runs tests/python/test_cuda.py:
#                   ToDevice's batches (side stream, pinned host memory) and NormalizeImage on
#                   the GPU against the CPU loader's
#
# Options:
#   --device cpu    runs imagenet-like, many-models and cores-per-gpu without a GPU to check the
#                   plumbing (not the figures): sets of 256, 128 and 64 images, K = 1, 2,
#                   cores 1, 2, 4 steps, and
#                   training.device = cpu, fp32, 64 px, batch 32 for every model
#   --time-limit S  seconds the whole script may take; the suite stage uses what is left (less
#                   20 s for packing)
#   --nvjpeg DIR    nvJPEG's include/ and lib/ where the CUDA toolkit has none (default
#                   .devdeps/nvjpeg when present: the files of the nvidia-nvjpeg wheel,
#                   `.venv/bin/pip download --no-deps nvidia-nvjpeg` unzipped, nvidia/cu13/*)
#   --pack NAME     at the end (also after a failure), moves every file of OUT but the stages'
#                   .json figures into OUT/NAME.tar.gz, so that few files come back
#
# Defaults: DIR build-gpu; OUT gpu-checks (logs and reports only); WORK /tmp/ffcv-gpu-checks (data
# and run folders); PY python3, which must import torch (and scikit-learn, numpy and matplotlib
# for the SAGA stages, matplotlib for many-models and cores-per-gpu); jobs = the cores;
# repeats 1.
#
# Turning the figures into results/ (here, after the run):
#   python3 experiments/many_models/many_models_study.py --render OUT/many-models.json \
#       --output results/many-models-h100
#   python3 experiments/training_benchmark/cores_per_gpu.py --render OUT/cores-per-gpu.json \
#       --output results/cores-per-gpu-h100
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$script")/.."

build="build-gpu"
out=gpu-checks
work=${TMPDIR:-/tmp}/ffcv-gpu-checks
python=python3
arch=""
jobs=$(nproc)
repeats=1
study_args=()
device=cuda
images=""
grid_images=""
models=""
cores=""
iterations=""
photos=""
time_limit=""
pack=""
wheels=.devdeps/wheels
nvjpeg=.devdeps/nvjpeg
stages=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --study-arg) study_args+=("$2"); shift 2 ;;
    --device) device=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --grid-images) grid_images=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --cores) cores=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --photos) photos=$2; shift 2 ;;
    --time-limit) time_limit=$2; shift 2 ;;
    --pack) pack=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --nvjpeg) nvjpeg=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$script"; exit 0 ;;
    -*) echo "gpu_checks.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) stages+=("$1"); shift ;;
  esac
done
((${#stages[@]})) || stages=(build tests saga-reference)
for stage in "${stages[@]}"; do
  case "$stage" in
    build|tests|saga-reference|saga-paper|suite|imagenet-like|many-models|cores-per-gpu) ;;
    gpu-decode|python) ;;
    *) echo "gpu_checks.sh: unknown stage '$stage' (build, tests, saga-reference, saga-paper," \
            "suite, imagenet-like, many-models, cores-per-gpu, gpu-decode, python)" >&2; exit 2 ;;
  esac
done
# Option values are checked before any stage runs.
usage_error() { echo "gpu_checks.sh: $*" >&2; exit 2; }
positive() { [[ $2 =~ ^[1-9][0-9]*$ ]] || usage_error "$1 takes a positive whole number, not '$2'"; }
count_list() {
  [[ $2 =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
    usage_error "$1 takes comma-separated positive whole numbers, not '$2'"
}
case "$device" in
  cuda)
    : "${images:=61440}" "${grid_images:=16384}" "${models:=1,2,4,8}" "${cores:=4,8,16}"
    : "${iterations:=150}"
    val_images=2048
    warmup=20
    model_sets=()
    ;;
  cpu)
    : "${images:=256}" "${grid_images:=128}" "${models:=1,2}" "${cores:=1,2}" "${iterations:=4}"
    val_images=64
    warmup=2
    model_sets=(training.device=cpu training.precision=fp32 training.batch_size=32
                resolution.min_res=64 resolution.max_res=64 validation.batch_size=32
                validation.resolution=64)
    ;;
  *) usage_error "--device takes cuda or cpu, not '$device'" ;;
esac
positive --images "$images"
positive --grid-images "$grid_images"
positive --iterations "$iterations"
count_list --models "$models"
count_list --cores "$cores"
[[ -z $time_limit ]] || positive --time-limit "$time_limit"
[[ -z $pack || $pack =~ ^[A-Za-z0-9._-]+$ ]] ||
  usage_error "--pack takes a file name of letters, digits, '.', '_' and '-', not '$pack'"
[[ -z $photos || -d $photos ]] || usage_error "--photos: no folder '$photos'"
mkdir -p "$out" "$work"
out=$(cd "$out" && pwd)
work=$(cd "$work" && pwd)
python=$(command -v "$python") || { echo "gpu_checks.sh: no Python '$python'" >&2; exit 2; }

# The GPU's compute capability as CMake's architecture number (9.0 -> 90).
detect_arch() {
  command -v nvidia-smi >/dev/null || { echo "90"; return; }
  nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .'
}

stage_build() {
  [[ -n $arch ]] || arch=$(detect_arch)
  # A machine with its own libjpeg development files links pkg-config's libjpeg (its own, e.g.
  # version 8) while the carried libjpeg62-turbo headers come first on CPATH: the decoders then
  # fail at run time ("Wrong JPEG library version"). Use the machine's headers with its library.
  local devdeps=${DEVDEPS:-/tmp/devdeps}
  if [[ -f /usr/include/jpeglib.h && -f $devdeps/usr/include/jpeglib.h ]]; then
    echo "using the machine's libjpeg headers (it has /usr/include/jpeglib.h)"
    rm -f "$devdeps"/usr/include/{jpeglib,jerror,jmorecfg}.h \
      "$devdeps"/usr/include/x86_64-linux-gnu/jconfig.h
  fi
  local nvjpeg_root=()
  [[ ! -d $nvjpeg ]] || nvjpeg_root=(-DFFCV_NVJPEG_ROOT="$(cd "$nvjpeg" && pwd)")
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFFCV_WITH_CUDA=ON \
    -DFFCV_CUDA_ARCHITECTURES="$arch" -DFFCV_PYTHON="$python" -DFFCV_BUILD_BENCHMARKS=ON \
    "${nvjpeg_root[@]}" || return
  local targets=(ffcv ffcv_device_parity_test ffcv_trainer_tests ffcv_torch_tests ffcv_saga_tests
    ffcv_training_benchmark)
  # The GPU image path's programs exist when nvJPEG was found.
  if grep -q '^FFCV_NVJPEG_LIBRARY:.*nvjpeg' "$build/CMakeCache.txt"; then
    targets+=(ffcv_gpu_image_decode_test ffcv_gpu_decode_benchmark)
  else
    echo "nvJPEG not found: the GPU image path is not built (see --nvjpeg)"
  fi
  ninja -C "$build" -j "$jobs" "${targets[@]}"
}

# Runs CTest on DIR with the given arguments; fails when an entry failed or was skipped.
# (The stages run where errexit does not apply: each failure is returned explicitly.)
run_ctest() {
  local log=$1
  shift
  ctest --test-dir "$build" --output-on-failure "$@" 2>&1 | tee "$log.ctest" || return
  if grep -q "\*\*\*Skipped\|Not Run" "$log.ctest"; then
    echo "an entry was skipped or not run: on a GPU machine that means no CUDA device was seen"
    return 1
  fi
}

stage_tests() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  run_ctest "$out/tests" -R '^(device_parity_cuda|gpu_image_decode_cuda|trainer_cuda_cases)$'
}

stage_saga_reference() {
  local table
  for table in device host; do
    echo "== saga.device = cuda, saga.table = $table"
    "$python" tests/saga/check_saga_reference.py --ffcv "$build/bin/ffcv" \
      --workdir "$work/saga-reference-$table" --extra=--set --extra=saga.device=cuda \
      --extra=--set --extra=saga.table=$table || return
  done
}

stage_saga_paper() {
  "$python" experiments/saga/saga_study.py --ffcv "$build/bin/ffcv" --size paper --device cuda \
    --repeats "$repeats" --work "$work" --out "$out/saga-paper" "${study_args[@]}"
}

stage_python() {
  local venv="$work/python-venv"
  if [[ ! -d $wheels ]]; then
    echo "no $wheels: fill it where there is network with .venv/bin/pip download --no-deps" \
      "-d .devdeps/wheels nanobind scikit-build-core pathspec packaging, and carry it"
    return 1
  fi
  rm -rf "$venv"
  "$python" -m venv --system-site-packages "$venv" || return
  "$venv/bin/pip" install -q --no-index --find-links "$wheels" nanobind scikit-build-core || return
  "$venv/bin/pip" install -q --no-build-isolation --no-deps . || return
  (cd tests/python && "$venv/bin/python" test_cuda.py)
}

# Seconds left of --time-limit, less a margin for packing; empty without a limit.
seconds_left() {
  [[ -n $time_limit ]] || return 0
  local left=$((time_limit - SECONDS - 20))
  echo $((left > 0 ? left : 1))
}

# Runs the command under `timeout` with the seconds left (or plainly without a limit); exit
# status 124 when the time ran out.
within_time_limit() {
  local left
  left=$(seconds_left)
  if [[ -n $left ]]; then timeout --signal=TERM --kill-after=10 "$left" "$@"; else "$@"; fi
}

stage_suite() {
  local status=0
  within_time_limit ninja -C "$build" -j "$jobs" || status=$?
  if ((status == 124)); then
    echo "the time limit ended the full build: no CTest entry ran"
    return 124
  fi
  ((status == 0)) || return "$status"
  within_time_limit ctest --test-dir "$build" --output-on-failure -j "$jobs" 2>&1 |
    tee "$out/suite.log.ctest" || status=$?
  if ((status == 124)); then
    echo "the time limit stopped CTest after $(grep -c 'Test *#' "$out/suite.log.ctest") entries"
    return 124
  fi
  return "$status"
}

# Source photographs for `ffcv write imagenet-like`, which reads /usr/share/wallpapers and
# /usr/share/backgrounds: when neither holds a JPEG, those of --photos DIR or of the carried
# wallpaper package (unpacked by .devdeps/env.sh) are copied to /usr/share/backgrounds.
ensure_photos() {
  # (-print -quit, not `| grep -q`: under pipefail find's broken pipe would read as "none")
  if [[ -n $(find /usr/share/wallpapers /usr/share/backgrounds -name '*.jpg' -print -quit \
    2>/dev/null) ]]; then
    return 0
  fi
  local from=${photos:-${DEVDEPS:-/tmp/devdeps}/usr/share/backgrounds}
  if [[ -z $(find "$from" -maxdepth 1 -name '*.jpg' -print -quit 2>/dev/null) ]]; then
    echo "no photographs: /usr/share/{wallpapers,backgrounds} and $from hold no .jpg (carry" \
      ".devdeps made by gather-debs.sh lomiri-wallpapers-16.04, or give --photos DIR)"
    return 1
  fi
  mkdir -p /usr/share/backgrounds || return
  cp "$from"/*.jpg /usr/share/backgrounds/ || return
  echo "copied $(find "$from" -maxdepth 1 -name '*.jpg' | wc -l) photographs from $from to" \
    "/usr/share/backgrounds"
}

beton="$work/imagenet-like.beton"
grid_beton="$work/imagenet-like-grid.beton"
val_beton="$work/imagenet-like-val.beton"

# Writes an ImageNet-like .beton of COUNT images at PATH (seeded by SEED) unless PATH already
# holds that many (PATH.count, written after a complete write).
write_imagenet_like() {
  local count=$1 path=$2 seed=$3
  if [[ -f $path && "$(cat "$path.count" 2>/dev/null)" == "$count" ]]; then
    echo "$path already holds $count images"
    return 0
  fi
  ensure_photos || return
  rm -f "$path.count"
  "$build/bin/ffcv" write imagenet-like --count "$count" --classes 100 --seed "$seed" \
    --images-dir "$path-jpegs" --write-mode proportion --max-resolution 500 \
    --compress-probability 0.5 --jpeg-quality 90 --output "$path" || return
  echo "$count" >"$path.count"
  rm -rf "$path-jpegs"  # the .beton holds them all
}

stage_imagenet_like() {
  write_imagenet_like "$images" "$beton" 0 || return
  write_imagenet_like "$grid_images" "$grid_beton" 1 || return
  write_imagenet_like "$val_images" "$val_beton" 2
}

# Appends `--set KEY=VALUE` for each of the device mode's recipe overrides to the named array.
add_model_sets() {
  local -n into=$1
  local set
  for set in "${model_sets[@]}"; do into+=(--set "$set"); done
}

stage_many_models() {
  stage_imagenet_like || return
  local command=("$python" experiments/many_models/many_models_study.py --build "$build"
    --device "$device" --recipe recipes/many_models/rn18_4_per_gpu.toml --train "$grid_beton"
    --val "$val_beton" --models "$models" --placements "sequential,threads,shared" --epochs 2
    --learning-rates "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8" --repeats "$repeats" --no-baseline
    --no-alone --deterministic-check 2 --work "$work/many-models"
    --output "$out/many-models")
  add_model_sets command
  rm -rf "$work/many-models"
  "${command[@]}"
}

stage_cores_per_gpu() {
  stage_imagenet_like || return
  local resolution=160
  [[ $device == cuda ]] || resolution=64
  local command=("$python" experiments/training_benchmark/cores_per_gpu.py --build "$build"
    --train "$beton" --cores "$cores" --resolution "$resolution" --iterations "$iterations"
    --warmup "$warmup" --output "$out/cores-per-gpu")
  add_model_sets command
  "${command[@]}"
}

stage_gpu_decode() {
  [[ -x $build/bin/ffcv_gpu_decode_benchmark ]] ||
    { echo "no $build/bin/ffcv_gpu_decode_benchmark: nvJPEG was not found by the build"; return 1; }
  stage_imagenet_like || return
  # Every part runs (a failing test does not hide the figures); the stage fails if one did.
  local failed=0 status=0
  # DeviceTransfer first (the GPU path's batches go through it), then the path itself.
  "$build/bin/ffcv_device_parity_test" || failed=1
  "$build/bin/ffcv_gpu_image_decode_test" || status=$?
  if ((status != 0)); then
    ((status != 77)) || echo "skipped: no CUDA device was seen"
    failed=1
  fi
  "$build/bin/ffcv_trainer_tests" "[gpu_decode]" || failed=1
  local c path
  : >"$out/gpu-decode.jsonl"
  for c in ${cores//,/ }; do
    for path in cpu gpu; do
      taskset -c "0-$((c - 1))" "$build/bin/ffcv_gpu_decode_benchmark" "$beton" --path "$path" \
        --workers "$c" --size 160 --batch 512 --batches 40 --warmup 6 >>"$out/gpu-decode.jsonl" ||
        failed=1
      tail -n 1 "$out/gpu-decode.jsonl"
    done
  done
  # The same pipeline through the CLI, as users run it (ffcv-train runs both for ffcv), on the
  # first 8 cores: the bench, then the doctor's diagnosis of what bounds the feed.
  taskset -c 0-7 "$build/bin/ffcv" bench "$beton" --device cuda --image-decode gpu \
    --image-decoder random_resized_crop --image-size 160 --flip --batch-size 512 --epochs 2 \
    --max-batches 20 || failed=1
  taskset -c 0-7 "$build/bin/ffcv" doctor "$beton" --device cuda --image-decode gpu \
    --image-decoder random_resized_crop --image-size 160 --flip --batch-size 512 --batches 30 ||
    failed=1
  # Where the GPU path's time goes while ResNet-18 trains, where Nsight Systems is installed:
  # the CUDA API calls and kernels, summed (small CSV files; the capture stays in WORK).
  if command -v nsys >/dev/null; then
    timeout 180 taskset -c 0-7 nsys profile --force-overwrite true --trace cuda,osrt --output \
      "$work/gpu-decode-rn18" "$build/bin/ffcv_training_benchmark" \
      recipes/imagenet_like/rn18_throughput.toml --set "data.train=$beton" \
      --set "data.val=$beton" --set data.image_decode=gpu --resolutions 160 --iterations 30 \
      --warmup 10 >/dev/null || failed=1
    timeout 120 nsys stats --report cuda_api_sum,cuda_gpu_kern_sum,osrt_sum --format csv \
      --output "$out/nsys-rn18" "$work/gpu-decode-rn18.nsys-rep" >/dev/null || failed=1
  else
    echo "no nsys on this machine: the GPU path is not profiled"
  fi
  # Training at 8 cores on each path: ResNet-18 at 160 px and ResNet-50 at 224 px; ResNet-18 on
  # the GPU path also with 6 workers, leaving two cores to the preparing and training threads.
  local run path name resolution workers
  for run in gpu:rn18:160:0 gpu:rn18:160:6 gpu:rn50:224:0 cpu:rn18:160:0 cpu:rn50:224:0; do
    IFS=: read -r path name resolution workers <<<"$run"
    local command=("$python" experiments/training_benchmark/cores_per_gpu.py --build "$build"
      --train "$beton" --cores 8 --resolution "$resolution" --iterations "$iterations"
      --warmup "$warmup" --recipes "recipes/imagenet_like/${name}_throughput.toml"
      --set "data.image_decode=$path" --set "data.num_workers=$workers"
      --output "$out/gpu-decode-training-$path-$name$( ((workers)) && echo "-w$workers")")
    add_model_sets command
    "${command[@]}" || failed=1
  done
  return "$failed"
}

# --pack: every file of OUT but the stages' .json figures into one archive.
pack_outputs() {
  [[ -n $pack ]] || return 0
  local files
  mapfile -t files < <(cd "$out" && find . -type f ! -name '*.json' ! -name "$pack.tar.gz" | sort)
  ((${#files[@]})) || return 0
  tar -czf "$out/$pack.tar.gz" -C "$out" "${files[@]}" && (cd "$out" && rm -f "${files[@]}")
  echo "packed ${#files[@]} files into $out/$pack.tar.gz"
}
trap pack_outputs EXIT
trap 'exit 143' TERM  # killed by a time limit: the EXIT trap still packs what there is

export PYTHONUNBUFFERED=1
for stage in "${stages[@]}"; do
  start=$SECONDS
  log="$out/$stage.log"
  status=0
  "stage_${stage//-/_}" >"$log" 2>&1 || status=$?
  seconds=$((SECONDS - start))
  if ((status == 124)) && [[ $stage == suite && -n $time_limit ]]; then
    echo "$stage: INCOMPLETE, stopped at the time limit after ${seconds} s; the end of $log:"
    tail -n 5 "$log"
    continue
  fi
  if ((status != 0)); then
    echo "$stage: FAILED (exit $status) in ${seconds} s; the end of $log:"
    tail -n 40 "$log"
    exit "$status"
  fi
  echo "$stage: passed in ${seconds} s ($log)"
done
