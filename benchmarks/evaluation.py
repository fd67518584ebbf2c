"""Evaluation-core workload on Adult (48,842 rows) against bootstrap resamples.

Times (median of repeats) and peak memory of
* pMSE with the logit propensity model (main effects + two-way interactions),
* pMSE with CART and its 50-permutation null,
* ``analyse`` (probit of income on the quasi-identifiers) over M = 20 copies.
Targets (issue 2, 2 cores): logit <= 5 s, CART with null <= 60 s, analyse <= 10 s.

With ``--agency``: ``synthmi utility`` end to end (command line, default
options: logit pMSE with two-way interactions, one-way tables) on the
40,000-row agency file (:mod:`synthmi.data.agency`) against M = 5 CART copies,
ten columns including the 51-level state and the weight left out; target
(issue 17) <= 60 s on 2 cores. Writes ``evaluation_agency_utility.json`` with
wall and CPU seconds (the machine is shared: CPU seconds show the work).

Run: ``.venv/bin/python benchmarks/evaluation.py [--repeats 3] [--agency]``
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
    ap.add_argument("--agency", action="store_true", help="time synthmi utility on the 40,000-row agency file")
    args = ap.parse_args()
    if args.agency:
        agency_utility(args.repeats)
        return
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


AGENCY_VARIABLES = ["age", "sex", "race", "hours_per_week", "income", "state", "education_num", "marital_status",
                    "employed", "occupation"]


def agency_utility(repeats: int) -> None:
    import contextlib
    import io
    import tempfile
    import time
    from pathlib import Path

    from synthmi.cli import main as cli
    from synthmi.data.agency import make_agency_data

    df = make_agency_data(40_000, seed=1)[AGENCY_VARIABLES + ["weight"]]
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "agency.csv"
        df.to_csv(csv, index=False)
        qi = "age,sex,race,hours_per_week,income"
        keep = ",".join(c for c in AGENCY_VARIABLES + ["weight"] if c not in qi.split(","))
        assert cli(["synthesize", "--data", str(csv), "--qi", qi, "--keep", keep, "--weights", "weight",
                    "--semicont", "income=0", "--method", "cart", "--m", "5", "--seed", str(SEED),
                    "--out", str(Path(tmp) / "syn"), "--quiet"]) == 0
        walls, cpus, text = [], [], ""
        for _ in range(repeats):
            buf = io.StringIO()
            t0, c0 = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(buf):
                assert cli(["utility", "--original", str(csv), "--synthetic", str(Path(tmp) / "syn")]) == 0
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            text = buf.getvalue()
    notes = [line for line in text.splitlines() if line.startswith("note:")]
    mean_line = next((line for line in text.splitlines() if line.startswith("mean pMSE")), "")
    print(text)
    import statistics

    print(f"synthmi utility, 40,000 rows x 10 columns, M = 5: {statistics.median(walls):.1f} s wall, "
          f"{statistics.median(cpus):.1f} s CPU (target 60 s)")
    write_json("evaluation_agency_utility", {
        "data": "agency file (synthmi.data.agency, 40,000 rows), 10 columns incl. 51-level state, weight left out",
        "copies": "5 CART copies (age, sex, race, hours, income synthesized)",
        "command": "synthmi utility --original agency.csv --synthetic syn/ (defaults: logit, maxorder 1, tables 1)",
        "wall_seconds_median": statistics.median(walls), "wall_seconds_all": walls,
        "cpu_seconds_median": statistics.median(cpus), "target_seconds": 60,
        "notes_printed": notes, "summary": mean_line, "seed": SEED,
    })


if __name__ == "__main__":
    main()
