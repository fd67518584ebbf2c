"""Singling-out risk (anonymeter's definition): predicates, behaviour on the two reference
releases, the control-size correction, validation."""
import numpy as np
import pandas as pd
import pytest

from synthmi.errors import ColumnError, ParameterError
from synthmi.evaluation import singling_out_risk
from synthmi.evaluation.singling_out import (
    _EQ, _GE, _ISNULL, _LE, _NE, _Table, _kinds, _levels, _univariate_queries, anonymeter_control_factor,
    singling_out_probability_integral,
)

from _attack_data import splits


def _table(df):
    kinds = _kinds(df, list(df.columns))
    return _Table(df, kinds, _levels([df], kinds)), kinds


def test_predicate_semantics_with_missing_values():
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0, 3.0], "b": ["x", None, "y", "y"]})
    t, _ = _table(df)  # codes of b: x = 0, y = 1 (first appearance), missing = NaN
    col = np.array([[0], [0], [0], [1], [1], [1]])
    ops = np.array([[_ISNULL], [_NE], [_LE], [_NE], [_EQ], [_NE]])
    vals = np.array([[np.nan], [1.0], [1.0], [0.0], [0.0], [1.0]])
    # a is missing: 1 record; a != 1: the two 3s only (a missing cell meets no comparison, as
    # in polars); a <= 1: one; b != x: the two y; b == x: one; b != y: x only (missing excluded)
    assert t.singles_out(col, ops, vals).tolist() == [True, False, True, False, True, True]


def test_univariate_predicates_are_anonymeters():
    df = pd.DataFrame({"a": [1.0, 2.0, 2.0, 5.0], "b": ["x", "x", "y", None]})
    t, kinds = _table(df)
    cols, ops, vals = _univariate_queries(t, kinds, 100, np.random.default_rng(0))
    terms = {(int(c), int(o), None if np.isnan(v) else float(v)) for c, o, v in zip(cols[:, 0], ops[:, 0], vals[:, 0])}
    # a: <= 1, >= 5, == 1, == 5 single out; b: one missing -> is missing; y (code 1) held once -> == y
    assert terms == {(0, _LE, 1.0), (0, _GE, 5.0), (0, _EQ, 1.0), (0, _EQ, 5.0), (1, _ISNULL, None), (1, _EQ, 1.0)}
    # at most n_attacks are kept
    assert len(_univariate_queries(t, kinds, 2, np.random.default_rng(0))[0]) == 2


def test_probability_integral_hand_computed():
    # n = 2, w in [0, 1]: integral of 2 w (1 - w) = 1/3 = 1/(n+1)
    assert singling_out_probability_integral(2, 0.0, 1.0) == pytest.approx(1 / 3)
    # n = 1, w in [0, 0.5]: integral of w = 0.125
    assert singling_out_probability_integral(1, 0.0, 0.5) == pytest.approx(0.125)


def test_anonymeter_1_1_0_size_factor_is_data_free():
    # 1.1.0 fits the number of predicates (constant), so f(n) ~ 1/(n + 1): factor ~ (n_c + 1) / (n_o + 1)
    assert anonymeter_control_factor(500, 9768, 39074) == pytest.approx(9769 / 39075, rel=1e-3)
    assert anonymeter_control_factor(500, 1000, 1000) == 1.0


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_original_released_as_is_scores_near_one_and_independent_release_near_zero(mode):
    train, control, independent = splits(600, seed=1)
    n = 100
    own = singling_out_risk(train, train, control, mode=mode, n_attacks=n, random_state=0)
    # every predicate singles out the training set (the release is it); the control, with other
    # continuous values, rarely meets one: main rate = Wilson(100, 100) = 0.98, control <= ~0.1
    assert own.per_copy["n_success"].iloc[0] == own.per_copy["n_queries"].iloc[0] == n
    assert own.risk > 0.85
    ind = singling_out_risk(train, [independent, independent.sample(frac=1.0, random_state=2)], control,
                            mode=mode, n_attacks=n, random_state=0)
    # training and control are exchangeable for an independent release: the residual is centred
    # on 0, its propagated error (per_copy residual_error) ~0.05 univariate, ~0.17 multivariate;
    # the clipped risk max(R, 0) has mean ~0.4 error per copy, and the mean of two copies exceeds
    # 0.15 only if both are ~1.5 errors high (p < 0.01); the pooled interval must cover 0
    assert (ind.per_copy["residual_error"] < 0.2).all()
    assert ind.risk < 0.15
    assert ind.figures["singling_out_ci_low"] == 0.0
    assert ind.label == f"singling_out[{mode}]" and ind.settings["mode"] == mode


