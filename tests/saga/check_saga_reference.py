"""Checks `ffcv run`'s SAGA solver against answers computed here, independently of it.

  .venv/bin/python tests/saga/check_saga_reference.py --ffcv build/bin/ffcv --workdir DIR

Three small problems made with numpy (fixed seeds), each written with `ffcv write npy` and
solved with `ffcv run` from a recipe written into DIR:

  gaussian     elastic net, 500 train + 100 validation rows, 30 dense float32 features with
               assorted means and scales (one of them constant), 1 target, sparse truth + noise
  multinomial  elastic net, 3 classes, 10 features, labels drawn from a sparse softmax model
  lasso_path   one LASSO path per target, K = 3 targets on 40 boolean mask features with
               different inclusion rates, written bit-packed (--pack-bits, data.mask_bits)

What is checked, against numpy and scikit-learn (tolerances in TOLERANCES below):

  standardization  feature_mean/feature_std equal numpy's mean and population std of the rows
                   the model was fitted on
  lambda_max       numpy's lambda_max equals the path's first lambda; the weights there are
                   exactly zero (path_weights.npy; lasso_path: every target's); a solve at
                   0.9 lambda_max (elastic_net: its own run, saga.lambdas) or at the lasso
                   path's next lambda has nonzero weights
  lambda path      elastic_net: lambda_max * epsilon^(j/(num_lambdas-1)), then 0 with do_zero
  KKT              the optimality conditions of the recipe's objective at every path point that
                   has weights (path_weights.npy; weights.npy for lasso_path's selected model):
                     w != 0:  |g + lambda*alpha*sign(w) + lambda*(1-alpha)*w| <= tol
                     w == 0:  |g| <= lambda*alpha + tol
                   g the gradient of the data term; and the bias gradient of the selected model
                   is 0 within tol. The path points have no stored bias: the bias used there is
                   the one that minimizes the objective for those weights (numpy), which is the
                   optimum's bias when the weights are optimal.
  sklearn          weights and objective values at every lambda > 0 of the path but the first
                   (ElasticNet / LogisticRegression(saga, elastic net) / Lasso on the same
                   standardized rows; least squares for lambda = 0)
  selection        the selected lambda has the lowest val_loss in path.csv; weights.npy is that
                   point's weights; summary.json holds the documented keys and sizes
  path.csv         nnz equals the count of nonzero weights; train_loss is the data term
                   (1/(2n)) sum r^2 (or the mean of r^2, or the penalized objective: named)
  refit            lasso_path with refit = true: the same selected lambdas, fitted again on the
                   train + validation rows (KKT and standardization on those rows)

The recipes ask for convergence far past the tolerances. The elastic-net paths stop on glm_saga's
step rule (lookbehind = 0: a minibatch step that moves the model by at most tol = 1e-7), not on
look-behind: in float32 the epoch's objective stops improving at ~1e-7 relative while the
gradients are still ~1e-3 of lambda_max off (measured: a solve at 0.9 lambda_max stopped by
look-behind 5, tol 1e-10 was 2.6e-3 off its KKT conditions). The lasso paths use glmnet's rule
with early_stop_eps = 1e-14 checked every epoch.

Exit status: 0 when every check passes, 1 when one fails (it is named), 77 when a check cannot
be run (scikit-learn missing): never a silent pass.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                                "saga"))
from path_csv import path_rows  # noqa: E402

SKIP = 77

# Tolerances. SAGA with a constant step converges to the exact optimum, so a converged solve in
# float32 agrees with the reference to ~1e-5..1e-4 (relative) on these small, well-conditioned
# problems on any x86 CPU; the limits below leave a margin of about 10x over that, and over
# differences between SIMD widths (summation order) in float32.
TOLERANCES = {
    # KKT residuals, absolute, as a fraction of alpha * lambda_max (= the largest data gradient
    # at W = 0: the scale of every gradient on the path).
    "kkt": 2e-3,
    # |w_ours - w_sklearn|, as a fraction of the largest |w| of the reference path.
    "weights": 2e-3,
    # |F(ours) - F(sklearn)| / |F(sklearn)|, the penalized training objective.
    "objective": 1e-4,
    # lambda_max and the lambda sequence: float32 sums against float64.
    "lambda": 1e-4,
    # feature_mean / feature_std against numpy, relative to |mean| + std of each feature.
    "stats": 1e-4,
    # path.csv's train_loss against the data term computed here, relative.
    "train_loss": 1e-3,
}
# A weight at most this (times max(1, max|W|)) is treated as zero by the KKT check, so that a
# solver leaving a denormal-sized residue instead of an exact zero is not failed for it.
ZERO_WEIGHT = 1e-6
# path.csv's nnz may count |w| > NNZ_THRESHOLD (glm_saga's convention) or w != 0.
NNZ_THRESHOLD = 1e-5
SUMMARY_KEYS = ["objective", "family", "n_train", "n_val", "features", "targets", "loader",
                "epochs", "seconds", "seconds_per_epoch", "stream_seconds_per_epoch",
                "time_to_selected_seconds", "selected_lambda", "val_loss", "nnz"]
N_TRAIN, N_VAL = 500, 100


class Skip(Exception):
    pass


class Failed(Exception):
    pass


# ------------------------------------------------------------------------------------------
# Problems

def make_gaussian():
    rng = np.random.default_rng(101)
    n, d = N_TRAIN + N_VAL, 30
    means = rng.uniform(-2, 2, d)
    scales = rng.uniform(0.5, 3, d)
    z = rng.standard_normal((n, d))
    x = means + scales * z
    x[:, 7] = 1.5  # a constant feature: std 0, it stays 0 after standardization
    z[:, 7] = 0
    truth = np.zeros(d)
    support = rng.choice([j for j in range(d) if j != 7], 8, replace=False)
    truth[support] = rng.choice([-1, 1], 8) * rng.uniform(0.5, 2, 8)
    y = 3.0 + z @ truth + 0.5 * rng.standard_normal(n)
    return x.astype(np.float32), y.astype(np.float32)


def make_multinomial():
    rng = np.random.default_rng(202)
    n, d, k = N_TRAIN + N_VAL, 10, 3
    z = rng.standard_normal((n, d))
    x = rng.uniform(-1, 1, d) + rng.uniform(0.5, 2, d) * z
    truth = np.zeros((d, k))
    truth[rng.choice(d, 4, replace=False)] = rng.uniform(-1.5, 1.5, (4, k))
    logits = z @ truth + np.array([0.3, 0.0, -0.2])
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in p])
    return x.astype(np.float32), y.astype(np.int64)


def make_masks():
    rng = np.random.default_rng(303)
    n, d, k = N_TRAIN + N_VAL, 40, 3
    rate = rng.uniform(0.2, 0.8, d)
    x = rng.random((n, d)) < rate
    xs = (x - rate) / np.sqrt(rate * (1 - rate))
    truth = np.zeros((d, k))
    for t in range(k):
        truth[rng.choice(d, 5, replace=False), t] = rng.choice([-1, 1], 5) * rng.uniform(0.3, 1, 5)
    y = xs @ truth + np.array([0.5, -1.0, 2.0]) + rng.uniform(0.3, 0.8, k) * \
        rng.standard_normal((n, k))
    return x, y.astype(np.float32)


# The recipes. The solver settings ask for convergence well past the tolerances: a small tol
# with lookbehind, and enough epochs for every lambda of these tiny problems.
COMMON_DATA = {"features": "features", "targets": "target", "num_train": N_TRAIN,
               "num_val": N_VAL, "batch_size": 100, "workers": 1, "order": "random", "seed": 0,
               "loader": "ffcv"}
# One loader thread and one torch thread: these problems are too small to share out, and on a
# machine busy with other work, threads waiting on each other slow the solve down many times.
# Every path point's model is kept (path_weights.npy) for the checks at every λ.
COMMON_SAGA = {"threads": 1, "path_weights": True}
CASES = {
    "gaussian": {"make": make_gaussian, "pack": False,
                 "saga": {"objective": "elastic_net", "family": "gaussian", "alpha": 0.9,
                          "lr": 0.05, "num_lambdas": 12, "epsilon": 1e-2, "max_epochs": 4000,
                          "tol": 1e-7, "lookbehind": 0, "do_zero": True, "refit": False,
                          "device": "cpu"}},
    "multinomial": {"make": make_multinomial, "pack": False,
                    "saga": {"objective": "elastic_net", "family": "multinomial", "alpha": 0.9,
                             "lr": 0.1, "num_lambdas": 8, "epsilon": 2e-2, "max_epochs": 4000,
                             "tol": 1e-7, "lookbehind": 0, "do_zero": False, "refit": False,
                             "device": "cpu"}},
    "lasso_path": {"make": make_masks, "pack": True,
                   "saga": {"objective": "lasso_path", "family": "gaussian", "alpha": 1.0,
                            "lr": 0.02, "num_lambdas": 12, "epsilon": 1e-2, "max_epochs": 40000,
                            "tol": 1e-10, "early_stop_freq": 1, "early_stop_eps": 1e-14,
                            "min_lambdas": 12, "refit": False, "device": "cpu"}},
}


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_recipe(path, data, saga):
    lines = ["# Written by tests/saga/check_saga_reference.py", "[data]"]
    lines += ["%s = %s" % (k, toml_value(v)) for k, v in data.items()]
    lines += ["", "[saga]"] + ["%s = %s" % (k, toml_value(v)) for k, v in saga.items()]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------
# Running the CLI

def command_prefix(ffcv):
    return [sys.executable, ffcv] if ffcv.endswith(".py") else [ffcv]


def call(command, timeout=900):
    print("$ " + " ".join(command), flush=True)
    began = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failed("timed out after %d s: %s" % (timeout, " ".join(command)))
    if done.returncode != 0:
        raise Failed("exit %d: %s\n%s%s" % (done.returncode, " ".join(command),
                                            done.stdout[-4000:], done.stderr[-4000:]))
    print("  (%.1f s)" % (time.monotonic() - began), flush=True)


def load_run(folder):
    run = {"folder": folder}
    for name in ["weights", "bias", "lambda", "feature_mean", "feature_std", "path_weights",
                 "path_bias"]:
        path = os.path.join(folder, name + ".npy")
        run[name] = np.load(path).astype(np.float64) if os.path.exists(path) else None
    for name in ["weights", "bias", "lambda", "feature_mean", "feature_std"]:
        if run[name] is None:
            raise Failed("%s: %s.npy is missing" % (folder, name))
    if run["weights"].ndim == 1:
        run["weights"] = run["weights"][:, None]
    rows = path_rows(folder)
    # The solve's own path; a lasso path's refit rows (phase "refit") are checked apart.
    run["path"] = [r for r in rows if r.get("phase", "path") == "path"]
    run["refit_rows"] = [r for r in rows if r.get("phase") == "refit"]
    with open(os.path.join(folder, "summary.json")) as f:
        run["summary"] = json.load(f)
    return run


# ------------------------------------------------------------------------------------------
# The objective, computed here in float64

def standardize(x, mean, std):
    safe = np.where(std > 0, std, 1.0)
    return np.where(std > 0, (x - mean) / safe, 0.0)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def one_hot(y, k):
    return np.eye(k)[y.astype(int)]


def data_term(xt, W, b, Y, family):
    """Per-column data terms (gaussian) or the one cross-entropy term (multinomial)."""
    z = xt @ W + b
    if family == "multinomial":
        zmax = z.max(axis=1, keepdims=True)
        logsum = zmax[:, 0] + np.log(np.exp(z - zmax).sum(axis=1))
        return np.array([np.mean(logsum - (z * Y).sum(axis=1))])
    return 0.5 * np.mean((z - Y) ** 2, axis=0)


def data_gradient(xt, W, b, Y, family):
    z = xt @ W + b
    r = softmax(z) - Y if family == "multinomial" else z - Y
    return xt.T @ r / len(xt), r.mean(axis=0)


def penalty(W, lam, alpha):
    lam = np.broadcast_to(lam, (W.shape[1],))
    return lam * alpha * np.abs(W).sum(0) + lam * (1 - alpha) / 2 * (W ** 2).sum(0)


def objective(xt, W, b, Y, family, lam, alpha):
    return data_term(xt, W, b, Y, family).sum() + penalty(W, lam, alpha).sum()


def best_bias(xt, W, Y, family):
    """The bias minimizing the data term for fixed weights (the penalty does not involve it)."""
    z = xt @ W
    if family != "multinomial":
        return (Y - z).mean(axis=0)
    b = np.log(Y.mean(axis=0) + 1e-12)
    for _ in range(100):  # Newton on a strictly convex function once b[0] is held at 0
        p = softmax(z + b)
        g = p.mean(0) - Y.mean(0)
        h = np.diag(p.mean(0)) - p.T @ p / len(p)
        step = np.zeros_like(b)
        step[1:] = np.linalg.solve(h[1:, 1:], g[1:])
        b -= step
        if np.abs(g).max() < 1e-15:
            break
    return b


def kkt_violation(xt, W, b, Y, family, lam, alpha):
    """The largest KKT residual of the weights, and that of the bias."""
    g, gb = data_gradient(xt, W, b, Y, family)
    lam = np.broadcast_to(np.asarray(lam, np.float64), (W.shape[1],))
    zero = np.abs(W) <= ZERO_WEIGHT * max(1.0, np.abs(W).max())
    smooth = g + lam * (1 - alpha) * W
    at_zero = np.maximum(np.abs(smooth) - lam * alpha, 0)
    nonzero = np.abs(smooth + lam * alpha * np.sign(W))
    return float(np.where(zero, at_zero, nonzero).max()), float(np.abs(gb).max())


def lambda_max(xt, Y, alpha):
    """Per column: the smallest lambda whose optimum has all weights zero."""
    return np.abs(xt.T @ (Y - Y.mean(axis=0)) / len(xt)).max(axis=0) / max(alpha, 1e-3)


# ------------------------------------------------------------------------------------------
# References from scikit-learn

def sklearn_fit(xt, Y, family, lam, alpha):
    """(W, b) at one lambda from scikit-learn, on the standardized rows."""
    from sklearn.exceptions import ConvergenceWarning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            return sklearn_solve(xt, Y, family, lam, alpha)
    except ConvergenceWarning as e:
        raise Skip("the scikit-learn reference did not converge at lambda %g: %s" % (lam, e))


def sklearn_solve(xt, Y, family, lam, alpha):
    """sklearn_fit's work: ElasticNet, Lasso or LogisticRegression; least squares at 0."""
    from sklearn.linear_model import ElasticNet, Lasso, LogisticRegression
    if family == "multinomial":
        options = dict(C=1.0 / (len(xt) * lam), l1_ratio=alpha, solver="saga", tol=1e-12,
                       max_iter=200000, fit_intercept=True)
        if LogisticRegression().get_params().get("penalty") != "deprecated":
            options["penalty"] = "elasticnet"
        model = LogisticRegression(**options).fit(xt, Y.argmax(axis=1))
        return model.coef_.T.copy(), model.intercept_.copy()
    W = np.zeros((xt.shape[1], Y.shape[1]))
    b = np.zeros(Y.shape[1])
    for k in range(Y.shape[1]):
        if lam == 0:
            design = np.hstack([xt, np.ones((len(xt), 1))])
            solution = np.linalg.lstsq(design, Y[:, k], rcond=None)[0]
            W[:, k], b[k] = solution[:-1], solution[-1]
            continue
        if alpha == 1:
            model = Lasso(alpha=lam, tol=1e-14, max_iter=1000000)
        else:
            model = ElasticNet(alpha=lam, l1_ratio=alpha, tol=1e-14, max_iter=1000000)
        model.fit(xt, Y[:, k])
        W[:, k], b[k] = model.coef_, model.intercept_
    return W, b


