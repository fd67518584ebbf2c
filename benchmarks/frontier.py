"""Risk-utility frontier on Adult and NHANES: DA-MI, risk-targeted DA-MI, CART, norm+logit.

For every method and tuning setting, R replicate syntheses of M copies each
(common seeds across settings) are measured with
:func:`synthmi.evaluation.frontier.evaluate_release`: utility (mean CI overlap
of the declared analyses, logit S_pMSE of the first copy, and since issue 29 the battery of
:mod:`synthmi.evaluation.battery`: mean overlap over declared and generic analyses, worst one-
and two-way table S_pMSE) and risk (expected
correct matches, true-match rate, share of I_i > 0.5, mean I_i in the high
risk subgroup, DiSCO and the matching attribute risk of a sensitive target).
The original released as is and an independent release (each QI permuted on
its own) are the reference points.

Data and settings
-----------------
Adult: all 48,842 records; QIs age, sex, race (white / non-white), education
(<HS / HS / >HS); kept income, marital_status, relationship, hours_per_week,
capital_gain, capital_loss (as ``benchmarks/adult_table.py``); analysis probit
income ~ age + sex + race + education; intruder tolerance age within 1 year;
attribute target income; risk subgroups k0 = 5, age within 1.

NHANES 2017-18 adults, complete cases of the used columns (4,233 of 5,265
records; DA-MI, CART and norm+logit need complete data, and one original makes
every method's utility comparable); QIs age, gender, race_ethnicity,
education; kept bmi, income_poverty_ratio, total_cholesterol, diabetes,
smoked_100_cigarettes; analyses probit of diabetes and of smoking on age,
gender, race, education and bmi (as ``benchmarks/nhanes_table.py``); age
within 1 year; target diabetes; subgroups k0 = 100, age within 5
(nhanes_table's).

Adult's run is smaller than NHANES's: a random 10,000-record subsample
(``--rows 10000``), M = 3, age (K, sigma_e) = (3, 3) or (1, 10) x alpha 0
(categorical QIs unmasked) / 1 / 3 / 5, one ordered-logit DA-MI setting, leaf
sizes 5 / 20 / 100 (5 also smoothed), norm+logit with multinomial education, one
risk-DA-MI setting (copula 200 iterations), 2 replicates. The machine was shared
by about eight jobs on two cores (load 12-18): the full 48,842 records took 10
minutes per setting. ``benchmarks/tune_adult.py`` uses all records.

Grids: DA-MI age (K, sigma_e) x one alpha shared by the categorical QIs;
risk-DA-MI per-subgroup masks (high-risk records masked more weakly, i.e.
more protection); CART minimum leaf size x synthpop's density smoothing of
age; norm+logit with the ordered logit (synthpop's polr) and with a
multinomial model for education.

All 48,842 Adult records (``--methods dami,cart,norm+logit --m 5 --replicates 3 --out-name
frontier_adult_full``; ``frontier_adult_full.csv``/``.json``/``.png``): the same grid with DA-MI's
joint predictive (the default), M = 5, 3 replicates, seed 2026, run niced beside other jobs (load
12-20; wall time in the JSON). Risk-DA-MI is not in it: its copula (200 iterations) failed the
release check on all of Adult (R-hat up to 1.51, bulk ESS 4-23 for every column), and copies of an
unconverged sampler are refused, so it stays on the 10,000-record frontier only.

DA-MI predictive: the rows labelled "dami (sequential)" were computed before the joint
predictive of Jiang et al. (2022, eq. 3) landed in ``synthmi.models.dami`` (each masked QI
drawn given its own W and the earlier synthetic QIs); "dami (joint predictive)" rows were
added afterwards with ``--append-label`` (same data, seeds and grid; DA-MI's default since).

Run: ``python benchmarks/frontier.py [--data adult,nhanes] [--m 5] [--replicates 3]``;
writes ``benchmarks/results/frontier_<data>.csv`` (mean and MC SE per setting,
references last), ``frontier_<data>_replicates.csv`` and ``frontier_<data>.json``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import RESULTS, write_json  # noqa: E402

from synthmi.workflow.tuning import Setting, frontier  # noqa: E402

AGE_GRID = {"nhanes": ((3, 3.0), (1, 5.0), (1, 10.0)), "adult": ((3, 3.0), (1, 10.0))}
ALPHAS = {"nhanes": (1.0, 2.0, 3.0, 4.0, 5.0), "adult": (0.0, 1.0, 3.0, 5.0)}
LEAVES = {"nhanes": (5, 20, 100, 500), "adult": (5, 20, 100)}
SMOOTHED_LEAVES = {"nhanes": (5, 20, 100, 500), "adult": (5,)}

DATA = {
    "adult": dict(
        qi=["age", "sex", "race", "education"],
        keep=["income", "marital_status", "relationship", "hours_per_week", "capital_gain", "capital_loss"],
        analyses=[("income ~ age + sex + race + education", "probit")],
        tolerance={"age": 1.0}, target="income", k0=5, subgroup_tolerance={"age": 1.0},
        # copula columns for risk-DA-MI: the nominal marital_status/relationship blocks mix too slowly
        copula_keep=["income", "hours_per_week", "capital_gain", "capital_loss"],
    ),
    "nhanes": dict(
        qi=["age", "gender", "race_ethnicity", "education"],
        keep=["bmi", "income_poverty_ratio", "total_cholesterol", "diabetes", "smoked_100_cigarettes"],
        analyses=[("diabetes ~ age + gender + race_ethnicity + education + bmi", "probit"),
                  ("smoked_100_cigarettes ~ age + gender + race_ethnicity + education + bmi", "probit")],
        tolerance={"age": 1.0}, target="diabetes", k0=100, subgroup_tolerance={"age": 5.0},
        copula_keep=None,
    ),
}


def pmse_vars(cfg) -> list[str]:
    """S_pMSE on the QIs and the analyses' variables (as the report does): the other kept
    columns are released unchanged, and the full propensity model costs ~10x more on Adult."""
    from synthmi.workflow.evaluate import formula_variables

    cols = cfg["qi"] + cfg["keep"]
    used = {v for f, _ in cfg["analyses"] for v in formula_variables(f, cols)}
    return [c for c in cols if c in set(cfg["qi"]) | used]


def load(name: str, rows: int | None = None, seed: int = 0) -> pd.DataFrame:
    from synthmi.data import load_adult, load_nhanes
    from synthmi.data.workloads import sample_rows

    cfg = DATA[name]
    if name == "adult":
        df = load_adult(recode=True)[cfg["qi"] + cfg["keep"]]
    else:
        # complete cases of the used columns (module docstring)
        df = load_nhanes(recode=True)[cfg["qi"] + cfg["keep"]].dropna().reset_index(drop=True)
    return sample_rows(df, rows, seed)


def settings(name: str, methods: list[str], n_iter: int) -> list[Setting]:
    cfg = DATA[name]
    cont, cats = cfg["qi"][0], cfg["qi"][1:]
    out: list[Setting] = []
    if "dami" in methods:
        # education is ordinal; on Adult the proportional-odds (ordered logit, synthpop's polr)
        # association model misfits it (adult_table: norm+logit 0.72 ordered vs 0.98 multinomial
        # with DA-MI), so DA-MI's main grid uses a multinomial model for it, and a few ordered-logit
        # settings are kept as evidence of what the misspecification costs.
        for K, s in AGE_GRID[name]:
            for a in ALPHAS[name]:
                out.append(Setting("dami", f"age K={K} sigma={s:g}; alpha={a:g}",
                                   {"masks": {cont: {"K": K, "sigma_e": s},
                                              **{c: {"alpha": a} for c in cats if a > 0}},
                                    "ordinal_link": "multinomial"}))
        for a in ((1.0, 3.0, 5.0) if name == "nhanes" else (3.0,)):
            out.append(Setting("dami (ordered logit)", f"age K=1 sigma=5; alpha={a:g}; ordered logit",
                               {"masks": {cont: {"K": 1, "sigma_e": 5.0}, **{c: {"alpha": a} for c in cats}}}))
    if "risk-dami" in methods:
        # low / medium / high risk records: the high-risk ones get the weakest masks (most protection)
        for a_low, a_mid, a_high in ((5, 3, 1), (4, 2, 1), (3, 2, 0.5), (2, 1, 0.5))[: 4 if name == "nhanes" else 1]:
            masks = {
                "low": {cont: {"K": 3, "sigma_e": 3.0}, **{c: {"alpha": float(a_low)} for c in cats}},
                "medium": {cont: {"K": 1, "sigma_e": 5.0}, **{c: {"alpha": float(a_mid)} for c in cats}},
                "high": {cont: {"K": 1, "sigma_e": 10.0}, **{c: {"alpha": float(a_high)} for c in cats}},
            }
            out.append(Setting("risk-dami", f"alpha low/med/high={a_low}/{a_mid}/{a_high}",
                               {"masks": masks, "k0": cfg["k0"], "tolerance": cfg["subgroup_tolerance"],
                                "n_iter": n_iter, "random_state": 1, "max_seconds": None}))
    if "cart" in methods:
        for leaf in LEAVES[name]:
            for sm in (None, "density") if leaf in SMOOTHED_LEAVES[name] else (None,):
                out.append(Setting("cart", f"min leaf {leaf}" + ("; smoothed" if sm else ""),
                                   {"min_samples_leaf": leaf, "smoothing": sm}))
    if "norm+logit" in methods:
        if name == "nhanes":
            out.append(Setting("norm+logit", "ordered logit education", {}))
        out.append(Setting("norm+logit", "multinomial education", {"ordinal_link": "multinomial"}))
    return out


def run_append(name: str, label: str, m: int, replicates: int, seed: int, rows: int | None) -> None:
    """Add DA-MI settings under a new method label (e.g. after a change of the DA-MI code) to an
    existing frontier CSV, keeping the other rows; same data, seeds and measures."""
    cfg = DATA[name]
    df = load(name, rows, seed)
    sets = [Setting(label, st.label, st.params) for st in settings(name, ["dami"], 0) if st.method == "dami"]
    fr = frontier(df, cfg["qi"], cfg["keep"], sets, cfg["analyses"], m=m, replicates=replicates, seed=seed,
                  tolerance=cfg["tolerance"], target=cfg["target"], k0=cfg["k0"],
                  subgroup_tolerance=cfg["subgroup_tolerance"], pmse_copies=1, pmse_variables=pmse_vars(cfg),
                  references=False, progress=True)
    path = RESULTS / f"frontier_{name}.csv"
    old = pd.read_csv(path)
    old = old[old["method"] != label]
    ref = old[old["method"] == "reference"]
    out = pd.concat([old[old["method"] != "reference"], fr.points, ref], ignore_index=True)
    out.to_csv(path, index=False, float_format="%.6g")
    rp = RESULTS / f"frontier_{name}_replicates.csv"
    reps = pd.read_csv(rp)
    pd.concat([reps[reps["method"] != label], fr.replicates], ignore_index=True).to_csv(rp, index=False,
                                                                                        float_format="%.6g")
    print(fr.points[["method", "setting", "mean_ci_overlap", "expected_matches", "true_match_rate"]].to_string())


def run(name: str, methods: list[str], m: int, replicates: int, n_iter: int, seed: int,
        rows: int | None = None, out_name: str | None = None) -> None:
    cfg = DATA[name]
    stem = out_name or f"frontier_{name}"
    df = load(name, rows, seed)
    t0 = time.perf_counter()
    sets = settings(name, methods, n_iter)
    main = [s for s in sets if s.method != "risk-dami"]
    fr = frontier(df, cfg["qi"], cfg["keep"], main, cfg["analyses"], m=m, replicates=replicates, seed=seed,
                  tolerance=cfg["tolerance"], target=cfg["target"], k0=cfg["k0"],
                  subgroup_tolerance=cfg["subgroup_tolerance"], pmse_copies=1, pmse_variables=pmse_vars(cfg),
                  progress=True)
    reps, points = [fr.replicates], [fr.points]
    RESULTS.mkdir(parents=True, exist_ok=True)
    # written now too, so a failure in the (long) risk-DA-MI part keeps the other methods' results
    pd.concat(points + [fr.references], ignore_index=True).to_csv(RESULTS / f"{stem}.csv", index=False,
                                                                  float_format="%.6g")
    rd = [s for s in sets if s.method == "risk-dami"]
    if rd:
        # a subgroup without records cannot take masks (RiskTargetedSynthesizer refuses them)
        from synthmi.evaluation.subgroups import risk_subgroups

        counts = risk_subgroups(df, cfg["qi"], cfg["k0"], cfg["subgroup_tolerance"]).counts
        for st in rd:
            st.params["masks"] = {g: (m if counts[g] > 0 else {}) for g, m in st.params["masks"].items()}
    if rd:
        keep = cfg["copula_keep"] or cfg["keep"]
        # risk-DA-MI's copula uses only these kept columns; the other kept columns are
        # released unchanged all the same, so utility and risk are measured on the full frame.
        fr2 = frontier(df, cfg["qi"], keep, rd, cfg["analyses"], m=m, replicates=replicates, seed=seed,
                       tolerance=cfg["tolerance"], target=cfg["target"], k0=cfg["k0"],
                       subgroup_tolerance=cfg["subgroup_tolerance"], pmse_copies=1, pmse_variables=pmse_vars(cfg),
                       references=False,
                       progress=True) if set(keep) == set(cfg["keep"]) else _risk_dami_on_subset(df, cfg, rd, m, replicates, seed)
        reps.append(fr2.replicates)
        points.append(fr2.points)
    wall = time.perf_counter() - t0
    points_df = pd.concat(points + [fr.references], ignore_index=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    points_df.to_csv(RESULTS / f"{stem}.csv", index=False, float_format="%.6g")
    pd.concat(reps, ignore_index=True).to_csv(RESULTS / f"{stem}_replicates.csv", index=False,
                                              float_format="%.6g")
    show = ["method", "setting", "mean_ci_overlap", "mean_ci_overlap_se", "s_pmse", "expected_matches",
            "expected_matches_se", "true_match_rate", "disco"]
    pd.set_option("display.width", 250)
    print(points_df[show].round(4).to_string(index=False))
    write_json(stem, {"data": name, "n": int(len(df)), "rows_option": rows, "config": {k: v for k, v in cfg.items()},
                                    "m": m, "replicates": replicates, "seed": seed, "n_iter_copula": n_iter,
                                    "settings": fr.settings, "wall_seconds": wall,
                                    "points_csv": f"{stem}.csv",
                                    "loadavg_end": list(os.getloadavg())})


def _risk_dami_on_subset(df, cfg, rd, m, replicates, seed):
    """Fit risk-DA-MI on QIs + copula_keep, then evaluate the copies with every kept column restored."""
    import warnings

    from synthmi.evaluation.frontier import Analysis, evaluate_release, summarise
    from synthmi.evaluation.subgroups import risk_subgroups
    from synthmi.workflow.tuning import FrontierResult, make_synthesizer, remask

    qi, keep = cfg["qi"], cfg["copula_keep"]
    labels = risk_subgroups(df, qi, cfg["k0"], cfg["subgroup_tolerance"]).labels
    ev = dict(analyses=[Analysis.coerce(a) for a in cfg["analyses"]], quasi_identifiers=qi,
              tolerance=cfg["tolerance"], target=cfg["target"], subgroups=labels, rule="partial", pmse_copies=1,
              pmse_variables=pmse_vars(cfg))
    rows, base = [], None
    for st in rd:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if base is None:
                base = make_synthesizer("risk-dami", st.params).fit(df[qi + keep], quasi_identifiers=qi, keep=keep)
                synth, fit_s = base, time.perf_counter() - t0
            else:
                synth, fit_s = remask(base, st.params["masks"]), 0.0
            for r in range(replicates):
                t1 = time.perf_counter()
                syn = synth.sample(m, random_state=seed + r)
                samp = time.perf_counter() - t1
                copies = [df.assign(**{q: c[q].to_numpy() for q in qi}) for c in syn.copies]
                for q in qi:
                    for c in copies:
                        if isinstance(df[q].dtype, pd.CategoricalDtype):
                            c[q] = pd.Categorical(c[q], categories=df[q].cat.categories, ordered=df[q].cat.ordered)
                rows.append({"method": "risk-dami", "setting": st.label, "params": str(st.params["masks"]),
                             "replicate": r, "fit_seconds": fit_s, "sample_seconds": samp,
                             **evaluate_release(df, copies, **ev)})
        print(f"risk-dami {st.label:<40} overlap {rows[-1]['mean_ci_overlap']:.3f} matches "
              f"{rows[-1]['expected_matches']:.1f} ({time.perf_counter() - t0:.1f} s)", flush=True)
    reps = pd.DataFrame(rows)
    return FrontierResult(replicates=reps, points=summarise(reps), references=pd.DataFrame())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="adult,nhanes")
    ap.add_argument("--methods", default="dami,risk-dami,cart,norm+logit")
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--replicates", type=int, default=3)
    ap.add_argument("--n-iter", type=int, default=300, help="copula Gibbs iterations (risk-DA-MI)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--rows", type=int, default=None, help="random subsample of this many records")
    ap.add_argument("--out-name", default=None,
                    help="file stem of the results (default frontier_<data>), e.g. frontier_adult_full")
    ap.add_argument("--append-label", default=None,
                    help="run only the DA-MI grid under this method label and add it to the existing CSV")
    a = ap.parse_args()
    if a.append_label:
        for name in a.data.split(","):
            run_append(name, a.append_label, a.m, a.replicates, a.seed, a.rows)
        return
    for name in a.data.split(","):
        run(name, a.methods.split(","), a.m, a.replicates, a.n_iter, a.seed, a.rows, a.out_name)


if __name__ == "__main__":
    main()
