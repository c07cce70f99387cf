"""`ffcv write coco`: images with their COCO boxes, labels and crowd flags as RaggedNDArray
fields, boxes scaled with the stored images; read back by our loader and by Python FFCV; bad
annotation files are one clear line and leave no file."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import smooth_image
from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.loader import Loader, OrderOption

MAX_SIDE = 64


@pytest.fixture(scope="module")
def coco_set(tmp_path_factory):
    """12 images (JPEG and PNG, 40-150 px) with 0-5 boxes each, one crowd box, polygons that the
    writer passes over, and an annotation list in no particular order."""
    from PIL import Image

    root = tmp_path_factory.mktemp("coco")
    (root / "images").mkdir()
    rng = np.random.default_rng(5)
    images, annotations = [], []
    for i in range(12):
        height, width = (int(v) for v in rng.integers(40, 151, size=2))
        name = f"{i:03d}.{'png' if i % 3 == 0 else 'jpg'}"
        Image.fromarray(smooth_image(rng, height, width)).save(root / "images" / name)
        images.append({"id": 1000 + i, "file_name": name, "width": width, "height": height,
                       "license": 1})
        for _ in range(0 if i == 4 else int(rng.integers(1, 6))):
            x, y = rng.uniform(0, width - 5), rng.uniform(0, height - 5)
            w, h = rng.uniform(1, width - x), rng.uniform(1, height - y)
            annotations.append({"id": len(annotations) + 1, "image_id": 1000 + i,
                                "category_id": int(rng.integers(1, 91)),
                                "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)],
                                "area": w * h, "iscrowd": 0,
                                "segmentation": [[x, y, x + w, y, x + w, y + h]]})
    annotations[3]["iscrowd"] = 1
    annotations[3]["segmentation"] = {"counts": [1, 2, 3], "size": [10, 10]}
    rng.shuffle(annotations)
    data = {"info": {"year": 2026}, "images": images, "annotations": annotations,
            "categories": [{"id": c, "name": f"c{c}"} for c in range(1, 91)]}
    (root / "instances.json").write_text(json.dumps(data))
    return root, data


def write(build_bin, root, out, *extra, annotations="instances.json"):
    return subprocess.run([str(build_bin / "ffcv"), "write", "coco", str(root / "images"),
                           "--annotations", str(root / annotations), "--output", str(out),
                           "--write-mode", "jpg", "--max-resolution", str(MAX_SIDE),
                           "--workers", "2", *extra], capture_output=True, text=True)


def expected(data, fmt):
    """Per image, in file order: (boxes in pixels of the stored image, labels, crowd, id)."""
    out = []
    for image in data["images"]:
        width, height = image["width"], image["height"]
        ratio = MAX_SIDE / max(width, height)
        stored = (width, height) if ratio >= 1 else (int(ratio * width), int(ratio * height))
        sx, sy = stored[0] / width, stored[1] / height
        mine = [a for a in data["annotations"] if a["image_id"] == image["id"]]
        mine.sort(key=lambda a: data["annotations"].index(a))  # the file's order
        boxes = np.array([[a["bbox"][0] * sx, a["bbox"][1] * sy, a["bbox"][2] * sx,
                           a["bbox"][3] * sy] for a in mine], np.float64).reshape(-1, 4)
        if fmt == "xyxy":
            boxes[:, 2:] += boxes[:, :2]
        out.append((boxes, [a["category_id"] for a in mine], [a["iscrowd"] for a in mine],
                    image["id"], stored))
    return out


@pytest.mark.parametrize("fmt", ["xyxy", "xywh"])
def test_boxes_labels_and_crowd_read_back_scaled_with_their_images(coco_set, tmp_path, build_bin,
                                                                   fmt):
    root, data = coco_set
    out = tmp_path / "coco.beton"
    done = write(build_bin, root, out, "--box-format", fmt)
    assert done.returncode == 0, done.stderr
    assert f"boxes: {len(data['annotations'])} over 12 images (1 without any)" in done.stderr
    sidecar = json.loads((tmp_path / "coco.beton.sources.json").read_text())
    assert sidecar["box_format"] == fmt and sidecar["boxes"] == len(data["annotations"])
    loader = Loader(str(out), batch_size=5, num_workers=2, order=OrderOption.SEQUENTIAL,
                    drop_last=False, pipelines={"image": None, "image_id": [IntDecoder()]})
    rows = []
    for (boxes, offsets), (labels, label_offsets), (crowd, crowd_offsets), ids in loader:
        for k in range(len(ids)):
            rows.append((boxes[offsets[k]:offsets[k + 1]],
                         labels[label_offsets[k]:label_offsets[k + 1]].tolist(),
                         crowd[crowd_offsets[k]:crowd_offsets[k + 1]].tolist(), int(ids[k, 0])))
    want = expected(data, fmt)
    assert len(rows) == len(want) == 12
    for (boxes, labels, crowd, image_id), (w_boxes, w_labels, w_crowd, w_id, _) in zip(rows, want):
        assert image_id == w_id and labels == w_labels and crowd == w_crowd
        np.testing.assert_allclose(boxes, w_boxes, rtol=1e-6, atol=1e-4)


def test_polygons_read_back_scaled_beside_the_boxes_they_outline(coco_set, tmp_path, build_bin):
    root, data = coco_set
    out = tmp_path / "polygons.beton"
    done = write(build_bin, root, out, "--polygons")
    assert done.returncode == 0, done.stderr
    loader = Loader(str(out), batch_size=4, num_workers=2, order=OrderOption.SEQUENTIAL,
                    drop_last=False, pipelines={"image": None, "labels": None, "crowd": None,
                                                "image_id": None})
    got = []
    for (boxes, offsets), (points, point_offsets), (sizes, size_offsets), \
            (owners, owner_offsets) in loader:
        for k in range(len(offsets) - 1):
            got.append((boxes[offsets[k]:offsets[k + 1]],
                        points[point_offsets[k]:point_offsets[k + 1]],
                        sizes[size_offsets[k]:size_offsets[k + 1]].tolist(),
                        owners[owner_offsets[k]:owner_offsets[k + 1]].tolist()))
    assert len(got) == 12
    for image, (boxes, points, sizes, owners) in zip(data["images"], got):
        mine = [a for a in data["annotations"] if a["image_id"] == image["id"]]
        width, height = image["width"], image["height"]
        ratio = min(1.0, MAX_SIDE / max(width, height))
        sx = (int(ratio * width) if ratio < 1 else width) / width
        sy = (int(ratio * height) if ratio < 1 else height) / height
        want_points, want_sizes, want_owners = [], [], []
        for box, a in enumerate(mine):
            if isinstance(a["segmentation"], dict):  # an RLE mask: passed over
                continue
            for polygon in a["segmentation"]:
                want_points += [[x * sx, y * sy] for x, y in zip(polygon[::2], polygon[1::2])]
                want_sizes.append(len(polygon) // 2)
                want_owners.append(box)
        assert sizes == want_sizes and owners == want_owners
        np.testing.assert_allclose(points, np.array(want_points).reshape(-1, 2), rtol=1e-5,
                                   atol=1e-3)
        assert len(boxes) == len(mine)


def test_python_ffcv_reads_the_boxes(coco_set, tmp_path, build_bin):
    pytest.importorskip("ffcv", reason="Python FFCV is not installed")
    from ffcv.loader import Loader as FfcvLoader
    from ffcv.loader import OrderOption as FfcvOrder
    from ffcv.pipeline import PipelineSpec

    from ffcv_cpp.python_ffcv import (PaddedRaggedDecoder, RaggedNDArrayField,
                                      RaggedRowCountDecoder)

    root, data = coco_set
    out = tmp_path / "coco.beton"
    assert write(build_bin, root, out).returncode == 0
    loader = FfcvLoader(str(out), batch_size=4, num_workers=1, order=FfcvOrder.SEQUENTIAL,
                        drop_last=False,
                        custom_fields={"boxes": RaggedNDArrayField, "labels": RaggedNDArrayField,
                                       "crowd": RaggedNDArrayField},
                        pipelines={"image": None, "crowd": None, "image_id": None,
                                   "boxes": [PaddedRaggedDecoder()],
                                   "labels": [PaddedRaggedDecoder()],
                                   "count": PipelineSpec("boxes", RaggedRowCountDecoder())})
    want = iter(expected(data, "xyxy"))
    for boxes, labels, count in loader:
        for k in range(len(count)):
            w_boxes, w_labels, _, _, _ = next(want)
            n = int(count[k, 0])
            np.testing.assert_allclose(boxes[k, :n], w_boxes, rtol=1e-6, atol=1e-4)
            assert labels[k, :n].tolist() == w_labels


@pytest.mark.parametrize("change, message", [
    (lambda d: d["annotations"].append({"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1]}),
     "names image_id 7, which no entry"),
    (lambda d: d["annotations"].append({"image_id": 1000, "category_id": 1, "bbox": [0, 0, 1]}),
     "no \"bbox\" of four numbers"),
    (lambda d: d["annotations"].append({"image_id": 1000, "category_id": 1,
                                        "bbox": [0, 0, -1, 1]}), "negative width or height"),
    (lambda d: d["annotations"].append({"image_id": 1000, "bbox": [0, 0, 1, 1]}),
     "no whole-number \"category_id\""),
    (lambda d: d["images"].append(dict(d["images"][0])), "two images have id 1000"),
    (lambda d: d["images"][2].pop("width"), "has no \"width\" within 1..65535"),
    (lambda d: d.pop("images"), "lists no \"images\""),
    (lambda d: d["images"][3].update(file_name="../instances.json"), "leaves the images folder"),
    (lambda d: d["annotations"].append({"image_id": 1000, "category_id": 1, "bbox": [0, 0, 1, 1],
                                        "segmentation": [[0, 0, 1, 1]]}),
     "a polygon of 4 numbers"),
    (lambda d: d["images"][3].update(file_name="/etc/hostname"), "leaves the images folder"),
    (lambda d: d["annotations"].append({"image_id": 1000, "category_id": 1,
                                        "bbox": [0, 0, 1e300, 1]}), "not a finite number"),
    (lambda d: d["annotations"].append({"image_id": 2**64 - 1, "category_id": 1,
                                        "bbox": [0, 0, 1, 1]}), "no whole-number \"image_id\""),
])
def test_bad_annotations_are_one_clear_line_and_no_file(coco_set, tmp_path, build_bin, change,
                                                         message):
    root, data = coco_set
    bad = json.loads(json.dumps(data))
    change(bad)
    (root / "bad.json").write_text(json.dumps(bad))
    out = tmp_path / "bad.beton"
    done = write(build_bin, root, out, "--polygons", annotations="bad.json")
    assert done.returncode == 1 and message in done.stderr, done.stderr
    assert "bad.json" in done.stderr and not out.exists()


def test_truncated_json_names_the_byte(coco_set, tmp_path, build_bin):
    root, _ = coco_set
    text = (root / "instances.json").read_text()
    (root / "cut.json").write_text(text[:len(text) // 2])
    done = write(build_bin, root, tmp_path / "cut.beton", annotations="cut.json")
    assert done.returncode == 1 and "not valid JSON" in done.stderr and "offset" in done.stderr
    assert not (tmp_path / "cut.beton").exists()


def test_an_image_that_disagrees_with_its_annotation_is_skipped_or_fails(coco_set, tmp_path,
                                                                        build_bin):
    root, data = coco_set
    bad = json.loads(json.dumps(data))
    bad["images"][1]["width"] += 1
    bad["images"][5]["file_name"] = "missing.jpg"
    (root / "sizes.json").write_text(json.dumps(bad))
    done = write(build_bin, root, tmp_path / "a.beton", annotations="sizes.json")
    assert done.returncode == 1 and "the annotations give" in done.stderr
    assert not (tmp_path / "a.beton").exists()
    done = write(build_bin, root, tmp_path / "b.beton", "--on-bad-image", "skip",
                 annotations="sizes.json")
    assert done.returncode == 0, done.stderr
    skipped = json.loads((tmp_path / "b.beton.sources.json").read_text())["skipped"]
    assert sorted(s["file"].rsplit("/", 1)[1] for s in skipped) == ["001.jpg", "missing.jpg"]
    assert "skipped" in done.stderr
