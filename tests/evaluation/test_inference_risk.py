"""Inference risk (anonymeter's definition): behaviour on the two reference releases, validation."""
import numpy as np
import pandas as pd
import pytest

from synthmi.errors import ColumnError, ParameterError
from synthmi.evaluation import inference_risk
from synthmi.evaluation.inference_risk import _correct

from _attack_data import splits


def test_exact_match_and_missing_matches_missing():
    g = np.array(["a", None, "b", 1.0, np.nan], dtype=object)
    s = np.array(["a", None, "c", 1, "x"], dtype=object)
    # a == a; missing == missing; b != c; 1.0 == 1; a missing guess of a present secret is wrong
    assert _correct(g, s) == 3


def test_original_released_as_is_reveals_secrets_independent_release_does_not():
    train, control, independent = splits(500, seed=8)
    own = inference_risk(train, train, control, secret="secret", n_attacks=300, random_state=0)
    # the nearest synthetic record is the target itself (x1 unique): every guess right, Wilson rate
    # 0.99; the control is guessed from the neighbour's x1 alone (secret ~ x1 + noise): ~0.7-0.8
    assert own.per_copy["n_success"].iloc[0] == 300
    assert own.risk > 0.85
    train, control, independent = splits(800, seed=8)
    copies = [independent, independent.sample(frac=1.0, random_state=1)]
    ind = inference_risk(train, copies, control, secret="secret", n_attacks=800, random_state=0)
    # exchangeable targets: the residual is centred on 0; at rates ~0.75 and 800 attacks its
    # propagated error is ~0.15 per copy (per_copy residual_error), ~0.1 for the mean of two:
    # the interval must cover 0 and the (clipped) mean risk stay below 3 errors
    assert ind.figures["inference[secret]_ci_low"] == 0.0
    assert (ind.per_copy["residual_error"] < 0.2).all()
    assert ind.risk < 0.3
    assert ind.key == "inference[secret]" and "secret" in ind.describe
    assert ind.settings["aux_columns"] == ["x1", "x2", "c1", "c2", "c3"]


def test_aux_columns_and_caps_and_seed():
    train, control, independent = splits(200, seed=9)
    before = control.copy()
    a = inference_risk(train, independent, control.iloc[:60], secret="c1", aux_columns=["x1", "c3"],
                       random_state=4)
    b = inference_risk(train, independent, control.iloc[:60], secret="c1", aux_columns=["x1", "c3"],
                       random_state=4)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    pd.testing.assert_frame_equal(before, control)
    # as anonymeter: main min(500, 200), control min(500, 60), baseline min(copy, main)
    row = a.per_copy.iloc[0]
    assert (row["n_attacks"], row["n_control_attacks"], row["n_baseline_attacks"]) == (200, 60, 200)


def test_validation():
    train, control, independent = splits(100, seed=10)
    with pytest.raises(ColumnError, match="income"):
        inference_risk(train, independent, control, secret="income")
    with pytest.raises(ParameterError, match="'secret'"):
        inference_risk(train, independent, control, secret=3)
    with pytest.raises(ColumnError, match="secret"):
        inference_risk(train, independent, control, secret="secret", aux_columns=["x1", "secret"])
    with pytest.raises(ColumnError, match="nope"):
        inference_risk(train, independent, control, secret="secret", aux_columns=["nope"])
    with pytest.raises(ParameterError, match="'aux_columns'"):
        inference_risk(train, independent, control, secret="secret", aux_columns=[])
    with pytest.raises(ParameterError, match="'n_attacks'"):
        inference_risk(train, independent, control, secret="secret", n_attacks=0)
    with pytest.raises(ParameterError, match="'confidence_level'"):
        inference_risk(train, independent, control, secret="secret", confidence_level=-0.5)
    with pytest.raises(ColumnError, match="x2"):
        inference_risk(train, independent.drop(columns="x2"), control, secret="secret")
