#!/usr/bin/env python3
"""Reference statistics of torchvision's RandomResizedCrop.get_params, for tests/unit/crop_test.cpp.

Our random_resized_crop (loader/src/ops/crop.cpp) implements the crop sampling of Python FFCV,
which follows torchvision. Its draws come from Philox rather than torch's generator, so windows
cannot match one for one; instead this script samples torchvision many times per configuration
and records summary statistics with their standard errors, and the C++ test checks that its own
statistics agree within a few standard errors. It also records, exactly, the deterministic
fallback windows torchvision returns for a set of image sizes and ratio ranges (forced by a scale
range no window can satisfy), which the test compares window for window.

Regenerate (about 2 minutes on one core) with the project's virtual environment, which has torch
and torchvision (pip install torchvision==0.26.0 matches torch 2.11.0):

    .venv/bin/python tests/reference/make_crop_stats.py   # writes tests/reference/crop_stats.json
    .venv/bin/python tests/reference/make_crop_stats.py --draws 20000 --output /tmp/x.json

Run from the repository root. The output is deterministic for a given seed and torch version.

Statistics per configuration, over N draws of (top, left, h, w) on an H x W image:
  area_frac   h * w / (H * W): mean and std
  log_aspect  log(w / h): mean and std
  top_frac    top / (H - h), over draws with h < H: mean
  left_frac   left / (W - w), over draws with w < W: mean
  fallback    share of draws equal to the fallback window (a normal attempt that happens to land
              on exactly that window counts too; the C++ test measures the same thing)
Each statistic X comes with X_se: std / sqrt(n) for means, the delta-method
sqrt((m4 - var^2) / n) / (2 std) for standard deviations, sqrt(p (1 - p) / n) for the rate.
"""

import argparse
import json
import math
import platform
import sys
import time

import numpy as np
import torch
import torchvision
from torchvision.transforms import RandomResizedCrop

DEFAULT_SCALE = (0.08, 1.0)
DEFAULT_RATIO = (3.0 / 4.0, 4.0 / 3.0)

# (name, H, W, scale, ratio)
CONFIGS = [
    ("landscape_375x500", 375, 500, DEFAULT_SCALE, DEFAULT_RATIO),
    ("portrait_500x375", 500, 375, DEFAULT_SCALE, DEFAULT_RATIO),
    ("square_224", 224, 224, DEFAULT_SCALE, DEFAULT_RATIO),
    ("wide_100x1000", 100, 1000, DEFAULT_SCALE, DEFAULT_RATIO),
    ("tall_1000x100", 1000, 100, DEFAULT_SCALE, DEFAULT_RATIO),
    ("tiny_32", 32, 32, DEFAULT_SCALE, DEFAULT_RATIO),
    ("narrow_375x500", 375, 500, (0.35, 1.0), (1.0, 1.0)),
]

# Fallback windows: (H, W, ratio). Includes exact halves (5 / 2, 5 * 0.5, 7 / 2, ...) that
# Python's round() sends to the even neighbour. Sizes where the formula gives a side of 0 are left
# out on purpose (our implementation raises such a side to 1).
FALLBACK_CASES = [
    (100, 1000, DEFAULT_RATIO),
    (1000, 100, DEFAULT_RATIO),
    (375, 500, DEFAULT_RATIO),
    (500, 375, DEFAULT_RATIO),
    (224, 224, DEFAULT_RATIO),
    (1, 1000, DEFAULT_RATIO),
    (1000, 1, DEFAULT_RATIO),
    (3, 7, DEFAULT_RATIO),
    (7, 3, DEFAULT_RATIO),
    (100, 5, (2.0, 4.0)),
    (100, 7, (2.0, 4.0)),
    (100, 9, (2.0, 4.0)),
    (5, 100, (0.25, 0.5)),
    (7, 100, (0.25, 0.5)),
    (9, 100, (0.25, 0.5)),
    (375, 500, (1.0, 1.0)),
    (500, 375, (1.0, 1.0)),
    (333, 1000, (0.5, 2.0)),
    (1000, 333, (0.5, 2.0)),
    (480, 640, (1.5, 3.0)),
    (640, 480, (0.2, 0.5)),
    (17, 4000, (0.75, 1.3333333333333333)),
]
IMPOSSIBLE_SCALE = (1e6, 1e6)  # no window of 10^6 times the image area fits: always the fallback


