#!/usr/bin/env python3
"""Writes golden .beton files with Python FFCV's DatasetWriter, for our reader to check.

Regenerate the committed files (from the repository root, with Python FFCV installed, e.g. by
the set-up script into .venv):

    .venv/bin/python tests/interop/make_golden.py --out tests/golden

For each golden dataset NAME this writes NAME.beton.gz (the .beton, gzip -9: FFCV writes every
page in full, at least 2 MiB, so the raw files are mostly zeros) and NAME.json (what the file
must hold: page size, sample count, fields in order, and per field the explicit values or the
formula of formulas.py / formulas.hpp with its parameters), plus index.json listing the names.
tests/interop/read_golden_test.cpp checks them (CTest interop_reads_ffcv_golden), and the CTest
interop_roundtrip_live runs this script into a scratch directory and checks the fresh files.

The bytes are not reproducible run to run (FFCV's 'proportion' image mode draws from numpy's
global RNG, and py_multipage uses two writer processes whose pages interleave), but the values
always match the expectations, so regenerating only changes the .gz files.
Written against ffcv 1.0.2; works with numpy 2.x (tested 2.4) as with 1.x.
"""

import argparse
import faulthandler
import gzip
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import formulas  # noqa: E402

MIB = 1 << 20
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


# ---- sample values: plain functions of (parameters, sample index) --------------------------

def int_value(fn, i):
    if fn == 'label':
        return i * 7 - 3
    if fn == 'extremes':
        return {1: INT64_MAX, 2: INT64_MIN}.get(i, i * 7 - 3)
    if fn == 'neg11':
        return i * -11
    raise ValueError(fn)


def float_value(fn, i):
    if fn == 'specials':
        special = {3: -0.0, 4: 5e-324, 5: 1.7976931348623157e308, 6: float(np.float32(0.1))}
        if i in special:
            return special[i]
        return float(np.sin(i) * 10.0 ** ((i % 11) - 5))
    if fn == 'halves':
        return i * 0.5 - 4.25
    raise ValueError(fn)


def bytes_length(fn, i):
    if fn == 'varied':
        return 5000 + i if i % 10 == 9 else 1 + (i * 37) % 300
    if fn == 'short':
        return 1 + i * 3
    raise ValueError(fn)


def json_value(i):
    value = {'index': i, 'name': f'sample-{i}', 'squares': [i, i * i], 'half': i / 2,
             'flag': bool(i % 2)}
    if i % 3 == 0:
        value['note'] = 'caf\u00e9 "quoted" back\\slash\ttab \u2603'
    if i % 5 == 1:
        value['nested'] = {'empty': [], 'none': None}
    return value


def image_size(fn, i):
    if fn.startswith('const:'):
        width, height = fn[len('const:'):].split('x')
        return int(width), int(height)
    if fn == 'tiny_varied':  # includes 1x1 and 1-pixel-wide images
        return 1 + (i * 7) % 29, 1 + (i * 5) % 19
    if fn == 'varied':
        return 16 + (i * 11) % 40, 12 + (i * 13) % 30
    raise ValueError(fn)


# ---- golden datasets -------------------------------------------------------------------------
# A field spec is (name, kind, params). Kinds: Int(fn), Float(fn), NDArray(dtype, shape,
# formula), TorchTensor(dtype, shape, formula), Bytes(lengths), JSON(), RGBImage(write_mode,
# formula, sizes).

