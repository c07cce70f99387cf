#!/usr/bin/env bash
# Writes ImageNet as the .beton files the paper's recipes read (FFCV's write_imagenet.sh).
#
#   recipes/imagenet/write_imagenet.sh IMAGENET_DIR [OUTPUT_DIR] [rn50|rn18|all]
#
# IMAGENET_DIR holds train/ and val/ as image folders (one subfolder per class, wnid names; the
# labels are the sorted folder order, as torchvision's ImageFolder). OUTPUT_DIR defaults to
# data/imagenet, where recipes/imagenet/*.toml look for the files.
#
#   rn50: longest side 500 px, 50% of the images stored as JPEG (quality 90), the rest raw
#         -> train_500_0.50_90.beton, val_500_0.50_90.beton   (RN-50 recipes)
#   rn18: longest side 400 px, 10% JPEG (quality 90)
#         -> train_400_0.10_90.beton, val_400_0.10_90.beton   (RN-18 recipes)
#
# Set FFCV to use another ffcv binary than build/bin/ffcv; extra flags for `ffcv write` (for
# example --workers 16 or --page-size 8M) can be given in FFCV_WRITE_FLAGS.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 || "$1" == "-h" || "$1" == "--help" ]]; then
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
imagenet_dir=$1
output_dir=${2:-data/imagenet}
which=${3:-all}
ffcv=${FFCV:-build/bin/ffcv}
read -r -a extra_flags <<< "${FFCV_WRITE_FLAGS:-}"
if [[ "$which" != rn50 && "$which" != rn18 && "$which" != all ]]; then
  echo "write_imagenet.sh: the third argument is rn50, rn18 or all, not '$which'" >&2
  exit 2
fi

for split in train val; do
  if [[ ! -d "$imagenet_dir/$split" ]]; then
    echo "write_imagenet.sh: $imagenet_dir/$split is not a directory" >&2
    exit 1
  fi
done
mkdir -p "$output_dir"

# write MAX_RESOLUTION COMPRESS_PROBABILITY JPEG_QUALITY
write() {
  local max_res=$1 probability=$2 quality=$3
  for split in train val; do
    "$ffcv" write folder "$imagenet_dir/$split" \
      --output "$output_dir/${split}_${max_res}_${probability}_${quality}.beton" \
      --write-mode proportion --max-resolution "$max_res" \
      --compress-probability "$probability" --jpeg-quality "$quality" "${extra_flags[@]}"
  done
}

case "$which" in
  rn50) write 500 0.50 90 ;;
  rn18) write 400 0.10 90 ;;
  all) write 500 0.50 90; write 400 0.10 90 ;;
esac