# ------------------------------------------------------------------------------------------
# Checks

class Table:
    def __init__(self):
        self.rows = []

    def add(self, case, check, value, limit, ok, note=""):
        self.rows.append((case, check, value, limit, bool(ok), note))
        print("  %-11s %-34s %-12s %-12s %s %s" % (case, check, fmt(value), fmt(limit),
                                                  "ok" if ok else "FAIL", note), flush=True)

    def failed(self):
        return [r for r in self.rows if not r[4]]

    def print(self):
        print("\n%-11s  %-34s  %-12s  %-12s  %-6s %s" % ("case", "check", "measured", "limit",
                                                       "result", "note"))
        print("-" * 100)
        for case, check, value, limit, ok, note in self.rows:
            print("%-11s  %-34s  %-12s  %-12s  %-6s %s" % (case, check, fmt(value), fmt(limit),
                                                         "pass" if ok else "FAIL", note))


def fmt(v):
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return "%.3g" % v
    return str(v)


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def check_standardization(table, case, run, x_rows):
    mean, std = x_rows.mean(axis=0), x_rows.std(axis=0)
    scale = np.abs(mean) + std + 1e-12
    bad = max(np.max(np.abs(run["feature_mean"] - mean) / scale),
              np.max(np.abs(run["feature_std"] - std) / scale))
    table.add(case, "feature_mean/std = numpy (%d rows)" % len(x_rows), bad,
              TOLERANCES["stats"], bad <= TOLERANCES["stats"])


