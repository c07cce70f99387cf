#!/usr/bin/env python3
"""Kills `ffcv write` and `ffcv run` with SIGKILL at random moments and checks what is left.

Writer trials: a complete output exists; `ffcv write` replaces it and is killed at a random
moment of its run. Afterwards the output must be the previous file or (when the write won the
race) the new complete one, byte for byte, never a partial file; at most one temporary may be
left, that of the killed writer, and the next write removes it.

Trainer trials: `ffcv run` saves a checkpoint every epoch and is killed at a random moment,
and, in other trials, while a checkpoint is half written (its write stalled by the fault
library tests/fault/fail_writes_preload.c). Afterwards `checkpoint.pt` must be the previous whole
checkpoint, and a run with
`checkpoint.resume` pointing at it must end with the weights (parameter checksum) and accuracy
of a run that was never interrupted, trained on the CPU with one thread (bit for bit).

Writes a JSON report with one record per trial and exits 1 when any trial failed.

    python3 experiments/reliability/kill_trials.py --ffcv build/bin/ffcv --workdir /tmp/k \
        --writer-trials 20 --trainer-trials 10 --save-trials 5 --json results/kill_trials.json
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from owned_folders import make_owned, remove_owned  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"  # Debian package dataset-fashion-mnist


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise SystemExit(f"failed ({result.returncode}): {' '.join(command)}\n"
                         f"{result.stdout}{result.stderr}")
    return result


def temporaries(folder, name):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith(f".{name}.tmp-"))


def kill_at(command, started_when, delay, timeout=600):
    """Starts `command`, waits until started_when() is true, then `delay` seconds, and sends
    SIGKILL. Returns (killed, seconds from start to kill)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    start = time.monotonic()
    while not started_when() and process.poll() is None:
        if time.monotonic() - start > timeout:
            process.kill()
            raise SystemExit(f"never started: {' '.join(command)}")
        time.sleep(0.002)
    deadline = time.monotonic() + delay
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    killed = process.poll() is None
    if killed:
        process.send_signal(signal.SIGKILL)
    process.wait()
    if not killed and process.returncode != 0:
        raise SystemExit(f"exited {process.returncode} before the kill: {' '.join(command)}")
    return killed, time.monotonic() - start


def writer_trials(ffcv, work, trials, rng):
    folder = work / "writer"
    remove_owned(folder, "kill_trials")
    make_owned(folder, "kill_trials")
    output = folder / "fm.beton"
    write = [ffcv, "write", "fashion-mnist", "--split", "train", "--write-mode", "jpg",
             "--workers", "1", "--quiet", "--output", str(output)]
    start = time.monotonic()
    run(write)
    duration = time.monotonic() - start
    complete = output.read_bytes()  # what a write that is not killed produces
    run([ffcv, "write", "fashion-mnist", "--split", "test", "--quiet", "--output", str(output)])
    previous = output.read_bytes()
    run([ffcv, "write", "fashion-mnist", "--split", "test", "--quiet", "--output", str(output)])
    records = []
    for trial in range(trials):
        before = set(temporaries(folder, output.name))
        delay = rng.uniform(0, duration)
        killed, at = kill_at(write, lambda: set(temporaries(folder, output.name)) - before,
                             delay)
        now = output.read_bytes()
        left = temporaries(folder, output.name)
        state = "previous" if now == previous else "complete" if now == complete else "partial"
        ok = state in ("previous", "complete") and len(left) <= 1
        records.append({"trial": trial, "killed": killed, "seconds": round(at, 3),
                        "output": state, "temporaries_left": len(left), "ok": ok})
        if state == "complete":  # the write won: start the next trial from the previous file
            run([ffcv, "write", "fashion-mnist", "--split", "test", "--quiet", "--output",
                 str(output)])
        print(f"writer trial {trial}: {'killed' if killed else 'finished'} at {at:.2f} s, "
              f"output {state}, {len(left)} temporary left", flush=True)
    run([ffcv, "write", "fashion-mnist", "--split", "test", "--quiet", "--output", str(output)])
    cleaned = temporaries(folder, output.name) == []
    return {"trials": records, "write_seconds": round(duration, 3),
            "temporaries_after_next_write": 0 if cleaned else len(temporaries(folder, output.name)),
            "ok": all(r["ok"] for r in records) and cleaned}


