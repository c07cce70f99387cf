#!/usr/bin/env python3
"""A COCO-format detection set from real data this machine has: Fashion-MNIST garments (Debian's
dataset-fashion-mnist) pasted at random sizes and places onto crops of photographs (the
wallpaper packages tools/setup.sh installs), with their boxes known exactly.

Each image is a crop of a photograph, 256-512 px a side, holding 0 to 24 garments (a skewed
count, most images 1-5, as detection sets are) of 32-128 px, pasted where they overlap earlier
ones by less than half; a garment's box is the tight box of its visible pixels, its category
its Fashion-MNIST class (1-10, COCO numbers categories from 1). Writes DIR/images/*.jpg and
DIR/instances.json (COCO's "images", "annotations" with "bbox" [x, y, width, height],
"categories"). Same seed, same set.

Usage: .venv/bin/python experiments/detection/make_fashion_mosaic.py --out data/mosaic --count 2000
"""
import argparse
import gzip
import json
from pathlib import Path

import numpy as np
from PIL import Image

FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
PHOTO_DIRS = [Path("/usr/share/wallpapers"), Path("/usr/share/backgrounds")]
CLASSES = ["t-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
           "bag", "ankle boot"]


def fashion_mnist(split="train"):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(FASHION_MNIST / f"{prefix}-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(FASHION_MNIST / f"{prefix}-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def photographs():
    """JPEG photographs of the wallpaper packages (large files: the small ones are previews)."""
    found = sorted(p for d in PHOTO_DIRS if d.is_dir() for p in d.rglob("*.jpg")
                   if p.stat().st_size > 150_000 and "images_dark" not in p.parts)
    if not found:
        raise SystemExit("no photographs under /usr/share/wallpapers or /usr/share/backgrounds: "
                         "install plasma-workspace-wallpapers lomiri-wallpapers-16.04 "
                         "mate-backgrounds (tools/setup.sh does)")
    return found


def background(photo, rng, width, height):
    with Image.open(photo) as image:
        image = image.convert("RGB")
        # A random window of the canvas's aspect, at least half the photo's short side.
        scale = rng.uniform(0.5, 1.0) * min(image.width / width, image.height / height)
        w, h = int(width * scale), int(height * scale)
        left = int(rng.integers(0, image.width - w + 1))
        top = int(rng.integers(0, image.height - h + 1))
        return np.asarray(image.crop((left, top, left + w, top + h)).resize((width, height),
                                                                            Image.BILINEAR))


def iou(a, b):
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0, x2 - x1) * max(0, y2 - y1)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def item_count(rng):
    """0-24, most 1-5: a geometric count with a few crowded images."""
    if rng.random() < 0.08:
        return 0
    if rng.random() < 0.05:
        return int(rng.integers(12, 25))
    return int(min(rng.geometric(0.35), 11))


def make(out: Path, count: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    garments, labels = fashion_mnist()
    photos = photographs()
    (out / "images").mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for i in range(count):
        width, height = (int(v) for v in rng.integers(256, 513, size=2))
        canvas = background(photos[int(rng.integers(len(photos)))], rng, width, height)
        canvas = canvas.astype(np.float32)
        boxes = []
        for _ in range(item_count(rng)):
            for _attempt in range(20):
                side = int(rng.integers(32, 129))
                x, y = int(rng.integers(0, width - side + 1)), int(rng.integers(0, height - side + 1))
                k = int(rng.integers(len(garments)))
                alpha = np.asarray(Image.fromarray(garments[k]).resize((side, side),
                                                                       Image.BILINEAR),
                                   np.float32) / 255.0
                rows, cols = np.nonzero(alpha > 0.1)
                if len(rows) == 0:
                    continue
                box = [x + int(cols.min()), y + int(rows.min()), x + int(cols.max()) + 1,
                       y + int(rows.max()) + 1]
                if all(iou(box, other) < 0.5 for other, _ in boxes):
                    colour = rng.uniform(60, 255, size=3).astype(np.float32)
                    patch = canvas[y:y + side, x:x + side]
                    patch[:] = patch * (1 - alpha[..., None]) + colour * alpha[..., None]
                    boxes.append((box, int(labels[k]) + 1))
                    break
        name = f"{i:06d}.jpg"
        Image.fromarray(canvas.round().astype(np.uint8)).save(out / "images" / name, quality=90)
        images.append({"id": i + 1, "file_name": name, "width": width, "height": height})
        for box, category in boxes:
            w, h = box[2] - box[0], box[3] - box[1]
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                                "category_id": category, "bbox": [box[0], box[1], w, h],
                                "area": w * h, "iscrowd": 0})
    data = {"info": {"description": "Fashion-MNIST garments on photographs", "seed": seed},
            "images": images, "annotations": annotations,
            "categories": [{"id": c + 1, "name": n} for c, n in enumerate(CLASSES)]}
    (out / "instances.json").write_text(json.dumps(data))
    return data


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write")
    parser.add_argument("--count", type=int, default=2000, help="images")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = make(args.out, args.count, args.seed)
    counts = np.bincount([a["image_id"] for a in data["annotations"]], minlength=args.count + 1)[1:]
    print(f"wrote {args.count} images, {len(data['annotations'])} boxes (per image: mean "
          f"{counts.mean():.1f}, max {counts.max()}, {int((counts == 0).sum())} without any) to "
          f"{args.out}")


if __name__ == "__main__":
    main()
