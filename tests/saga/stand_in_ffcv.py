"""A stand-in for the two `ffcv` subcommands the SAGA checks use, in numpy, to test the checkers.

  stand_in_ffcv.py write npy --features X.npy --targets Y.npy --output OUT.beton [--pack-bits]
  stand_in_ffcv.py run RECIPE.toml [--set key=value ...] --output-dir DIR

`write` stores the two arrays in an .npz file under the .beton name (no FFCV format), `run`
solves the recipe's [saga] problem with its own minibatch proximal SAGA in float32 and writes
the run folder that `ffcv run` writes (path.csv, weights.npy, ..., summary.json). It lets
check_saga_reference.py and saga_study.py be tested before, and independently of, the C++
solver: `--perturb X` adds X to every written weight, so a checker that still passes has a
bug. Nothing here is used by the real CLI.
"""
import argparse
import csv
import json
import os
import shutil
import sys
import time
import tomllib

import numpy as np

DEFAULTS = {
    "data": {"num_train": 0, "num_val": 0, "mask_bits": 0, "loader": "ffcv", "batch_size": 100,
             "seed": 0, "features_npy": "", "targets_npy": "", "workers": 0, "order": "random",
             "features": "features", "targets": "target"},
    "saga": {"objective": "elastic_net", "family": "gaussian", "alpha": 0.99, "lr": 0.01,
             "num_lambdas": 100, "epsilon": 1e-3, "max_epochs": 2000, "tol": 1e-4,
             "lookbehind": 3, "do_zero": True, "early_stop_freq": 3, "early_stop_eps": 1e-5,
             "min_lambdas": 10, "refit": True, "device": "cpu", "lambdas": []},
}


