"""Gaussian-copula Gibbs path on NHANES (m x r = 20 copies) and MAR coverage of copula MI.

Part 1 (timing): RiskTargetedSynthesizer on NHANES 2017-2018 adults (5,265 rows,
real item non-response) with quasi-identifiers age, gender, race_ethnicity,
education, marital_status and Z = bmi, income_poverty_ratio, total_cholesterol,
diabetes, smoked_100_cigarettes: fit (2 chains of n_iter iterations, run in
parallel on the 2 cores) and sample m = 5 completed data sets x r = 4 synthetic
copies = 20 copies. Wall time is the median of repeats, peak memory
tracemalloc's peak (parent process). Targets: <= 2 min on 2 cores; max R-hat
<= 1.01 and min bulk ESS >= 400 over every latent correlation. The load
average is recorded (the machine is shared).

Part 2 (validity): copula MI under MAR (n = 100, y missing with probability
expit(-0.8 + 1.2 x1), ~35 %), m = 10 imputations, Rubin's rule; coverage of the
95 % intervals for E[y] and the slope of y on x1 over R replications (the test
in tests/models/test_copula.py runs the first 300 of these seeds).

Run: ``python benchmarks/copula.py [--reps 1100] [--repeats 2] [--quick]`` (``--reps 0`` skips part 2).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _bench import measure, write_json  # noqa: E402

from synthmi.data import load_nhanes  # noqa: E402
from synthmi.models import RiskTargetedSynthesizer  # noqa: E402

# the NHANES study's settings, defined once in the table script (timed here as run there)
from nhanes_table import K0, MASKS, QI, TOL, Z  # noqa: E402


def run_nhanes(n_iter: int, m: int = 5, r: int = 4, seed: int = 1):
    df = load_nhanes(recode=True)[QI + Z]
    extra = {"accept_diagnostics": True} if "accept_diagnostics" in RiskTargetedSynthesizer._param_names() else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = RiskTargetedSynthesizer(masks=MASKS, k0=K0, tolerance=TOL, r=r, n_iter=n_iter, thin=5, random_state=seed,
                                    chains=2, n_jobs=2, max_seconds=None, **extra)
        t0 = time.perf_counter()
        s.fit(df, quasi_identifiers=QI, keep=Z)
        t_fit = time.perf_counter() - t0
        syn = s.sample(m, random_state=seed + 1)
        t_sample = time.perf_counter() - t0 - t_fit
    return {
        "fit_seconds": t_fit,
        "sample_seconds": t_sample,
        "n_copies": syn.m,
        "structure": syn.structure,
        "diagnostics": {k: v for k, v in s.copula_.diagnostics_.items() if k != "table"},
        "diagnostics_table": s.copula_.diagnostics_["table"],
        "subgroup_counts": {k: int(v) for k, v in s.subgroup_counts_.items()},
        "warnings": sorted({str(w.message) for w in caught}),
    }


def run_coverage(reps: int):
    from test_copula import _coverage_rep

    t0 = time.perf_counter()
    cover = np.array([_coverage_rep(s) for s in range(reps)])
    wall = time.perf_counter() - t0
    rates = cover.mean(axis=0)
    first300 = cover[:300].mean(axis=0)
    return {
        "replications": reps,
        "coverage_mean_y": float(rates[0]),
        "coverage_slope": float(rates[1]),
        "mc_se": float(np.sqrt(0.95 * 0.05 / reps)),
        "coverage_first300_mean_y": float(first300[0]),
        "coverage_first300_slope": float(first300[1]),
        "wall_seconds": wall,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1100)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-iter", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="small run for a smoke test")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.repeats, a.n_iter = 20, 1, 200
    res = measure(lambda: run_nhanes(a.n_iter), repeats=a.repeats)
    nh = res.pop("result")
    print(
        f"NHANES m x r = {nh['n_copies']}: {res['wall_seconds_median']:.1f} s median wall "
        f"(fit {nh['fit_seconds']:.1f} s, sample {nh['sample_seconds']:.1f} s), "
        f"peak traced {res['peak_traced_mib']:.0f} MiB; diagnostics {nh['diagnostics']}; "
        f"subgroups {nh['subgroup_counts']}"
    )
    if a.reps == 0:
        cov = None
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cov = run_coverage(a.reps)
    if cov:
        print(
            f"MAR coverage over {cov['replications']} replications: E[y] {cov['coverage_mean_y']:.3f}, "
            f"slope {cov['coverage_slope']:.3f} (MC SE {cov['mc_se']:.3f}); first 300: "
            f"{cov['coverage_first300_mean_y']:.3f} / {cov['coverage_first300_slope']:.3f}; {cov['wall_seconds']:.0f} s"
        )
    import os

    write_json(
        "copula",
        {
            "nhanes": {**res, **nh, "n_iter": a.n_iter, "m": 5, "r": 4, "seeds": {"fit": 1, "sample": 2},
                       "masks": MASKS, "k0": K0, "tolerance": TOL},
            "coverage": cov,
            "target_seconds": 120,
            "loadavg_at_end": list(os.getloadavg()),
        },
    )


if __name__ == "__main__":
    main()
