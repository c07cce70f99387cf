"""No script removes a folder it did not make: experiments/owned_folders.py's rules, and the
writer benchmark given someone else's --images-dir (it used to delete it when its image count
differed from --count).

    owned_folders_test.py --ffcv BUILD/bin/ffcv
"""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from owned_folders import MARK, is_owned, make_owned, remove_owned  # noqa: E402

FFCV = None


class OwnedFolders(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_marked_folder_is_removed(self):
        folder = make_owned(self.dir / "made" / "deep", "test")
        (folder / "data.bin").write_bytes(b"x")
        self.assertTrue(is_owned(folder))
        remove_owned(folder, "test")
        self.assertFalse(folder.exists())

    def test_absent_and_empty_folders_are_fine(self):
        remove_owned(self.dir / "absent", "test")
        (self.dir / "empty").mkdir()
        remove_owned(self.dir / "empty", "test")
        self.assertFalse((self.dir / "empty").exists())

    def test_a_users_folder_and_file_are_left_whole(self):
        folder = self.dir / "mine"
        folder.mkdir()
        (folder / "thesis.tex").write_text("years of work")
        with self.assertRaises(SystemExit) as stopped:
            remove_owned(folder, "test")
        self.assertIn(str(folder), str(stopped.exception))
        self.assertEqual((folder / "thesis.tex").read_text(), "years of work")
        (self.dir / "file").write_text("keep")
        with self.assertRaises(SystemExit):
            remove_owned(self.dir / "file", "test")
        self.assertEqual((self.dir / "file").read_text(), "keep")

    def test_a_run_folder_counts_only_when_asked(self):
        run = self.dir / "run"
        run.mkdir()
        (run / "recipe.toml").write_text("[data]\n")
        with self.assertRaises(SystemExit):
            remove_owned(run, "test")
        remove_owned(run, "test", run_folder=True)
        self.assertFalse(run.exists())

    def test_the_writer_benchmark_keeps_a_foreign_images_dir(self):
        images = self.dir / "photos"
        (images / "holiday").mkdir(parents=True)
        (images / "holiday" / "beach.jpg").write_bytes(b"\xff\xd8 not really")
        (images / "notes.txt").write_text("mine")
        run = subprocess.run(
            [sys.executable, str(ROOT / "experiments/writer_benchmark/writer_benchmark.py"),
             "--images-dir", str(images), "--count", "5", "--repeats", "1",
             "--results", str(self.dir / "results")],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, FFCV_CLI=str(FFCV)))
        self.assertNotEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn(str(images), run.stderr)
        self.assertEqual((images / "notes.txt").read_text(), "mine")
        self.assertTrue((images / "holiday" / "beach.jpg").exists())
        self.assertFalse((images / MARK).exists())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--ffcv", required=True)
    args, rest = parser.parse_known_args()
    FFCV = args.ffcv
    unittest.main(argv=[sys.argv[0]] + rest)
