"""How many within-record Gibbs sweeps the joint DA-MI predictive needs: draws against exact enumeration.

For one posterior draw theta and one set of masking evidence W~, the exact
joint predictive of every record (Jiang et al. 2022, eq. 3) is computed by
enumeration and compared with the Gibbs draw after s sweeps (s = 0 is the
sequential draw the sweeps start from), pooled over records and replicate
draws: total-variation distance and Pearson chi-square p-value (conservative:
records have different distributions).

* ``categorical``: three dependent masked categorical QIs (binary a,
  3-level ordinal b, binary c; the setting of ``tests/models/test_joint.py``),
  300 records, 150 replicate draws per s, two data seeds.
* ``mixed``: a masked whole-number age (normal model on the grid 18..80,
  NormalMasking K=2, sigma_e=3) followed by a masked binary and a masked
  3-level QI that depend on it; exact enumeration over the 63 grid values x 6
  level combinations (the coarsened-normal model of
  :mod:`synthmi.models.truncation`), age pooled into 5-year bins for the
  comparison; 300 records, 100 replicate draws per s.

Run: ``python benchmarks/dami_sweeps.py``; writes ``benchmarks/results/dami_sweeps.json``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from synthmi.models import DAMISynthesizer  # noqa: E402
from synthmi.models.predictive import Prepared, enumerate_probs, gibbs_draw, log_prob_of  # noqa: E402
from synthmi.models.truncation import log_truncation_mass  # noqa: E402

SWEEPS = (0, 1, 2, 3, 5, 10)


def _compare(counts: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    keep = expected >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    tv = 0.5 * np.abs(counts / counts.sum() - expected / expected.sum()).sum()
    return float(tv), float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)


def categorical(seed: int, reps: int = 150) -> dict:
    from test_joint import _setup

    syn, preps, ev = _setup(seed)
    combos, logp = enumerate_probs(syn.conditionals_, preps, ev, syn.n_)
    expected = np.exp(logp).sum(axis=0) * reps
    rng = np.random.default_rng(100 + seed)
    out = {}
    for s in SWEEPS:
        counts = np.zeros(len(combos))
        for _ in range(reps):
            d = gibbs_draw(syn.conditionals_, preps, ev, rng, n_sweeps=s)[0]
            counts += np.bincount(d["a"] * 6 + d["b"] * 2 + d["c"], minlength=len(combos))
        tv, p = _compare(counts, expected)
        out[s] = {"tv": tv, "chi2_p": p}
    return out


def _mixed_setup(seed: int):
    rng = np.random.default_rng(seed)
    n = 300
    z = rng.normal(size=n)
    age = np.rint(np.clip(45 + 8 * z + rng.normal(scale=10, size=n), 18, 80))
    sex = (rng.random(n) < expit(0.08 * (age - 45))).astype(int)
    edu = np.digitize(0.05 * (age - 45) + 0.8 * sex + 0.5 * z + rng.logistic(size=n), [-0.5, 1.0])
    df = pd.DataFrame({"z": z, "age": age, "sex": pd.Categorical.from_codes(sex, ["f", "m"]),
                       "edu": pd.Categorical.from_codes(edu, ["lo", "mid", "hi"], ordered=True)})
    syn = DAMISynthesizer(masks={"age": {"K": 2, "sigma_e": 3.0}, "sex": {"alpha": 2.0}, "edu": {"p": 0.7}},
                          w_tilde="reuse", random_state=1, progressbar=False).fit(
        df, quasi_identifiers=["age", "sex", "edu"], keep=["z"])
    theta = syn._posterior_draws(1, np.random.default_rng(2))
    preps = [Prepared(c, theta[j][0]) for j, c in enumerate(syn.conditionals_)]
    ev = syn._evidence(np.random.default_rng(3))
    return syn, preps, ev


def mixed_exact(syn, preps, ev) -> tuple[np.ndarray, np.ndarray]:
    """Exact joint predictive over (age on its grid, sex, edu): cells (K, 3) and probabilities (n, K)."""
    age_c, sex_c, edu_c = syn.conditionals_
    p_age, p_sex, p_edu = preps
    n = syn.n_
    grid = np.arange(age_c.support.grid_lower, age_c.support.grid_upper + 1)
    mu = p_age.eta({})
    w_bar, v = ev["age"][1], ev["age"][2]
    cells, logw = [], []
    for k in grid:
        # coarsened normal: P(age = k) = Phi((k + 1/2 - mu)/s) - Phi((k - 1/2 - mu)/s), up to the record's constant
        lk = log_truncation_mass(mu, p_age.sigma, k - 0.5, k + 0.5) - 0.5 * (w_bar - k) ** 2 / v
        ages = np.full(n, float(k))
        for s in range(2):
            vals = {"age": ages, "sex": np.full(n, s)}
            ls = log_prob_of(sex_c.family, p_sex.eta(vals), vals["sex"], p_sex.cut) + ev["sex"][1][:, s]
            for e in range(3):
                vals["edu"] = np.full(n, e)
                le = log_prob_of(edu_c.family, p_edu.eta(vals), vals["edu"], p_edu.cut) + ev["edu"][1][:, e]
                cells.append((k, s, e))
                logw.append(lk + ls + le)
    logw = np.column_stack(logw)
    logw -= logw.max(axis=1, keepdims=True)
    p = np.exp(logw)
    return np.asarray(cells), p / p.sum(axis=1, keepdims=True)


def mixed(seed: int, reps: int = 100) -> dict:
    syn, preps, ev = _mixed_setup(seed)
    cells, probs = mixed_exact(syn, preps, ev)
    key_cells = (((cells[:, 0] - 18) // 5) * 6 + cells[:, 1] * 3 + cells[:, 2]).astype(np.int64)
    n_keys = int(key_cells.max()) + 1
    expected = np.bincount(key_cells, weights=probs.sum(axis=0), minlength=n_keys) * reps
    rng = np.random.default_rng(200 + seed)
    out = {}
    for s in SWEEPS:
        counts = np.zeros(n_keys)
        acc = []
        for _ in range(reps):
            d, rates = gibbs_draw(syn.conditionals_, preps, ev, rng, n_sweeps=s)
            key = ((d["age"] - 18) // 5).astype(int) * 6 + d["sex"] * 3 + d["edu"]
            counts += np.bincount(key, minlength=n_keys)
            acc.append(rates.get("age", np.nan))
        tv, p = _compare(counts, expected)
        out[s] = {"tv": tv, "chi2_p": p, "age_acceptance": float(np.nanmean(acc)) if s else None}
    return out


def main() -> int:
    from _bench import write_json

    t0 = time.perf_counter()
    res = {"categorical": {f"seed={k}": categorical(k) for k in (0, 1)},
           "mixed": {f"seed={k}": mixed(k) for k in (0, 1)}}
    for case, by_seed in res.items():
        for sd, r in by_seed.items():
            print(f"{case:>12} {sd}: " + "  ".join(f"s={s}: TV {v['tv']:.4f} p {v['chi2_p']:.3g}" for s, v in r.items()))
    write_json("dami_sweeps", {"sweeps": list(SWEEPS), "results": res, "wall_seconds": time.perf_counter() - t0,
                               "note": "TV floor from Monte Carlo noise ~ sqrt(cells / (2 pi N)) with N pooled draws"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
