#!/usr/bin/env bash
# Builds the libFuzzer harnesses with AddressSanitizer and UndefinedBehaviorSanitizer (clang,
# without LibTorch) and fuzzes each for a while, starting from the seed corpora.
#   tools/fuzz.sh [SECONDS_PER_HARNESS] [HARNESS...]    (default: 60 s, every harness)
# Environment: FFCV_FUZZ_JOBS (harnesses run at once; default: the cores), FFCV_FUZZ_DIR (the
# build folder; default build-asan, shared with tools/sanitize.sh address). A finding is saved under FFCV_FUZZ_DIR/findings/HARNESS/
# and the script exits 1; the corpus grows in FFCV_FUZZ_DIR/corpus/HARNESS/ from run to run.
# Each harness's last lines (executions, coverage) go to FFCV_FUZZ_DIR/logs/HARNESS.log and a
# summary to FFCV_FUZZ_DIR/fuzz-summary.json.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(beton jpeg op_spec sources recipe)
dir=${FFCV_FUZZ_DIR:-build-asan}
jobs=${FFCV_FUZZ_JOBS:-$(nproc)}

log() { printf '[fuzz] %s\n' "$*"; }
# shellcheck source=tools/sanitized_build.sh
source tools/sanitized_build.sh
log "configuring $dir (clang, ASan + UBSan, libFuzzer) if needed"
configure_sanitized "$dir" address,undefined ON
targets=(ffcv_fuzz_seeds)
for h in "${harnesses[@]}"; do targets+=("ffcv_fuzz_$h"); done
log "building ${targets[*]}"
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}" 2>&1 | { grep -vE '^\[[0-9]+/[0-9]+\] ' || true; }
for t in "${targets[@]}"; do [ -x "$dir/bin/$t" ] || { echo "[fuzz] $t did not build" >&2; exit 1; }; done

"$dir/bin/ffcv_fuzz_seeds" "$dir/seeds" >/dev/null
mkdir -p "$dir/logs"

fuzz_one() {
  local h=$1 max_len=65536
  [ "$h" = beton ] && max_len=4194304
  mkdir -p "$dir/corpus/$h" "$dir/findings/$h"
  local inputs=("$dir/corpus/$h" "$dir/seeds/$h")
  [ -d "tests/fuzz/regressions/$h" ] && inputs+=("tests/fuzz/regressions/$h")
  "$dir/bin/ffcv_fuzz_$h" "${inputs[@]}" \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$dir/findings/$h/" \
    >"$dir/logs/$h.log" 2>&1
}

log "fuzzing ${harnesses[*]} for $seconds s each, $jobs at once"
failed=()
running=0
declare -A pids
for h in "${harnesses[@]}"; do
  fuzz_one "$h" &
  pids[$h]=$!
  running=$((running + 1))
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
done
for h in "${harnesses[@]}"; do wait "${pids[$h]}" || failed+=("$h"); done

python3 - "$dir" "$seconds" "${harnesses[@]}" <<'PY'
import json, re, sys
from pathlib import Path
root, seconds, harnesses = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
summary = {}
for h in harnesses:
    text = (root / "logs" / f"{h}.log").read_text(errors="replace")
    stat = lambda name: int(m.group(1)) if (m := re.search(rf"stat::{name}:\s+(\d+)", text)) else None
    cov = re.findall(r"cov: (\d+) ft: (\d+)", text)
    findings = sorted(p.name for p in (root / "findings" / h).iterdir()) if (root / "findings" / h).is_dir() else []
    summary[h] = {"executions": stat("number_of_executed_units"),
                  "seconds": seconds,
                  "peak_rss_mb": stat("peak_rss_mb"),
                  "coverage_edges": int(cov[-1][0]) if cov else None,
                  "features": int(cov[-1][1]) if cov else None,
                  "corpus_files": sum(1 for _ in (root / "corpus" / h).iterdir()),
                  "findings": findings}
    s = summary[h]
    print(f"[fuzz] {h}: {s['executions']} executions, {s['coverage_edges']} edges covered, "
          f"{s['corpus_files']} corpus files, {len(findings)} findings")
(root / "fuzz-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
PY
if ((${#failed[@]})); then
  for h in "${failed[@]}"; do
    echo "[fuzz] $h found a problem: see $dir/logs/$h.log and $dir/findings/$h/" >&2
    tail -n 40 "$dir/logs/$h.log" >&2
  done
  exit 1
fi
log "no findings"
