"""Evaluation-core workload on Adult (48,842 rows) against bootstrap resamples.

Times (median of repeats) and peak memory of
* pMSE with the logit propensity model (main effects + two-way interactions),
* pMSE with CART and its 50-permutation null,
* ``analyse`` (probit of income on the quasi-identifiers) over M = 20 copies.
Targets (issue 2, 2 cores): logit <= 5 s, CART with null <= 60 s, analyse <= 10 s.

Run: ``.venv/bin/python benchmarks/evaluation.py [--repeats 3]``
"""
from __future__ import annotations

import argparse

import numpy as np

from _bench import measure, write_json
from synthmi.data import load_adult
from synthmi.evaluation import analyse, pmse

# The released quasi-identifiers with the outcome and three kept variables.
VARIABLES = ["age", "sex", "race", "education", "income", "hours_per_week", "marital_status", "relationship"]
FORMULA = "income ~ age + sex + race + education"
SEED = 20261123


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    adult = load_adult(recode=True)
    rng = np.random.default_rng(SEED)
    copies = [adult.iloc[rng.integers(0, len(adult), len(adult))].reset_index(drop=True) for _ in range(20)]

    logit = measure(lambda: pmse(adult, copies[0], method="logit", variables=VARIABLES), args.repeats)
    cart = measure(
        lambda: pmse(adult, copies[0], method="cart", variables=VARIABLES, n_perm=50, random_state=SEED),
        max(1, args.repeats - 1),
    )
    ana = measure(lambda: analyse(FORMULA, "probit", original=adult, synthetic=copies, rule="partial"), args.repeats)

    rows = {
        "pmse_logit": {
            "wall_seconds_median": logit["wall_seconds_median"],
            "wall_seconds_all": logit["wall_seconds_all"],
            "peak_traced_mib": logit["peak_traced_mib"],
            "target_seconds": 5,
            "s_pmse": float(logit["result"].s_pmse[0]),
            "k": int(logit["result"].k[0]),
        },
        "pmse_cart_50_permutations": {
            "wall_seconds_median": cart["wall_seconds_median"],
            "wall_seconds_all": cart["wall_seconds_all"],
            "peak_traced_mib": cart["peak_traced_mib"],
            "target_seconds": 60,
            "s_pmse": float(cart["result"].s_pmse[0]),
        },
        "analyse_probit_M20": {
            "wall_seconds_median": ana["wall_seconds_median"],
            "wall_seconds_all": ana["wall_seconds_all"],
            "peak_traced_mib": ana["peak_traced_mib"],
            "target_seconds": 10,
            "mean_ci_overlap": ana["result"].mean_ci_overlap,
            "mean_std_diff": ana["result"].mean_std_diff,
        },
    }
    for name, r in rows.items():
        extra = {k: v for k, v in r.items() if k not in ("wall_seconds_all",)}
        print(f"{name:28s} " + "  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in extra.items()))
    write_json(
        "evaluation",
        {
            "data": "adult (48,842 rows) vs bootstrap resamples",
            "variables": VARIABLES,
            "formula": FORMULA,
            "seed": SEED,
            "repeats": args.repeats,
            "max_rss_mib": ana["max_rss_mib"],
            "workloads": rows,
        },
    )


if __name__ == "__main__":
    main()
