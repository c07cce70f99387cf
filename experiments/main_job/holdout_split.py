#!/usr/bin/env python3
"""Splits Fashion-MNIST's training set into a training part and a held-out validation part.

Writes IDX files in the layout `ffcv write fashion-mnist DIR` reads: DIR/train-* hold the first
--train samples of the training set, DIR/t10k-* the rest (the held-out validation split, used
for every choice of the main job's recipe; the real test set is never looked at while tuning).
Fashion-MNIST's training set is stored in a shuffled order, so its last samples are a fair
sample of all ten classes (the counts per class are printed).

  holdout_split.py OUT_DIR [--source /usr/share/datasets/fashion-mnist] [--train 55000]
"""
import argparse
import collections
import gzip
import pathlib
import struct
import sys


def read_idx(path):
    data = gzip.open(path, "rb").read()
    magic, = struct.unpack(">I", data[:4])
    dims = magic & 0xFF
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return magic, shape, data[4 + 4 * dims:]


def write_idx(path, magic, shape, payload):
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(struct.pack(">I", magic))
        out.write(struct.pack(">" + "I" * len(shape), *shape))
        out.write(payload)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    parser.add_argument("--source", type=pathlib.Path,
                        default=pathlib.Path("/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--train", type=int, default=55000,
                        help="samples kept for training; the rest are held out")
    args = parser.parse_args()

    images_magic, images_shape, images = read_idx(args.source / "train-images-idx3-ubyte.gz")
    labels_magic, labels_shape, labels = read_idx(args.source / "train-labels-idx1-ubyte.gz")
    count = images_shape[0]
    if labels_shape[0] != count:
        sys.exit(f"holdout_split: {count} images but {labels_shape[0]} labels")
    if not 0 < args.train < count:
        sys.exit(f"holdout_split: --train must be in 1..{count - 1}, got {args.train}")
    pixels = images_shape[1] * images_shape[2]
    args.out_dir.mkdir(parents=True, exist_ok=True)
    parts = {"train": (0, args.train), "t10k": (args.train, count)}
    for prefix, (begin, end) in parts.items():
        write_idx(args.out_dir / f"{prefix}-images-idx3-ubyte.gz", images_magic,
                  (end - begin, *images_shape[1:]), images[begin * pixels:end * pixels])
        write_idx(args.out_dir / f"{prefix}-labels-idx1-ubyte.gz", labels_magic,
                  (end - begin,), labels[begin:end])
        classes = collections.Counter(labels[begin:end])
        print(f"{prefix}: samples {begin}..{end - 1} ({end - begin}), per class "
              f"{min(classes.values())}..{max(classes.values())}")


if __name__ == "__main__":
    main()
