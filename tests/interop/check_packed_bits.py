#!/usr/bin/env python3
"""Checks, with Python FFCV, the bit-packed bool features that `ffcv write npy --pack-bits` makes.

usage: check_packed_bits.py DIR FFCV [--timeout SECONDS]

For d = 13 and d = 64 booleans per sample, saves a random bool array and integer targets as .npy
files in DIR, writes them with `FFCV write npy ... --pack-bits`, then reads the .beton with
ffcv.loader.Loader (SEQUENTIAL, default NDArray and Int pipelines): every sample's features must
be uint8 of shape (ceil(d/8),) with np.unpackbits(row, bitorder='big')[:d] equal to the original
row and zero padding bits, and its target the original one. OUT.beton.sources.json must say
"packed_bits": d.

Exits 0 when everything matches, 1 with one line per mismatch otherwise.
"""

import argparse
import faulthandler
import json
import os
import subprocess
import sys

import numpy as np

NUM_SAMPLES = 45
BATCH_SIZE = 8  # does not divide NUM_SAMPLES


def check(directory, cli, bits):
    rng = np.random.default_rng(bits)
    features = rng.random((NUM_SAMPLES, bits)) < 0.3
    targets = np.arange(NUM_SAMPLES, dtype=np.int64) * 3 - 7
    x_path = os.path.join(directory, f'x{bits}.npy')
    y_path = os.path.join(directory, f'y{bits}.npy')
    out = os.path.join(directory, f'packed{bits}.beton')
    np.save(x_path, features)
    np.save(y_path, targets)
    subprocess.run([cli, 'write', 'npy', '--features', x_path, '--targets', y_path, '--output',
                    out, '--pack-bits', '--quiet'], check=True)
    failures = []
    with open(out + '.sources.json', encoding='utf8') as f:
        sidecar = json.load(f)
    if sidecar.get('packed_bits') != bits:
        failures.append(f'd={bits}: sidecar says packed_bits {sidecar.get("packed_bits")}')

    from ffcv.loader import Loader, OrderOption
    loader = Loader(out, batch_size=BATCH_SIZE, num_workers=1, order=OrderOption.SEQUENTIAL,
                    drop_last=False)
    start = 0
    for packed, target in loader:
        packed = np.asarray(packed)
        target = np.asarray(target).reshape(-1)
        if packed.dtype != np.uint8 or packed.shape[1:] != ((bits + 7) // 8,):
            failures.append(f'd={bits}: batch of {packed.dtype} {packed.shape}')
            break
        for b in range(packed.shape[0]):
            i = start + b
            bits_back = np.unpackbits(packed[b], bitorder='big')
            if not np.array_equal(bits_back[:bits].astype(bool), features[i]):
                failures.append(f'd={bits} sample {i}: unpacked mask differs')
            if bits_back[bits:].any():
                failures.append(f'd={bits} sample {i}: padding bits are not zero')
            if int(target[b]) != int(targets[i]):
                failures.append(f'd={bits} sample {i}: target {target[b]} != {targets[i]}')
        start += packed.shape[0]
    if start != NUM_SAMPLES:
        failures.append(f'd={bits}: the loader gave {start} samples, want {NUM_SAMPLES}')
    if not failures:
        print(f'ok   packed{bits}.beton: {NUM_SAMPLES} samples of {bits} booleans in '
              f'{(bits + 7) // 8} bytes', flush=True)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('dir')
    parser.add_argument('ffcv', help='the ffcv command-line tool')
    parser.add_argument('--timeout', type=float, default=600,
                        help='abort (exit 1) after this many seconds: FFCV hangs on some errors')
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    failures = []
    for bits in (13, 64):
        failures += check(args.dir, args.ffcv, bits)
    for line in failures:
        print('FAIL ' + line, file=sys.stderr)
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
