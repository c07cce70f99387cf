"""The GPU image path against the CPU path, as one report: the image pipeline's images/s per
number of host cores (ffcv_gpu_decode_benchmark's JSON lines) and the training step fed by each
path against the no-loading ceiling (cores_per_gpu.py's JSON, one per path).

  python3 experiments/gpu_decode/gpu_decode_report.py --pipeline OUT/gpu-decode.jsonl \\
      --training OUT/gpu-decode-training-cpu.json OUT/gpu-decode-training-gpu.json \\
      --command "tools/gpu_checks.sh ... build gpu-decode" --output results/gpu-decode

tools/gpu_checks.sh's gpu-decode stage writes those inputs. The epoch-start column matters on
small sets: each epoch's first batch waits for the ring to fill, and on the GPU path, until a
step reuses its decoder, for nvJPEG to start; "steady" leaves those waits out.
"""
import argparse
import json
import os


def load_pipeline(path):
    rows = []
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def load_training(paths):
    rows, machine, commands = [], None, []
    for given in paths:
        path, _, label = given.partition("=")
        with open(path) as saved:
            report = json.load(saved)
        machine = machine or report.get("machine")
        commands.append(report.get("command", ""))
        path_name = "gpu" if "data.image_decode=gpu" in report.get("sets", []) else "cpu"
        iterations = report.get("iterations", 0)
        for row in report["rows"]:
            row = dict(row, path=path_name + (" (%s)" % label if label else ""))
            images = iterations * row["batch_size"]
            fed_seconds = images / row["loader_fed_images_per_second"]
            starts = row["epoch_starts"] * row["epoch_start_wait_seconds"]
            steady = images / max(fed_seconds - starts, 1e-9)
            row["steady_ratio"] = min(steady / row["fixed_batch_images_per_second"], 1.0)
            rows.append(row)
    return rows, machine, commands


def markdown(pipeline, training, machine, commands, command, png):
    lines = ["# GPU image path: JPEG decode on the GPU against the CPU path", ""]
    if machine:
        lines += ["Machine: %s, %d cores; GPU: %s" % (machine["cpu"], machine["cores"],
                                                        machine["gpu"]), ""]
    if command:
        lines += ["Command: `%s`" % command, ""]
    lines += ["## The image pipeline",
              "",
              "`ffcv_gpu_decode_benchmark`: random-resized crop to 160 px, flip, normalise to "
              "float16 NCHW on the GPU, batches of 512 taken as a training loop takes them; the "
              "process pinned to the first C cores, C loader workers. CPU path: the workers "
              "decode; GPU path: the workers choose windows and keep the JPEG bytes, "
              "`decode_crops` decodes on the GPU.",
              "",
              "| cores | CPU path (images/s) | GPU path (images/s) | GPU / CPU | JPEGs on the "
              "hardware engines | on the hybrid backend | raw samples |",
              "|---|---|---|---|---|---|---|"]
    by_cores = {}
    for row in pipeline:
        by_cores.setdefault(row["workers"], {})[row["path"]] = row
    for cores in sorted(by_cores):
        cpu, gpu = by_cores[cores].get("cpu"), by_cores[cores].get("gpu")
        ratio = "%.2f" % (gpu["images_per_s"] / cpu["images_per_s"]) if cpu and gpu else "-"
        lines.append("| %d | %s | %s | %s | %s | %s | %s |" % (
            cores, "%.0f" % cpu["images_per_s"] if cpu else "-",
            "%.0f" % gpu["images_per_s"] if gpu else "-", ratio,
            gpu["hardware_frames"] if gpu else "-", gpu["hybrid_frames"] if gpu else "-",
            gpu["pixel_records"] if gpu else "-"))
    if training:
        lines += ["", "## Training fed by each path",
                  "",
                  "`cores_per_gpu.py` (`ffcv_training_benchmark`): the recipe's step fed by the "
                  "loader against the same step on one fixed batch on the device, the process "
                  "pinned to 8 cores, `data.image_decode` = cpu or gpu. Ratio = loader-fed / "
                  "fixed over the timed steps; steady = the same without the epoch-start waits. "
                  "The per-batch columns are DeviceTransfer's timings (host stage work: the "
                  "preparing threads' time in the stages; GPU: from the end of that to the "
                  "batch ready).",
                  "",
                  "| model | px | batch | path | loader-fed (images/s) | ceiling (images/s) | "
                  "ratio | epoch starts x wait (s) | steady ratio | per batch: loader wait / "
                  "host stage work / GPU / step waiting (ms) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for row in training:
            feed = "-"
            if row.get("feed_batches"):
                feed = "%.1f / %.1f / %.1f / %.1f" % (
                    row["feed_loader_wait_ms"], row["feed_stage_host_ms"], row["feed_gpu_ms"],
                    row["feed_consumer_wait_ms"])
            lines.append("| %s | %d | %d | %s | %.0f | %.0f | **%.3f** | %d x %.3f | %.2f | %s |" % (
                row["arch"], row["resolution"], row["batch_size"], row["path"],
                row["loader_fed_images_per_second"], row["fixed_batch_images_per_second"],
                row["ratio"], row["epoch_starts"], row["epoch_start_wait_seconds"],
                row["steady_ratio"], feed))
        lines += ["", "Training commands:", ""] + ["- `%s`" % c for c in commands if c]
    lines += ["", "![images/s against cores, both paths](%s)" % png, ""]
    return "\n".join(lines)


def plot(pipeline, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(6, 4))
    for name, label in (("cpu", "CPU path (workers decode)"), ("gpu", "GPU path (nvJPEG)")):
        rows = sorted((r for r in pipeline if r["path"] == name), key=lambda r: r["workers"])
        if rows:
            axis.plot([r["workers"] for r in rows], [r["images_per_s"] for r in rows], "o-",
                      label=label)
    axis.set_xlabel("host cores (loader workers)")
    axis.set_ylabel("images/s, 160 px, to float16 NCHW on the GPU")
    counts = sorted({r["workers"] for r in pipeline})
    axis.set_xscale("log", base=2)
    axis.set_xticks(counts)
    axis.set_xticklabels([str(c) for c in counts])
    axis.grid(True, alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipeline", required=True, help="ffcv_gpu_decode_benchmark JSON lines")
    parser.add_argument("--training", nargs="*", default=[],
                        help="cores_per_gpu.py JSON files, each FILE or FILE=LABEL")
    parser.add_argument("--command", default="", help="the command that made the inputs")
    parser.add_argument("--notes", help="a Markdown file appended to the report (findings)")
    parser.add_argument("--output", required=True, help="path without extension")
    args = parser.parse_args()
    pipeline = load_pipeline(args.pipeline)
    training, machine, commands = load_training(args.training)
    with open(args.output + ".json", "w") as out:
        json.dump({"machine": machine, "command": args.command, "pipeline": pipeline,
                   "training": training}, out, indent=1)
    with open(args.output + ".md", "w") as out:
        out.write(markdown(pipeline, training, machine, commands, args.command,
                           os.path.basename(args.output) + ".png"))
        if args.notes:
            with open(args.notes) as notes:
                out.write("\n" + notes.read())
    plot(pipeline, args.output + ".png")
    print("wrote %s.{json,md,png}" % args.output)


if __name__ == "__main__":
    main()