def write(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["npy"])
    parser.add_argument("--features", required=True)
    parser.add_argument("--targets", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--pack-bits", action="store_true")
    args = parser.parse_args(argv)
    features = np.load(args.features)
    if args.pack_bits:
        features = np.packbits(features.astype(bool), axis=1)
    with open(args.output, "wb") as out:
        np.savez(out, features=features, target=np.load(args.targets))


def soft_threshold(z, tau):
    return np.sign(z) * np.maximum(np.abs(z) - tau, 0)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def data_loss(x, W, b, y, family):
    """Per-column data terms: (1/(2n)) sum of squared residuals, or the mean cross-entropy."""
    z = x @ W + b
    if family == "multinomial":
        p = softmax(z.astype(np.float64))
        return np.array([-np.mean(np.log(p[np.arange(len(y)), y.astype(int)] + 1e-300))])
    return 0.5 * np.mean((z - y) ** 2, axis=0)


class Saga:
    """Minibatch proximal SAGA over all K columns at once, per-column lambda, warm-started."""

    def __init__(self, x, y, family, alpha, lr, batch, seed):
        self.x, self.y, self.family = x, y, family
        self.alpha, self.lr, self.batch = alpha, lr, batch
        n, d = x.shape
        k = int(y.max()) + 1 if family == "multinomial" else y.shape[1]
        self.W = np.zeros((d, k), np.float32)
        self.b = np.zeros(k, np.float32)
        self.table = np.zeros((n, k), np.float32)
        self.mean_gW = np.zeros((d, k), np.float32)
        self.mean_gb = np.zeros(k, np.float32)
        self.onehot = np.eye(k, dtype=np.float32)[y.astype(int)] \
            if family == "multinomial" else None
        self.rng = np.random.default_rng(seed)
        self.epochs = 0

    def epoch(self, lam, step_tol=0.0):
        """One pass; with step_tol > 0 it stops after a step that moves the model that little
        (returns True then)."""
        n = len(self.x)
        order = self.rng.permutation(n)
        B, lr, a = self.batch, np.float32(self.lr), self.alpha
        for start in range(0, n - B + 1, B):
            idx = order[start:start + B]
            x = self.x[idx]
            z = x @ self.W + self.b
            if self.family == "multinomial":
                g = softmax(z) - self.onehot[idx]
            else:
                g = z - self.y[idx]
            diff = g - self.table[idx]
            gW = x.T @ diff / B
            gb = diff.mean(axis=0)
            W = self.W - lr * (gW + self.mean_gW)
            b = self.b - lr * (gb + self.mean_gb)
            W = (soft_threshold(W, lr * lam * a) / (1 + lr * lam * (1 - a))).astype(np.float32)
            moved = np.sqrt(((W - self.W) ** 2).sum() + ((b - self.b) ** 2).sum())
            self.W, self.b = W, b
            self.table[idx] = g
            self.mean_gW += np.float32(B / n) * gW
            self.mean_gb += np.float32(B / n) * gb
            if step_tol > 0 and moved <= step_tol:
                self.epochs += 1
                return True
        self.epochs += 1
        return False

    def objective(self, lam):
        penalty = lam * self.alpha * np.abs(self.W).sum(0) + \
            lam * (1 - self.alpha) / 2 * (self.W ** 2).sum(0)
        if self.family == "multinomial":
            penalty = penalty.sum()
        return data_loss(self.x, self.W, self.b, self.y, self.family) + penalty


def standardize(x):
    mean = x.mean(axis=0, dtype=np.float64)
    std = x.std(axis=0, dtype=np.float64)
    return mean.astype(np.float32), std.astype(np.float32)


def apply(x, mean, std):
    safe = np.where(std > 0, std, 1)
    return np.where(std > 0, (x - mean) / safe, 0).astype(np.float32)


def lambda_max(xt, y, family, alpha):
    if family == "multinomial":
        y = np.eye(int(y.max()) + 1)[y.astype(int)]
    g = np.abs(xt.astype(np.float64).T @ (y - y.mean(axis=0)) / len(xt))
    return g.max(axis=0) / max(alpha, 1e-3)


def run(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("recipe")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--perturb", type=float, default=0.0)
    args = parser.parse_args(argv)
    with open(args.recipe, "rb") as f:
        recipe = tomllib.load(f)
    for override in args.set:
        key, value = override.split("=", 1)
        table, name = key.split(".")
        try:  # the value as TOML if it is one, else as a plain string (as `ffcv run` does)
            value = tomllib.loads("v = " + value)["v"]
        except tomllib.TOMLDecodeError:
            pass
        recipe.setdefault(table, {})[name] = value
    cfg = {t: {**DEFAULTS[t], **recipe.get(t, {})} for t in DEFAULTS}
    data, saga = cfg["data"], cfg["saga"]
    with np.load(data["train"]) as stored:
        features, targets = stored["features"], stored["target"]
    if data["mask_bits"]:
        features = np.unpackbits(features, axis=1, count=data["mask_bits"])
    features = features.astype(np.float32)
    if targets.ndim == 1 and saga["family"] != "multinomial":
        targets = targets[:, None]
    targets = targets.astype(np.float32 if saga["family"] != "multinomial" else np.int64)
    n_val = data["num_val"]
    n_train = data["num_train"] or len(features) - n_val
    start = time.monotonic()
    stream = time.monotonic()
    for i in range(0, n_train, data["batch_size"]):
        features[i:i + data["batch_size"]].sum()
    stream = time.monotonic() - stream
    result = solve(features, targets, n_train, n_val, data, saga)
    if saga["refit"] and n_val:
        best = result["lambda"]
        refit = solve(features, targets, n_train + n_val, 0, data,
                      {**saga, "lambdas": list(best)}, fixed_lambda=best)
        for key in ["weights", "bias", "mean", "std"]:
            result[key] = refit[key]
        result["refit_rows"] = refit["rows"]
    seconds = time.monotonic() - start
    out = args.output_dir
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copy(args.recipe, os.path.join(out, "recipe.toml"))
    with open(os.path.join(out, "path.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["target", "lambda", "lr", "train_loss", "val_loss", "nnz", "epochs",
                    "seconds", "converged", "phase"])
        for row in result["rows"]:
            w.writerow(row[:2] + [saga["lr"]] + ["" if v != v else v for v in row[2:]] +
                       ["true", "path"])
        for row in result.get("refit_rows", []):
            w.writerow(row[:2] + [saga["lr"]] + row[2:] + ["true", "refit"])
    save = lambda name, a: np.save(os.path.join(out, name), np.asarray(a, np.float32))
    save("weights.npy", result["weights"] + args.perturb)
    save("bias.npy", result["bias"])
    save("lambda.npy", result["lambda"])
    save("feature_mean.npy", result["mean"])
    save("feature_std.npy", result["std"])
    if saga["objective"] == "elastic_net":
        save("path_weights.npy", np.stack(result["path"]) + args.perturb)
    epochs = result["epochs"]
    summary = {"objective": saga["objective"], "family": saga["family"], "n_train": n_train,
               "n_val": n_val, "features": features.shape[1],
               "targets": result["weights"].shape[1], "loader": data["loader"],
               "epochs": epochs, "seconds": seconds, "seconds_per_epoch": seconds / max(epochs, 1),
               "stream_seconds_per_epoch": stream, "time_to_selected_seconds": seconds,
               "selected_lambda": [float(v) for v in result["lambda"]],
               "val_loss": result["val_loss"],
               "nnz": int((np.abs(result["weights"]) > 1e-5).sum())}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


def solve(features, targets, n_train, n_val, data, saga, fixed_lambda=None):
    x_raw = features[:n_train]
    mean, std = standardize(x_raw)
    x = apply(x_raw, mean, std)
    y = targets[:n_train]
    xv = apply(features[n_train:n_train + n_val], mean, std)
    yv = targets[n_train:n_train + n_val]
    family, alpha = saga["family"], saga["alpha"]
    if saga["objective"] == "lasso_path":
        alpha = 1.0
    solver = Saga(x, y, family, alpha, saga["lr"], data["batch_size"], data["seed"])
    k = solver.W.shape[1]
    lmax = lambda_max(x, y, family, alpha)
    if fixed_lambda is not None:
        lambdas = [np.asarray(fixed_lambda, np.float64)]
    elif saga["lambdas"]:
        lambdas = [np.full(k, v) for v in saga["lambdas"]]
    else:
        m = saga["num_lambdas"]
        if saga["objective"] == "elastic_net":
            lmax = np.full(k, lmax.max())
        if saga["objective"] == "elastic_net":
            lambdas = [lmax * saga["epsilon"] ** (j / max(m - 1, 1)) for j in range(m)]
        else:  # fast_l1: lambda = 0 first, then m points from lambda_max, each eps^(1/m) apart
            lambdas = [np.zeros(k)] + [lmax * saga["epsilon"] ** (j / m) for j in range(m)]
        if saga["do_zero"] and saga["objective"] == "elastic_net":
            lambdas.append(np.zeros(k))
    rows, path, vals, weights, biases = [], [], [], [], []
    for lam in lambdas:
        began = time.monotonic()
        lam32 = lam.astype(np.float32)
        best, count, used = np.inf, 0, 0
        while used < saga["max_epochs"]:
            start_W = solver.W.copy()
            step_rule = saga["objective"] == "elastic_net" and saga["lookbehind"] == 0
            small_step = solver.epoch(lam32, saga["tol"] if step_rule else 0.0)
            used += 1
            if saga["objective"] == "lasso_path":  # glmnet's rule on every column
                change = ((solver.W - start_W) ** 2).max()
                if used % saga["early_stop_freq"] == 0 and change < saga["early_stop_eps"]:
                    break
                continue
            if step_rule:  # glm_saga without look-behind: the step-size rule
                if small_step:
                    break
                continue
            f = solver.objective(lam).sum()
            if f + saga["tol"] < best:
                best, count = f, 0
            else:
                count += 1
            if count >= saga["lookbehind"]:
                break
        train = data_loss(x, solver.W, solver.b, y, family)
        val = data_loss(xv, solver.W, solver.b, yv, family) if n_val else \
            np.full(len(train), np.nan)
        path.append(solver.W.copy())
        weights.append(solver.W.copy())
        biases.append(solver.b.copy())
        vals.append(val)
        took = time.monotonic() - began
        nnz = (np.abs(solver.W) > 1e-5).sum(axis=0)  # glm_saga's count
        if saga["objective"] == "elastic_net":
            rows.append([-1, lam[0], train.sum(), val.sum(), int(nnz.sum()), used, took])
        else:
            for t in range(k):
                rows.append([t, lam[t], train[t], val[t], int(nnz[t]), used, took])
    vals = np.array(vals)
    if saga["objective"] == "elastic_net":
        last = int(np.nanargmin(vals.sum(axis=1))) if n_val else len(vals) - 1
        pick = np.full(k, last)
    else:
        pick = np.nanargmin(vals, axis=0) if n_val else np.full(k, len(vals) - 1)
    W = np.stack([weights[p][:, t] for t, p in enumerate(pick)], axis=1)
    b = np.array([biases[p][t] for t, p in enumerate(pick)])
    lam = np.array([lambdas[p][t] for t, p in enumerate(pick)])
    return {"rows": rows, "path": path, "weights": W, "bias": b, "lambda": lam, "mean": mean,
            "std": std, "epochs": solver.epochs,
            "val_loss": float(np.nansum(vals[pick[0]]) if saga["objective"] == "elastic_net"
                              else np.nansum([vals[p, t] for t, p in enumerate(pick)]))}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("write", "run"):
        sys.exit("usage: stand_in_ffcv.py write npy ... | run RECIPE.toml ...")
    (write if sys.argv[1] == "write" else run)(sys.argv[2:])


if __name__ == "__main__":
    main()
