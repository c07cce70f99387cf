"""Reads a SAGA run's path.csv (`ffcv run` with a [saga] recipe; docs/recipes.md).

path_rows(folder) -> every row as a dict: numbers as floats (an empty cell, a loss that was not
measured, as NaN), true/false as bools, other text as is.
"""
import csv
import os


def cell(text):
    """One path.csv value: a number (empty: NaN), true/false, or text."""
    if text in ("", None):
        return float("nan")
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


def path_rows(folder, phase=None):
    """The rows of FOLDER/path.csv; with `phase` ("path" or "refit") only those of that phase."""
    with open(os.path.join(folder, "path.csv"), newline="") as f:
        rows = [{k: cell(v) for k, v in row.items()} for row in csv.DictReader(f)]
    return [r for r in rows if phase is None or r.get("phase", "path") == phase]
