"""tune names a continuous QI its normal-mask grid cannot inform (the new-user review: randhie's
``physlm``, a 0-1 score, got sigma_e = 10, a mask carrying nothing, from the default grid in years)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from synthmi.workflow.tuning import CONTINUOUS_GRID, GRID_MIN_RELIABILITY, _warn_grid_scale


def _caught(df, cols, grid=CONTINUOUS_GRID):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _warn_grid_scale(df, cols, grid)
    return [str(m.message) for m in w]


def test_a_column_the_grid_cannot_inform_is_named_with_its_reliability():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"score": rng.uniform(0, 1, 500), "age": rng.normal(45, 17, 500)})
    got = _caught(df, ["score", "age"])
    # by hand: the most informative default level is sigma_e = 1, K = 1 (variance 1); var(score) ~ 1/12,
    # reliability (1/12) / (1/12 + 1) = 0.077 -> "8%" (sample variance within 0.01 of 1/12 at n = 500)
    s2 = float(np.var(df["score"]))
    assert len(got) == 1 and "'score'" in got[0] and f"keeps {s2 / (s2 + 1):.0%}" in got[0]
    assert "'age'" not in got[0]  # 17^2 / (17^2 + 1) = 0.997
    assert str(round(df["score"].iloc[0], 3)) not in got[0]  # no value of the column
    # a grid in the column's units informs it: no warning
    assert _caught(df, ["score"], [(1, 0.2), (1, 0.1)]) == []


def test_the_rule_is_the_threshold_on_the_reliability():
    # variance v: reliability v / (v + 1) on the default grid; just below and above the threshold
    r = GRID_MIN_RELIABILITY
    v_at = r / (1 - r)
    for v, warned in ((0.9 * v_at, True), (1.1 * v_at, False)):
        x = np.array([-1.0, 1.0] * 50) * np.sqrt(v)  # population variance exactly v
        assert bool(_caught(pd.DataFrame({"x": x}), ["x"])) is warned
