"""Gibbs vs PyMC (NUTS) posterior of the copula correlation on the small example of the test.

Same data as ``tests/test_copula.py::test_gibbs_agrees_with_pymc_posterior`` (n = 12,
two continuous columns, 3 missing values); prints and writes posterior mean, sd,
ESS and the Monte Carlo standard error of the difference.

Run: ``python benchmarks/copula_pymc.py``.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench import write_json  # noqa: E402

from synthmi.diagnostics import ess_bulk  # noqa: E402
from synthmi.models.copula import GaussianCopula, copula_pymc_model  # noqa: E402


def main() -> None:
    import arviz as az
    import pymc as pm

    rng = np.random.default_rng(3)
    n = 12
    z = rng.multivariate_normal(np.zeros(2), [[1.0, 0.6], [0.6, 1.0]], size=n)
    df = pd.DataFrame({"a": z[:, 0], "b": np.exp(z[:, 1])})
    df.loc[[1, 5], "a"] = np.nan
    df.loc[[2], "b"] = np.nan
    t0 = time.perf_counter()
    g = GaussianCopula(n_iter=6000, burn=500, random_state=4).fit(df)
    t_gibbs = time.perf_counter() - t0
    rg = g.correlation_draws_[:, 0, 1]
    ess_g = float(ess_bulk(rg[None])[0])
    t0 = time.perf_counter()
    with copula_pymc_model(df):
        idata = pm.sample(600, tune=600, chains=2, cores=1, random_seed=5, progressbar=False, target_accept=0.9)
    t_pymc = time.perf_counter() - t0
    rp = idata.posterior["corr"].values[..., 0].ravel()
    ess_p = float(az.ess(idata, var_names=["corr"])["corr"].values[0])
    rhat_p = float(az.rhat(idata, var_names=["corr"])["corr"].values[0])
    mcse = float(np.sqrt(rg.var() / ess_g + rp.var() / ess_p))
    out = {
        "gibbs": {"mean": float(rg.mean()), "sd": float(rg.std()), "ess": ess_g, "seconds": t_gibbs},
        "pymc": {"mean": float(rp.mean()), "sd": float(rp.std()), "ess": ess_p, "r_hat": rhat_p, "seconds": t_pymc,
                 "divergences": int(idata.sample_stats["diverging"].sum())},
        "difference": float(rg.mean() - rp.mean()),
        "mcse_of_difference": mcse,
    }
    print(
        f"corr(a, b): Gibbs {out['gibbs']['mean']:.3f} (sd {out['gibbs']['sd']:.3f}, ESS {ess_g:.0f}); "
        f"PyMC {out['pymc']['mean']:.3f} (sd {out['pymc']['sd']:.3f}, ESS {ess_p:.0f}, r_hat {rhat_p:.3f}); "
        f"difference {out['difference']:+.4f}, MCSE {mcse:.4f}"
    )
    write_json("copula_pymc", {**out, "seeds": {"data": 3, "gibbs": 4, "pymc": 5}})


if __name__ == "__main__":
    main()
