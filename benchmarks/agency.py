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
Hours' skip rule (missing when not employed) is structural: hours' models are
fitted on the employed rows only, where its missingness indicator has a single
level and needs no model (:mod:`synthmi.models.base`).
Wall seconds are the median of ``--repeats`` runs of fit + sample; the load
average before and after each run is recorded (the machine is shared).

With ``--separation`` it instead writes, per logit conditional, the empty cells
of its response by each kept categorical predictor (a level of a predictor
with no record in a category: quasi-separation, the likelihood one-sided along
that coefficient), the coefficients whose Laplace mode exceeds 5 in absolute
value or whose Laplace sd exceeds 3 (prior-dominated directions), and the
importance ESS fraction of the independence proposal, under N(0, 10^2) on
every coefficient (``prior_sd=10``, the default before issue 29 item 6) and under N(0, 2.5^2) (the scale of Gelman, Jakulin, Pittau
& Su 2008, Ann. Appl. Stat. 2:1360-1383) for comparison.

With ``--compare-samplers`` it instead compares the exact samplers of every
logit conditional by bulk ESS per CPU second: independence MH, whitened HMC
and Polya-Gamma Gibbs (needs ``pip install polyagamma``, the ``bench`` extra).

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
    t0, c0 = time.perf_counter(), time.process_time()
    syn.fit(df, AGENCY_QI, keep=AGENCY_KEEP, weights="weight", semicont={"income": [0]}, rules=AGENCY_RULES)
    t_fit, c_fit = time.perf_counter() - t0, time.process_time() - c0
    out = syn.sample(m, random_state=SEED)
    return syn, out, t_fit, c_fit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=40_000)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--compare-samplers", action="store_true")
    ap.add_argument("--separation", action="store_true")
    args = ap.parse_args()
    df = make_agency_data(args.n, seed=1)[AGENCY_QI + AGENCY_KEEP]
    if args.separation:
        separation(df, args.n)
        return
    if args.compare_samplers:
        syn = DAMISynthesizer(masks={"age": {"K": 2, "sigma_e": 3.0}},
                              transforms={"income": "log", "hours_per_week": "rank"}, random_state=SEED)
        syn.fit(df, AGENCY_QI, keep=AGENCY_KEEP, weights="weight", semicont={"income": [0]}, rules=AGENCY_RULES)
        compare_samplers(syn, args.n)
        return
    walls, cpus, loads, fits, fit_cpus = [], [], [], [], []
    for _ in range(args.repeats):
        load0 = os.getloadavg()
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        c0 = time.process_time() + ch.ru_utime + ch.ru_stime
        res = measure(lambda: run_dami(df, args.m, args.n_jobs), repeats=1)
        # CPU seconds (user + system) of this process and its worker processes
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(time.process_time() + ch.ru_utime + ch.ru_stime - c0)
        walls.append(res["wall_seconds_median"])
        loads.append({"before": load0, "after": os.getloadavg()})
        fits.append(res["result"][2])
        fit_cpus.append(res["result"][3])
        print(f"  run {len(walls)}: {walls[-1]:.1f} s wall, {cpus[-1]:.1f} CPU-s, load {load0[0]:.1f} -> {loads[-1]['after'][0]:.1f}",
              flush=True)
    syn, out, t_fit, _ = res["result"]
    diag = out.diagnostics
    col_cpu = dict(syn.posterior_cpu_seconds_)
    heavy = sorted((v for c, v in col_cpu.items() if v and cols_is_mcmc(diag, c)), reverse=True)
    loads_w = [0.0] * max(args.n_jobs, 1)
    for v in heavy:  # longest processing time first
        loads_w[loads_w.index(min(loads_w))] += v
    # the last run, whose per-column figures these are: the fit, the MCMC columns (longest first
    # on n_jobs workers) and the rest (copies' predictive draws, closed-form columns), all serial
    rest_cpu = cpus[-1] - fit_cpus[-1] - sum(heavy)
    est_wall = {"fit_cpu_seconds": fit_cpus[-1], "worker_cpu_seconds": loads_w,
                "predictive_and_other_cpu_seconds": rest_cpu,
                "estimate": fit_cpus[-1] + (max(loads_w) if args.n_jobs > 1 else sum(heavy)) + rest_cpu}
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
        # the largest worker process (posterior columns)
        "max_rss_worker_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "max_r_hat": diag["max_r_hat"], "min_ess_bulk": diag["min_ess_bulk"],
        "target": {"max_r_hat": 1.01, "wall_seconds": 120},
        "columns": cols, "quality": quality, "predictive_scheme": out.structure.get("predictive_scheme"),
        # CPU seconds of each column's posterior sampling (in its worker) and the longest-first
        # schedule of those on n_jobs idle cores plus the parent's own CPU: what the wall time
        # would be on an otherwise idle machine (the shared machine's wall is inflated by load)
        "posterior_cpu_seconds_per_column": col_cpu,
        "estimated_idle_wall_seconds": est_wall,
    }
    print(f"DA-MI n={args.n} M={args.m} n_jobs={args.n_jobs}: median {statistics.median(walls):.1f} s "
          f"(fit {statistics.median(fits):.1f} s), "
          f"max R-hat {diag['max_r_hat']:.4f}, min ESS {diag['min_ess_bulk']:.0f}; "
          f"estimated wall on {args.n_jobs} idle cores {est_wall['estimate']:.1f} s")
    for c, d in cols.items():
        print(f"  {c}: {d.get('method')} r_hat={d.get('r_hat')} ess={d.get('ess_bulk')}")

    write_json(f"agency_dami_n{args.n}", payload)


