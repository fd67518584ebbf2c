"""Re-identification risk and risk subgroups on UCI Adult (issue 4 targets).

Workload: Adult (48,842 rows, ``load_adult(recode=True)``), quasi-identifiers
age (continuous) and sex, race, education (categorical). The M = 20 copies are
made here by perturbing age only: ``age + round(N(0, 2^2))`` per record and copy
(seed below); the other columns are unchanged, so the copies are row-aligned
partially synthetic releases. Tolerance age = 2 (absolute).

Targets: reidentification_risk with M = 20 <= 5 s; risk_subgroups <= 2 s (2 cores).
Also timed: two continuous QIs (age, hours_per_week; the several-continuous
path), a copy identical to the original, and scaling in n (near-linear means no
all-pairs comparison).
"""
from __future__ import annotations

import numpy as np

from _bench import measure, write_json
from synthmi.data import load_adult
from synthmi.evaluation import reidentification_risk, risk_subgroups

SEED = 20260401
M = 20
QI = ["age", "sex", "race", "education"]
TOL = {"age": 2}


def make_copies(df, m, sd, rng):
    return [df.assign(age=df["age"] + np.round(rng.normal(0.0, sd, len(df)))) for _ in range(m)]


def main() -> None:
    df = load_adult(recode=True)
    rng = np.random.default_rng(SEED)
    copies = make_copies(df, M, 2.0, rng)

    risk = measure(lambda: reidentification_risk(df, copies, QI, tolerance=TOL, by="race"), repeats=3)
    res = risk.pop("result")
    sub = measure(lambda: risk_subgroups(df, QI, k0=5, tolerance=TOL), repeats=5)
    labels = sub.pop("result")

    # Several continuous QIs: hours_per_week perturbed too, tolerance 2 hours.
    copies2 = [c.assign(hours_per_week=df["hours_per_week"] + np.round(rng.normal(0.0, 2.0, len(df)))) for c in copies]
    qi2 = QI + ["hours_per_week"]
    tol2 = {"age": 2, "hours_per_week": 2}
    two = measure(lambda: reidentification_risk(df, copies2, qi2, tolerance=tol2), repeats=3)
    res2 = two.pop("result")
    sub2 = measure(lambda: risk_subgroups(df, qi2, k0=5, tolerance=tol2), repeats=3)
    labels2 = sub2.pop("result")

    ident = measure(lambda: reidentification_risk(df, [df] * M, QI, tolerance=TOL), repeats=3)
    res_id = ident.pop("result")

    scaling = []
    for frac in (0.25, 0.5, 1.0):
        n = int(len(df) * frac)
        sub_df = df.iloc[:n]
        sub_copies = [c.iloc[:n] for c in copies]
        t = measure(lambda: reidentification_risk(sub_df, sub_copies, QI, tolerance=TOL), repeats=3, trace_memory=False)
        scaling.append({"n": n, "wall_seconds_median": t["wall_seconds_median"]})

    payload = {
        "workload": {
            "data": "adult (load_adult(recode=True))",
            "n_rows": len(df),
            "quasi_identifiers": QI,
            "tolerance": TOL,
            "m_copies": M,
            "copies": "age + round(N(0, 2^2)) per record and copy; other columns unchanged",
            "seed": SEED,
        },
        "targets_seconds": {"reidentification_risk_m20": 5.0, "risk_subgroups": 2.0},
        "reidentification_risk_m20": {**risk, "summary": res.figures},
        "risk_subgroups_k0_5": {**sub, "counts": labels.counts.to_dict()},
        "two_continuous_qis": {"quasi_identifiers": qi2, "tolerance": tol2, "risk": {**two, "summary": res2.figures},
                               "subgroups": {**sub2, "counts": labels2.counts.to_dict()}},
        "identical_copies_m20": {**ident, "summary": res_id.figures},
        "scaling_in_n": scaling,
    }
    print(f"reidentification_risk, Adult, 4 QIs, M=20: {risk['wall_seconds_median']:.3f} s "
          f"(peak traced {risk['peak_traced_mib']:.0f} MiB); target 5 s")
    print(f"risk_subgroups, Adult, k0=5: {sub['wall_seconds_median']:.3f} s "
          f"(peak traced {sub['peak_traced_mib']:.0f} MiB); target 2 s")
    print(f"two continuous QIs: risk {two['wall_seconds_median']:.3f} s, subgroups {sub2['wall_seconds_median']:.3f} s")
    print(f"identical copies: {ident['wall_seconds_median']:.3f} s, expected matches {res_id.figures['expected_matches']:.1f}")
    print("scaling:", ", ".join(f"n={s['n']}: {s['wall_seconds_median']:.3f} s" for s in scaling))
    print(res.report())
    print(labels.report())
    write_json("risk", payload)


if __name__ == "__main__":
    main()
