"""Gibbs vs PyMC (NUTS) posterior of the copula correlations on the small mixed case of the test.

Same data as ``tests/models/test_copula.py::test_gibbs_agrees_with_pymc_posterior_mixed``
(n = 24: a continuous column with 2 missing values, an ordinal column with
ties, a binary column with 1 missing, a 3-level nominal column with 1 missing);
prints and writes, per latent correlation, the two posterior means and sds,
their ESS and the Monte Carlo standard error of the difference.

Run: ``python benchmarks/copula_pymc.py [--n-iter 6000] [--draws 1000]``. The figures of the
session's run (2,000 Gibbs iterations, 500 NUTS draws per chain) are in
``benchmarks/results/copula_pymc_mixed.json``: all 10 correlations agree (largest |z| 1.49,
largest MC standard error of the difference 0.046, no divergences).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _bench import write_json  # noqa: E402

from synthmi.models.copula import GaussianCopula, copula_pymc_model  # noqa: E402


def main() -> None:
    import arviz as az
    import pymc as pm
    from test_copula import _small_mixed

    ap = argparse.ArgumentParser()
    ap.add_argument("--n-iter", type=int, default=6000)
    ap.add_argument("--draws", type=int, default=1000)
    a = ap.parse_args()
    load0 = os.getloadavg()
    df = _small_mixed()
    t0 = time.perf_counter()
    g = GaussianCopula(n_iter=a.n_iter, burn=500, chains=2, random_state=4).fit(df)
    t_gibbs = time.perf_counter() - t0
    q = g.q_
    iu = np.triu_indices(q, 1)
    rg = g.correlation_draws_[:, iu[0], iu[1]]
    ess_g = np.array([float(az.ess(rg[:, k].reshape(2, -1))) for k in range(rg.shape[1])])
    t0 = time.perf_counter()
    with copula_pymc_model(df):
        idata = pm.sample(a.draws, tune=a.draws, chains=2, cores=1, random_seed=5, progressbar=False,
                          target_accept=0.95)
    t_pymc = time.perf_counter() - t0
    rp = idata.posterior["corr"].values.reshape(-1, rg.shape[1])
    ess_p = np.asarray(az.ess(idata, var_names=["corr"])["corr"].values, dtype=float)
    rhat_p = np.asarray(az.rhat(idata, var_names=["corr"])["corr"].values, dtype=float)
    mcse = np.sqrt(rg.var(0) / ess_g + rp.var(0) / ess_p)
    pairs = []
    for k, (i, j) in enumerate(zip(*iu)):
        pairs.append({"pair": f"{g.latent_names_[i]}~{g.latent_names_[j]}", "gibbs_mean": float(rg[:, k].mean()),
                      "pymc_mean": float(rp[:, k].mean()), "gibbs_sd": float(rg[:, k].std()),
                      "pymc_sd": float(rp[:, k].std()), "gibbs_ess": float(ess_g[k]), "pymc_ess": float(ess_p[k]),
                      "pymc_r_hat": float(rhat_p[k]), "mcse_of_difference": float(mcse[k]),
                      "z": float((rg[:, k].mean() - rp[:, k].mean()) / mcse[k])})
        p = pairs[-1]
        print(f"{p['pair']:14s} Gibbs {p['gibbs_mean']:+.3f} (sd {p['gibbs_sd']:.3f}, ESS {p['gibbs_ess']:.0f})  "
              f"PyMC {p['pymc_mean']:+.3f} (sd {p['pymc_sd']:.3f}, ESS {p['pymc_ess']:.0f}, R-hat {p['pymc_r_hat']:.3f})  "
              f"z {p['z']:+.2f}")
    write_json("copula_pymc", {
        "pairs": pairs, "max_abs_z": float(max(abs(p["z"]) for p in pairs)),
        "gibbs": {"n_iter": a.n_iter, "chains": 2, "seconds": t_gibbs, "max_r_hat": g.diagnostics_["max_r_hat"]},
        "pymc": {"draws": a.draws, "tune": a.draws, "chains": 2, "seconds": t_pymc,
                 "divergences": int(idata.sample_stats["diverging"].sum())},
        "seeds": {"data": 5, "gibbs": 4, "pymc": 5}, "loadavg_at_start": list(load0),
    })


if __name__ == "__main__":
    main()