def check_summary(table, case, run, n_train, n_val, d, k, cfg):
    s = run["summary"]
    missing = [key for key in SUMMARY_KEYS if key not in s]
    table.add(case, "summary.json keys", len(missing), 0, not missing,
              "missing: " + ", ".join(missing) if missing else "")
    wrong = [key for key, want in [("n_train", n_train), ("n_val", n_val), ("features", d),
                                   ("targets", k), ("objective", cfg["objective"]),
                                   ("family", cfg["family"])]
             if key in s and s[key] != want]
    table.add(case, "summary.json sizes and names", len(wrong), 0, not wrong,
              "; ".join("%s=%s" % (key, s[key]) for key in wrong))
    shapes = [run["weights"].shape == (d, k), run["bias"].shape == (k,),
              run["lambda"].shape == (k,), run["feature_mean"].shape == (d,),
              run["feature_std"].shape == (d,)]
    table.add(case, "output shapes (d=%d, K=%d)" % (d, k), sum(not s for s in shapes), 0,
              all(shapes), "weights %s bias %s lambda %s" % (run["weights"].shape,
                                                             run["bias"].shape,
                                                             run["lambda"].shape))


def loss_conventions(xt, W, b, Y, family, lam, alpha):
    """The values path.csv's train_loss may hold, by the name of their convention."""
    half = data_term(xt, W, b, Y, family).sum()
    conventions = {"(1/2n) sum r^2" if family != "multinomial" else "mean CE": half,
                   "penalized objective": half + penalty(W, lam, alpha).sum()}
    if family != "multinomial":
        conventions["mean r^2"] = 2 * half
    return conventions


