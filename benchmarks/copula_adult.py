"""MAR coverage of copula multiple imputation on a mixed test set built from Adult.

The test set: Adult's age and hours_per_week (continuous), sex and income
(binary), and the nominal workclass (Private / Self-employed / Government),
relationship (Spouse / Not-in-family / Own-child / Other) and marital_status
(Married / Never-married / Divorced-or-separated / Widowed); rare categories are
merged (Without-pay, Never-worked and unknown workclass dropped). A
GaussianCopula fitted to 1,500 of these records (seed 0, 200 iterations) gives one parameter
state; that state *is* the data-generating model (latents from N(mu, Sigma),
ranked margins through Adult's empirical quantiles, probit blocks through their
level rule), so the truth is known: the share of "Never-married" and the OLS
slope of hours_per_week on age, each computed on 10^6 generated records.

Each replication draws n = 500 records, injects MAR gaps in two columns
(marital_status missing with probability expit(-1.6 + 0.05 (age - 38)),
hours_per_week missing with probability expit(-2.2 + 0.9 male + 0.8 [>50K]), so
both depend only on always-observed columns; ~17 % and ~20 % missing), fits
GaussianCopula (one chain, n_iter iterations), draws m = 10 imputations (10 iterations apart) and
combines with Rubin's (1987) rule: the 95 % intervals of the share (complete-data
variance p(1 - p)/n) and of the slope (OLS variance) are checked against the
truth. Reported: coverage over R replications with its Monte Carlo SE, and the
fitted model's diagnostics on one fit of a replication-size data set (2 chains,
``--diag-iter`` iterations; ``--diag-n`` records).

Run: ``python benchmarks/copula_adult.py [--reps 400] [--workers 2] [--n-iter 150]``
(``--diag-only --diag-iter 12000 --diag-burn 2000`` for the diagnostics fit alone:
``results/copula_adult_diagnostics.json``);
``tests/models/test_copula.py`` runs a reduced version (first replications).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N_REP, M_IMP, CELL = 500, 10, "Never-married"
COLUMNS = ["age", "hours_per_week", "sex", "income", "workclass", "relationship", "marital_status"]


def adult_mixed() -> pd.DataFrame:
    """The mixed Adult test set (complete records; merged rare categories)."""
    from synthmi.data import load_adult

    df = load_adult()
    wc = {"Private": "Private", "Self-emp-not-inc": "Self-employed", "Self-emp-inc": "Self-employed",
          "Local-gov": "Government", "State-gov": "Government", "Federal-gov": "Government"}
    rel = {"Husband": "Spouse", "Wife": "Spouse", "Not-in-family": "Not-in-family", "Own-child": "Own-child",
           "Unmarried": "Other", "Other-relative": "Other"}
    mar = {"Married-civ-spouse": "Married", "Married-AF-spouse": "Married", "Married-spouse-absent": "Married",
           "Never-married": "Never-married", "Divorced": "Divorced-or-separated",
           "Separated": "Divorced-or-separated", "Widowed": "Widowed"}
    out = pd.DataFrame({
        "age": df["age"].astype(float),
        "hours_per_week": df["hours_per_week"].astype(float),
        "sex": df["sex"],
        "income": df["income"],
        "workclass": pd.Categorical(df["workclass"].astype(object).map(wc), categories=["Private", "Self-employed", "Government"]),
        "relationship": pd.Categorical(df["relationship"].astype(object).map(rel),
                                       categories=["Spouse", "Not-in-family", "Own-child", "Other"]),
        "marital_status": pd.Categorical(df["marital_status"].astype(object).map(mar),
                                         categories=["Married", "Never-married", "Divorced-or-separated", "Widowed"]),
    })
    return out.dropna().reset_index(drop=True)


class Generator:
    """Draws records from one fitted copula state (the known truth of the study)."""

    def __init__(self, n_fit: int = 1500, n_iter: int = 200, seed: int = 0):
        from synthmi.models.copula import GaussianCopula

        base = adult_mixed()
        rng = np.random.default_rng(seed)
        fit_df = base.iloc[rng.choice(len(base), n_fit, replace=False)].reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self.model = GaussianCopula(n_iter=n_iter, chains=1, random_state=seed).fit(fit_df)
        self.state = self.model.state_.copy()
        self.sampler = self.model.sampler_
        self.margins = self.model.margins_
        self.base = base
        self.like = fit_df.iloc[:0]

    def draw(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        from scipy.special import ndtr

        z, block_levels = self.sampler.simulate(self.state, n, rng)
        level_of = {mg.name: lv for mg, lv in zip(self.sampler.block_margins, block_levels)}
        sigma_a = self.state.sigma_a
        out = {}
        for mg in self.margins:
            if mg.kind == "continuous":
                j = mg.cols[0]
                k = int(np.flatnonzero(self.sampler.ranked_cols == j)[0])
                u = ndtr(z[:, j] / np.sqrt(sigma_a[k, k]))
                out[mg.name] = np.quantile(self.base[mg.name].to_numpy(), u, method="inverted_cdf")
            else:
                lev = level_of[mg.name]
                cats = self.base[mg.name].cat.categories
                codes = mg.support[lev]
                out[mg.name] = pd.Categorical.from_codes(codes, categories=cats)
        return pd.DataFrame(out)[COLUMNS]


def truth(gen: Generator, n: int = 1_000_000, seed: int = 12345) -> dict[str, float]:
    pop = gen.draw(n, np.random.default_rng(seed))
    X = np.column_stack([np.ones(n), pop["age"].to_numpy()])
    b = np.linalg.lstsq(X, pop["hours_per_week"].to_numpy(), rcond=None)[0]
    return {"share": float((pop["marital_status"] == CELL).mean()), "slope": float(b[1])}


def inject_mar(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    out = df.copy()
    n = len(df)
    p_m = 1.0 / (1.0 + np.exp(-(-1.6 + 0.05 * (df["age"].to_numpy() - 38.0))))
    male = (df["sex"].astype(object) == "Male").to_numpy(dtype=float)
    rich = (df["income"].astype(object) == ">50K").to_numpy(dtype=float)
    p_h = 1.0 / (1.0 + np.exp(-(-2.2 + 0.9 * male + 0.8 * rich)))
    out.loc[rng.random(n) < p_m, "marital_status"] = np.nan
    out.loc[rng.random(n) < p_h, "hours_per_week"] = np.nan
    return out


def one_replication(args) -> list[float]:
    """Covered (share, slope), interval widths, missing shares and fit diagnostics for one seed."""
    gen, tr, seed, n_iter = args
    from synthmi.evaluation import combine
    from synthmi.models.copula import GaussianCopula

    rng = np.random.default_rng(seed)
    df = inject_mar(gen.draw(N_REP, rng), rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # imputations 10 iterations apart: the nominal blocks mix slowly (see the diagnostics fit)
        g = GaussianCopula(n_iter=n_iter, chains=1, thin=10, random_state=seed).fit(df)
    est, var = [], []
    x = df["age"].to_numpy()
    X = np.column_stack([np.ones(N_REP), x])
    XtX_inv = np.linalg.inv(X.T @ X)
    for d in g.impute(M_IMP, random_state=seed + 10_000):
        p = float((d["marital_status"] == CELL).mean())
        y = d["hours_per_week"].to_numpy(dtype=float)
        b = XtX_inv @ X.T @ y
        s2 = float(np.sum((y - X @ b) ** 2) / (N_REP - 2))
        est.append([p, b[1]])
        var.append([p * (1 - p) / N_REP, s2 * XtX_inv[1, 1]])
    res = combine(np.array(est), np.array(var), rule="rubin", df_complete=N_REP - 2)
    t = np.array([tr["share"], tr["slope"]])
    cov = (res.ci_lower <= t) & (t <= res.ci_upper)
    d = g.diagnostics_
    return [float(cov[0]), float(cov[1]), *(res.ci_upper - res.ci_lower).tolist(),
            float(df["marital_status"].isna().mean()), float(df["hours_per_week"].isna().mean()),
            float(d["max_r_hat"]), float(d["min_ess_bulk"]),
            # the marital_status block's collapsed-move acceptance (NaN if stopped in burn-in)
            float(d.get("collapsed_acceptance", {}).get("marital_status", np.nan))]


def run(reps: int, n_iter: int, workers: int, start: int = 0):
    gen = Generator()
    tr = truth(gen)
    jobs = [(gen, tr, s, n_iter) for s in range(start, start + reps)]
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            rows = pool.map(one_replication, jobs, chunksize=4)
    else:
        rows = [one_replication(j) for j in jobs]
    return gen, tr, np.array(rows)


def diagnostics_fit(gen: Generator, n: int, n_iter: int, burn: int | None):
    """The fitted model's diagnostics on one generated data set with the MAR gaps (2 chains in parallel)."""
    from synthmi.models.copula import GaussianCopula

    rng = np.random.default_rng(777)
    df = inject_mar(gen.draw(n, rng), rng)
    t1 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = GaussianCopula(n_iter=n_iter, burn=burn, chains=2, n_jobs=2, random_state=1).fit(df)
    return g, time.perf_counter() - t1