def cols_is_mcmc(diag, c) -> bool:
    """True for the columns whose posterior is sampled by MCMC (these go to worker processes)."""
    return "r_hat" in diag["columns"].get(c, {})


def separation(df, n) -> None:
    """Empty response-by-predictor cells and prior-dominated coefficients of each logit conditional."""
    import pandas as pd

    payload = {"n": n, "seed": SEED, "prior_sd": {}, "empty_cells": {}}
    for psd in (10.0, 2.5):
        syn = DAMISynthesizer(masks={"age": {"K": 2, "sigma_e": 3.0}},
                              transforms={"income": "log", "hours_per_week": "rank"}, random_state=SEED,
                              progressbar=False, prior_sd=psd)
        syn.fit(df, AGENCY_QI, keep=AGENCY_KEEP, weights="weight", semicont={"income": [0]}, rules=AGENCY_RULES)
        rows = {}
        for cond in syn.conditionals_:
            model = cond.fast
            if cond.family != "logit":
                continue
            mode, cov = model.mode()
            sd = np.sqrt(np.diag(cov))
            K = model.C - 1
            flagged = [{"coef": cond.coef_names[i], "category": k, "mode": float(mode[i * K + k]),
                        "sd": float(sd[i * K + k])}
                       for i in range(model.p) for k in range(K)
                       if abs(mode[i * K + k]) > 5 or sd[i * K + k] > 3]
            frac = importance_ess_fraction(model, (mode, cov), np.random.default_rng(SEED))
            rows[cond.column] = {"coefficients": model.dim, "importance_ess_fraction": frac,
                                 "prior_dominated": len(flagged), "examples": flagged[:8]}
            print(f"prior sd {psd}: {cond.column}: {model.dim} coefficients, importance ESS fraction {frac:.3f}, "
                  f"{len(flagged)} with |mode| > 5 or sd > 3", flush=True)
            if psd == 10.0 and cond.column in df.columns:
                y = df[cond.column].astype(str)
                payload["empty_cells"][cond.column] = {
                    z: int((pd.crosstab(df[z].astype(str), y) == 0).sum().sum())
                    for z in AGENCY_KEEP if isinstance(df[z].dtype, pd.CategoricalDtype)}
        payload["prior_sd"][str(psd)] = rows
    print("empty cells:", payload["empty_cells"])
    write_json(f"agency_separation_n{n}", payload)


def polya_gamma_gibbs(model, n_iter, rng, start):
    r"""Polya-Gamma Gibbs sampler of a (multinomial) logit posterior (the alternative measured here).

    Polson, Scott & Windle (2013, JASA 108:1339-1349), Theorem 1 and Section 3.3:
    with :math:`\omega_g \mid \beta \sim PG(n_g, \psi_g)` the conditional of the
    coefficients of category k is normal,

    .. math:: \beta_k \mid \omega, \beta_{-k} \sim N(V(X^\top(\kappa_k + \Omega C_k)), V),
        \quad V = (X^\top \Omega X + I/s^2)^{-1},

    where :math:`\psi_g = x_g^\top\beta_k - C_{gk}`,
    :math:`C_{gk} = \log\sum_{j \ne k} e^{x_g^\top \beta_j}` (the reference
    category has :math:`\beta_0 = 0`) and :math:`\kappa_{gk} = Y_{gk} - n_g/2`
    (Holmes & Held 2006 for the multinomial case). Exact, no tuning, but each
    sweep needs K products :math:`X^\top \Omega X` and the chain is slow where
    :math:`\omega` is small (rare categories, separation: Johndrow et al. 2019).
    """
    from polyagamma import random_polyagamma
    from scipy import linalg

    p, K, s2, n = model.p, model.C - 1, model.prior_sd**2, model.n_
    out = np.empty((start.shape[0], n_iter, p * K))
    for c in range(start.shape[0]):
        B = start[c].reshape(p, K).copy()
        eta_all = np.column_stack([np.zeros(model.G), model.xmul(B)])
        for t in range(n_iter):
            for k in range(K):
                others = np.delete(eta_all, k + 1, axis=1)
                mx = others.max(axis=1)
                ck = mx + np.log(np.exp(others - mx[:, None]).sum(axis=1))
                w = random_polyagamma(n, eta_all[:, k + 1] - ck, random_state=rng)
                L = linalg.cholesky(model.xtwx(w) + np.eye(p) / s2, lower=True)
                mean = linalg.cho_solve((L, True), model.xtmul(model.Y[:, k + 1] - n / 2 + w * ck))
                B[:, k] = mean + linalg.solve_triangular(L.T, rng.standard_normal(p), lower=False)
                eta_all[:, k + 1] = model.xmul(B[:, k])
            out[c, t] = B.reshape(-1)
    return out


