"""Small stand-ins shared by the report tests (aggregates only, no data)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from synthmi.report.data import ReportData


def fake_report_data(seed: int = 0) -> ReportData:
    """A ReportData with the layout evaluate_release produces, random numbers."""
    rng = np.random.default_rng(seed)
    terms = ["Intercept", "sex[T.Male]", "race[T.non-white]", "education[T.HS]", "education[T.>HS]", "age"]
    rows = []
    for m in ["dami", "cart"]:
        for t in terms:
            e = rng.normal()
            d = rng.normal(0, 0.05)
            rows.append(dict(method=m, term=t, est_orig=e, se_orig=0.05, ci_lower_orig=e - 0.1, ci_upper_orig=e + 0.1,
                             est_syn=e + d, se_syn=0.06, ci_lower_syn=e + d - 0.12, ci_upper_syn=e + d + 0.12,
                             std_diff=abs(d) / 0.05, ci_overlap=0.9))
    summary = pd.DataFrame([
        dict(method="dami", M=5, S_pMSE=1.2, mean_ci_overlap=0.95, mean_std_diff=0.2, expected_matches=120.5,
             true_match_rate=0.001, share_above_threshold=0.0),
        dict(method="cart", M=5, S_pMSE=3.2, mean_ci_overlap=0.85, mean_std_diff=0.6, expected_matches=300.2,
             true_match_rate=0.004, share_above_threshold=0.001),
    ])
    per_var = pd.DataFrame({"dami": [1.1, 0.9, 1.3, 1.0], "cart": [2.0, 1.5, 1.1, 3.0]},
                           index=pd.Index(["age", "sex", "race", "education"], name="variable"))
    n = 2000
    labels = list(rng.choice(["low", "medium", "high"], n, p=[0.8, 0.15, 0.05]))
    ind = {"dami": rng.beta(0.2, 5, n), "cart": rng.beta(0.3, 4, n)}
    rr = pd.DataFrame([dict(method=m, subgroup=g, records=100, expected_matches=3.0, mean_I_i=0.03,
                            true_match_rate=0.01, share_above_threshold=0.0) for m in ind for g in ["low", "medium", "high"]])
    return ReportData(summary, per_var, pd.DataFrame(rows), rr, ind, labels,
                      settings=dict(original="stand-in", n_records=n, quasi_identifiers=["age", "sex", "race", "education"],
                                    formula="income ~ age + sex + race + education", family="probit", k0=5,
                                    tolerance={"age": 2}, risk_threshold=0.5),
                      provenance=dict(generated_utc="2026-01-01 00:00:00", versions={"synthmi": "0.1.0"}))
