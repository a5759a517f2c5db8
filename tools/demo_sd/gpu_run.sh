#!/bin/bash
# Runs on the lent GPU machine, from the repository root, with the diffusers
# wheel in .whl and, optionally, a checkpoint newer than the committed one in
# .gpu/ckpt. usage: bash tools/demo_sd/gpu_run.sh MODE [EXTRA train.py ARGS]
#   MODE smoke_vae: smoke-test everything on tiny step counts, then train the VAE
#   MODE vae      : more VAE training
#   MODE profile  : where a UNet step's time goes, then UNet training
#   MODE unet     : text encoder + UNet training
#   MODE eval     : shorter UNet training, then contact sheet + held-out evaluation
# Writes the checkpoint files (fp16 shards, meta.json, losses.csv) and pictures to $OUT.
set -eo pipefail
START=$(date +%s)
DEADLINE=$((START + ${LIMIT:-585}))
MODE=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
D=$(dirname "$0")   # tools/demo_sd travels with the working tree (or a copy in .gpu/demo_sd)
CK=/tmp/ck
# resume from a newer checkpoint brought back into .gpu/ckpt, else from the
# committed one (tools/demo_sd/ckpt travels with the tree: copying it to
# .gpu as well would put the tree over the device's 64 MiB)
if [ ! -f $CK/meta.json ]; then
  for src in .gpu/ckpt tools/demo_sd/ckpt; do
    if [ -f $src/meta.json ]; then mkdir -p $CK; cp $src/* $CK/; break; fi
  done
fi
copy_out() {
  cp $CK/weights-*.safetensors $CK/meta.json $CK/losses.csv $OUT/
  [ -f $CK/vae_recon.png ] && cp $CK/vae_recon.png $OUT/ || true
}
case $MODE in
smoke_vae)
  python3 -c "import torch, PIL, regex, filelock, diffusers, transformers; print('torch', torch.__version__, 'diffusers', diffusers.__version__, 'transformers', transformers.__version__, 'PIL', PIL.__version__, torch.cuda.get_device_name())"
  python3 $D/check_render.py $OUT/gt.png 24
  S=/tmp/smoke; rm -rf $S
  python3 $D/train.py --stage vae --ck $S --max_steps 30 --pool 2048 --batch 8 --log_every 10
  python3 $D/train.py --stage unet --ck $S --max_steps 120 --pool 4096 --log_every 20 --keep_state --latent_pool 2048
  python3 $D/train.py --stage unet --ck $S --max_steps 120 --pool 4096 --log_every 20 --keep_state --latent_pool 2048 --compile --sheet $OUT/smoke_sheet.png
  python3 $D/sample.py --ck $S --out /tmp/s2.png --steps 10 --size 320x256 --scheduler euler
  python3 $D/train.py --stage vae --ck $CK --deadline $DEADLINE --batch 32 --lr 3e-4 --keep_state --pool 100000 "$@"
  copy_out ;;
vae)
  python3 $D/train.py --stage vae --ck $CK --deadline $DEADLINE --batch 32 --lr 3e-4 --keep_state --pool 100000 "$@"
  copy_out ;;
profile)
  python3 $D/profile_unet.py $CK 512
  python3 $D/train.py --stage unet --ck $CK --deadline $DEADLINE --keep_state --sheet $OUT/sheet.png "$@"
  copy_out ;;
unet)
  python3 $D/train.py --stage unet --ck $CK --deadline $DEADLINE --keep_state --sheet $OUT/sheet.png "$@"
  copy_out ;;
eval)
  python3 $D/train.py --stage unet --ck $CK --deadline $((DEADLINE - ${EVAL_S:-150})) --keep_state "$@"
  cp $CK/weights-*.safetensors $CK/meta.json $CK/losses.csv $OUT/
  python3 $D/sample.py --ck $CK --out $OUT/sheet.png --seeds 0,1
  python3 $D/evaluate.py --gt --ck $CK --out $OUT/eval.json --sheet $OUT/eval_sheet.png ;;
*) echo "gpu_run.sh: unknown mode $MODE" >&2; exit 2 ;;
esac
ls -la $OUT
