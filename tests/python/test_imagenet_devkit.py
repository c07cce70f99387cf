"""`ffcv write tar ILSVRC2012_img_val.tar --labels ILSVRC2012_devkit_t12.tar.gz`: the devkit's
numeric ground truth, named through its meta.mat (written here by scipy, as MATLAB files are
read by torchvision), gives the same labels as Kaggle's LOC_val_solution.csv."""

from __future__ import annotations

import io
import subprocess
import tarfile

import numpy as np
import pytest

from ffcv_cpp.fields.basics import IntDecoder
from ffcv_cpp.loader import Loader, OrderOption

scipy_io = pytest.importorskip("scipy.io")
Image = pytest.importorskip("PIL.Image")

# Leaves (num_children 0) get IDs 1..6, as the kit numbers its 1,000 classes; a parent synset
# follows with a larger ID, as in the kit.
LEAVES = ["n09999999", "n01440764", "n02102040", "n01443537", "n03000134", "n02979186"]
IMAGES = 30


def ground_truth_ids():
    rng = np.random.default_rng(4)
    return [int(v) for v in rng.integers(1, len(LEAVES) + 1, size=IMAGES)]


def write_meta(path, compress):
    synsets = np.zeros((len(LEAVES) + 1, 1), dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O"),
                                                     ("words", "O"), ("num_children", "O")])
    for i, wnid in enumerate(LEAVES):
        synsets[i, 0] = (np.array([[i + 1]], dtype=np.float64), wnid, "class %d, words" % i,
                         np.array([[0]], dtype=np.float64))
    synsets[len(LEAVES), 0] = (np.array([[1001]], dtype=np.float64), "n00001740", "entity",
                               np.array([[len(LEAVES)]], dtype=np.float64))
    scipy_io.savemat(path, {"synsets": synsets}, do_compression=compress)


def add_file(archive, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def write_devkit(path, meta_bytes, truth_lines):
    with tarfile.open(path, "w:gz") as archive:
        add_file(archive, "ILSVRC2012_devkit_t12/data/meta.mat", meta_bytes)
        add_file(archive, "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt",
                 "".join("%s\n" % line for line in truth_lines).encode())


def write_val_tar(path):
    rng = np.random.default_rng(7)
    with tarfile.open(path, "w") as archive:
        for i in range(1, IMAGES + 1):
            pixels = rng.integers(0, 256, size=(24, 32, 3), dtype=np.uint8)
            jpeg = io.BytesIO()
            Image.fromarray(pixels).save(jpeg, format="JPEG", quality=90)
            add_file(archive, "ILSVRC2012_val_%08d.JPEG" % i, jpeg.getvalue())


def write(build_bin, val_tar, labels, output):
    return subprocess.run([str(build_bin / "ffcv"), "write", "tar", str(val_tar), "--labels",
                           str(labels), "--output", str(output), "--write-mode", "raw",
                           "--workers", "2"], capture_output=True, text=True)


def labels_of(path):
    loader = Loader(str(path), batch_size=IMAGES, order=OrderOption.SEQUENTIAL, num_workers=1,
                    pipelines={"label": [IntDecoder()]})
    return [int(v) for batch in loader for v in np.asarray(batch[-1]).ravel()]


@pytest.mark.parametrize("compress", [True, False], ids=["compressed", "plain"])
def test_devkit_labels_equal_the_solution_csvs(build_bin, tmp_path, compress):
    ids = ground_truth_ids()
    meta = tmp_path / "meta.mat"
    write_meta(str(meta), compress)
    devkit = tmp_path / "ILSVRC2012_devkit_t12.tar.gz"
    write_devkit(devkit, meta.read_bytes(), ids)
    val_tar = tmp_path / "ILSVRC2012_img_val.tar"
    write_val_tar(val_tar)
    csv = tmp_path / "LOC_val_solution.csv"
    csv.write_text("ImageId,PredictionString\n" + "".join(
        "ILSVRC2012_val_%08d,%s 1 2 3 4\n" % (i + 1, LEAVES[id_ - 1]) for i, id_ in enumerate(ids)))

    from_devkit = write(build_bin, val_tar, devkit, tmp_path / "devkit.beton")
    assert from_devkit.returncode == 0, from_devkit.stderr
    from_csv = write(build_bin, val_tar, csv, tmp_path / "csv.beton")
    assert from_csv.returncode == 0, from_csv.stderr
    assert (tmp_path / "devkit.beton").read_bytes() == (tmp_path / "csv.beton").read_bytes()
    # The classes present, in sorted WNID order, as ImageFolder numbers the extracted folders.
    classes = sorted({LEAVES[id_ - 1] for id_ in ids})
    assert labels_of(tmp_path / "devkit.beton") == [classes.index(LEAVES[id_ - 1]) for id_ in ids]


def test_bad_devkits_are_one_clear_line(build_bin, tmp_path):
    meta = tmp_path / "meta.mat"
    write_meta(str(meta), True)
    val_tar = tmp_path / "val.tar"
    write_val_tar(val_tar)
    cases = [
        ("parent", [1] * (IMAGES - 1) + [1001], ":%d: expected an ILSVRC2012_ID of a class" % IMAGES),
        ("word", [1, "x"] + [1] * (IMAGES - 2), ":2: expected an ILSVRC2012_ID"),
    ]
    for name, lines, message in cases:
        devkit = tmp_path / (name + ".tar.gz")
        write_devkit(devkit, meta.read_bytes(), lines)
        done = write(build_bin, val_tar, devkit, tmp_path / (name + ".beton"))
        assert done.returncode == 1 and message in done.stderr, done.stderr
        assert not (tmp_path / (name + ".beton")).exists()
    no_meta = tmp_path / "no-meta.tar.gz"
    with tarfile.open(no_meta, "w:gz") as archive:
        add_file(archive, "x/data/ILSVRC2012_validation_ground_truth.txt", b"1\n")
    done = write(build_bin, val_tar, no_meta, tmp_path / "no-meta.beton")
    assert done.returncode == 1 and "lacks data/meta.mat" in done.stderr, done.stderr
    short = tmp_path / "short.tar.gz"
    write_devkit(short, meta.read_bytes(), [1] * (IMAGES - 1))
    done = write(build_bin, val_tar, short, tmp_path / "short.beton")
    assert done.returncode == 1 and "ILSVRC2012_val_%08d" % IMAGES in done.stderr, done.stderr
