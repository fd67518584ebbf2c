"""Issue 29 item 6: the categorical models' default prior against the former N(0, 10^2), by the battery.

The default prior of :mod:`synthmi.models.glm` (N(0, 2.5^2) on every coefficient but the intercept,
N(0, 10^2) there) replaced N(0, 10^2) on everything (``prior_sd=10``, still the override). This runs
Adult's DA-MI of ``benchmarks/speed_dami_utility.py`` (all 48,842 rows; QIs age, sex, race, education;
age masked K = 1, sigma_e = 10; race alpha = 3; joint draw; 5 copies) under both priors for the same
seeds, and measures each release by the default battery (:func:`synthmi.evaluation.battery.default_battery`
of a spec drafted from the frame: the generic regressions' CI overlap, the worst one- and two-way table
S_pMSE, the overall logit S_pMSE of the first copy), with the DA-MI CPU seconds and each sampled
conditional's gradient count / draws.

With ``--masks race`` only race is masked (alpha = 3), so that age, whose mask (sigma_e = 10) dominates
the battery's age terms, does not hide the categorical models' part.

    python benchmarks/prior_utility.py --seeds 2026,2027,2028 --tag hwide
    python benchmarks/prior_utility.py --seeds 2026,2027,2028 --masks race --tag hwide_race

Writes ``benchmarks/results/prior_utility[_TAG].json``.
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
from speed_dami_utility import ADULT_KEEP, ADULT_MASKS, ADULT_QI, M  # noqa: E402

PRIORS = {"former N(0,10^2)": 10.0, "default": None}


def run(seeds: list[int], masks: dict) -> list[dict]:
    from synthmi.data import load_adult
    from synthmi.evaluation.battery import default_battery, measure_battery
    from synthmi.spec import ReleaseSpec
    from synthmi.workflow.tuning import make_synthesizer

    df = load_adult(recode=True)[ADULT_QI + ADULT_KEEP]
    spec = ReleaseSpec.draft(df, ADULT_QI, ADULT_KEEP)
    battery = default_battery(spec)
    rows = []
    for seed in seeds:
        for label, prior in PRIORS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                c0 = time.process_time()
                s = make_synthesizer("dami", {"masks": masks, "random_state": seed, "prior_sd": prior}).fit(
                    df, quasi_identifiers=ADULT_QI, keep=ADULT_KEEP)
                syn = s.sample(M, random_state=seed)
                cpu = time.process_time() - c0
                res = measure_battery(df, syn, battery, pmse_copies=1, details=True)
            crit = res.pop("_criteria")
            cols = {c: {k: d.get(k) for k in ("method", "gradient_evaluations", "draws_per_chain", "ess_bulk",
                                                "r_hat", "acceptance_rate")}
                    for c, d in (s.diagnostics_ or {}).get("columns", {}).items() if "r_hat" in d}
            row = {"seed": seed, "prior": label, "dami_cpu_s": cpu, **res, "analyses": [
                {"name": c["name"], "ci_overlap": c["value"]} for c in crit if c["measure"] == "ci_overlap"],
                "columns": cols}
            rows.append(row)
            print(f"seed {seed} {label:18s} DA-MI {cpu:5.1f} CPU-s; battery CI overlap {res['battery_ci_overlap']:.3f}; "
                  f"worst 1-way {res['worst_one_way_s_pmse']:.2f}, 2-way {res['worst_two_way_s_pmse']:.2f}; "
                  f"overall S_pMSE {res['overall_s_pmse']:.2f}", flush=True)
            for a in row["analyses"]:
                print(f"    {a['ci_overlap']:.3f}  {a['name']}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="2026,2027,2028")
    ap.add_argument("--masks", choices=("speed", "race"), default="speed",
                    help="speed: speed_dami_utility's Adult masks (age and race); race: race alone")
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    masks = ADULT_MASKS if a.masks == "speed" else {"race": ADULT_MASKS["race"]}
    rows = run(seeds, masks)
    summary = {}
    for label in PRIORS:
        sel = [r for r in rows if r["prior"] == label]
        summary[label] = {k: float(np.mean([r[k] for r in sel])) for k in (
            "battery_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse", "overall_s_pmse", "dami_cpu_s")}
        print(label, {k: round(v, 3) for k, v in summary[label].items()})
    name = "prior_utility" + (f"_{a.tag}" if a.tag else "")
    _bench.write_json(name, {"seeds": seeds, "m": M, "masks": masks, "rows": rows, "mean_over_seeds": summary})


if __name__ == "__main__":
    main()
