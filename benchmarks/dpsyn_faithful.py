"""DPSyn faithfulness on agency-sized files (issue 25, items 3-4).

Three public files, each with a public domain written from its documentation (never
from the data values):

* the raw bundled UCI Adult (``synthmi/data/adult.domain.json``, ``split`` left out);
  regression: logit ``income ~ age + education_num + hours_per_week + sex``;
* statsmodels' ``fair`` (Fair 1978, 6,366 married women; domain ``FAIR_DOMAIN`` below);
  regression: gaussian ``affairs ~ rate_marriage + age + yrs_married + religious + educ``;
* statsmodels' ``randhie`` (RAND Health Insurance Experiment, 20,190 person-years;
  domain ``RANDHIE_DOMAIN`` below); regression: gaussian
  ``mdvis ~ lncoins + idp + lpi + fmde + physlm + disea + hlthg + hlthf + hlthp``.

At eps in {1, 4} (delta 1e-9), sizes 1,000, 5,000 and full (a fixed random subsample,
the same for every method), seeds 0, 1, 2, ``M`` = 2 copies. Figures per run:

* ``outside_share[col]``: share of the original's records whose value of a numeric
  column lies outside the range [min, max] of the pooled copies (``outside_tol``: the
  range widened by 1% of the declared width, since a continuous value at a bound, e.g.
  0 children, is drawn uniformly within its cell and never reproduced exactly);
* ``rel_err_mean[col]``, ``rel_err_median[col]``: |synthetic - original| / |original|
  of the pooled copies' mean / median (divided by the original's sd instead when the
  original figure is 0, e.g. the median of ``affairs``);
* ``vanished``: levels of the discrete columns held by >= 5% of the original's records
  that a copy does not hold at all, averaged over the copies;
* ``ci_overlap``: mean CI overlap (synthmi's ``analyse``, rule "full") of the file's regression.

Each figure has its noise-only baseline: ``M`` bootstrap copies of the same (sub)sample
(method ``bootstrap``). Tables report medians over seeds (``vanished``: the mean,
a rare event a median would hide). Run "before" with ``PYTHONPATH=<a checkout of the earlier commit>`` and
``--tag before``; the default tag is ``after``. Writes
``benchmarks/results/dpsyn_faithful_<tag>.json`` / ``.csv``; ``--compare`` then writes
the before / after / bootstrap table ``dpsyn_faithful_compare.csv`` / ``.md`` (with a
``hier`` column when ``dpsyn_faithful_hier.csv`` holds an intermediate version).
"""
from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import RESULTS, measure, write_json  # noqa: E402

from synthmi.data import load_adult, load_domain  # noqa: E402
from synthmi.domain import PublicDomain  # noqa: E402
from synthmi.evaluation.analysis import analyse  # noqa: E402
from synthmi.privacy import DPSynSynthesizer  # noqa: E402

DELTA = 1e-9
EPSILONS = (1.0, 4.0)
SIZES = (1000, 5000, None)
SEEDS = (0, 1, 2)
M = 2
MAX_N = None  # --max-n: skip larger files (e.g. the full Adult, ~1 min per fit on a loaded machine)