GOLDENS = [
    {'name': 'py_scalars', 'num_samples': 23, 'page_size': 8 * MIB, 'workers': 1,
     'fields': [('label', 'Int', {'fn': 'extremes'}),
                ('score', 'Float', {'fn': 'specials'})]},
    # Every field type, default page size, a 16-character name, 13-byte image columns first.
    {'name': 'py_all_fields', 'num_samples': 31, 'page_size': 8 * MIB, 'workers': 1,
     'fields': [('image', 'RGBImage', {'write_mode': 'raw', 'formula': 'pix',
                                       'sizes': 'tiny_varied'}),
                ('label', 'Int', {'fn': 'label'}),
                ('score', 'Float', {'fn': 'halves'}),
                ('a_f4', 'NDArray', {'dtype': '<f4', 'shape': [2, 3], 'formula': 'nd_code'}),
                ('a_u1', 'NDArray', {'dtype': '|u1', 'shape': [5], 'formula': 'nd_code'}),
                ('a_i8', 'NDArray', {'dtype': '<i8', 'shape': [2, 2, 2], 'formula': 'nd_code'}),
                ('a_b1', 'NDArray', {'dtype': '|b1', 'shape': [4], 'formula': 'nd_code'}),
                ('a_f2', 'NDArray', {'dtype': '<f2', 'shape': [3], 'formula': 'nd_code'}),
                ('tensor', 'TorchTensor', {'dtype': '<f4', 'shape': [4], 'formula': 'nd_code'}),
                ('blob', 'Bytes', {'lengths': 'varied'}),
                ('meta', 'JSON', {}),
                ('field_name_16chr', 'Int', {'fn': 'neg11'})]},
    # JPEG images of constant and varying size, and the 'proportion' mode; 2 MiB pages.
    {'name': 'py_images', 'num_samples': 20, 'page_size': 2 * MIB, 'workers': 1,
     'fields': [('label', 'Int', {'fn': 'label'}),
                ('photo', 'RGBImage', {'write_mode': 'jpg', 'formula': 'smooth',
                                       'sizes': 'const:40x32'}),
                ('varied', 'RGBImage', {'write_mode': 'jpg', 'formula': 'smooth',
                                        'sizes': 'varied'}),
                ('mixed', 'RGBImage', {'write_mode': 'proportion', 'formula': 'smooth',
                                       'sizes': 'varied'}),
                ('tiny', 'RGBImage', {'write_mode': 'raw', 'formula': 'smooth',
                                      'sizes': 'tiny_varied'})]},
    # ~320 KB a sample over 2 MiB pages: several pages, samples retried on a fresh page (their
    # abandoned bytes stay behind), two writer processes kept busy at once (a slow dataset) so
    # that pages hold interleaved samples and the allocation table is not sorted by pointer.
    {'name': 'py_multipage', 'num_samples': 24, 'page_size': 2 * MIB, 'workers': 2,
     'chunksize': 2, 'delay': 0.03,
     'fields': [('label', 'Int', {'fn': 'label'}),
                ('first', 'NDArray', {'dtype': '|u1', 'shape': [150000], 'formula': 'runs'}),
                ('second', 'NDArray', {'dtype': '|u1', 'shape': [170000], 'formula': 'runs'})]},
]

JPEG_MAE = 3.0


def sample_value(kind, params, i):
    import torch
    if kind == 'Int':
        return int_value(params['fn'], i)
    if kind == 'Float':
        return float_value(params['fn'], i)
    if kind == 'NDArray':
        return formulas.array_values(params['formula'], params['dtype'], i, params['shape'])
    if kind == 'TorchTensor':
        array = formulas.array_values(params['formula'], params['dtype'], i, params['shape'])
        return torch.from_numpy(array)
    if kind == 'Bytes':
        return formulas.byte_values(i, bytes_length(params['lengths'], i))
    if kind == 'JSON':
        return json_value(i)
    if kind == 'RGBImage':
        width, height = image_size(params['sizes'], i)
        return formulas.image(params['formula'], i, width, height)
    raise ValueError(kind)


class GoldenDataset:
    """Indexed dataset for DatasetWriter.from_indexed_dataset (indices arrive as numpy ints)."""

    def __init__(self, golden):
        self.golden = golden

    def __len__(self):
        return self.golden['num_samples']

    def __getitem__(self, index):
        i = int(index)
        time.sleep(self.golden.get('delay', 0))
        return tuple(sample_value(kind, params, i) for _, kind, params in self.golden['fields'])


def ffcv_field(kind, params):
    import torch
    from ffcv.fields import (BytesField, FloatField, IntField, JSONField, NDArrayField,
                             RGBImageField, TorchTensorField)
    if kind == 'Int':
        return IntField()
    if kind == 'Float':
        return FloatField()
    if kind == 'NDArray':
        return NDArrayField(np.dtype(params['dtype']), tuple(params['shape']))
    if kind == 'TorchTensor':
        torch_dtype = {'<f4': torch.float32, '<i8': torch.int64}[params['dtype']]
        return TorchTensorField(torch_dtype, tuple(params['shape']))
    if kind == 'Bytes':
        return BytesField()
    if kind == 'JSON':
        return JSONField()
    if kind == 'RGBImage':
        return RGBImageField(write_mode=params['write_mode'], jpeg_quality=90,
                             compress_probability=0.5)
    raise ValueError(kind)