def result_of(run_dir):
    """The final weights of a run: their digest and checksum."""
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    return summary["weights_digest"], summary["parameter_checksum"]


def timed_run(command, checkpoint):
    """Runs `command` to its end; returns (seconds to the first checkpoint, seconds in all)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    start = time.monotonic()
    first = None
    while process.poll() is None:
        if first is None and checkpoint.exists():
            first = time.monotonic() - start
        time.sleep(0.002)
    if process.returncode != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{process.stderr.read()}")
    end = time.monotonic() - start
    return (first if first is not None else end), end


def resume_check(base, folder, name, checkpoint, straight):
    """Resumes from `checkpoint`; returns the trial's fields."""
    resumed_dir = folder / f"resumed-{name}"
    result = subprocess.run(base + ["--output-dir", str(resumed_dir), "--set",
                                    f"checkpoint.resume={checkpoint}"],
                            capture_output=True, text=True)
    fields = {"resumed": result.returncode == 0}
    fields["same_weights"] = fields["resumed"] and result_of(resumed_dir) == straight
    if not fields["resumed"]:
        fields["error"] = (result.stdout + result.stderr)[-400:]
    return fields


def trainer_trials(ffcv, work, trials, save_trials, rng, epochs, preload):
    folder = work / "trainer"
    remove_owned(folder, "kill_trials")
    make_owned(folder, "kill_trials")
    train, val = folder / "train.beton", folder / "val.beton"
    run([ffcv, "write", "fashion-mnist", "--split", "train", "--subset", "1024", "--quiet",
         "--output", str(train)])
    run([ffcv, "write", "fashion-mnist", "--split", "test", "--subset", "256", "--quiet",
         "--output", str(val)])
    settings = {
        "data.train": train, "data.val": val, "data.num_workers": 1,
        "training.epochs": epochs, "training.batch_size": 64, "training.threads": 1,
        "training.device": "cpu", "model.width": 0.125, "resolution.min_res": 32,
        "resolution.max_res": 32, "lr.peak_epoch": 1, "validation.batch_size": 256,
        "checkpoint.every": 1, "logging.progress": "never", "logging.folder": folder / "runs",
    }
    base = [ffcv, "run", str(REPO / "recipes/fashion_mnist.toml"), "--quiet"]
    for key, value in settings.items():
        base += ["--set", f"{key}={value}"]
    first, end = timed_run(base + ["--output-dir", str(folder / "straight")],
                           folder / "straight" / "checkpoint.pt")
    straight = result_of(folder / "straight")
    checkpoint_bytes = (folder / "straight" / "checkpoint.pt").stat().st_size
    records = []
    # At a random moment between the first checkpoint and the run's end.
    for trial in range(trials):
        killed_dir = folder / f"killed-{trial}"
        checkpoint = killed_dir / "checkpoint.pt"
        killed, at = kill_at(base + ["--output-dir", str(killed_dir)], checkpoint.exists,
                             rng.uniform(0, end - first))
        left = temporaries(killed_dir, "checkpoint.pt")
        record = {"trial": trial, "kind": "random moment", "killed": killed,
                  "seconds": round(at, 3), "temporaries_left": len(left)}
        record.update(resume_check(base, folder, str(trial), checkpoint, straight))
        record["ok"] = record["same_weights"] and len(left) <= 1
        records.append(record)
        print(f"trainer trial {trial}: {'killed' if killed else 'finished'} at {at:.2f} s, "
              f"{len(left)} temporary left, resumed "
              f"{'to the same weights' if record['same_weights'] else 'WRONG'}", flush=True)
    # In the middle of writing a checkpoint: the write of the second one stalls half-way (the
    # fault library) and the run is killed while it waits.
    for trial in range(save_trials):
        name = f"save-{trial}"
        killed_dir = folder / f"killed-{name}"
        checkpoint = killed_dir / "checkpoint.pt"
        environment = dict(os.environ, LD_PRELOAD=preload, FFCV_FAULT_MATCH=".checkpoint.pt.tmp-",
                           FFCV_FAULT_BYTES=str(int(checkpoint_bytes * (1.3 + 0.4 * rng.random()))),
                           FFCV_FAULT_STALL_SECONDS="60")
        process = subprocess.Popen(base + ["--output-dir", str(killed_dir)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env=environment)
        start = time.monotonic()
        previous = None
        while process.poll() is None and time.monotonic() - start < 120:
            if checkpoint.exists() and temporaries(killed_dir, "checkpoint.pt"):
                time.sleep(0.3)  # the temporary is half written and stalled
                previous = checkpoint.read_bytes()
                break
            time.sleep(0.002)
        mid_save = process.poll() is None and previous is not None
        process.kill()
        process.wait()
        left = temporaries(killed_dir, "checkpoint.pt")
        record = {"trial": name, "kind": "during a save", "killed": mid_save,
                  "seconds": round(time.monotonic() - start, 3), "temporaries_left": len(left),
                  "checkpoint_unchanged": previous is not None and
                  checkpoint.read_bytes() == previous}
        record.update(resume_check(base, folder, name, checkpoint, straight))
        record["ok"] = (mid_save and record["checkpoint_unchanged"] and len(left) == 1 and
                        record["same_weights"])
        records.append(record)
        print(f"trainer trial {name}: {'killed mid-save' if mid_save else 'NOT killed mid-save'}"
              f", previous checkpoint {'whole' if record['checkpoint_unchanged'] else 'CHANGED'}"
              f", resumed {'to the same weights' if record['same_weights'] else 'WRONG'}",
              flush=True)
    # The disk fills up while the second checkpoint is written: one clear error, the first
    # checkpoint stays, and resuming from it ends as the uninterrupted run.
    if save_trials:
        full_dir = folder / "killed-disk-full"
        checkpoint = full_dir / "checkpoint.pt"
        environment = dict(os.environ, LD_PRELOAD=preload, FFCV_FAULT_MATCH=".checkpoint.pt.tmp-",
                           FFCV_FAULT_BYTES=str(int(checkpoint_bytes * 1.5)))
        result = subprocess.run(base + ["--output-dir", str(full_dir)], capture_output=True,
                                text=True, env=environment)
        errors = [line for line in (result.stdout + result.stderr).splitlines()
                  if "No space left on device" in line]
        record = {"trial": "disk-full", "kind": "disk full during a save",
                  "exit_status": result.returncode, "error_lines": len(errors),
                  "temporaries_left": len(temporaries(full_dir, "checkpoint.pt"))}
        record.update(resume_check(base, folder, "disk-full", checkpoint, straight))
        record["ok"] = (result.returncode == 1 and len(errors) >= 1 and
                        record["temporaries_left"] == 0 and record["same_weights"])
        if not record["ok"]:
            record["output"] = (result.stdout + result.stderr)[-600:]
        records.append(record)
        print(f"trainer trial disk-full: exit {result.returncode}, "
              f"{errors[0] if errors else 'NO ERROR LINE'}; resumed "
              f"{'to the same weights' if record['same_weights'] else 'WRONG'}", flush=True)
    return {"trials": records, "seconds_to_first_checkpoint": round(first, 3),
            "run_seconds": round(end, 3), "epochs": epochs, "checkpoint_bytes": checkpoint_bytes,
            "weights_digest": straight[0], "parameter_checksum": straight[1],
            "ok": all(r["ok"] for r in records)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ffcv", default=str(REPO / "build/bin/ffcv"))
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--writer-trials", type=int, default=10)
    parser.add_argument("--trainer-trials", type=int, default=5)
    parser.add_argument("--save-trials", type=int, default=2,
                        help="trainer trials killed while a checkpoint is being written")
    parser.add_argument("--fault-preload", default=str(REPO / "build/lib/ffcv_fail_writes_preload.so"),
                        help="tests/fault/fail_writes_preload.c, built")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args()
    if not Path(FASHION_MNIST).is_dir():
        print(f"{FASHION_MNIST} is missing (tools/setup.sh installs it): skipped")
        return 77
    rng = random.Random(args.seed)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    report = {"seed": args.seed, "machine": os.uname().nodename}
    if args.writer_trials:
        report["writer"] = writer_trials(args.ffcv, work, args.writer_trials, rng)
    if args.trainer_trials or args.save_trials:
        report["trainer"] = trainer_trials(args.ffcv, work, args.trainer_trials, args.save_trials,
                                           rng, args.epochs, args.fault_preload)
    ok = all(part["ok"] for key, part in report.items() if isinstance(part, dict))
    report["ok"] = ok
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print("all trials recovered" if ok else "SOME TRIALS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
