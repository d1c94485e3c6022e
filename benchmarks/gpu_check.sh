#!/usr/bin/env bash
# The CUDA-only checks in one go: the GPU-only tests (tests/run/test_engine.py, marked gpu), then a short
# CUDA sweep of four suite models, eager in both modes and compiled in GPU_CHECK_COMPILE_MODES (eager
# only when diagnostics.py offers no --compile); then a table of their figures, appended to
# benchmarks/RESULTS.md, and a check that every CUDA-only figure is there (the GPU evidence; allocator
# peaks where the rows carry costs).
#
#   benchmarks/gpu_check.sh [OUT]        OUT: output folder (default: a new temporary folder)
#
# Settings, from the environment: GPU_CHECK_MODELS (default resnet50,hf_Bert,dcgan,soft_actor_critic:
# a convnet, a transformer, an unannotated GAN and a loop of tiny ops), GPU_CHECK_DEVICE (cuda),
# GPU_CHECK_STEPS (30 measured steps a case), GPU_CHECK_COMPILE_MODES (eval: the modes run compiled
# as well as eager; compiling train too makes the run much longer), PYTHON (python).
# Exit status: 0 all checks passed; 1 a test, a case or a figure check failed; 2 no GPU here.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$(mktemp -d -t gpu_check.XXXXXX)}"
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"  # absolute: the script works from the repository root
cd "$ROOT"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python}"
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
"$PY" -m pytest tests/run/test_engine.py -m gpu -q -rs -p no:cacheprovider | tee "$OUT/gpu_tests.txt"
[ "${PIPESTATUS[0]}" = 0 ] || failed=1

common=(--models "$MODELS" --device "$DEVICE" --steps "$STEPS" --no-detailed --no-progress --timeout 240)
if "$PY" diagnostics.py --help | grep -q -- '--compile'; then
    # --compile runs each case eager and compiled; the other modes run eager only. One output folder.
    eager_only=$(for mode in train eval; do [[ ",$COMPILE_MODES," == *",$mode,"* ]] || echo "$mode"; done | paste -sd, -)
    echo "== sweep: $MODELS, $COMPILE_MODES eager and compiled, into $OUT/sweep"
    "$PY" diagnostics.py "${common[@]}" --modes "$COMPILE_MODES" --compile --out "$OUT/sweep" || failed=1
    if [ -n "$eager_only" ]; then
        echo "== sweep: $MODELS, $eager_only eager, into $OUT/sweep"
        "$PY" diagnostics.py "${common[@]}" --modes "$eager_only" --out "$OUT/sweep" || failed=1
    fi
else
    echo "gpu_check: this diagnostics.py has no --compile option yet; compiled cases not run" >&2
    echo "== sweep: $MODELS, train and eval, eager, into $OUT/sweep"
    "$PY" diagnostics.py "${common[@]}" --modes train,eval --out "$OUT/sweep" || failed=1
fi

echo "== figures ($((SECONDS - started)) s so far)"
(cd benchmarks && "$PY" gpu_check_table.py "$OUT" --command "benchmarks/gpu_check.sh $OUT" \
    --tests "$(tail -n 1 "$OUT/gpu_tests.txt")") || failed=1

echo "gpu_check: $([ $failed = 0 ] && echo passed || echo FAILED) in $((SECONDS - started)) s; outputs in $OUT"
exit $failed
