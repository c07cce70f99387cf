#!/usr/bin/env python3
"""Checks, with Python FFCV, the .beton files that our C++ writer made (ffcv_interop_write).

usage: check_ours_with_ffcv.py DIR [--timeout SECONDS]

DIR holds the files and manifest.json from `ffcv_interop_write DIR`. For every file:
  1. ffcv.reader.Reader: page size, sample count, field names, type ids and NDArray dtype/shape
     as the manifest says; every metadata column (scalars bit-exact, image modes and sizes, byte
     and JSON sizes); every heap pointer present in the allocation table with the sample id and
     the exact size its field needs, no unreferenced or page-crossing allocations, the data
     region and the allocation table where the format puts them; every payload byte-exact
     (JPEG payloads decode to the right size, within the manifest's mean absolute error).
  2. ffcv.loader.Loader (os_cache=True, SEQUENTIAL, a batch size that does not divide the
     sample count, drop_last=False, num_workers=1), with FFCV's own decoders: Int/Float/NDArray/
     Bytes/JSON default pipelines, SimpleRGBImageDecoder for constant-size image fields and
     CenterCropRGBImageDecoder (compared with an OpenCV INTER_AREA resize of the expected crop)
     for varying sizes. Files with a non-default page size are also loaded with the process
     cache (os_cache=False), which reads whole pages.
float16 NDArray fields are checked in step 1 only: numba cannot compile FFCV's decoder for them.

Exits 0 when everything matches, 1 with one line per mismatch otherwise.
"""

import argparse
import faulthandler
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

import formulas  # noqa: E402

TYPE_IDS = {'Float': 0, 'Int': 1, 'RGBImage': 2, 'Bytes': 3, 'NDArray': 4, 'JSON': 5}
HEADER_SIZE = 24
DESCRIPTOR_SIZE = 1041
ALLOC_ENTRY_SIZE = 24
DEFAULT_PAGE_SIZE = 1 << 23
CROP_SIZE = (12, 12)
CROP_RATIO = 0.875


