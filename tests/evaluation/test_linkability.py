"""Linkability risk (anonymeter's definition): behaviour on the two reference releases, validation."""
import pandas as pd
import pytest

from synthmi.errors import ColumnError, ParameterError
from synthmi.evaluation import linkability_risk

from _attack_data import splits

AUX = (["x1", "c1"], ["x2", "c2", "c3"])


def test_original_released_as_is_links_nearly_everyone_independent_release_no_one():
    train, control, independent = splits(400, seed=4)
    own = linkability_risk(train, train, control, aux_columns=AUX, n_attacks=200, random_state=0)
    # each target's nearest synthetic record on either set is itself (continuous x1 / x2 are unique)
    # except the ~5% with x2 missing (two missing numbers count as different, as in anonymeter):
    # main rate ~0.95; a control record's two neighbours coincide by chance only (~1/400)
    assert own.per_copy["n_success"].iloc[0] >= 0.9 * 200
    assert own.risk > 0.85
    ind = linkability_risk(train, independent, control, aux_columns=AUX, n_attacks=200, random_state=0)
    # exchangeable targets: both rates are chance links (~ a few in 200); the interval covers 0
    assert ind.risk < 0.05 and ind.figures["linkability_ci_low"] == 0.0
    assert ind.settings["aux_columns"] == [list(AUX[0]), list(AUX[1])]


def test_more_neighbours_link_at_least_as_often():
    train, control, independent = splits(300, seed=5)
    one = linkability_risk(train, independent, control, aux_columns=AUX, n_attacks=100, random_state=1)
    five = linkability_risk(train, independent, control, aux_columns=AUX, n_attacks=100, random_state=1,
                            n_neighbors=5)
    # the same targets (same seed) and nested neighbour sets: links can only be added
    assert (five.per_copy["n_success"] >= one.per_copy["n_success"]).all()
    assert five.label == "linkability[k=5]"


def test_copies_seed_and_inputs():
    train, control, independent = splits(200, seed=6)
    before = train.copy()
    a = linkability_risk(train, [independent, train], control, aux_columns=AUX, n_attacks=50, random_state=3)
    b = linkability_risk(train, [independent, train], control, aux_columns=AUX, n_attacks=50, random_state=3)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    pd.testing.assert_frame_equal(before, train)
    assert a.figures["copies"] == 2 and a.figures["linkability_mc_error"] > 0
    assert a.figures["n_attacks"] == 50


def test_validation():
    train, control, independent = splits(100, seed=7)
    with pytest.raises(ParameterError, match="'aux_columns'.*disjoint"):
        linkability_risk(train, independent, control, aux_columns=(["x1", "c1"], ["c1"]))
    with pytest.raises(ParameterError, match="'aux_columns'"):
        linkability_risk(train, independent, control, aux_columns=(["x1"], []))
    with pytest.raises(ParameterError, match="'aux_columns'"):
        linkability_risk(train, independent, control, aux_columns=["x1", "c1"])
    with pytest.raises(ColumnError, match="nope"):
        linkability_risk(train, independent, control, aux_columns=(["x1"], ["nope"]))
    with pytest.raises(ParameterError, match="'n_attacks'.*'control'"):
        linkability_risk(train, independent, control.iloc[:10], aux_columns=AUX, n_attacks=50)
    with pytest.raises(ParameterError, match="'n_attacks'"):
        linkability_risk(train, independent, control, aux_columns=AUX, n_attacks=-1)
    with pytest.raises(ParameterError, match="'n_neighbors'"):
        linkability_risk(train, independent, control, aux_columns=AUX, n_neighbors=0)
    with pytest.raises(ParameterError, match="'confidence_level'"):
        linkability_risk(train, independent, control, aux_columns=AUX, confidence_level=0)
    # default n_attacks: anonymeter's 500 capped by the frames
    r = linkability_risk(train, independent, control.iloc[:40], aux_columns=AUX, random_state=0)
    assert r.figures["n_attacks"] == 40
