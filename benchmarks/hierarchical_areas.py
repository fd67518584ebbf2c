"""Area-level means from synthetic copies: random intercepts vs fixed area effects vs no area term.

Data (each replication): G = 200 areas with n_g ~ Uniform{5, ..., 50} records,
area effects u_g ~ N(0, tau^2) (tau = 0.5), a kept covariate x ~ N(0, 1), and
the synthesized quasi-identifier

    y = 1 + 0.5 x + u_g + e,   e ~ N(0, 1).

Estimand: the area mean theta_g = 1 + u_g (x has mean 0 in every area).
Each replication fits three ``RubinSynthesizer`` models for y (area and x
kept): ``hierarchical`` (random intercepts for area, exact Gibbs path),
``fixed`` (area as 199 treatment dummies, the default design) and ``no-area``
(predictors x only); draws M = 5 copies; the analyst estimates every area's
mean by its sample mean (variance s_g^2 / n_g) on each copy and combines by
Reiter's (2003) partial rule. Reported per method, over all areas and
replications: coverage of 95% intervals, mean width, RMSE of the combined
estimate, split by area size; the same for the original data as reference.

Run: ``python benchmarks/hierarchical_areas.py [--reps 40]``; writes
``benchmarks/results/hierarchical_areas.json``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synthmi.evaluation import combine  # noqa: E402
from synthmi.models import RubinSynthesizer  # noqa: E402

G, TAU, M = 200, 0.5, 5


def simulate_data(rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    sizes = rng.integers(5, 51, G)
    area = np.repeat(np.arange(G), sizes)
    u = TAU * rng.standard_normal(G)
    x = rng.standard_normal(area.size)
    y = 1 + 0.5 * x + u[area] + rng.standard_normal(area.size)
    df = pd.DataFrame({"area": pd.Categorical([f"a{k:03d}" for k in area], categories=[f"a{k:03d}" for k in range(G)]),
                       "x": x, "y": y})
    return df, 1 + u


def area_means(y: np.ndarray, area: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sample mean and its variance s^2/n per area; y is (M, n) or (n,)."""
    y = np.atleast_2d(y)
    n_g = np.bincount(area, minlength=G)
    s1 = np.stack([np.bincount(area, weights=r, minlength=G) for r in y])
    s2 = np.stack([np.bincount(area, weights=r * r, minlength=G) for r in y])
    mean = s1 / n_g
    var = (s2 - n_g * mean**2) / (n_g - 1)
    return mean, var / n_g


def synthesizers() -> dict:
    return {
        "hierarchical": lambda: RubinSynthesizer(models={"y": {"method": "hierarchical", "group": "area"}}, progressbar=False),
        "fixed": lambda: RubinSynthesizer(progressbar=False),
        "no-area": lambda: RubinSynthesizer(models={"y": {"predictors": ["x"]}}, progressbar=False),
    }


def run(reps: int, seed: int = 2024) -> dict:
    ss = np.random.SeedSequence(seed)
    methods = list(synthesizers()) + ["original"]
    acc = {k: {"covered": [], "width": [], "err": [], "size": []} for k in methods}
    r_hats = []
    for child in ss.spawn(reps):
        rng = np.random.default_rng(child)
        df, theta = simulate_data(rng)
        area = df["area"].cat.codes.to_numpy()
        n_g = np.bincount(area, minlength=G)
        est, var = area_means(df["y"].to_numpy(), area)
        half = stats.t.ppf(0.975, n_g - 1) * np.sqrt(var[0])
        for k, v in (("covered", np.abs(est[0] - theta) <= half), ("width", 2 * half), ("err", est[0] - theta), ("size", n_g)):
            acc["original"][k].append(v)
        for name, make in synthesizers().items():
            syn = make().fit(df, quasi_identifiers=["y"], keep=["area", "x"])
            out = syn.sample(M, random_state=int(rng.integers(2**31)))
            if name == "hierarchical":
                r_hats.append(out.metadata()["diagnostics"]["columns"]["y"]["r_hat"])
            ys = np.stack([c["y"].to_numpy() for c in out.copies])
            e, v = area_means(ys, area)
            res = combine(e, v, rule="partial")
            acc[name]["covered"].append((res.ci_lower <= theta) & (theta <= res.ci_upper))
            acc[name]["width"].append(res.ci_upper - res.ci_lower)
            acc[name]["err"].append(res.estimate - theta)
            acc[name]["size"].append(n_g)
    out = {}
    for name, a in acc.items():
        cov = np.concatenate(a["covered"])
        wid = np.concatenate(a["width"])
        err = np.concatenate(a["err"])
        size = np.concatenate(a["size"])
        small = size <= 15
        out[name] = {
            "coverage": float(cov.mean()),
            "coverage_mc_se": float(np.sqrt(cov.mean() * (1 - cov.mean()) / cov.size)),
            "coverage_small_areas_5_15": float(cov[small].mean()),
            "coverage_large_areas_16_50": float(cov[~small].mean()),
            "mean_width": float(wid.mean()),
            "rmse": float(np.sqrt((err**2).mean())),
            "rmse_small_areas_5_15": float(np.sqrt((err[small] ** 2).mean())),
            "bias_abs_mean": float(np.abs(err).mean()),
        }
    out["hierarchical"]["max_r_hat_over_reps"] = float(np.max(r_hats))
    return out


def main(argv: list[str] | None = None) -> int:
    from _bench import write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = run(args.reps)
    wall = time.perf_counter() - t0
    for k, v in res.items():
        print(f"{k:>13}: coverage {v['coverage']:.3f} (small areas {v['coverage_small_areas_5_15']:.3f}), "
              f"width {v['mean_width']:.3f}, RMSE {v['rmse']:.3f} (small {v['rmse_small_areas_5_15']:.3f})")
    write_json("hierarchical_areas", {
        "model": "G=200 areas, n_g ~ U{5..50}, y = 1 + 0.5 x + u_g + N(0,1), u_g ~ N(0, 0.5^2); QI y; kept area, x",
        "estimand": "area mean theta_g = 1 + u_g; analyst: area sample mean, var s_g^2/n_g; partial rule, M=5",
        "reps": args.reps, "areas_per_rep": G, "M": M, "seed": 2024, "wall_seconds": wall, "results": res,
    })
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
