"""Structural rules (synthpop's rules / rvalues): the governed column is fitted on the rows the rule
leaves free and the copies take the rule's value on the others, in the sequential and the joint
predictive alike (synthmi.models.base, synthmi.models.predictive)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from synthmi.data.agency import AGENCY_QI, AGENCY_RULES, make_agency_data
from synthmi.models.base import rule_columns
from synthmi.models.dami import DAMISynthesizer
from synthmi.models.rubin import RubinSynthesizer


def _small(n_a: int = 150, n_b: int = 200, k_b: int = 60, seed: int = 0) -> pd.DataFrame:
    """Kept g (a/b), kept z (noise); QI y: 'u' on every g == 'a' row (the rule), k_b 'v' of n_b g == 'b' rows;
    QI x continuous, depends on y (so y is a predictor of a later model)."""
    rng = np.random.default_rng(seed)
    g = np.array(["a"] * n_a + ["b"] * n_b)
    y = np.array(["u"] * n_a + ["v"] * k_b + ["u"] * (n_b - k_b))
    x = 10 + 2.0 * (y == "v") + rng.normal(0, 1, n_a + n_b)
    return pd.DataFrame({"g": pd.Categorical(g), "z": rng.normal(0, 1, n_a + n_b),
                         "y": pd.Categorical(y, categories=["u", "v"]), "x": x})


RULE = {"y": {"rule": "g == 'a'", "value": "u"}}


def test_rule_columns_are_read_from_the_condition():
    cols = ["employed", "age", "my col", "g"]
    assert rule_columns("employed == 'No'", cols) == {"employed"}
    assert rule_columns("employed == 'No' or `my col` > 3", cols) == {"employed", "my col"}
    assert rule_columns("age < @limit", cols) == {"age"}
    assert rule_columns("nonsense ==", cols) is None


def test_hand_checkable_case_fit_uses_the_free_rows_only():
    """y's logit (predictor g only) is fitted on the 200 g == 'b' rows alone. There g is constant, so
    its dummy is aliased with the intercept and dropped: an intercept-only logit whose mode under the
    N(0, s^2) prior solves the score equation k - n sigma(b0) = b0 / s^2 (k = 60 'v' of n = 200),
    near logit(60/200). Fitted on all 350 rows instead it would be near logit(60/350) with a g term."""
    df = _small()
    syn = RubinSynthesizer(progressbar=False, predictor_matrix={"y": {"g": 1, "z": 0}, "x": {"g": 1, "z": 0, "y": 1}})
    syn.fit(df, ["y", "x"], keep=["g", "z"], rules=RULE)
    cy = syn.conditionals_[0]
    assert cy.rule == ("y", 0, "u") and cy.family == "logit"
    # the grouped likelihood holds the free rows only: 140 'u' and 60 'v'
    np.testing.assert_array_equal(cy.fast.Y.sum(axis=0), [140, 60])
    assert cy.coef_names == ["(Intercept)"]  # g's dummy is constant on the free rows
    mode, _ = cy.fast.mode()
    # the intercept's prior: N(0, 10^2) under the default (glm.default_prior_sd), written out by hand
    np.testing.assert_array_equal(cy.fast.prior_sd, [10.0])
    s2 = 10.0**2
    # the scalar score equation by bisection (the hand computation)
    lo, hi = -5.0, 5.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 60 - 200 * expit(mid) - mid / s2 > 0 else (lo, mid)
    assert mode[0] == pytest.approx(lo, abs=1e-8)
    assert lo == pytest.approx(np.log(60 / 140), abs=0.01)  # the prior barely moves it
    # x's model is fitted on every row (it has no rule) and keeps y as a predictor
    assert "y" in syn.conditionals_[1].predictors and syn.conditionals_[1].rule is None


@pytest.mark.slow
@pytest.mark.parametrize("predictive", ["sequential", "joint"])
def test_copies_honour_the_rule_and_free_rows_match(predictive):
    """Rule rows are 'u' in every copy; on the free rows the share of 'v' is the original's 0.3 within
    Monte Carlo error. Each copy's share is binomial around its own posterior draw of the rate, so
    its sd about 0.3 is about sqrt(2 p (1 - p) / n) (binomial noise plus posterior noise of the same
    size), and the copies are independent given the data: the mean of M copies has sd
    sqrt(2 p (1 - p) / (n M)); 4 sd."""
    df = _small(n_a=300, n_b=600, k_b=180)
    cls = DAMISynthesizer if predictive == "joint" else RubinSynthesizer
    kw = {"masks": {"x": {"K": 2, "sigma_e": 1.0}}, "predictive": predictive, "random_state": 3} if cls is DAMISynthesizer else {}
    syn = cls(progressbar=False, **kw).fit(df, ["y", "x"], keep=["g", "z"], rules=RULE)
    M = 40
    out = syn.sample(M, random_state=5)
    a = (df["g"] == "a").to_numpy()
    shares = []
    for c in out.copies:
        assert (c.loc[a, "y"] == "u").all()
        shares.append(float((c.loc[~a, "y"] == "v").mean()))
    p, n = 0.3, int((~a).sum())
    assert abs(np.mean(shares) - p) < 4 * np.sqrt(2 * p * (1 - p) / (n * M))
    # x given y keeps its gap (2) on the free rows: the rule did not break the later model
    gap = np.mean([c.loc[~a & (c["y"] == "v"), "x"].mean() - c.loc[~a & (c["y"] == "u"), "x"].mean() for c in out.copies])
    assert gap == pytest.approx(2.0, abs=0.3)
    # same seed -> identical copies
    again = cls(progressbar=False, **kw).fit(df, ["y", "x"], keep=["g", "z"], rules=RULE).sample(M, random_state=5)
    for c1, c2 in zip(out.copies, again.copies):
        pd.testing.assert_frame_equal(c1, c2, check_exact=True)


def test_data_that_break_the_rule_warn_and_copies_follow_it():
    df = _small()
    df.loc[[0, 1, 2], "y"] = "v"  # three g == 'a' rows break the rule
    with pytest.warns(UserWarning, match=r"Column 'y' breaks its rule on 3 rows"):
        syn = RubinSynthesizer(progressbar=False).fit(df, ["y", "x"], keep=["g", "z"], rules=RULE)
    np.testing.assert_array_equal(syn.conditionals_[0].fast.Y.sum(axis=0), [140, 60])
    out = syn.sample(2, random_state=1)
    for c in out.copies:
        assert (c.loc[df["g"] == "a", "y"] == "u").all()
    with pytest.raises(ValueError, match="rule for column 'y' sets the value 'w', which is not one of the column's levels"):
        RubinSynthesizer(progressbar=False).fit(_small(), ["y", "x"], keep=["g", "z"],
                                                rules={"y": {"rule": "g == 'a'", "value": "w"}})


def test_rule_on_a_synthesized_column_is_applied_after_synthesis():
    """A condition that reads a quasi-identifier cannot fix rows before that column exists in the copy:
    the model is fitted on every row and the rule applied to each copy (as before)."""
    df = _small()
    rules = {"x": {"rule": "y == 'v'", "value": 0.0}}
    syn = RubinSynthesizer(progressbar=False).fit(df, ["y", "x"], keep=["g", "z"], rules=rules)
    assert syn.rule_rows_ == {} and all(c.rule is None for c in syn.conditionals_)
    for c in syn.sample(2, random_state=1).copies:
        assert (c.loc[c["y"] == "v", "x"] == 0).all()


# the kept columns that carry the skip pattern (state and the NHANES columns left out: with a
# 51-level predictor every logit needs the HMC sampler, minutes at the suite's load)
AGENCY_KEEP_SMALL = ["education_num", "employed", "occupation", "weight"]


@pytest.fixture(scope="module")
def agency():
    return make_agency_data(1500, seed=4)[AGENCY_QI + AGENCY_KEEP_SMALL]


@pytest.mark.slow
@pytest.mark.parametrize("predictive", ["sequential", "joint"])
def test_agency_skip_pattern_needs_no_model(agency, predictive):
    """Hours are missing exactly when not employed: on the free rows (employed) the indicator has one
    level, so it has no model ('fixed'), is no predictor of later models (aliased with employed), and
    the copies have hours missing exactly where employed == 'No'; the hours of the employed and the
    share of zero incomes match the original within Monte Carlo error."""
    syn = DAMISynthesizer(masks={"age": {"K": 2, "sigma_e": 3.0}}, transforms={"income": "log"},
                          random_state=2, progressbar=False, predictive=predictive)
    syn.fit(agency, AGENCY_QI, keep=AGENCY_KEEP_SMALL, weights="weight", semicont={"income": [0]}, rules=AGENCY_RULES)
    conds = {c.column: c for c in syn.conditionals_}
    part = conds["hours_per_week_part"]
    assert part.family == "fixed" and part.rule[2] == "<NA>" and part.free_level == 0
    assert all("hours_per_week_part" not in c.predictors for c in syn.conditionals_)
    M = 6
    out = syn.sample(M, random_state=9)
    assert out.diagnostics["columns"]["hours_per_week_part"]["family"] == "fixed"
    emp = (agency["employed"] == "Yes").to_numpy()
    n = int(emp.sum())
    for c in out.copies:
        np.testing.assert_array_equal(c["hours_per_week"].isna().to_numpy(), ~emp)
    # mean hours of the employed: copies vs original; sd of a copy's mean about the original's is about
    # sqrt(2) s / sqrt(n) (predictive noise plus posterior noise), of the mean of M copies sqrt(2/(n M)) s
    h = agency.loc[emp, "hours_per_week"]
    got = np.mean([c.loc[emp, "hours_per_week"].mean() for c in out.copies])
    assert abs(got - h.mean()) < 4 * h.std() * np.sqrt(2 / (n * M))
    p0 = float((agency["income"] == 0).mean())
    z = np.mean([(c["income"] == 0).mean() for c in out.copies])
    assert abs(z - p0) < 4 * np.sqrt(2 * p0 * (1 - p0) / (len(agency) * M))

