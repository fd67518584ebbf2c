"""Issue 29 item 6: which coefficients make the wide file's HMC slow, under the former and the default prior.

Fits DA-MI on the first ``--rows`` rows of the wide survey stand-in (``speed_dami_utility.wide_file``, same
QIs, masks and seed) and takes one nominal QI's multinomial logit (``--column``, marital status by
default: 155 design columns x 6 categories). For the prior ``--prior`` (a number s: N(0, s^2) on every
coefficient, the former default being 10; ``default``: ``glm.default_prior_sd``) it finds the mode and
Laplace covariance, runs the whitened HMC for 2 chains x ``--draws`` kept draws (no extension; seed 7)
and reports its step size, leapfrog steps, gradient count, the coefficients with the lowest bulk ESS
with their posterior sd over the Laplace sd, (posterior mean - mode) / Laplace sd, and the records
with the dummy on / of them in the category; and counts of coefficients with posterior sd > 1.2
Laplace sds and with |posterior mean| > 10.

    python benchmarks/prior_directions.py --prior 10 --tag former
    python benchmarks/prior_directions.py --prior default --tag default

Writes ``benchmarks/results/prior_directions_TAG.json``.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402
import speed_dami_utility as B  # noqa: E402


def main() -> None:
    from synthmi.diagnostics import ess_bulk
    from synthmi.models.glm import CategoricalModel, default_prior_sd, whitened_hmc
    from synthmi.workflow.tuning import make_synthesizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--column", default="marital_status")
    ap.add_argument("--prior", default="default")
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--rows", type=int, default=8000)
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    df, keep = B._wide(a.rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = make_synthesizer("dami", {"masks": B.WIDE_MASKS, "random_state": B.SEED}).fit(
            df, quasi_identifiers=B.WIDE_QI, keep=keep)
    cond = next(c for c in syn.conditionals_ if c.column == a.column)
    names, X, Y = cond.coef_names, cond.fast.X, cond.fast.Y
    p, K = X.shape[1], Y.shape[1] - 1
    prior = default_prior_sd(names) if a.prior == "default" else float(a.prior)
    model = CategoricalModel("logit", X, Y, prior_sd=prior)
    mode, cov = model.mode()
    c0 = time.process_time()
    res = whitened_hmc(model, a.draws, np.random.default_rng(7), chains=2, mode_cov=(mode, cov), max_doublings=0)
    cpu = time.process_time() - c0
    D = res.draws.reshape(-1, mode.size)
    lsd = np.sqrt(np.diag(cov))
    ratio, shift = D.std(0) / lsd, (D.mean(0) - mode) / lsd
    ess = ess_bulk(res.draws)
    binary = np.all((X == 0) | (X == 1), axis=0)
    ones = np.repeat((X * cond.fast.n_[:, None]).sum(0), K)
    in_cat = np.array([(Y[:, k + 1] * (X[:, i] != 0)).sum() if binary[i] else -1 for i in range(p) for k in range(K)])
    lab = [f"{names[i]}|c{k + 1}" for i in range(p) for k in range(K)]
    low = np.argsort(ess)[:15]
    out = {
        "column": a.column, "rows": a.rows, "prior": a.prior, "draws_per_chain": a.draws,
        "category_totals": Y.sum(0).astype(int).tolist(), "coefficients": int(mode.size),
        "step_size": res.info["step_size"], "n_leapfrog": res.info["n_leapfrog"],
        "gradient_evaluations": res.info["gradient_evaluations"], "cpu_s": cpu, "r_hat": res.r_hat,
        "min_ess_bulk": float(ess.min()), "n_sd_ratio_over_1_2": int((ratio > 1.2).sum()),
        "n_abs_mean_over_10": int((np.abs(D.mean(0)) > 10).sum()), "max_abs_mean": float(np.abs(D.mean(0)).max()),
        "lowest_ess": [{"coef": lab[j], "ess": float(ess[j]), "sd_ratio": float(ratio[j]), "shift": float(shift[j]),
                        "mode": float(mode[j]), "mean": float(D.mean(0)[j]), "records_with_dummy": float(ones[j]),
                        "of_them_in_category": float(in_cat[j])} for j in low],
    }
    print(f"prior {a.prior}: step {out['step_size']:.3f}, {out['n_leapfrog']} leapfrog steps, {out['gradient_evaluations']} "
          f"gradients, {cpu:.1f} CPU-s; min ESS {out['min_ess_bulk']:.0f} (2 x {a.draws}); sd > 1.2 Laplace: "
          f"{out['n_sd_ratio_over_1_2']}; |mean| > 10: {out['n_abs_mean_over_10']} (max {out['max_abs_mean']:.1f})")
    for r in out["lowest_ess"]:
        print(f"  {r['coef']:26s} ESS {r['ess']:6.1f} sd/Laplace {r['sd_ratio']:.2f} shift {r['shift']:6.2f} "
              f"mean {r['mean']:7.2f} records {r['records_with_dummy']:.0f} in category {r['of_them_in_category']:.0f}")
    _bench.write_json("prior_directions" + (f"_{a.tag}" if a.tag else ""), out)


if __name__ == "__main__":
    main()