# statsmodels.datasets.fair.NOTE: rate_marriage 1-5, religious 1-4, educ coded 9/12/14/16/17/20,
# occupation(_husb) 1-6; age, years married, children and the affairs measure are numbers
# (interval midpoints). Bounds are what a reader of the documentation would declare: adult
# women's ages, years married up to a lifetime, a family's children, a non-negative
# time measure with a point mass at 0 (no affair) and a generous upper bound.
FAIR_DOMAIN = {"columns": {
    "rate_marriage": {"kind": "ordinal", "levels": [1.0, 2.0, 3.0, 4.0, 5.0], "missing": False},
    "age": {"kind": "continuous", "bounds": [16, 80], "missing": False},
    "yrs_married": {"kind": "continuous", "bounds": [0, 60], "missing": False},
    "children": {"kind": "continuous", "bounds": [0, 15], "missing": False},
    "religious": {"kind": "ordinal", "levels": [1.0, 2.0, 3.0, 4.0], "missing": False},
    "educ": {"kind": "ordinal", "levels": [9.0, 12.0, 14.0, 16.0, 17.0, 20.0], "missing": False},
    "occupation": {"kind": "categorical", "levels": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "missing": False},
    "occupation_husb": {"kind": "categorical", "levels": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "missing": False},
    "affairs": {"kind": "continuous", "bounds": [0, 100], "point_masses": [0], "missing": False},
}}
# statsmodels.datasets.randhie.NOTE: mdvis a count of visits (a year has 365 days), lncoins =
# ln(coinsurance + 1) with 0 <= coinsurance <= 100 (0 = the free plan), idp / physlm / hlth*
# indicators (physlm holds averages in [0, 1], declared so), lpi = ln(max(1, incentive payment)) (0 when none; bound: ln of $22,000),
# fmde = 0 if idp = 1 else ln(max(1, MDE / (0.01 coinsurance))) (MDE <= $1,000 and
# coinsurance >= 0.25 percent give ln(400,000) < 13), disea a count of chronic diseases.
RANDHIE_DOMAIN = {"columns": {
    "mdvis": {"kind": "integer", "bounds": [0, 365], "point_masses": [0], "missing": False},
    "lncoins": {"kind": "continuous", "bounds": [0, 4.6151205], "point_masses": [0], "missing": False},
    "idp": {"kind": "binary", "levels": [0, 1], "missing": False},
    "lpi": {"kind": "continuous", "bounds": [0, 10], "point_masses": [0], "missing": False},
    "fmde": {"kind": "continuous", "bounds": [0, 13], "point_masses": [0], "missing": False},
    # documented as an indicator, but the file holds person-year averages in [0, 1]
    "physlm": {"kind": "continuous", "bounds": [0, 1], "point_masses": [0, 1], "missing": False},
    "disea": {"kind": "continuous", "bounds": [0, 100], "missing": False},
    "hlthg": {"kind": "binary", "levels": [0, 1], "missing": False},
    "hlthf": {"kind": "binary", "levels": [0, 1], "missing": False},
    "hlthp": {"kind": "binary", "levels": [0, 1], "missing": False},
}}


def files() -> dict[str, tuple[pd.DataFrame, PublicDomain, str, str]]:
    import statsmodels.api as sm

    adult = load_adult(recode=False).drop(columns=["split"])
    out = {"adult": (adult, load_domain("adult").select(adult.columns),
                     "income ~ age + education_num + hours_per_week + sex", "logit")}
    fair = sm.datasets.fair.load_pandas().data
    out["fair"] = (fair, PublicDomain.from_dict(FAIR_DOMAIN),
                   "affairs ~ rate_marriage + age + yrs_married + religious + educ", "gaussian")
    rh = sm.datasets.randhie.load_pandas().data
    out["randhie"] = (rh, PublicDomain.from_dict(RANDHIE_DOMAIN),
                      "mdvis ~ lncoins + idp + lpi + fmde + physlm + disea + hlthg + hlthf + hlthp", "gaussian")
    return out


def _rel(syn: float, orig: float, sd: float) -> float:
    scale = abs(orig) if orig != 0 else sd
    return abs(syn - orig) / scale if scale > 0 else float("nan")


def figures(orig: pd.DataFrame, copies: list[pd.DataFrame], domain: PublicDomain, formula: str, family: str) -> dict:
    pooled = pd.concat(copies, ignore_index=True)
    out: dict = {}
    for c in orig.columns:
        cd = domain[c]
        if cd.is_discrete:
            continue
        x, y = orig[c].astype(float), pooled[c].astype(float)
        out[f"outside_share|{c}"] = float(((x < y.min()) | (x > y.max())).mean())
        # the same with a tolerance of 1% of the declared width: a continuous value at a
        # bound (0 children) is drawn uniformly within its cell and never reproduced exactly
        tol = 0.01 * (float(cd.bounds[1]) - float(cd.bounds[0]))
        out[f"outside_tol|{c}"] = float(((x < y.min() - tol) | (x > y.max() + tol)).mean())
        out[f"rel_err_mean|{c}"] = _rel(float(y.mean()), float(x.mean()), float(x.std()))
        out[f"rel_err_median|{c}"] = _rel(float(y.median()), float(x.median()), float(x.std()))
    vanished = []
    for cp in copies:
        k = 0
        for c in orig.columns:
            if not domain[c].is_discrete:
                continue
            share = orig[c].astype(object).value_counts(normalize=True)
            held = set(cp[c].dropna().astype(object).unique())
            k += sum(1 for lv, s in share.items() if s >= 0.05 and lv not in held)
        vanished.append(k)
    out["vanished"] = float(np.mean(vanished))
    try:
        # a DP release types a declared level set as categorical (its declared levels);
        # the original's numeric codes (fair's rate_marriage 1-5) are compared as numbers
        num = [c for c in orig.columns if pd.api.types.is_numeric_dtype(orig[c])]
        as_orig = [cp.assign(**{c: pd.to_numeric(cp[c].astype(object)) for c in num
                                if isinstance(cp[c].dtype, pd.CategoricalDtype)}) for cp in copies]
        res = analyse(formula, family, original=orig, synthetic=as_orig, rule="full")
        out["ci_overlap"] = float(res.mean_ci_overlap)
    except Exception as e:  # a degenerate copy (e.g. a constant column) cannot be analysed
        print(f"    analyse failed: {type(e).__name__}: {e}", flush=True)
        out["ci_overlap"] = float("nan")
    return out


