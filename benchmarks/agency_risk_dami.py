"""risk-dami on the agency file through the command line: the release check and the copies' margins.

A new user's run (issue 17): the agency frame
(:func:`synthmi.data.agency.make_agency_data`) written to CSV, then

    synthmi synthesize --data agency.csv --qi age,sex,race,hours_per_week,income
        --keep state,employed,occupation,bmi,weight --weights weight
        --rule "hours_per_week:employed == 'No'" --method risk-dami
        --mask age:K=2,sigma=3 --m M --seed 11 --param n_iter=N --accept-diagnostics

``--accept-diagnostics`` only so that the copies are written whatever the
check says: the JSON records the check (max R-hat against 1.05, min bulk ESS
against 100, the worst column, the per-column table) as the release would
report it, the copula frame (pooled columns, missing-value indicators,
coefficients held at zero), and per copy the missingness rates of hours and
income, the share of zero incomes, the rare race counts and the ranges of the
continuous quasi-identifiers against the original's. Wall and CPU seconds of
the whole command and the load average (the machine is shared) are recorded.

Run: ``.venv/bin/python benchmarks/agency_risk_dami.py [--n 1000] [--n-iter 1000] [--m 2]``
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _bench import write_json
from synthmi.cli import main
from synthmi.data.agency import make_agency_data

QI = ["age", "sex", "race", "hours_per_week", "income"]
KEEP = ["state", "employed", "occupation", "bmi", "weight"]
RARE = ("Amer-Indian-Eskimo", "Other", "Asian-Pac-Islander")


def margins(frame: pd.DataFrame) -> dict:
    return {
        "missing_rate": {c: float(frame[c].isna().mean()) for c in ("hours_per_week", "income")},
        "zero_income_share": float((frame["income"] == 0).mean()),
        "rare_race_counts": {lev: int((frame["race"] == lev).sum()) for lev in RARE},
        "range": {c: [float(frame[c].min()), float(frame[c].max())] for c in ("age", "hours_per_week", "income")},
    }


def main_(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--n-iter", type=int, default=1000)
    ap.add_argument("--m", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--name", default="agency_risk_dami")
    a = ap.parse_args(argv)
    df = make_agency_data(a.n, seed=a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "agency.csv"
        df.to_csv(data, index=False)
        orig = pd.read_csv(data)
        out = Path(tmp) / "syn"
        load0 = os.getloadavg()
        t0, c0 = time.perf_counter(), time.process_time()
        rc = main(["synthesize", "--data", str(data), "--qi", ",".join(QI), "--keep", ",".join(KEEP),
                   "--weights", "weight", "--rule", "hours_per_week:employed == 'No'", "--method", "risk-dami",
                   "--mask", "age:K=2,sigma=3", "--m", str(a.m), "--seed", "11", "--param", f"n_iter={a.n_iter}",
                   "--accept-diagnostics", "--max-seconds", "none", "--out", str(out), "--quiet"])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        meta = json.loads((out / "metadata.json").read_text())
        copies = [pd.read_csv(f) for f in sorted(out.glob("copy_*.csv"))]
    d = meta["diagnostics"]
    payload = {
        "n": a.n, "n_iter": a.n_iter, "m": a.m, "exit_code": rc,
        "wall_seconds": wall, "cpu_seconds": cpu, "loadavg_before": load0, "loadavg_after": os.getloadavg(),
        "release_check": meta.get("diagnostics_check"),
        "max_r_hat": d.get("max_r_hat"), "min_ess_bulk": d.get("min_ess_bulk"), "worst": d.get("worst"),
        "table": d.get("table"), "collapsed_acceptance": d.get("collapsed_acceptance"),
        "copula_columns": meta["structure"].get("copula_columns"),
        "original": margins(orig), "copies": [margins(c) for c in copies],
    }
    print(f"n={a.n} n_iter={a.n_iter}: max R-hat {payload['max_r_hat']:.3f}, min bulk ESS "
          f"{payload['min_ess_bulk']:.0f} (worst: {payload['worst']}); wall {wall:.0f} s, CPU {cpu:.0f} s, "
          f"load {load0[0]:.1f}")
    print("original", payload["original"])
    for k, c in enumerate(payload["copies"]):
        print(f"copy {k + 1}", c)
    write_json(a.name, payload)


if __name__ == "__main__":
    main_()
