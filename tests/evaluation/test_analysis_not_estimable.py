"""analyse with a category absent from the copies: the term is 'not estimable' (issue 18),
never 0.000 with CI (0, 0), never a crash, left out of the means with a count."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation import analyse

LEVELS = ["a", "b", "c"]


def _frame(n, rng, levels_present):
    g = rng.choice(levels_present, n)
    x = rng.normal(size=n)
    y = 1.0 + 0.5 * x + np.select([g == "b", g == "c"], [0.8, -0.6], 0.0) + rng.normal(size=n)
    return pd.DataFrame({"y": y, "x": x, "g": pd.Categorical(g, categories=LEVELS)})


@pytest.mark.parametrize("rule", ["full", "partial"])
def test_level_absent_from_every_copy(rule):
    rng = np.random.default_rng(0)
    original = _frame(400, rng, LEVELS)
    copies = [_frame(400, rng, ["a", "b"]) for _ in range(3)]  # 'c' absent from every copy
    res = analyse("y ~ x + g", family="gaussian", original=original, synthetic=copies, rule=rule)
    f = res.to_frame()
    assert res.not_estimable == {"g[T.c]": 3}
    row = f.loc["g[T.c]"]
    assert not row["estimable"] and row["copies_not_estimable"] == 3
    assert np.isnan(row["est_syn"]) and np.isnan(row["ci_overlap"]) and np.isnan(row["std_diff"])
    assert np.isfinite(row["est_orig"])  # the original still estimates it
    # the means leave it out: exactly the mean over x and g[T.b]
    assert res.mean_ci_overlap == pytest.approx(f.loc[["x", "g[T.b]"], "ci_overlap"].mean())
    assert res.mean_std_diff == pytest.approx(f.loc[["x", "g[T.b]"], "std_diff"].mean())
    text = str(res.summary())
    assert "not estimable (3 of 3 copies)" in text and "1 term(s) not estimable, left out" in text
    table = res.table()
    assert table.loc[("g[T.c]", "Estimate"), "synthetic (M=3)"] == "not estimable (3 of 3 copies)"
    assert "0.000" not in table.loc["g[T.c]"].to_string()
    # the estimable terms are combined as usual: x's slope is near 0.5 (se ~0.03 per copy)
    assert f.loc["x", "est_syn"] == pytest.approx(0.5, abs=0.15)


def test_level_absent_from_one_copy_only():
    rng = np.random.default_rng(1)
    original = _frame(300, rng, LEVELS)
    copies = [_frame(300, rng, LEVELS), _frame(300, rng, ["a", "b"]), _frame(300, rng, LEVELS)]
    res = analyse("y ~ x + g", family="gaussian", original=original, synthetic=copies, rule="full")
    assert res.not_estimable == {"g[T.c]": 1}
    assert "not estimable (1 of 3 copies)" in str(res.summary())


def test_probit_with_an_absent_level_does_not_crash():
    """The reported crash: 'ci_overlap needs intervals with upper > lower' (probit, rule full)."""
    rng = np.random.default_rng(2)
    n = 600

    def frame(levels):
        g = rng.choice(levels, n)
        x = rng.normal(size=n)
        y = (0.3 * x + 0.4 * (g == "b") + rng.normal(size=n) > 0)
        return pd.DataFrame({"y": pd.Categorical(np.where(y, "yes", "no"), categories=["no", "yes"]), "x": x,
                             "g": pd.Categorical(g, categories=LEVELS)})

    res = analyse("y ~ x + g", family="probit", original=frame(LEVELS), synthetic=[frame(["a", "b"]) for _ in range(4)],
                  rule="full")
    assert set(res.not_estimable) == {"g[T.c]"}
    assert np.isfinite(res.mean_ci_overlap)


def test_no_term_estimable_is_one_clear_error():
    rng = np.random.default_rng(3)
    original = _frame(100, rng, LEVELS)
    copies = [original.assign(x=0.0) for _ in range(2)]
    with pytest.raises(ValueError, match="No term of 'y ~ x - 1' is estimable"):
        analyse("y ~ x - 1", family="gaussian", original=original, synthetic=copies, rule="full")


def test_a_constant_gaussian_response_in_a_copy_is_one_clear_error():
    # statsmodels stopped with "The first guess on the deviance function returned a nan" (a DPSyn copy of a
    # zero-inflated income that kept only its point mass); the error names the copy and the response, no value
    rng = np.random.default_rng(1)
    original = _frame(200, rng, LEVELS)
    flat = _frame(200, rng, LEVELS).assign(y=1234.5)
    with pytest.raises(ValueError, match=r"response 'y' of the gaussian model is constant in synthetic\[1\]") as e:
        analyse("y ~ x + g", family="gaussian", original=original, synthetic=[_frame(200, rng, LEVELS), flat])
    assert "1234" not in str(e.value)