def test_same_seed_same_result_and_inputs_untouched():
    train, control, independent = splits(300, seed=2)
    before = [f.copy() for f in (train, control, independent)]
    a = singling_out_risk(train, independent, control, mode="multivariate", n_attacks=50, random_state=5)
    b = singling_out_risk(train, independent, control, mode="multivariate", n_attacks=50, random_state=5)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    for f, g in zip(before, (train, control, independent)):
        pd.testing.assert_frame_equal(f, g)
    assert "singling_out" in a.summary() and "control" in str(a.summary())


def test_validation_names_the_parameter():
    train, control, independent = splits(100, seed=3)
    with pytest.raises(ParameterError, match="'n_attacks'"):
        singling_out_risk(train, independent, control, n_attacks=0)
    with pytest.raises(ParameterError, match="'mode'"):
        singling_out_risk(train, independent, control, mode="bivariate")
    with pytest.raises(ParameterError, match="'confidence_level'"):
        singling_out_risk(train, independent, control, confidence_level=1.0)
    with pytest.raises(ParameterError, match="'n_cols'"):
        singling_out_risk(train, independent, control, mode="multivariate", n_cols=7)
    with pytest.raises(ColumnError, match="nope"):
        singling_out_risk(train, independent, control, columns=["x1", "nope"])
    with pytest.raises(ColumnError, match="control"):
        singling_out_risk(train, independent, control.drop(columns="c3"))
    with pytest.raises(ParameterError, match="'size_correction'"):
        singling_out_risk(train, independent, control, size_correction="none")


def test_grid_fit_recovers_the_size_factor_of_an_exact_model():
    from synthmi.evaluation.singling_out import _grid_fit_factor, _subsample_sizes

    sizes = _subsample_sizes(5000).astype(float)
    w = 2e-4  # on the grid's scale; successes exactly 300 P(n; 0, w)
    y = 300 * singling_out_probability_integral(sizes, 0.0, w)
    expected = singling_out_probability_integral(20000.0, 0.0, w) / singling_out_probability_integral(5000.0, 0.0, w)
    # the grid's spacing (factor 1.04 in w) bounds the error of the recovered w, hence of the ratio
    assert _grid_fit_factor(sizes, y, 5000, 20000) == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("mode", ["univariate", "multivariate"])
def test_control_a_quarter_of_the_training_size(mode):
    """An independent release with a control of 400 records for 1,600 training ones: the fitted
    size correction keeps the risk near 0 (interval covering 0); anonymeter 1.1.0's data-free
    factor (~0.25) divides the control count by ~4 and reports a clearly positive risk."""
    from _attack_data import population

    df = population(4000, 0)
    train, control, ind = df.iloc[:1600], df.iloc[1600:2000], df.iloc[2000:3600]
    copies = [ind, ind.sample(frac=1.0, random_state=1)]
    fitted = singling_out_risk(train, copies, control, mode=mode, n_attacks=200, random_state=0)
    # univariate: residuals -0.01 and 0.03 (propagated errors 0.03-0.04); multivariate: the fitted
    # factor (4, the small-weight regime) overshoots the observed training/control ratio (~3), the
    # residuals are negative (-0.17, -0.88) and the clipped risk is 0 -- near 0, if conservatively
    # in the other direction; this is the property pinned here, not an exact value
    assert fitted.figures["singling_out_ci_low"] == 0.0 and fitted.risk < 0.1
    old = singling_out_risk(train, copies, control, mode=mode, n_attacks=200, random_state=0,
                            size_correction="anonymeter-1.1.0")
    assert old.per_copy["control_size_factor"].round(2).eq(0.25).all()
    if mode == "multivariate":
        assert old.figures["singling_out_ci_low"] > 0.1
