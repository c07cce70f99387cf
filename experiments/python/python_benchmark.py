#!/usr/bin/env python3
"""The Python package against the C++ command line, Python FFCV and the PyTorch DataLoader, in
one run on the same files and cores.

  loader    the ImageNet training pipeline (random-resized-crop 160 + flip, uint8 images) over
            the ImageNet-like .beton, with --workers threads each: `ffcv bench` (C++), ffcv_cpp's
            Loader consumed from Python (batches as torch tensors), Python FFCV's Loader (after
            a warm-up epoch for numba); best epoch of --epochs, images/s
  writer    the ImageNet-like JPEG folder to a .beton (jpg, max resolution 512, quality 90):
            `ffcv write folder`, and DatasetWriter.from_indexed_dataset from Python over the same
            files, handed over as JPEG bytes (decoded by the writer's threads, the same bytes
            result) and as PIL images (torchvision's ImageFolder: decoded in __getitem__)
  training  experiments/python/train_ffcv_api.py (a small ResNet of --train-width channels on
            the CPU, --train-images images at --train-res px) fed by ffcv_cpp and, with only its imports changed, by
            Python FFCV; and the same model and loop fed by torchvision's ImageFolder through the
            DataLoader (RandomResizedCrop + flip + ToTensor + Normalize); epoch time and the time
            the loop waited for its loader, best of --train-epochs

Usage (after tools/setup.sh):
  .venv/bin/python experiments/python/python_benchmark.py --workers 2
Writes results/python.{json,md,png}; --render results/python.json writes the last two again.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from benchmark_machine import machine  # noqa: E402

CLI = ROOT / "build" / "bin" / "ffcv"
SCRIPT = ROOT / "experiments" / "python" / "train_ffcv_api.py"
PYTHON = sys.executable

LOADER_SNIPPET = r"""
import sys, time, json
package, path, epochs, batch, workers = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
if package == "ffcv":
    from ffcv.loader import Loader, OrderOption
    from ffcv.fields.decoders import RandomResizedCropRGBImageDecoder
    from ffcv.transforms import RandomHorizontalFlip, ToTensor
else:
    from ffcv_cpp.loader import Loader, OrderOption
    from ffcv_cpp.fields.decoders import RandomResizedCropRGBImageDecoder
    from ffcv_cpp.transforms import RandomHorizontalFlip, ToTensor
loader = Loader(path, batch_size=batch, num_workers=workers, order=OrderOption.RANDOM, seed=0,
                pipelines={"image": [RandomResizedCropRGBImageDecoder((160, 160)),
                                     RandomHorizontalFlip(), ToTensor()], "label": None})
rates = []
for epoch in range(epochs + (1 if package == "ffcv" else 0)):
    started, images = time.perf_counter(), 0
    for (image,) in loader:
        images += image.shape[0]
    rates.append(images / (time.perf_counter() - started))
if package == "ffcv":
    rates = rates[1:]  # the first epoch compiles the pipeline
print(json.dumps({"rates": rates}))
"""

WRITER_SNIPPET = r"""
import sys, time, json
from pathlib import Path
from ffcv_cpp.fields import IntField, RGBImageField
from ffcv_cpp.writer import DatasetWriter
how, folder, output, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import torchvision
if how == "pil":
    dataset = torchvision.datasets.ImageFolder(folder)
else:
    class JpegBytes:
        def __init__(self, root):
            self.samples = torchvision.datasets.ImageFolder(root).samples
        def __len__(self):
            return len(self.samples)
        def __getitem__(self, i):
            path, label = self.samples[i]
            return Path(path).read_bytes(), label
    dataset = JpegBytes(folder)
started = time.perf_counter()
DatasetWriter(output, {"image": RGBImageField(write_mode="jpg", max_resolution=512,
                                              jpeg_quality=90), "label": IntField()},
              num_workers=workers, progress=False).from_indexed_dataset(dataset)
print(json.dumps({"seconds": time.perf_counter() - started, "images": len(dataset)}))
"""

DATALOADER_SNIPPET = r"""
import sys, json, torch, torchvision
sys.path.insert(0, sys.argv[1])
from train_ffcv_api import MEAN, STD, small_resnet, train_epoch
folder, images, res, batch, workers, epochs, classes, width = sys.argv[2], *map(int, sys.argv[3:10])
t = torchvision.transforms
transform = t.Compose([t.RandomResizedCrop(res), t.RandomHorizontalFlip(), t.ToTensor(),
                       t.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD])])
