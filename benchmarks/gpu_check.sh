#!/usr/bin/env bash
# The CUDA-only checks in one go, about 5 minutes on one GPU: the GPU-only tests (tests/test_cuda.py,
# marked gpu), then a short CUDA sweep of four suite models, eager and, where diagnostics.py has
# --compile, compiled; then a table of their figures and a check that every CUDA-only figure is there
# (synchronised step times, the GPU evidence, allocator peaks where the rows carry costs).
#
#   benchmarks/gpu_check.sh [OUT]        OUT: output folder (default: a new temporary folder)
#
# Settings, from the environment: GPU_CHECK_MODELS (default resnet50,hf_Bert,dcgan,soft_actor_critic:
# a convnet, a transformer, an unannotated GAN and a loop of tiny ops), GPU_CHECK_DEVICE (cuda),
# GPU_CHECK_STEPS (30 measured steps a case), GPU_CHECK_COMPILE_MODES (eval: compiling train too
# takes the run past 5 minutes), PYTHON (python).
# Exit status: 0 all checks passed; 1 a test, a case or a figure check failed; 2 no GPU here.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python}"
OUT="${1:-$(mktemp -d -t gpu_check.XXXXXX)}"
MODELS="${GPU_CHECK_MODELS:-resnet50,hf_Bert,dcgan,soft_actor_critic}"
DEVICE="${GPU_CHECK_DEVICE:-cuda}"
STEPS="${GPU_CHECK_STEPS:-30}"
COMPILE_MODES="${GPU_CHECK_COMPILE_MODES:-eval}"

if ! "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)'; then
    echo "gpu_check: no CUDA GPU is available here; nothing to check" >&2
    exit 2
fi
started=$SECONDS
failed=0
"$PY" -c 'import torch; print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}")'

echo "== GPU-only tests"
"$PY" -m pytest tests/test_cuda.py -m gpu -q -rs -p no:cacheprovider || failed=1

common=(--models "$MODELS" --device "$DEVICE" --steps "$STEPS" --no-detailed --no-progress --timeout 240)
echo "== eager sweep: $MODELS, train and eval, into $OUT/eager"
"$PY" diagnostics.py "${common[@]}" --modes train,eval --out "$OUT/eager" || failed=1

if "$PY" diagnostics.py --help | grep -q -- '--compile'; then
    echo "== compiled sweep: $MODELS, $COMPILE_MODES, into $OUT/compiled"
    "$PY" diagnostics.py "${common[@]}" --modes "$COMPILE_MODES" --compile --out "$OUT/compiled" || failed=1
else
    echo "gpu_check: this diagnostics.py has no --compile option yet; compiled cases not run" >&2
fi

echo "== figures ($((SECONDS - started)) s so far)"
"$PY" - "$OUT" <<'EOF' || failed=1
"""Print the sweeps' rows as one table and check each ok row has every CUDA-only figure."""
import json
import sys
from pathlib import Path

from tabulate import tabulate

out = Path(sys.argv[1])
rows = [row for path in sorted(out.glob("*/summary.json")) for row in json.loads(path.read_text())["results"]]
COSTS = ("achieved_gflops", "pct_of_peak", "peak_memory_mb", "samples_per_s")  # rows carry them once costs land
costs = [name for name in COSTS if any(name in row for row in rows)]
if not costs:
    print("gpu_check: these rows carry no cost figures (FLOP/s, peak memory): this diagnostics.py predates them")

table, problems = [], []
for row in rows:
    gpu = row.get("gpu") or {}
    step = row.get("step_time_ms") or {}
    dispatch = row.get("dispatch") or {}
    table.append([
        row["model"], row["mode"], row.get("variant", "eager"), row["status"], step.get("median"),
        dispatch.get("verdict"), gpu.get("limited_by"), gpu.get("busy_pct"), gpu.get("host_wait_pct"),
        gpu.get("median_launch_wait_us"), gpu.get("kernels_per_step"), *(row.get(name) for name in costs),
    ])
    case = f"{row['model']} {row['mode']} {row.get('variant', 'eager')}"
    if row["status"] != "ok":
        problems.append(f"{case}: {row['status']} ({row.get('error')})")
        continue
    missing = [name for name, value in gpu.items() if value is None] if gpu else ["gpu"]
    missing += [name for name in ("peak_memory_mb",) if name in costs and row.get(name) is None]
    if missing:
        problems.append(f"{case}: no {', '.join(missing)}")
headers = ["model", "mode", "variant", "status", "ms/step", "verdict", "limited by", "GPU busy %",
           "host wait %", "launch wait us", "kernels/step", *costs]
print(tabulate(table, headers=headers, floatfmt=".3g", missingval="-"))
for problem in problems:
    print(f"CHECK FAILED: {problem}")
sys.exit(1 if problems or not rows else 0)
EOF

echo "gpu_check: $([ $failed = 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s; outputs in $OUT"
exit $failed
