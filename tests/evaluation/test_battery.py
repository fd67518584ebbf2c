"""The default battery: its rule read off a spec, and its figures against hand-computed values."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation import analyse
from synthmi.evaluation.battery import (
    DEFAULT_MAX_TABLE_S_PMSE,
    default_battery,
    evaluate_battery,
    generic_analyses,
    measure_battery,
    table_feasible,
)
from synthmi.spec import ReleaseSpec


def test_the_rule_reads_roles_and_kinds_only():
    kinds = {"age": "integer", "sex": "binary", "edu": "ordinal", "y": "binary", "inc": "continuous",
             "region": "nominal", "w": "continuous", "my col": "continuous"}
    got = generic_analyses(kinds, ["age", "sex", "edu"], ["y", "inc", "region", "w", "my col"], weights=["w"])
    rhs = "age + I(age ** 2) + C(sex) + C(edu)"
    # binary -> logit, numeric -> gaussian; a nominal kept column has no family (its tables judge it);
    # the weight is not an outcome; a name with a space is quoted
    # each outcome twice: additive, then the fuller model: the interactions that involve the numeric
    # QI and the other kept columns but the weight (a number linear, a category a factor)
    inter = rhs + " + age:C(sex) + age:C(edu)"
    assert got == [(f"y ~ {rhs}", "logit"), (f'y ~ {inter} + inc + C(region) + Q("my col")', "logit"),
                   (f"inc ~ {rhs}", "gaussian"), (f'inc ~ {inter} + C(y) + C(region) + Q("my col")', "gaussian"),
                   (f'Q("my col") ~ {rhs}', "gaussian"), (f'Q("my col") ~ {inter} + C(y) + inc + C(region)', "gaussian")]
    # nothing kept that a GLM can take: each binary / numeric QI on the other QIs, the kept nominal
    # column a covariate of the fuller model (age's QI predictors are categorical: no interaction)
    assert generic_analyses(kinds, ["age", "sex", "edu"], ["region"]) == [
        ("age ~ C(sex) + C(edu)", "gaussian"), ("age ~ C(sex) + C(edu) + C(region)", "gaussian"),
        ("sex ~ age + I(age ** 2) + C(edu)", "logit"), ("sex ~ age + I(age ** 2) + C(edu) + age:C(edu) + C(region)", "logit")]
    # two numeric predictors: their product too; nothing else kept and no interaction: one regression
    kinds2 = {"a": "continuous", "b": "integer", "g": "nominal", "y": "continuous"}
    assert generic_analyses(kinds2, ["a", "b", "g"], ["y"])[1] == (
        "y ~ a + I(a ** 2) + b + I(b ** 2) + C(g) + a:C(g) + b:C(g) + a:b", "gaussian")
    assert generic_analyses(kinds2, ["g"], ["y"]) == [("y ~ C(g)", "gaussian")]


def _tiny():
    # x: 4 a + 4 b in the original, 6 a + 2 b in the copy; y kept (0/1, independent of x in both)
    o = pd.DataFrame({"x": list("aaaabbbb"), "y": [0, 1] * 4})
    c = o.assign(x=list("aaaaaabb"))
    return o, c


def test_figures_by_hand():
    o, c = _tiny()
    spec = ReleaseSpec.draft(o, ["x"], kinds={"y": "binary"})
    bat = default_battery(spec, ["y ~ x"])
    assert bat.analyses == (("y ~ x", "probit"), ("y ~ C(x)", "logit")) and bat.n_declared == 1
    assert bat.variables == ("x", "y")
    got = measure_battery(o, [c, c], bat, pmse_copies=1, details=True)  # M = 2: the partial rule needs it
    # N = 16, c = 1/2. One-way x: cells a (4 vs 6) and b (4 vs 2):
    # pMSE = [10 (0.6 - 0.5)^2 + 6 (1/3 - 1/2)^2] / 16 = 1/60; E0 = (2 - 1)(1/2)^2(1/2)/16 = 1/128
    assert got["worst_one_way_s_pmse"] == pytest.approx((1 / 60) / (1 / 128))  # 32/15
    # two-way x:y, 4 cells: (a,.) 2 vs 3 each, (b,.) 2 vs 1 each; pMSE again 1/60, E0 = 3/128
    assert got["worst_two_way_s_pmse"] == pytest.approx((1 / 60) / (3 / 128))  # 32/45
    # y is released unchanged: its one-way table is not a criterion (S_pMSE 0 by construction)
    names = [r["name"] for r in got["_criteria"] if r["criterion"] == "one-way table"]
    assert names == ["x"]
    # overall logit with synthpop's default maxorder = 1 (main effects and two-way interactions):
    # x, y, x:y is saturated on the x-by-y table, so the fitted propensities are the cells' and
    # pMSE = 1/60 with 3 non-aliased terms, E0 = 3 (1/2)^2 (1/2) / 16 = 3/128
    assert got["overall_s_pmse"] == pytest.approx((1 / 60) / (3 / 128), rel=1e-6)  # 32/45
    # battery overlap: mean over analyses of each analysis's mean overlap (not over coefficients)
    per = [analyse(f, family=fam, original=o, synthetic=[c, c], rule="partial").mean_ci_overlap for f, fam in bat.analyses]
    assert got["declared_ci_overlap"] == pytest.approx(per[0]) and got["generic_ci_overlap"] == pytest.approx(per[1])
    assert got["battery_ci_overlap"] == pytest.approx(np.mean(per))


def test_replicates_give_the_mc_error():
    o, c = _tiny()
    c2 = o.assign(x=list("aaabbbbb"))  # a: 4 vs 3, b: 4 vs 5 -> pMSE = [7 (3/7-1/2)^2 + 9 (5/9-1/2)^2]/16
    bat = default_battery(ReleaseSpec.draft(o, ["x"], kinds={"y": "binary"}), ["y ~ x"])
    res = evaluate_battery(o, [[c, c], [c2, c2]], bat, pmse_copies=0)
    s1, s2 = 32 / 15, ((7 * (3 / 7 - 0.5) ** 2 + 9 * (5 / 9 - 0.5) ** 2) / 16) / (1 / 128)
    f = res.figures
    assert f["worst_one_way_s_pmse"] == pytest.approx((s1 + s2) / 2)
    # sd of two values / sqrt(2) = |a - b| / 2
    assert f["worst_one_way_s_pmse_se"] == pytest.approx(abs(s1 - s2) / 2)
    assert f["replicates"] == 2 and f["feasible"]
    row = res.to_frame().set_index(["criterion", "name"]).loc[("one-way table", "x")]
    assert row["value"] == pytest.approx((s1 + s2) / 2) and row["se"] == pytest.approx(abs(s1 - s2) / 2)
    d = res.to_dict()
    assert d["battery"]["analyses"][0] == {"formula": "y ~ x", "family": "probit", "declared": True}
    assert "worst_two_way_s_pmse" in str(res.summary())


def test_a_wrecked_margin_is_infeasible_whatever_its_overlap():
    # age shifted by 15 years: the declared analysis (a slope) is untouched, overlap 1, but the
    # margin is wrecked; a faithful release (each age moved by a year at most) stays feasible.
    rng = np.random.default_rng(1)
    n = 600
    o = pd.DataFrame({"age": rng.integers(18, 80, n).astype(float), "sex": rng.choice(["F", "M"], n)})
    o["inc"] = 0.05 * o["age"] + (o["sex"] == "M") + rng.normal(0, 1, n)
    spec = ReleaseSpec.draft(o, ["age"], ["sex", "inc"])
    bat = default_battery(spec, [("inc ~ age", "gaussian")])
    wrecked = [o.assign(age=o["age"] + 15) for _ in range(2)]
    fw = measure_battery(o, wrecked, bat, pmse_copies=0)
    # (the combined interval takes the partial rule's reference distribution, a hair wider than the
    # original's, so the overlap is 0.999 rather than exactly 1)
    assert fw["declared_ci_overlap"] == pytest.approx(1.0, abs=0.005)
    assert fw["worst_one_way_s_pmse"] > 50 and not table_feasible(fw)
    # a faithful release: each age moved by at most a year (the intruder-tolerance scale)
    faithful = [o.assign(age=o["age"] + np.random.default_rng(10 + i).integers(-1, 2, n)) for i in range(2)]
    ff = measure_battery(o, faithful, bat, pmse_copies=0)
    assert ff["worst_one_way_s_pmse"] < 3 and ff["worst_two_way_s_pmse"] < 3 and table_feasible(ff)
    assert ff["battery_ci_overlap"] > 0.8  # (the wrecked one scores 0.96 here: overlap alone cannot tell)
    assert table_feasible({"worst_one_way_s_pmse": DEFAULT_MAX_TABLE_S_PMSE}) and not table_feasible(
        {"worst_two_way_s_pmse": DEFAULT_MAX_TABLE_S_PMSE + 0.1})


def test_bad_input_names_the_parameter():
    o, c = _tiny()
    bat = default_battery(ReleaseSpec.draft(o, ["x"]), [])
    with pytest.raises(ValueError, match="'max_table_s_pmse' parameter of evaluate_battery must be > 0"):
        evaluate_battery(o, [[c, c]], bat, max_table_s_pmse=0)
    with pytest.raises(ValueError, match="'releases' parameter of evaluate_battery"):
        evaluate_battery(o, [], bat)
    with pytest.raises(ValueError, match="'analyses' parameter of default_battery"):
        default_battery(ReleaseSpec.draft(o, ["x"]), [3])


def test_table_rule_false_infeasibility_matches_its_justification():
    """The rule's justification (DEFAULT_MAX_TABLE_S_PMSE): a df = 1 table averaged over M = 2 copies
    exceeds 10 with probability P(chi2_2 > 10) = e^-5 = 0.0067 when the copies are *proper* posterior
    predictive draws (theta_m ~ Beta(k + 1, n - k + 1), then Bin(n, theta_m)): given the original the
    copies' deviations are independent, each d S_pMSE ~ 2 chi2_1. Copies drawn independently from the
    *population* share the original's sampling error: (Z0 - Z1)^2 + (Z0 - Z2)^2 > 20 has probability
    0.0125 (quadrature), twice e^-5 -- the null the comment used to name. R = 20,000 tables: MC sd of
    a rate near 0.0067 is 0.00058, so 4 sd = 0.0023 separates the two (0.0058 apart)."""
    from synthmi.evaluation.pmse import table_pmse_counts

    rng = np.random.default_rng(29)
    n, p, R = 2000, 0.3, 20_000
    o1 = rng.binomial(n, p, R)
    proper, population = np.zeros(R), np.zeros(R)
    for m in range(2):
        th = rng.beta(o1 + 1, n - o1 + 1)
        for out, q in ((proper, th), (population, np.full(R, p))):
            s1 = rng.binomial(n, q)
            for r in range(R):
                val, e0, df = table_pmse_counts(np.array([o1[r], n - o1[r]]), np.array([s1[r], n - s1[r]]))
                assert df == 1
                out[r] += val / e0 / 2
    rate = float(np.mean(proper > DEFAULT_MAX_TABLE_S_PMSE))
    assert abs(rate - np.exp(-5)) < 4 * np.sqrt(np.exp(-5) * (1 - np.exp(-5)) / R)
    assert abs(float(np.mean(population > DEFAULT_MAX_TABLE_S_PMSE)) - 0.0125) < 4 * np.sqrt(0.0125 / R)


def test_an_analysis_separated_on_the_original_is_not_a_criterion():
    # the new-user review: a kept binary column with one event in 840 records and a factor predictor
    # is quasi-completely separated (no MLE; statsmodels stops without a warning, SEs ~1e6), and its
    # CI "overlap" entered the battery's mean. It is now flagged and left out (NaN), on every release alike.
    rng = np.random.default_rng(4)
    n = 840
    o = pd.DataFrame({"g": rng.choice(list("abcd"), n), "x": rng.normal(size=n)})
    o["rare"] = 0
    o.loc[o.index[o["g"] == "a"][0], "rare"] = 1
    c = o.assign(x=rng.permutation(o["x"].to_numpy()))
    with pytest.warns(RuntimeWarning, match="separated on the original data"):
        res = analyse("rare ~ C(g) + x", family="logit", original=o, synthetic=[c, c], rule="partial")
    assert res.original_separated
    spec = ReleaseSpec.draft(o, ["x"], kinds={"rare": "binary", "g": "nominal"})
    bat = default_battery(spec, ["rare ~ C(g) + x"])
    got = measure_battery(o, [c, c], bat, pmse_copies=0, details=True)
    vals = [r["value"] for r in got["_criteria"] if r["name"].startswith("rare ~")]
    assert vals and all(np.isnan(v) for v in vals)
    assert np.isnan(got["declared_ci_overlap"])
    # an ordinary rare event (40 of 840) is not flagged
    o2 = o.assign(rare=(rng.random(n) < 0.05).astype(int))
    assert not analyse("rare ~ C(g) + x", family="logit", original=o2, synthetic=[o2, o2]).original_separated