dataset = torch.utils.data.Subset(torchvision.datasets.ImageFolder(folder, transform),
                                  range(images))
loader = torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, drop_last=True,
                                     num_workers=workers, persistent_workers=workers > 0)
torch.manual_seed(0)
model = small_resnet(classes, width).to(memory_format=torch.channels_last)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
for epoch in range(epochs):
    print(json.dumps(train_epoch(model, loader, optimizer, None)), flush=True)
"""


def run_json_lines(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"python_benchmark: {' '.join(map(str, command[:4]))} failed:\n{done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def prepare_data(args):
    """The ImageNet-like JPEG folder and its .beton (made when missing), read once into RAM."""
    beton, images = Path(args.beton), Path(args.images_dir)
    if not beton.exists() or not images.exists():
        subprocess.run([str(CLI), "write", "imagenet-like", "--count", str(args.count),
                        "--images-dir", str(images), "--write-mode", "jpg", "--max-resolution",
                        "512", "--jpeg-quality", "90", "--output", str(beton), "--force",
                        "--quiet"], check=True)
    subprocess.run(["cat", str(beton)], stdout=subprocess.DEVNULL, check=True)
    subprocess.run(["sh", "-c", f"find '{images}' -type f -exec cat {{}} + > /dev/null"],
                   check=True)
    inspect = subprocess.run([str(CLI), "inspect", str(beton), "--json"], check=True,
                             capture_output=True, text=True).stdout
    return beton, images, json.loads(inspect)["num_samples"]


def measure_loader(beton, args):
    command = [str(CLI), "bench", str(beton), "--num-workers", str(args.workers), "--order",
               "random", "--batch-size", str(args.batch_size), "--epochs", str(args.epochs),
               "--fields", "image", "--image-decoder", "random_resized_crop", "--image-size",
               "160", "--flip", "--json"]
    best = {"cli": 0.0, "ffcv_cpp": 0.0, "ffcv": 0.0}
    for _ in range(args.repeats):  # rounds alternate the three, each keeps its best
        report = json.loads(subprocess.run(command, check=True, capture_output=True,
                                           text=True).stdout)
        best["cli"] = max(best["cli"], max(e["samples_per_s"] for e in report["epochs"]))
        for package in ("ffcv_cpp", "ffcv"):
            rates = run_json_lines([PYTHON, "-c", LOADER_SNIPPET, package, str(beton),
                                    str(args.epochs), str(args.batch_size),
                                    str(args.workers)])[0]["rates"]
            best[package] = max(best[package], max(rates))
    result = {"cli_images_per_s": best["cli"], "python_images_per_s": best["ffcv_cpp"],
              "ffcv_images_per_s": best["ffcv"],
              "python_over_cli": best["ffcv_cpp"] / best["cli"],
              "python_over_ffcv": best["ffcv_cpp"] / best["ffcv"]}
    print(f"loader: ffcv bench {best['cli']:.0f}, ffcv_cpp from Python {best['ffcv_cpp']:.0f}, "
          f"Python FFCV {best['ffcv']:.0f} images/s", flush=True)
    return result


def measure_writer(images, count, args):
    best = {"cli": float("inf"), "jpeg_bytes": float("inf"), "pil": float("inf")}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeats):
            output = Path(scratch) / "cli.beton"
            started = time.perf_counter()
            subprocess.run([str(CLI), "write", "folder", str(images), "--output", str(output),
                            "--write-mode", "jpg", "--max-resolution", "512", "--jpeg-quality",
                            "90", "--workers", str(args.workers), "--force", "--quiet"],
                           check=True)
            best["cli"] = min(best["cli"], time.perf_counter() - started)
            for how in ("jpeg_bytes", "pil"):
                target = Path(scratch) / f"{how}.beton"
                target.unlink(missing_ok=True)
                seconds = run_json_lines([PYTHON, "-c", WRITER_SNIPPET, how, str(images),
                                          str(target), str(args.workers)])[0]["seconds"]
                best[how] = min(best[how], seconds)
            same = (Path(scratch) / "jpeg_bytes.beton").read_bytes() == output.read_bytes()
    result = {"cli_images_per_s": count / best["cli"],
              "python_jpeg_bytes_images_per_s": count / best["jpeg_bytes"],
              "python_pil_images_per_s": count / best["pil"],
              "jpeg_bytes_over_cli": best["cli"] / best["jpeg_bytes"],
              "pil_over_cli": best["cli"] / best["pil"], "jpeg_bytes_file_identical": same}
    print(f"writer: ffcv write {result['cli_images_per_s']:.0f}, from Python (JPEG bytes) "
          f"{result['python_jpeg_bytes_images_per_s']:.0f}, (PIL images) "
          f"{result['python_pil_images_per_s']:.0f} images/s; same bytes: {same}", flush=True)
    return result


def ffcv_variant(directory):
    """train_ffcv_api.py with its imports from Python FFCV (the only lines that differ)."""
    text = "".join(line.replace("ffcv_cpp", "ffcv") if line.startswith("from ffcv_cpp") else line
                   for line in SCRIPT.read_text().splitlines(keepends=True))
    target = Path(directory) / "train_with_ffcv.py"
    target.write_text(text)
    return target


def best_epoch(reports):
    # Python FFCV's first epoch compiles its pipeline; every feeder is judged by its best epoch.
    best = min(reports, key=lambda r: r["seconds"])
    return {"seconds": best["seconds"], "loader_wait_seconds": best["loader_wait_seconds"],
            "images_per_second": best["images_per_second"], "images": best["images"]}


def measure_training(beton, images, args, classes):
    common = ["--train", str(beton), "--val", str(beton), "--epochs", str(args.train_epochs),
              "--batch-size", "64", "--workers", str(args.workers), "--res", str(args.train_res),
              "--classes", str(classes), "--device", "cpu", "--limit", str(args.train_images),
              "--width", str(args.train_width)]
    with tempfile.TemporaryDirectory() as scratch:
        result = {"ffcv_cpp": best_epoch(run_json_lines([PYTHON, str(SCRIPT)] + common)),
                  "ffcv": best_epoch(run_json_lines([PYTHON, str(ffcv_variant(scratch))] +
                                                    common))}
    result["dataloader"] = best_epoch(run_json_lines(
        [PYTHON, "-c", DATALOADER_SNIPPET, str(SCRIPT.parent), str(images),
         str(args.train_images), str(args.train_res), "64", str(args.workers),
         str(args.train_epochs), str(classes), str(args.train_width)]))
    for name, row in result.items():
        print(f"training fed by {name}: {row['seconds']:.2f} s per epoch, waiting "
              f"{row['loader_wait_seconds']:.2f} s", flush=True)
    return result


def plot(report, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4.5))
    loader = report["loader"]
    left.bar(["ffcv bench\n(C++)", "ffcv_cpp\nfrom Python", "Python FFCV"],
             [loader["cli_images_per_s"], loader["python_images_per_s"],
              loader["ffcv_images_per_s"]], color=["#4c72b0", "#55a868", "#c44e52"])
    left.set_title(f"loader: RRC 160 + flip, {report['workers']} workers")
    left.set_ylabel("images/s")
    writer = report["writer"]
    middle.bar(["ffcv write\n(C++)", "from Python\nJPEG bytes", "from Python\nPIL images"],
               [writer["cli_images_per_s"], writer["python_jpeg_bytes_images_per_s"],
                writer["python_pil_images_per_s"]], color=["#4c72b0", "#55a868", "#8172b2"])
    middle.set_title("writer: JPEG folder to .beton")
    middle.set_ylabel("images/s")
    training = report["training"]
    names = ["ffcv_cpp", "ffcv", "dataloader"]
    waits = [training[n]["loader_wait_seconds"] for n in names]
    computes = [training[n]["seconds"] - training[n]["loader_wait_seconds"] for n in names]
    labels = ["ffcv_cpp", "Python FFCV", "DataLoader"]
    right.bar(labels, computes, label="training step", color="#4c72b0")
    right.bar(labels, waits, bottom=computes, label="waiting for the loader", color="#dd8452")
    right.set_title(f"training: {report['training_images']} images per epoch, CPU")
    right.set_ylabel("seconds")
    right.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=110)


def write_report(report, results):
    results.mkdir(parents=True, exist_ok=True)
    (results / "python.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, results / "python.png")
    loader, writer, training = report["loader"], report["writer"], report["training"]
    lines = [
        "# The Python package: ffcv_cpp against `ffcv` (C++), Python FFCV and the DataLoader", "",
        f"Command: `{report['command']}`  ",
        f"Machine: {report['machine']['cpu']}, {report['machine']['cores']} cores  ",
        f"Data: {report['images']} ImageNet-like JPEGs (`ffcv write imagenet-like`, jpg, max "
        "resolution 512, quality 90), the .beton and the JPEG folder in the page cache  ",
        f"Workers: {report['workers']} for every loader and writer", "",
        "## Loader: random-resized-crop 160 + flip", "",
        "| ffcv bench (C++) | ffcv_cpp from Python | Python FFCV | Python / C++ | Python / FFCV |",
        "|---|---|---|---|---|",
        f"| {loader['cli_images_per_s']:.0f} | {loader['python_images_per_s']:.0f} "
        f"| {loader['ffcv_images_per_s']:.0f} | {loader['python_over_cli']:.2f}x "
        f"| {loader['python_over_ffcv']:.2f}x |", "",
        "images/s, best epoch of each. From Python the batches arrive as torch tensors over the "
        "loader's own memory (no copy).", "",
        "## Writer: the JPEG folder to a .beton", "",
        "| ffcv write (C++) | from Python, JPEG bytes | from Python, PIL images | JPEG bytes / C++ "
        "| PIL / C++ |", "|---|---|---|---|---|",
        f"| {writer['cli_images_per_s']:.0f} | {writer['python_jpeg_bytes_images_per_s']:.0f} "
        f"| {writer['python_pil_images_per_s']:.0f} | {writer['jpeg_bytes_over_cli']:.2f}x "
        f"| {writer['pil_over_cli']:.2f}x |", "",
        "images/s. A dataset that hands over JPEG files' bytes lets the writer's threads decode "
        "them: the file is byte-identical to `ffcv write folder`'s "
        f"({'checked: identical' if writer['jpeg_bytes_file_identical'] else 'NOT identical'}). "
        "PIL images (torchvision's ImageFolder) are decoded in `__getitem__`, under the GIL "
        "for the Python part of it, and the writer stores what PIL decoded.", "",
        f"## Training: a small ResNet (width {report['training_width']}) on the CPU, "
        f"{report['training_images']} images at {report['training_res']} px", "",
        "| fed by | seconds per epoch | waiting for the loader | images/s |", "|---|---|---|---|"]
    for name, label in (("ffcv_cpp", "ffcv_cpp"), ("ffcv", "Python FFCV"),
                        ("dataloader", "PyTorch DataLoader (ImageFolder, torchvision transforms)")):
        row = training[name]
        lines.append(f"| {label} | {row['seconds']:.2f} | {row['loader_wait_seconds']:.2f} "
                     f"| {row['images_per_second']:.0f} |")
    lines += ["", "The same script (`experiments/python/train_ffcv_api.py`) for ffcv_cpp and "
              "Python FFCV, only its import lines differing; best epoch of each. The loader's "
              "workers and the training step share the same cores: every loader keeps ahead of "
              "this model (the waits are small), so the epochs differ by the CPU time each "
              "loader takes from the training step.", "",
              "![loader, writer and training](python.png)"]
    (results / "python.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {results / 'python.md'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images-dir", default=str(ROOT / "data" / "imagenet-like-jpegs"))
    parser.add_argument("--beton", default=str(ROOT / "data" / "imagenet-like-jpg512.beton"))
    parser.add_argument("--count", type=int, default=2000, help="images made when missing")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--train-images", type=int, default=1024)
    parser.add_argument("--train-res", type=int, default=64)
    parser.add_argument("--train-epochs", type=int, default=2)
    parser.add_argument("--train-width", type=int, default=16,
                        help="channels of the model's first stage (small: the loader matters)")
    parser.add_argument("--results", default=str(ROOT / "results"))
    parser.add_argument("--render", metavar="JSON",
                        help="only write the report and plot again from a python.json")
    args = parser.parse_args()
    if args.render:
        write_report(json.loads(Path(args.render).read_text()), Path(args.results))
        return
    beton, images, count = prepare_data(args)
    classes = sum(1 for entry in images.iterdir() if entry.is_dir())
    report = {"command": " ".join(["python"] + [str(Path(sys.argv[0]).relative_to(ROOT))
                                                if Path(sys.argv[0]).is_absolute() else sys.argv[0]]
                                  + sys.argv[1:]),
              "machine": machine(), "images": count, "workers": args.workers,
              "training_images": args.train_images, "training_res": args.train_res,
              "training_width": args.train_width}
    report["loader"] = measure_loader(beton, args)
    report["writer"] = measure_writer(images, count, args)
    report["training"] = measure_training(beton, images, args, classes)
    write_report(report, Path(args.results))


if __name__ == "__main__":
    main()