class Mismatch(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Mismatch(message)


def float_bits(value):
    return struct.pack('<d', float(value))


def constant_size(field):
    return len({tuple(s) for s in field['sizes']}) == 1


def expected_image(field, i):
    width, height = field['sizes'][i]
    return formulas.image(field['formula'], i, width, height)


WORST = {'jpeg': 0.0, 'crop': 0.0}  # the largest mean absolute errors seen, reported at the end
KEEP_ALIVE = []  # loaders outlive their checks: numba's finalizers are noisy mid-run


def mae(a, b, kind):
    error = float(np.mean(np.abs(a.astype(np.int32) - b.astype(np.int32))))
    WORST[kind] = max(WORST[kind], error)
    return error


def center_crop_expected(image):
    """What CenterCropRGBImageDecoder should give for `image` (FFCV's crop, OpenCV INTER_AREA)."""
    height, width = image.shape[:2]
    side = int(CROP_RATIO * min(height, width))
    top, left = (height - side) // 2, (width - side) // 2
    crop = np.ascontiguousarray(image[top:top + side, left:left + side])
    return cv2.resize(crop, (CROP_SIZE[1], CROP_SIZE[0]), interpolation=cv2.INTER_AREA)


def loadable(field):
    return not (field['type'] == 'NDArray' and np.dtype(field['dtype']).kind == 'f'
                and np.dtype(field['dtype']).itemsize == 2)


def check_with_reader(path, entry):
    from ffcv.fields import BytesField, FloatField, IntField, NDArrayField, RGBImageField
    from ffcv.reader import Reader

    handler_class = {'Float': FloatField, 'Int': IntField, 'RGBImage': RGBImageField,
                     'Bytes': BytesField, 'NDArray': NDArrayField, 'JSON': BytesField}
    reader = Reader(path)
    fields = entry['fields']
    n = entry['num_samples']
    page = entry['page_size']
    expect(int(reader.page_size) == page, f'page_size {reader.page_size} != {page}')
    expect(int(reader.num_samples) == n, f'num_samples {reader.num_samples} != {n}')
    expect(int(reader.num_fields) == len(fields), f'num_fields {reader.num_fields}')
    names = [f['name'] for f in fields]
    expect(reader.field_names == names, f'field names {reader.field_names} != {names}')
    for k, field in enumerate(fields):
        type_id = int(reader.field_descriptors['type_id'][k])
        expect(type_id == TYPE_IDS[field['type']],
               f"field {field['name']}: type id {type_id} != {TYPE_IDS[field['type']]}")
        handler = reader.handlers[field['name']]
        expect(isinstance(handler, handler_class[field['type']]),
               f"field {field['name']}: FFCV built a {type(handler).__name__}")
        if field['type'] == 'NDArray':
            expect(handler.dtype == np.dtype(field['dtype']),
                   f"field {field['name']}: dtype {handler.dtype} != {field['dtype']}")
            expect(tuple(handler.shape) == tuple(field['shape']),
                   f"field {field['name']}: shape {handler.shape} != {field['shape']}")

    raw = np.fromfile(path, dtype=np.uint8)
    table_ptr = int(reader.header['alloc_table_ptr'])
    table = reader.alloc_table
    record = reader.metadata.dtype.itemsize
    metadata_end = HEADER_SIZE + DESCRIPTOR_SIZE * len(fields) + n * record
    expect(raw.size == table_ptr + ALLOC_ENTRY_SIZE * len(table),
           f'file size {raw.size} != alloc table end {table_ptr + ALLOC_ENTRY_SIZE * len(table)}')
    allocations = {}
    for sample_id, ptr, size in zip(table['sample_id'], table['ptr'], table['size']):
        ptr, size, sample_id = int(ptr), int(size), int(sample_id)
        expect(ptr not in allocations, f'two allocations at {ptr}')
        expect(size > 0, f'zero-size allocation at {ptr}')
        expect(ptr // page == (ptr + size - 1) // page,
               f'allocation at {ptr} of {size} bytes crosses a page boundary')
        expect(ptr >= metadata_end and ptr + size <= table_ptr,
               f'allocation at {ptr} lies outside the data region')
        allocations[ptr] = (sample_id, size)
    if allocations:
        data_start = -(-metadata_end // page) * page
        expect(min(allocations) >= data_start, 'an allocation lies before the first data page')
        expect((table_ptr - data_start) % page == 0,
               f'data region [{data_start}, {table_ptr}) is not whole pages')
    else:
        expect(table_ptr == metadata_end,
               f'no heap data, yet alloc_table_ptr {table_ptr} != metadata end {metadata_end}')

    referenced = set()

    def payload(field, i, ptr, size=None):
        expect(ptr in allocations,
               f"sample {i} field {field['name']}: pointer {ptr} not in the allocation table")
        owner, actual = allocations[ptr]
        expect(owner == i, f"sample {i} field {field['name']}: allocation owned by {owner}")
        if size is not None:
            expect(actual == size,
                   f"sample {i} field {field['name']}: allocation of {actual} bytes, need {size}")
        referenced.add(ptr)
        return raw[ptr:ptr + actual]

    for k, field in enumerate(fields):
        column = reader.metadata[f'f{k}']
        name = field['name']
        kind = field['type']
        modes_seen = set()
        for i in range(n):
            cell = column[i]
            where = f'sample {i} field {name}'
            if kind == 'Int':
                expect(int(cell) == field['values'][i], f'{where}: {int(cell)} != {field["values"][i]}')
            elif kind == 'Float':
                expect(float_bits(cell) == float_bits(field['values'][i]),
                       f'{where}: {float(cell)!r} != {field["values"][i]!r}')
            elif kind == 'NDArray':
                dtype = np.dtype(field['dtype'])
                count = int(np.prod(field['shape']))
                data = payload(field, i, int(cell), dtype.itemsize * count)
                want = formulas.array_values(field['formula'], dtype, i, field['shape'])
                expect(data.tobytes() == want.tobytes(), f'{where}: array bytes differ')
            elif kind == 'Bytes':
                length = field['lengths'][i]
                expect(int(cell['size']) == length, f'{where}: metadata size {cell["size"]}')
                data = payload(field, i, int(cell['ptr']), length)
                expect(np.array_equal(data, formulas.byte_values(i, length)), f'{where}: bytes differ')
            elif kind == 'JSON':
                text = field['texts'][i].encode('utf8') + b'\0'
                expect(int(cell['size']) == len(text), f'{where}: metadata size {cell["size"]}')
                data = payload(field, i, int(cell['ptr']), len(text))
                expect(data.tobytes() == text, f'{where}: JSON bytes {data.tobytes()!r}')
            elif kind == 'RGBImage':
                width, height = field['sizes'][i]
                expect((int(cell['width']), int(cell['height'])) == (width, height),
                       f"{where}: metadata size {cell['width']}x{cell['height']} != {width}x{height}")
                mode = int(cell['mode'])
                allowed = {'raw': {1}, 'jpg': {0}, 'proportion': {0, 1}}[field['write_mode']]
                expect(mode in allowed, f'{where}: mode {mode} for write mode {field["write_mode"]}')
                modes_seen.add(mode)
                want = expected_image(field, i)
                if mode == 1:
                    data = payload(field, i, int(cell['data_ptr']), width * height * 3)
                    expect(np.array_equal(data.reshape(height, width, 3), want),
                           f'{where}: raw pixels differ')
                else:
                    data = payload(field, i, int(cell['data_ptr']))
                    bgr = cv2.imdecode(data, cv2.IMREAD_COLOR)
                    expect(bgr is not None, f'{where}: JPEG does not decode')
                    expect(bgr.shape == (height, width, 3), f'{where}: JPEG of {bgr.shape}')
                    error = mae(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), want, 'jpeg')
                    expect(error <= field['jpeg_mae'], f'{where}: JPEG MAE {error:.2f}')
        if kind == 'RGBImage' and field['write_mode'] == 'proportion':
            expect(modes_seen == {0, 1}, f'field {name}: proportion mode stored only {modes_seen}')
    expect(referenced == set(allocations),
           f'{len(set(allocations) - referenced)} allocations are not referenced by metadata')
    pages = {ptr // page for ptr in allocations}
    return len(pages)


def check_with_loader(path, entry, os_cache):
    import torch
    from ffcv.fields import JSONField
    from ffcv.fields.decoders import CenterCropRGBImageDecoder, SimpleRGBImageDecoder
    from ffcv.loader import Loader, OrderOption

    fields = entry['fields']
    n = entry['num_samples']
    batch_size = entry['batch_size']
    pipelines = {}
    outputs = []
    for field in fields:
        if not loadable(field):
            pipelines[field['name']] = None
            continue
        if field['type'] == 'RGBImage':
            if constant_size(field):
                pipelines[field['name']] = [SimpleRGBImageDecoder()]
            else:
                pipelines[field['name']] = [CenterCropRGBImageDecoder(CROP_SIZE, ratio=CROP_RATIO)]
        outputs.append(field)
    loader = Loader(path, batch_size=batch_size, num_workers=1, os_cache=os_cache,
                    order=OrderOption.SEQUENTIAL, drop_last=False, pipelines=pipelines)
    KEEP_ALIVE.append(loader)
    expect(len(loader) == math.ceil(n / batch_size), f'len(loader) {len(loader)}')
    start = 0
    batches = 0
    for batch in loader:
        expect(len(batch) == len(outputs), f'batch of {len(batch)} outputs, want {len(outputs)}')
        count = None
        for field, value in zip(outputs, batch):
            value = value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
            count = value.shape[0] if count is None else count
            expect(value.shape[0] == count, f"field {field['name']}: ragged batch")
            for b in range(count):
                i = start + b
                where = f"loader sample {i} field {field['name']}"
                row = value[b]
                kind = field['type']
                if kind == 'Int':
                    expect(row.shape == (1,) and int(row[0]) == field['values'][i],
                           f'{where}: {row} != {field["values"][i]}')
                elif kind == 'Float':
                    expect(row.shape == (1,) and float_bits(row[0]) == float_bits(field['values'][i]),
                           f'{where}: {row} != {field["values"][i]!r}')
                elif kind == 'NDArray':
                    want = formulas.array_values(field['formula'], field['dtype'], i, field['shape'])
                    expect(row.dtype == want.dtype and np.array_equal(row, want),
                           f'{where}: {row} != {want}')
                elif kind == 'Bytes':
                    length = field['lengths'][i]
                    expect(row.shape == (max(field['lengths']),), f'{where}: row shape {row.shape}')
                    expect(np.array_equal(row[:length], formulas.byte_values(i, length)),
                           f'{where}: bytes differ')
                elif kind == 'JSON':
                    text = field['texts'][i]
                    unpacked = JSONField.unpack(row)
                    expect(unpacked == json.loads(text), f'{where}: {unpacked!r}')
                    stored = row.tobytes().split(b'\0', 1)[0]
                    expect(stored == text.encode('utf8'), f'{where}: {stored!r}')
                elif kind == 'RGBImage':
                    want = expected_image(field, i)
                    jpeg_allowed = field['write_mode'] != 'raw'
                    if constant_size(field):
                        expect(row.shape == want.shape, f'{where}: image shape {row.shape}')
                        if jpeg_allowed:
                            error = mae(row, want, 'jpeg')
                            expect(error <= field['jpeg_mae'], f'{where}: JPEG MAE {error:.2f}')
                        else:
                            expect(np.array_equal(row, want), f'{where}: raw pixels differ')
                    else:
                        expect(row.shape == CROP_SIZE + (3,), f'{where}: crop shape {row.shape}')
                        error = mae(row, center_crop_expected(want), 'crop')
                        limit = field['jpeg_mae'] + 1.0 if jpeg_allowed else 1.0
                        expect(error <= limit, f'{where}: center crop MAE {error:.2f} > {limit}')
        expect(count <= batch_size, f'batch of {count} samples')
        start += count
        batches += 1
    expect(start == n, f'the loader gave {start} samples, want {n}')
    return batches


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('dir')
    parser.add_argument('--timeout', type=float, default=600,
                        help='abort (exit 1) after this many seconds: FFCV hangs on some errors')
    args = parser.parse_args()
    # FFCV's writer and loader hang instead of failing when a worker dies: never wait forever.
    faulthandler.dump_traceback_later(args.timeout, exit=True)

    with open(os.path.join(args.dir, 'manifest.json'), encoding='utf8') as f:
        manifest = json.load(f)
    expect_types = set(TYPE_IDS)
    seen_types = {field['type'] for entry in manifest['files'] for field in entry['fields']}
    failures = []
    if seen_types != expect_types:
        failures.append(f'manifest covers field types {sorted(seen_types)}, want all of '
                        f'{sorted(expect_types)}')
    for entry in manifest['files']:
        path = os.path.join(args.dir, entry['file'])
        try:
            pages = check_with_reader(path, entry)
            caches = [True]
            if entry['page_size'] != DEFAULT_PAGE_SIZE:
                caches.append(False)
                expect(pages >= 3, f'{pages} data pages; the file should span several')
            for os_cache in caches:
                batches = check_with_loader(path, entry, os_cache)
            print(f"ok   {entry['file']}: {entry['num_samples']} samples, "
                  f"{len(entry['fields'])} fields, {pages} data pages, {batches} batches "
                  f"of <= {entry['batch_size']}", flush=True)
        except Mismatch as error:
            failures.append(f"{entry['file']}: {error}")
            print(f"FAIL {entry['file']}: {error}", flush=True)
        except Exception as error:  # FFCV itself failed on our file
            failures.append(f"{entry['file']}: {type(error).__name__}: {error}")
            print(f"FAIL {entry['file']}: Python FFCV raised {type(error).__name__}: {error}",
                  flush=True)
    if failures:
        print(f'{len(failures)} file(s) do not match:', file=sys.stderr)
        for line in failures:
            print('  ' + line, file=sys.stderr)
        return 1
    print(f"all {len(manifest['files'])} files read correctly by Python FFCV "
          f"(worst mean absolute error: JPEG {WORST['jpeg']:.2f}, center crop {WORST['crop']:.2f})")
    return 0


if __name__ == '__main__':
    sys.exit(main())
