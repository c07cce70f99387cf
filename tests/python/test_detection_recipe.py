"""The detection experiment's recipe loads, and its checks refuse what a training recipe's
would: an unknown key (naming the closest), a value of the wrong type, a missing key."""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments" / "detection"))
pytest.importorskip("torch")
from train_detector import load_recipe  # noqa: E402

RECIPE = ROOT / "recipes" / "detection" / "fashion_mosaic.toml"


def test_the_recipe_loads():
    recipe = load_recipe(RECIPE)
    assert recipe["augment"]["size"] == 128 and recipe["data"]["val_images"] == 200


@pytest.mark.parametrize("old, new, message", [
    ("epochs = 10", "epoch = 10", "unknown key 'epoch' in [training] (did you mean 'epochs'?)"),
    ("size = 128 ", "size = \"128\" ", "augment.size must be int"),
    ("width = 32 ", "", "missing model.width"),
    ("val_images = 200", "val_images = 2000", "data.val_images must lie between"),
    ("[model]", "[models]", "unknown section [models]"),
])
def test_a_bad_recipe_is_one_clear_line(tmp_path, old, new, message):
    text = RECIPE.read_text()
    assert old in text
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace(old, new))
    with pytest.raises(SystemExit, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        load_recipe(bad)