def expectations(golden):
    n = golden['num_samples']
    fields = []
    for name, kind, params in golden['fields']:
        entry = {'name': name, 'type': kind}
        if kind == 'Int':
            entry['values'] = [int_value(params['fn'], i) for i in range(n)]
        elif kind == 'Float':
            entry['values'] = [float_value(params['fn'], i) for i in range(n)]
        elif kind in ('NDArray', 'TorchTensor'):
            entry.update(dtype=params['dtype'], shape=params['shape'], formula=params['formula'])
        elif kind == 'Bytes':
            entry.update(formula='bytes_code',
                         lengths=[bytes_length(params['lengths'], i) for i in range(n)])
        elif kind == 'JSON':
            # Exactly the text FFCV's JSONField stores (before its NUL terminator).
            entry['texts'] = [json.dumps(json_value(i)) for i in range(n)]
        elif kind == 'RGBImage':
            entry.update(write_mode=params['write_mode'], formula=params['formula'],
                         jpeg_mae=JPEG_MAE,
                         sizes=[list(image_size(params['sizes'], i)) for i in range(n)])
        fields.append(entry)
    return {'file': golden['name'] + '.beton.gz', 'num_samples': n,
            'page_size': golden['page_size'], 'fields': fields}


def write_golden(golden, scratch, out_dir):
    from ffcv.reader import Reader
    from ffcv.writer import DatasetWriter

    path = os.path.join(scratch, golden['name'] + '.beton')
    fields = {name: ffcv_field(kind, params) for name, kind, params in golden['fields']}
    writer = DatasetWriter(path, fields, page_size=golden['page_size'],
                           num_workers=golden['workers'])
    writer.from_indexed_dataset(GoldenDataset(golden), chunksize=golden.get('chunksize', 100))

    reader = Reader(path)  # sanity: FFCV reads back what it wrote
    assert reader.field_names == [name for name, _, _ in golden['fields']], reader.field_names
    assert int(reader.num_samples) == golden['num_samples']
    pointers = reader.alloc_table['ptr']
    layout = 'sorted' if np.all(pointers[1:] >= pointers[:-1]) else 'not sorted'

    gz_path = os.path.join(out_dir, golden['name'] + '.beton.gz')
    with open(path, 'rb') as source, open(gz_path, 'wb') as raw:
        # mtime=0 and no file name in the header: identical input gives identical .gz bytes.
        with gzip.GzipFile(filename='', mode='wb', fileobj=raw, compresslevel=9, mtime=0) as gz:
            shutil.copyfileobj(source, gz, 1 << 20)
    with open(os.path.join(out_dir, golden['name'] + '.json'), 'w', encoding='ascii') as f:
        json.dump(expectations(golden), f, indent=1)
        f.write('\n')
    return os.path.getsize(path), os.path.getsize(gz_path), layout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--out', required=True, help='directory for the golden files')
    parser.add_argument('--timeout', type=float, default=600,
                        help='abort after this many seconds (FFCV hangs when a worker dies)')
    args = parser.parse_args()
    faulthandler.dump_traceback_later(args.timeout, exit=True)

    from importlib.metadata import version
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix='ffcv_golden_') as scratch:
        for golden in GOLDENS:
            size, gz_size, layout = write_golden(golden, scratch, args.out)
            print(f"{golden['name']}: {size} bytes, {gz_size} gzipped, allocation table "
                  f"{layout} by pointer", flush=True)
    index = {'generator': 'tests/interop/make_golden.py',
             'ffcv_version': version('ffcv'), 'numpy_version': np.__version__,
             'goldens': [golden['name'] for golden in GOLDENS]}
    with open(os.path.join(args.out, 'index.json'), 'w', encoding='ascii') as f:
        json.dump(index, f, indent=1)
        f.write('\n')
    print(f'wrote {len(GOLDENS)} golden files to {args.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
