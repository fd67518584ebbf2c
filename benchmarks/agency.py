"""DA-MI on the agency file (Adult + NHANES, 40,000 rows, 51-level state kept): convergence and wall time.

The file (:func:`synthmi.data.agency.make_agency_data`) has skip-pattern
missing values in kept and synthesized columns, a zero-heavy income, a survey
weight and a 51-level geography. DA-MI (fast sampler) synthesizes age, sex,
race, hours and income with state, education, marital status, employment,
occupation, BMI and smoking kept (the weight released, not a predictor),
M = 5 copies. Target (issue 17): max R-hat <= 1.01, wall <= 2 min on 2 cores.
The columns' posteriors are independent given the data, so ``--n-jobs 2``
(the default here) samples two columns at a time in two processes
(:mod:`synthmi.models.column_posterior`; the draws do not depend on it).
Wall seconds are the median of ``--repeats`` runs of fit + sample; the load
average before and after each run is recorded (the machine is shared).

With ``--compare-samplers`` it also compares the two exact samplers of a categorical conditional (race given
everything before it: 5 categories, about 300 coefficients) by bulk ESS per
second: independence MH (the previous fast path) and whitened HMC.

Run: ``.venv/bin/python benchmarks/agency.py [--n 40000] [--m 5] [--n-jobs 2] [--repeats 3]``
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy as np

from _bench import measure, write_json
from synthmi.data.agency import AGENCY_KEEP, AGENCY_QI, AGENCY_RULES, make_agency_data
from synthmi.models.dami import DAMISynthesizer
from synthmi.models.glm import importance_ess_fraction, independence_mh, whitened_hmc

SEED = 20261123


def run_dami(df, m, n_jobs):
    syn = DAMISynthesizer(
        masks={"age": {"K": 2, "sigma_e": 3.0}}, transforms={"income": "log", "hours_per_week": "rank"},
        random_state=SEED, progressbar=False, n_jobs=n_jobs,
    )
    t0 = time.perf_counter()
    syn.fit(df, AGENCY_QI, keep=AGENCY_KEEP, weights="weight", semicont={"income": [0]}, rules=AGENCY_RULES)
    t_fit = time.perf_counter() - t0
    out = syn.sample(m, random_state=SEED)
    return syn, out, t_fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=40_000)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--compare-samplers", action="store_true")
    args = ap.parse_args()
    df = make_agency_data(args.n, seed=1)[AGENCY_QI + AGENCY_KEEP]
    walls, cpus, loads, fits = [], [], [], []
    for _ in range(args.repeats):
        load0 = os.getloadavg()
        c0 = time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        res = measure(lambda: run_dami(df, args.m, args.n_jobs), repeats=1)
        # CPU seconds of this process and its worker processes
        cpus.append(time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - c0)
        walls.append(res["wall_seconds_median"])
        loads.append({"before": load0, "after": os.getloadavg()})
        fits.append(res["result"][2])
        print(f"  run {len(walls)}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} CPU-s, load {load0[0]:.1f} -> {loads[-1]['after'][0]:.1f}")
    syn, out, t_fit = res["result"]
    diag = out.diagnostics
    cols = {c: {k: v for k, v in d.items() if k not in ("mode", "cov")} for c, d in diag["columns"].items()}
    copy = out.copies[0]
    quality = {
        "missing_rate_original": df[AGENCY_QI].isna().mean().to_dict(),
        "missing_rate_copies": {c: float(np.mean([x[c].isna().mean() for x in out.copies])) for c in AGENCY_QI},
        "zero_share_income_original": float((df["income"] == 0).mean()),
        "zero_share_income_copies": float(np.mean([(x["income"] == 0).mean() for x in out.copies])),
        "negative_income_copies": int(sum((x["income"] < 0).sum() for x in out.copies)),
        "race_counts_original": df["race"].value_counts().to_dict(),
        "race_counts_copy1": copy["race"].value_counts().to_dict(),
        "rule_violations": int(sum(x.loc[x["employed"] == "No", "hours_per_week"].notna().sum() for x in out.copies)),
    }
    payload = {
        "n": args.n, "m": args.m, "seed": SEED,
        "n_jobs": args.n_jobs, "repeats": args.repeats,
        "wall_seconds_fit_and_sample": statistics.median(walls), "wall_seconds_all": walls,
        "wall_seconds_fit": statistics.median(fits),
        "cpu_seconds_fit_and_sample": statistics.median(cpus), "cpu_seconds_all": cpus,
        "loadavg_per_run": loads,
        "peak_traced_mib": res["peak_traced_mib"], "max_rss_mib": res["max_rss_mib"],
        "max_r_hat": diag["max_r_hat"], "min_ess_bulk": diag["min_ess_bulk"],
        "target": {"max_r_hat": 1.01, "wall_seconds": 120},
        "columns": cols, "quality": quality,
    }
    print(f"DA-MI n={args.n} M={args.m} n_jobs={args.n_jobs}: median {statistics.median(walls):.1f} s "
          f"(fit {statistics.median(fits):.1f} s), "
          f"max R-hat {diag['max_r_hat']:.4f}, min ESS {diag['min_ess_bulk']:.0f}")
    for c, d in cols.items():
        print(f"  {c}: {d.get('method')} r_hat={d.get('r_hat')} ess={d.get('ess_bulk')}")

    write_json(f"agency_dami_n{args.n}", payload)
    if args.compare_samplers:
        compare_samplers(syn, args.n)


def compare_samplers(syn, n) -> None:
    """Bulk ESS per second of the exact samplers on the race conditional (5 categories, ~300 coefficients)."""
    payload = {"n": n, "seed": SEED}
    cond = next(c for c in syn.conditionals_ if c.column == "race")
    model = cond.fast
    rng = np.random.default_rng(SEED)
    t0 = time.perf_counter()
    mc = model.mode()
    t_mode = time.perf_counter() - t0
    frac = importance_ess_fraction(model, mc, rng)
    t0 = time.perf_counter()
    imh = independence_mh(model, 1000, rng, chains=2, warn=False, max_doublings=0, mode_cov=mc)
    t_imh = time.perf_counter() - t0
    t0 = time.perf_counter()
    hmc = whitened_hmc(model, 400, rng, chains=2, max_doublings=0, mode_cov=mc)
    t_hmc = time.perf_counter() - t0
    payload["sampler_comparison_race"] = {
        "dim": model.dim, "groups": model.G, "mode_seconds": t_mode, "importance_ess_fraction": frac,
        "imh": {"seconds": t_imh, "draws_per_chain": 1000, "acceptance": imh.acceptance, "r_hat": imh.r_hat,
                "ess_bulk": imh.ess_bulk, "ess_per_second": imh.ess_bulk / t_imh},
        "hmc": {"seconds": t_hmc, "draws_per_chain": 400, "acceptance": hmc.acceptance, "r_hat": hmc.r_hat,
                "ess_bulk": hmc.ess_bulk, "ess_per_second": hmc.ess_bulk / t_hmc,
                "step_size": hmc.info["step_size"], "n_leapfrog": hmc.info["n_leapfrog"]},
    }
    print(f"race conditional ({model.dim} coefficients): IMH ESS/s {imh.ess_bulk / t_imh:.2f} "
          f"(acc {imh.acceptance:.3f}, R-hat {imh.r_hat:.2f}); HMC ESS/s {hmc.ess_bulk / t_hmc:.2f} "
          f"(acc {hmc.acceptance:.2f}, R-hat {hmc.r_hat:.3f})")
    write_json(f"agency_sampler_comparison_n{n}", payload)


if __name__ == "__main__":
    main()