def mean_se(values):
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return 0.0, 0.0, 0
    return float(values.mean()), float(values.std() / math.sqrt(values.size)), int(values.size)


def std_se(values):
    values = np.asarray(values, dtype=np.float64)
    centred = values - values.mean()
    var = float(np.mean(centred**2))
    std = math.sqrt(var)
    if std == 0.0:
        return 0.0, 0.0
    m4 = float(np.mean(centred**4))
    return std, math.sqrt(max(m4 - var * var, 0.0) / values.size) / (2.0 * std)


def fallback_window(height, width, ratio):
    img = torch.empty((1, height, width))
    return tuple(int(v) for v in RandomResizedCrop.get_params(img, IMPOSSIBLE_SCALE, list(ratio)))


def config_stats(index, name, height, width, scale, ratio, draws, seed):
    torch.manual_seed(seed + index)
    img = torch.empty((1, height, width))
    windows = np.empty((draws, 4), dtype=np.int64)
    for k in range(draws):
        windows[k] = RandomResizedCrop.get_params(img, list(scale), list(ratio))
    top, left, h, w = windows.T
    area_frac = (h * w) / float(height * width)
    log_aspect = np.log(w / h)
    has_top = h < height
    has_left = w < width
    top_frac = top[has_top] / (height - h[has_top])
    left_frac = left[has_left] / (width - w[has_left])
    fallback = fallback_window(height, width, ratio)
    is_fallback = np.all(windows == np.asarray(fallback), axis=1)
    rate = float(is_fallback.mean())

    stats = {"name": name, "height": height, "width": width, "scale": list(scale),
             "ratio": list(ratio), "draws": draws, "fallback_window": list(fallback)}
    stats["area_frac_mean"], stats["area_frac_mean_se"], _ = mean_se(area_frac)
    stats["area_frac_std"], stats["area_frac_std_se"] = std_se(area_frac)
    stats["log_aspect_mean"], stats["log_aspect_mean_se"], _ = mean_se(log_aspect)
    stats["log_aspect_std"], stats["log_aspect_std_se"] = std_se(log_aspect)
    stats["top_frac_mean"], stats["top_frac_mean_se"], stats["top_frac_count"] = mean_se(top_frac)
    stats["left_frac_mean"], stats["left_frac_mean_se"], stats["left_frac_count"] = mean_se(
        left_frac)
    stats["fallback_rate"] = rate
    stats["fallback_rate_se"] = math.sqrt(rate * (1.0 - rate) / draws)
    return stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--output", default="tests/reference/crop_stats.json")
    args = parser.parse_args()

    torch.set_num_threads(1)
    started = time.time()
    configs = []
    for index, (name, height, width, scale, ratio) in enumerate(CONFIGS):
        t0 = time.time()
        configs.append(config_stats(index, name, height, width, scale, ratio, args.draws,
                                    args.seed))
        c = configs[-1]
        print(f"{name:20s} area {c['area_frac_mean']:.5f}+-{c['area_frac_std']:.5f} "
              f"log_aspect {c['log_aspect_mean']:+.5f}+-{c['log_aspect_std']:.5f} "
              f"top {c['top_frac_mean']:.4f} left {c['left_frac_mean']:.4f} "
              f"fallback {c['fallback_rate']:.5f}  ({time.time() - t0:.1f} s)", file=sys.stderr)

    fallback_cases = []
    for height, width, ratio in FALLBACK_CASES:
        top, left, h, w = fallback_window(height, width, ratio)
        assert h > 0 and w > 0, (height, width, ratio)
        fallback_cases.append([height, width, ratio[0], ratio[1], top, left, h, w])

    golden = {
        "generator": "tests/reference/make_crop_stats.py",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "seed": args.seed,
        "configs": configs,
        "fallback_cases_columns": ["height", "width", "ratio_min", "ratio_max", "top", "left",
                                   "h", "w"],
        "fallback_cases": fallback_cases,
    }
    # One configuration or fallback case per line: small, and readable in a diff.
    lines = []
    for key, value in golden.items():
        if isinstance(value, list) and value and isinstance(value[0], (dict, list)):
            items = ",\n".join("  " + json.dumps(item) for item in value)
            lines.append(f" {json.dumps(key)}: [\n{items}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    with open(args.output, "w") as out:
        out.write("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {args.output} in {time.time() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