def check_train_loss(table, case, pairs):
    """pairs: (reported train_loss, conventions) per path point. One convention must fit all."""
    errors = {}
    for reported, conventions in pairs:
        for name, value in conventions.items():
            error = abs(value - reported) / max(abs(value), 1e-12)
            errors[name] = max(errors.get(name, 0.0), error)
    name = min(errors, key=errors.get)
    table.add(case, "path.csv train_loss (rel)", errors[name], TOLERANCES["train_loss"],
              errors[name] <= TOLERANCES["train_loss"], "as " + name)


def check_elastic_net(table, case, cfg, run, x, Y, family, probe=None):
    """Checks of one elastic_net run. x: the raw rows, Y: targets (one-hot for multinomial)."""
    alpha = cfg["alpha"]
    xr, yr = x[:N_TRAIN], Y[:N_TRAIN]
    check_standardization(table, case, run, xr)
    xt = standardize(xr, run["feature_mean"], run["feature_std"])
    xt_np = standardize(xr, xr.mean(0), xr.std(0))
    lmax = lambda_max(xt_np, yr, alpha).max()
    scale = alpha * lmax
    rows = run["path"]
    if run["path_weights"] is None:
        raise Failed("%s: path_weights.npy is missing" % run["folder"])
    pw = run["path_weights"]
    if pw.ndim == 2:
        pw = pw[:, :, None]
    table.add(case, "path.csv rows = path_weights points", len(rows), pw.shape[0],
              len(rows) == pw.shape[0])
    if len(rows) != pw.shape[0] or not rows:
        return
    lams = np.array([r["lambda"] for r in rows])
    table.add(case, "lambda_max: first lambda (rel)", rel(lams[0], lmax), TOLERANCES["lambda"],
              rel(lams[0], lmax) <= TOLERANCES["lambda"], "numpy %.6g, run %.6g" % (lmax, lams[0]))
    # At lambda_max the KKT bound says every weight is 0: exactly, not within a tolerance.
    residue = float(np.abs(pw[0]).max())
    table.add(case, "lambda_max: max|w| at first point", residue, 0.0, residue == 0.0,
              "path.csv nnz %d" % rows[0]["nnz"])
    m = cfg["num_lambdas"]
    expected = [lmax * cfg["epsilon"] ** (j / (m - 1)) for j in range(m)]
    if cfg.get("do_zero"):
        expected.append(0.0)
    if len(expected) == len(lams):
        bad = float(np.max(np.abs(lams - expected) / lmax))
        table.add(case, "lambda sequence (rel to lambda_max)", bad, TOLERANCES["lambda"],
                  bad <= TOLERANCES["lambda"], "%d points" % len(lams))
    else:
        table.add(case, "lambda sequence length", len(lams), len(expected), False)

    # KKT at every path point, and path.csv's nnz and train_loss.
    worst, worst_at, nnz_bad, losses = 0.0, None, [], []
    for p, row in enumerate(rows):
        W = pw[p]
        b = run["path_bias"][p] if run["path_bias"] is not None else best_bias(xt, W, yr, family)
        v, _ = kkt_violation(xt, W, b, yr, family, row["lambda"], alpha)
        if v > worst:
            worst, worst_at = v, row["lambda"]
        low, high = int((np.abs(W) > NNZ_THRESHOLD).sum()), int((W != 0).sum())
        if not low <= row["nnz"] <= high:
            nnz_bad.append("lambda %.3g: %d not in [%d, %d]" % (row["lambda"], row["nnz"], low,
                                                                high))
        losses.append((row["train_loss"],
                       loss_conventions(xt, W, b, yr, family, row["lambda"], alpha)))
    table.add(case, "KKT weights, %d path points" % len(rows), worst / scale, TOLERANCES["kkt"],
              worst / scale <= TOLERANCES["kkt"], "worst at lambda %.3g" % worst_at
              if worst_at is not None else "")
    table.add(case, "path.csv nnz = nonzero weights", len(nnz_bad), 0, not nnz_bad,
              "; ".join(nnz_bad[:2]))
    check_train_loss(table, case, losses)

    # Selected model.
    sel = run["lambda"]
    val = np.array([r["val_loss"] for r in rows])
    best = int(np.nanargmin(val))
    table.add(case, "selected lambda = argmin val_loss", rel(sel[0], lams[best]) if lams[best]
              else abs(sel[0]), TOLERANCES["lambda"],
              np.allclose(sel, lams[best], rtol=TOLERANCES["lambda"], atol=1e-12),
              "selected %.4g, argmin %.4g" % (sel[0], lams[best]))
    dw = float(np.abs(run["weights"] - pw[best]).max())
    table.add(case, "weights.npy = path point selected", dw, 1e-7, dw <= 1e-7)
    v, vb = kkt_violation(xt, run["weights"], run["bias"], yr, family, sel[0], alpha)
    table.add(case, "KKT selected model (weights)", v / scale, TOLERANCES["kkt"],
              v / scale <= TOLERANCES["kkt"])
    table.add(case, "KKT selected model (bias)", vb / scale, TOLERANCES["kkt"],
              vb / scale <= TOLERANCES["kkt"])

    # scikit-learn at every lambda > 0 but lambda_max (trivial) and at lambda = 0 (gaussian).
    checked = [p for p in range(1, len(rows)) if lams[p] > 0 or family != "multinomial"]
    refs = {p: sklearn_fit(xt, yr, family, lams[p], alpha) for p in checked}
    wscale = max(np.abs(W).max() for W, _ in refs.values())
    dw_worst, dobj_worst = 0.0, 0.0
    for p, (W, b) in refs.items():
        ours = pw[p]
        b_ours = run["path_bias"][p] if run["path_bias"] is not None else \
            best_bias(xt, ours, yr, family)
        dw_worst = max(dw_worst, float(np.abs(ours - W).max()) / wscale)
        f_ref = objective(xt, W, b, yr, family, lams[p], alpha)
        f_ours = objective(xt, ours, b_ours, yr, family, lams[p], alpha)
        dobj_worst = max(dobj_worst, abs(f_ours - f_ref) / abs(f_ref))
    table.add(case, "sklearn weights, %d lambdas" % len(refs), dw_worst, TOLERANCES["weights"],
              len(refs) >= 3 and dw_worst <= TOLERANCES["weights"],
              "relative to max|w| = %.3g" % wscale)
    table.add(case, "sklearn objective, %d lambdas" % len(refs), dobj_worst,
              TOLERANCES["objective"], len(refs) >= 3 and dobj_worst <= TOLERANCES["objective"])

    if probe is not None:  # the run at 0.9 lambda_max
        nnz = int((probe["weights"] != 0).sum())
        table.add(case, "0.9 lambda_max: nnz > 0", nnz, "> 0", nnz > 0,
                  "lambda %.4g" % probe["lambda"][0])
        W = probe["weights"]
        v, vb = kkt_violation(xt, W, probe["bias"], yr, family, probe["lambda"][0], alpha)
        table.add(case, "0.9 lambda_max: KKT", max(v, vb) / scale, TOLERANCES["kkt"],
                  max(v, vb) / scale <= TOLERANCES["kkt"])