def compare_samplers(syn, n) -> None:
    """Bulk ESS per CPU second of the exact samplers on every logit conditional of the agency file.

    Independence MH (1,000 draws per chain), HMC whitened by the Laplace fit
    (300 draws per chain after its 100 warm-up iterations) and Polya-Gamma Gibbs
    (300 sweeps per chain, the first 50 dropped), 2 chains each started from
    the same over-dispersed Laplace draws. CPU seconds (process time), not wall:
    the machine is shared.
    """
    from scipy import linalg

    from synthmi.diagnostics import summarize_draws

    payload = {"n": n, "seed": SEED, "columns": {}}
    for cond in syn.conditionals_:
        model = cond.fast
        if cond.family != "logit" or not hasattr(model, "xmul"):
            continue
        rng = np.random.default_rng(SEED)
        c0 = time.process_time()
        mc = model.mode()
        t_mode = time.process_time() - c0
        frac = importance_ess_fraction(model, mc, rng)
        row = {"dim": model.dim, "groups": model.G, "categories": model.C, "mode_cpu_seconds": t_mode,
               "importance_ess_fraction": frac}
        c0 = time.process_time()
        imh = independence_mh(model, 1000, rng, chains=2, warn=False, max_doublings=0, mode_cov=mc)
        t = time.process_time() - c0
        row["imh"] = {"cpu_seconds": t, "draws_per_chain": 1000, "acceptance": imh.acceptance, "r_hat": imh.r_hat,
                      "ess_bulk": imh.ess_bulk, "ess_per_cpu_second": imh.ess_bulk / t}
        c0 = time.process_time()
        hmc = whitened_hmc(model, 300, rng, chains=2, max_doublings=0, mode_cov=mc)
        t = time.process_time() - c0
        row["hmc"] = {"cpu_seconds": t, "draws_per_chain": 300, "acceptance": hmc.acceptance, "r_hat": hmc.r_hat,
                      "ess_bulk": hmc.ess_bulk, "ess_per_cpu_second": hmc.ess_bulk / t,
                      "step_size": hmc.info["step_size"], "n_leapfrog": hmc.info["n_leapfrog"]}
        start = mc[0][None] + (rng.standard_normal((2, model.dim)) * 1.5) @ linalg.cholesky(mc[1], lower=True).T
        c0 = time.process_time()
        pg = polya_gamma_gibbs(model, 300, rng, start)
        t = time.process_time() - c0
        r_hat, ess = summarize_draws(pg[:, 50:])
        row["polya_gamma_gibbs"] = {"cpu_seconds": t, "sweeps_per_chain": 300, "kept_per_chain": 250,
                                    "r_hat": r_hat, "ess_bulk": ess, "ess_per_cpu_second": ess / t}
        payload["columns"][cond.column] = row
        print(f"{cond.column} ({model.dim} coefficients, {model.C} categories): ESS per CPU-s "
              f"IMH {row['imh']['ess_per_cpu_second']:.2f} (acc {imh.acceptance:.3f}, R-hat {imh.r_hat:.2f}); "
              f"HMC {row['hmc']['ess_per_cpu_second']:.2f} (R-hat {hmc.r_hat:.3f}); "
              f"PG Gibbs {row['polya_gamma_gibbs']['ess_per_cpu_second']:.2f} (R-hat {r_hat:.3f})", flush=True)
    write_json(f"agency_sampler_comparison_n{n}", payload)


if __name__ == "__main__":
    main()
