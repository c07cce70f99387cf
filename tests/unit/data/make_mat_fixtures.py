"""Writes the MAT files of tests/unit/mat_file_test.cpp with scipy (an independent writer):
a synsets struct array shaped as ImageNet's devkit meta.mat (three leaves and a parent), plain
and zlib-compressed.

  .venv/bin/python tests/unit/data/make_mat_fixtures.py
"""
import os

import numpy as np
import scipy.io

HERE = os.path.dirname(os.path.abspath(__file__))
synsets = np.zeros((4, 1), dtype=[("ILSVRC2012_ID", "O"), ("WNID", "O"), ("words", "O"),
                                  ("num_children", "O"), ("children", "O")])
rows = [(1, "n01440764", "tench, Tinca tinca", 0), (2, "n01443537", "goldfish", 0),
        (3, "n02102040", "English springer", 0), (1001, "n00001740", "entity", 3)]
for i, (id_, wnid, words, children) in enumerate(rows):
    synsets[i, 0] = (np.array([[id_]], dtype=np.float64), wnid, words,
                     np.array([[children]], dtype=np.float64),
                     np.array([[1, 2, 3]], dtype=np.float64) if children else np.zeros((1, 0)))
for name, compress in (("meta-plain.mat", False), ("meta-compressed.mat", True)):
    scipy.io.savemat(os.path.join(HERE, name), {"synsets": synsets}, do_compression=compress)