def run(tag: str, epsilons=EPSILONS, sizes=SIZES, seeds=SEEDS, only: str | None = None) -> pd.DataFrame:
    rows = []
    for name, (full, domain, formula, family) in files().items():
        if only and name != only:
            continue
        for size in sizes:
            if size is not None and size >= len(full):
                continue
            df = full if size is None else full.sample(size, random_state=12345).reset_index(drop=True)
            n = len(df)
            if MAX_N is not None and n > MAX_N:
                continue
            for seed in seeds:
                rng = np.random.default_rng(1000 + seed)
                boot = [df.iloc[rng.integers(0, n, n)].reset_index(drop=True) for _ in range(M)]
                rows.append({"file": name, "n": n, "epsilon": float("nan"), "seed": seed, "method": "bootstrap",
                             **figures(df, boot, domain, formula, family)})
                for eps in epsilons:
                    def fit_sample():
                        s = DPSynSynthesizer(epsilon=eps, delta=DELTA, random_state=seed).fit(df, domain=domain)
                        return s, s.sample(M, random_state=seed).copies

                    m = measure(fit_sample, repeats=1)
                    s, copies = m["result"]
                    fig = figures(df, copies, domain, formula, family)
                    rows.append({"file": name, "n": n, "epsilon": eps, "seed": seed, "method": f"dpsyn-{tag}",
                                 "wall_seconds": m["wall_seconds_median"], "peak_traced_mib": m["peak_traced_mib"],
                                 "epsilon_spent": s.spent()[0], **fig})
                    worst = max((v for k, v in fig.items() if k.startswith("outside_share")), default=float("nan"))
                    print(f"{tag} {name} n={n} eps={eps:g} seed={seed}: max outside {worst:.3f} "
                          f"vanished {fig['vanished']:.1f} CI overlap {fig['ci_overlap']:.3f} "
                          f"{m['wall_seconds_median']:.1f} s", flush=True)
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Medians over seeds (``vanished``: mean), per file, n, method and epsilon; numeric
    columns' figures summarised as the max over columns of the outside share and the mean
    over columns of the relative errors."""
    t = table.copy()
    t["outside_max"] = t.filter(like="outside_share|").max(axis=1)
    t["outside_tol_max"] = t.filter(like="outside_tol|").max(axis=1)
    t["rel_err_mean_avg"] = t.filter(like="rel_err_mean|").mean(axis=1)
    t["rel_err_median_avg"] = t.filter(like="rel_err_median|").mean(axis=1)
    t["epsilon"] = t["epsilon"].fillna(-1)
    keys = ["file", "n", "method", "epsilon"]
    med = t.groupby(keys)[["outside_max", "outside_tol_max", "rel_err_mean_avg", "rel_err_median_avg", "ci_overlap"]].median()
    med["vanished_mean"] = t.groupby(keys)["vanished"].mean()
    return med.reset_index()


def compare() -> pd.DataFrame:
    """Before (main's code) vs after, from the two runs' CSVs: medians over seeds, the
    bootstrap (noise-only) baseline beside them. Writes ``dpsyn_faithful_compare.csv``
    and a markdown table ``dpsyn_faithful_compare.md``."""
    # "hier": the first hierarchy (merge of dpq, 725c9bb), kept when its CSV is present
    tags = [t for t in ("before", "hier", "after") if t != "hier" or (RESULTS / "dpsyn_faithful_hier.csv").exists()]
    parts = [pd.read_csv(RESULTS / f"dpsyn_faithful_{tag}.csv") for tag in tags]
    t = pd.concat(parts, ignore_index=True)
    # the bootstrap rows are the same in both runs (same seeds, no DP code): keep one
    t = t[~((t["method"] == "bootstrap") & t.duplicated(subset=["file", "n", "seed", "method"]))]
    summ = summarise(t)
    wide = summ.pivot_table(index=["file", "n", "epsilon"], columns="method",
                            values=["outside_max", "outside_tol_max", "rel_err_mean_avg", "rel_err_median_avg", "vanished_mean", "ci_overlap"])
    boot = summ[summ["method"] == "bootstrap"].set_index(["file", "n"])
    rows = []
    for (f, n, e), r in wide.iterrows():
        if e < 0:
            continue
        row = {"file": f, "n": int(n), "epsilon": e}
        for m in ("outside_max", "outside_tol_max", "rel_err_mean_avg", "rel_err_median_avg", "vanished_mean", "ci_overlap"):
            for tag in tags:
                row[f"{m}|{tag}"] = r.get((m, f"dpsyn-{tag}"), np.nan)
            row[f"{m}|bootstrap"] = boot.loc[(f, n), m] if (f, n) in boot.index else np.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out.to_csv(RESULTS / "dpsyn_faithful_compare.csv", index=False)
    md = out.round(3).astype(str)
    lines = ["| " + " | ".join(md.columns) + " |", "|" + "---|" * md.shape[1]]
    lines += ["| " + " | ".join(r) + " |" for r in md.values.tolist()]
    (RESULTS / "dpsyn_faithful_compare.md").write_text("\n".join(lines) + "\n")
    print(out.round(3).to_string())
    return out


def tvd(epsilons=(0.5, 1.0), seeds=SEEDS) -> list[dict]:
    """The discretized-Adult marginal benchmark of ``benchmarks/dpsyn.py`` (two-way TVD over
    the marginals with <= 10,000 cells, three-way over all) for DPSyn's defaults only;
    writes ``dpsyn_faithful_tvd.json``."""
    from dpsyn import ORDINAL, REFERENCES

    from synthmi.data import load_adult_discretized
    from synthmi.evaluation import marginal_tvd

    df, sizes = load_adult_discretized()
    public = load_domain("adult_discretized")
    rows = []
    for eps in epsilons:
        for seed in seeds:
            s = DPSynSynthesizer(epsilon=eps, delta=DELTA, random_state=seed).fit(df, domain=public, ordinal=ORDINAL)
            c = s.sample(1, random_state=seed).copies[0]
            rows.append({"epsilon": eps, "seed": seed,
                         "two_way_tvd": marginal_tvd(df, c, ways=2, max_cells=10_000, domain=sizes).mean[2],
                         "three_way_tvd": marginal_tvd(df, c, ways=3, domain=sizes).mean[3]})
            print(rows[-1], flush=True)
    write_json("dpsyn_faithful_tvd", {"rows": rows, "references_eps1": REFERENCES,
                                      "defaults": DPSynSynthesizer().get_params()})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tag", default="after")
    ap.add_argument("--file", default=None, choices=[None, "adult", "fair", "randhie"])
    ap.add_argument("--max-n", type=int, default=None, help="skip (sub)samples larger than this (time budget)")
    ap.add_argument("--compare", action="store_true", help="only tabulate the before / after CSVs")
    ap.add_argument("--tvd", action="store_true", help="only the discretized-Adult TVD at eps 0.5 and 1")
    args = ap.parse_args()
    if args.tvd:
        tvd()
        return
    if args.compare:
        compare()
        return
    if args.max_n:
        global MAX_N
        MAX_N = args.max_n
    warnings.filterwarnings("ignore", message=".*user seed.*")
    warnings.filterwarnings("ignore", category=FutureWarning)
    table = run(args.tag, only=args.file)
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = f"_{args.file}" if args.file else ""
    table.to_csv(RESULTS / f"dpsyn_faithful_{args.tag}{suffix}.csv", index=False)
    summ = summarise(table)
    print(summ.round(4).to_string())
    write_json(f"dpsyn_faithful_{args.tag}{suffix}", {
        "data": "raw Adult (bundled), statsmodels fair and randhie; public domains in this script / adult.domain.json",
        "epsilons": list(EPSILONS), "delta": DELTA, "seeds": list(SEEDS), "m": M, "sizes": ["1000", "5000", "full"],
        "rows": table.to_dict(orient="records"),
        "summary_medians_over_seeds": summ.to_dict(orient="records"),
        "defaults": DPSynSynthesizer().get_params(),
    })


if __name__ == "__main__":
    main()