def diagnostics_only(a) -> None:
    from _bench import write_json

    load0 = os.getloadavg()
    gen = Generator()
    g, t_diag = diagnostics_fit(gen, a.diag_n, a.diag_iter, a.diag_burn)
    d = g.diagnostics_
    print(f"diagnostics (n = {a.diag_n}, 2 chains x {a.diag_iter}, burn {a.diag_burn}): max R-hat "
          f"{d['max_r_hat']:.4f}, min bulk ESS {d['min_ess_bulk']:.0f} ({d['worst']}), min tail ESS "
          f"{d['min_ess_tail']:.0f}; {t_diag:.0f} s")
    write_json("copula_adult_diagnostics", {
        "diagnostics_full_fit": {"n": a.diag_n, "chains": 2, "n_iter": a.diag_iter, "burn": a.diag_burn,
                                 "seconds": t_diag, "moves": list(g.sampler_.nominal_move),
                                 **{k: v for k, v in d.items() if k != "table"}, "table": d["table"]},
        "loadavg_at_start": list(load0),
    })


def main() -> None:
    from _bench import write_json

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--n-iter", type=int, default=150)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--diag-iter", type=int, default=1000)
    ap.add_argument("--diag-n", type=int, default=N_REP)
    ap.add_argument("--diag-burn", type=int, default=None, help="burn-in of the diagnostics fit (default half)")
    ap.add_argument("--diag-only", action="store_true",
                    help="only the diagnostics fit; writes results/copula_adult_diagnostics.json")
    a = ap.parse_args()
    if a.diag_only:
        diagnostics_only(a)
        return
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    gen, tr, rows = run(a.reps, a.n_iter, a.workers)
    wall = time.perf_counter() - t0
    cover = rows[:, :2].mean(axis=0)
    se = np.sqrt(0.95 * 0.05 / a.reps)
    print(f"truth: share {tr['share']:.4f}, slope {tr['slope']:.5f}")
    print(f"MAR coverage over {a.reps} replications: share of '{CELL}' {cover[0]:.3f}, slope {cover[1]:.3f} "
          f"(MC SE {se:.4f}); {wall:.0f} s with {a.workers} workers")
    # diagnostics of a full fit on the full-size generated data with gaps (two chains)
    g, t_diag = diagnostics_fit(gen, a.diag_n, a.diag_iter, a.diag_burn)
    d = g.diagnostics_
    print(f"diagnostics (n = {a.diag_n}, 2 chains x {a.diag_iter}): max R-hat {d['max_r_hat']:.3f}, min bulk ESS "
          f"{d['min_ess_bulk']:.0f}, min tail ESS {d['min_ess_tail']:.0f}; {t_diag:.0f} s")
    write_json("copula_adult", {
        "truth": tr,
        "coverage": {"share_never_married": float(cover[0]), "slope_hours_on_age": float(cover[1]),
                     "replications": a.reps, "mc_se": float(se), "n": N_REP, "m": M_IMP, "n_iter": a.n_iter,
                     "mean_ci_width": rows[:, 2:4].mean(axis=0).tolist(),
                     "mean_missing_share": rows[:, 4:6].mean(axis=0).tolist(),
                     "replication_max_r_hat_median": float(np.median(rows[:, 6])),
                     "replication_min_ess_median": float(np.median(rows[:, 7])),
                     "wall_seconds": wall, "workers": a.workers},
        "diagnostics_full_fit": {"n": a.diag_n, "chains": 2, "n_iter": a.diag_iter, "seconds": t_diag,
                                 **{k: v for k, v in d.items() if k != "table"}, "table": d["table"]},
        "loadavg_at_start": list(load0),
        "note": "machine shared with other agents; wall times depend on the load (loadavg recorded)",
    })


if __name__ == "__main__":
    main()