def check_lasso_path(table, case, cfg, run, x, Y, refit_run=None):
    xr, yr = x[:N_TRAIN], Y[:N_TRAIN]
    check_standardization(table, case, run, xr)
    xt = standardize(xr, run["feature_mean"], run["feature_std"])
    lmax = lambda_max(standardize(xr, xr.mean(0), xr.std(0)), yr, 1.0)
    k = Y.shape[1]
    rows = run["path"]
    sel = run["lambda"]
    first_bad, nnz_first, nnz_next, sel_bad = 0.0, 0, [], []
    for t in range(k):
        mine = [r for r in rows if int(r["target"]) == t and r["lambda"] > 0]
        if not mine:
            table.add(case, "path.csv rows of target %d" % t, 0, "> 0", False)
            return
        first_bad = max(first_bad, rel(mine[0]["lambda"], lmax[t]))
        nnz_first += int(mine[0]["nnz"])
        below = [r for r in mine if r["lambda"] < lmax[t] * (1 - 1e-3)]
        nnz_next.append(int(below[0]["nnz"]) if below else 0)
        every = [r for r in rows if int(r["target"]) == t]
        best = every[int(np.nanargmin([r["val_loss"] for r in every]))]["lambda"]
        if abs(sel[t] - best) > TOLERANCES["lambda"] * max(best, 1e-12):
            sel_bad.append("target %d: %.4g, argmin %.4g" % (t, sel[t], best))
    table.add(case, "lambda_max per target (rel)", first_bad, TOLERANCES["lambda"],
              first_bad <= TOLERANCES["lambda"],
              "numpy " + ", ".join("%.4g" % v for v in lmax))
    table.add(case, "lambda_max: nnz at first lambda", nnz_first, 0, nnz_first == 0)
    # path_weights.npy has one row per "path" row of path.csv: at each target's lambda_max the
    # row is exactly zero.
    pw = run["path_weights"]
    if pw is None or pw.shape[0] != len(rows):
        table.add(case, "path_weights rows = path.csv rows", None if pw is None else pw.shape[0],
                  len(rows), False)
    else:
        at_max = [i for i, r in enumerate(rows)
                  if r["lambda"] > 0 and rel(r["lambda"], lmax[int(r["target"])]) <=
                  TOLERANCES["lambda"]]
        residue = max(float(np.abs(pw[i]).max()) for i in at_max) if at_max else None
        table.add(case, "lambda_max: max|w| (path_weights)", residue, 0.0,
                  len(at_max) == k and residue == 0.0, "%d of %d targets" % (len(at_max), k))
    table.add(case, "next lambda: nnz > 0", min(nnz_next), "> 0", min(nnz_next) > 0,
              "per target " + ", ".join(str(v) for v in nnz_next))
    table.add(case, "selected lambda = argmin val_loss", len(sel_bad), 0, not sel_bad,
              "; ".join(sel_bad))

    scales = lmax  # alpha = 1
    W, b = run["weights"], run["bias"]
    kkt, kkt_b = 0.0, 0.0
    for t in range(k):
        v, vb = kkt_violation(xt, W[:, t:t + 1], b[t:t + 1], yr[:, t:t + 1], "gaussian",
                              sel[t], 1.0)
        kkt, kkt_b = max(kkt, v / scales[t]), max(kkt_b, vb / scales[t])
    table.add(case, "KKT selected model (weights)", kkt, TOLERANCES["kkt"],
              kkt <= TOLERANCES["kkt"])
    table.add(case, "KKT selected model (bias)", kkt_b, TOLERANCES["kkt"],
              kkt_b <= TOLERANCES["kkt"])

    refs = [sklearn_fit(xt, yr[:, t:t + 1], "gaussian", sel[t], 1.0) for t in range(k)]
    dw, dobj, nnz_bad, losses = 0.0, 0.0, [], []
    for t, (Wr, br) in enumerate(refs):
        wscale = max(np.abs(Wr).max(), 1e-12)
        dw = max(dw, float(np.abs(W[:, t] - Wr[:, 0]).max()) / wscale)
        f_ref = objective(xt, Wr, br, yr[:, t:t + 1], "gaussian", sel[t], 1.0)
        f_ours = objective(xt, W[:, t:t + 1], b[t:t + 1], yr[:, t:t + 1], "gaussian", sel[t], 1.0)
        dobj = max(dobj, abs(f_ours - f_ref) / abs(f_ref))
        row = [r for r in rows if int(r["target"]) == t and
               abs(r["lambda"] - sel[t]) <= TOLERANCES["lambda"] * max(sel[t], 1e-12)]
        if row:
            w = W[:, t]
            low, high = int((np.abs(w) > NNZ_THRESHOLD).sum()), int((w != 0).sum())
            if not low <= row[-1]["nnz"] <= high:
                nnz_bad.append("target %d: %d not in [%d, %d]" % (t, row[-1]["nnz"], low, high))
            losses.append((row[-1]["train_loss"],
                           loss_conventions(xt, W[:, t:t + 1], b[t:t + 1], yr[:, t:t + 1],
                                            "gaussian", sel[t], 1.0)))
    table.add(case, "sklearn Lasso weights, %d targets" % k, dw, TOLERANCES["weights"],
              dw <= TOLERANCES["weights"], "each relative to its max|w|")
    table.add(case, "sklearn Lasso objective", dobj, TOLERANCES["objective"],
              dobj <= TOLERANCES["objective"])
    table.add(case, "path.csv nnz = nonzero weights", len(nnz_bad), 0, not nnz_bad,
              "; ".join(nnz_bad))
    if losses:
        check_train_loss(table, case, losses)
    else:
        table.add(case, "path.csv rows of the selected lambdas", 0, k, False)

    if refit_run is not None:
        r = refit_run
        same = rel(r["lambda"], sel)
        table.add(case, "refit: same selected lambdas", same, 1e-6, same <= 1e-6)
        rows_all = x[:N_TRAIN + N_VAL]
        check_standardization(table, case + "+refit", r, rows_all)
        xa = standardize(rows_all, r["feature_mean"], r["feature_std"])
        ya = Y[:N_TRAIN + N_VAL]
        kkt, kkt_b = 0.0, 0.0
        for t in range(k):
            v, vb = kkt_violation(xa, r["weights"][:, t:t + 1], r["bias"][t:t + 1],
                                  ya[:, t:t + 1], "gaussian", r["lambda"][t], 1.0)
            kkt, kkt_b = max(kkt, v / scales[t]), max(kkt_b, vb / scales[t])
        table.add(case + "+refit", "KKT on train+val rows (weights)", kkt, TOLERANCES["kkt"],
                  kkt <= TOLERANCES["kkt"])
        table.add(case + "+refit", "KKT on train+val rows (bias)", kkt_b, TOLERANCES["kkt"],
                  kkt_b <= TOLERANCES["kkt"])


# ------------------------------------------------------------------------------------------

def run_case(name, args, table):
    spec = CASES[name]
    folder = os.path.join(args.workdir, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    x, y = spec["make"]()
    np.save(os.path.join(folder, "features.npy"), x)
    np.save(os.path.join(folder, "targets.npy"), y)
    beton = os.path.join(folder, "data.beton")
    ffcv = command_prefix(args.ffcv)
    call(ffcv + ["write", "npy", "--features", os.path.join(folder, "features.npy"),
                 "--targets", os.path.join(folder, "targets.npy"), "--output", beton] +
         (["--pack-bits"] if spec["pack"] else []))
    data = dict(COMMON_DATA, train=beton)
    if spec["pack"]:
        data["mask_bits"] = x.shape[1]
    cfg = dict(spec["saga"], **COMMON_SAGA)

    def solve(tag, saga):
        recipe = os.path.join(folder, tag + ".toml")
        write_recipe(recipe, data, saga)
        out = os.path.join(folder, tag)
        shutil.rmtree(out, ignore_errors=True)
        call(ffcv + ["run", recipe, "--output-dir", out] + args.extra)
        return load_run(out)

    family = cfg["family"]
    k = 3 if family == "multinomial" else (y.shape[1] if y.ndim == 2 else 1)
    Y = one_hot(y, k) if family == "multinomial" else (y.reshape(len(y), -1).astype(np.float64))
    x64 = x.astype(np.float64)
    run = solve("run", cfg)
    check_summary(table, name, run, N_TRAIN, N_VAL, x.shape[1], k, cfg)
    if cfg["objective"] == "elastic_net":
        xr = x64[:N_TRAIN]
        xt = standardize(xr, xr.mean(0), xr.std(0))
        lmax = lambda_max(xt, Y[:N_TRAIN], cfg["alpha"]).max()
        probe = solve("probe", dict(cfg, lambdas=[float(0.9 * lmax)], do_zero=False))
        check_elastic_net(table, name, cfg, run, x64, Y, family, probe)
    else:
        refit = solve("refit", dict(cfg, refit=True))
        check_lasso_path(table, name, cfg, run, x64, Y, refit)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ffcv", required=True, help="the ffcv binary (or a stand-in .py)")
    parser.add_argument("--workdir", required=True, help="data, recipes and run folders go here")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of "
                        + ", ".join(CASES))
    parser.add_argument("--extra", action="append", default=[],
                        help="one more argument for every `ffcv run` (repeatable), e.g. "
                             "--extra=--set --extra=saga.device=cuda")
    args = parser.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("SKIPPED: scikit-learn is not installed; the reference answers need it "
              "(.venv/bin/pip install scikit-learn)")
        return SKIP
    if not os.path.exists(args.ffcv):
        print("FAILED: no ffcv binary at %s" % args.ffcv)
        return 1
    os.makedirs(args.workdir, exist_ok=True)
    table = Table()
    errors = []
    for name in args.cases.split(","):
        if name not in CASES:
            parser.error("unknown case " + name)
        print("== %s" % name, flush=True)
        try:
            run_case(name, args, table)
        except Failed as e:
            errors.append((name, str(e)))
            table.add(name, "run", "error", "", False, str(e).splitlines()[0][:80])
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            # Output that is missing or not shaped as documented.
            errors.append((name, traceback.format_exc()))
            table.add(name, "reading the run's output", "error", "", False, repr(e)[:80])
        except Skip as e:
            print("SKIPPED: %s" % e)
            return SKIP
    table.print()
    print("\nTolerances: " + ", ".join("%s %g" % kv for kv in TOLERANCES.items()))
    for name, message in errors:
        print("\n%s failed to run:\n%s" % (name, message))
    failed = table.failed()
    if failed:
        print("\nFAILED: " + "; ".join("%s: %s" % (r[0], r[1]) for r in failed))
        return 1
    print("\nall %d checks passed" % len(table.rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
