"""Risk subgroups: hand-built labels (all three cases, the k0 boundary),
missing values, brute-force property test and bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synthmi.evaluation import _matching as mt
from synthmi.evaluation.subgroups import RISK_LEVELS, risk_subgroups
from _matching_reference import CAT_POOL, CONT_POOL, TOL_POOL, brute_match

nan = np.nan


def _hand():
    rows = [
        # F, white: ages 30, 30.5, 31 are within 1 of two others each; the two 40s only of each other.
        ("F", "white", 30.0),   # 0: a=4, c=2 (30.5, 31)          -> low
        ("F", "white", 30.5),   # 1: a=4, c=2 (30, 31)            -> low
        ("F", "white", 31.0),   # 2: a=4, c=2 (30, 30.5; 31-1=30 on the closed edge) -> low at k0=2
        ("F", "white", 40.0),   # 3: a=4, c=1                     -> medium
        ("F", "white", 40.0),   # 4: a=4, c=1                     -> medium
        ("M", "white", 50.0),   # 5: a=1 = k0-1                   -> high
        ("M", "white", 50.0),   # 6: a=1                          -> high
        ("M", "non-white", 60.0),  # 7: a=2 = k0, c=1             -> medium
        ("M", "non-white", 60.0),  # 8: a=2, c=1                  -> medium
        ("M", "non-white", 70.0),  # 9: a=2, c=0                  -> medium
        ("F", "non-white", nan),   # 10: a=2, c=1 (row 11: missing matches missing) -> medium
        ("F", "non-white", nan),   # 11: same                     -> medium
        ("F", "non-white", 20.0),  # 12: a=2, c=0                 -> medium
        (None, "white", 30.0),     # 13: a=1 (only row 14 has missing sex), c=1 -> high at k0=2
        (None, "white", 30.0),     # 14: same                     -> high
    ]
    df = pd.DataFrame(rows, columns=["sex", "race", "age"])
    df["sex"] = pd.Categorical(df["sex"], categories=["F", "M"])
    df["race"] = pd.Categorical(df["race"], categories=["white", "non-white"])
    return df.set_axis(pd.Index([f"r{i}" for i in range(len(df))]), axis=0)


def test_hand_built_labels_and_k0_boundary():
    df = _hand()
    before = df.copy()
    res = risk_subgroups(df, ["sex", "race", "age"], k0=2, tolerance={"age": 1})
    pd.testing.assert_frame_equal(df, before)
    expected = ["low"] * 3 + ["medium"] * 2 + ["high"] * 2 + ["medium"] * 6 + ["high"] * 2
    assert res.labels.tolist() == expected
    assert list(res.labels.index) == list(df.index)
    assert res.labels.cat.categories.tolist() == list(RISK_LEVELS) and res.labels.cat.ordered
    assert res.n_same_categorical.tolist() == [4, 4, 4, 4, 4, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1]
    assert res.n_close.tolist() == [2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1]
    assert res.counts.to_dict() == {"low": 3, "medium": 8, "high": 4}

    # k0 = 1: every record with one close other is low; rows 9, 12 (a >= 1, c = 0) stay medium.
    one = risk_subgroups(df, ["sex", "race", "age"], k0=1, tolerance={"age": 1})
    assert one.labels.tolist() == ["low"] * 9 + ["medium", "low", "low", "medium", "low", "low"]
    # k0 = 3: c_i = 2 < 3 -> rows 0-4 medium (a=4 >= 3); everyone with a <= 2 is high.
    three = risk_subgroups(df, ["sex", "race", "age"], k0=3, tolerance={"age": 1})
    assert three.labels.tolist() == ["medium"] * 5 + ["high"] * 10
    # Tolerance 0.5: 30 -> [29.5, 30.5] holds 30.5 only (c=1, medium); 30.5 -> [30, 31]
    # holds both (c=2, low); 31 -> [30.5, 31.5] holds 30.5 only (medium).
    half = risk_subgroups(df, ["sex", "race", "age"], k0=2, tolerance={"age": 0.5})
    assert half.labels.iloc[:3].tolist() == ["medium", "low", "medium"]
    assert "medium" in half.report() and half.to_dict()["counts"]["low"] == 1
    assert list(res.to_frame().columns) == ["label", "n_same_categorical", "n_close"]


def test_categorical_only_and_continuous_only():
    df = pd.DataFrame({"s": pd.Categorical(["a", "a", "a", "b"])})
    # no continuous QI: close = same categorical -> low or high only.
    assert risk_subgroups(df, ["s"], k0=2).labels.tolist() == ["low", "low", "low", "high"]
    x = pd.DataFrame({"x": [0.0, 0.1, 5.0, 5.05]})
    # no categorical QI: a_i = n - 1 = 3 for everyone; close within 0.1 -> one other each.
    r = risk_subgroups(x, ["x"], k0=1, tolerance=0.1)
    assert r.labels.tolist() == ["low"] * 4
    assert risk_subgroups(x, ["x"], k0=2, tolerance=0.1).labels.tolist() == ["medium"] * 4


@st.composite
def sub_case(draw):
    n = draw(st.integers(1, 12))
    n_cat = draw(st.integers(0, 2))
    n_cont = draw(st.integers(0 if n_cat else 1, 2))
    cols = {}
    for k in range(n_cat):
        cols[f"c{k}"] = pd.Categorical(draw(st.lists(st.sampled_from(CAT_POOL), min_size=n, max_size=n)), categories=["a", "b"])
    for k in range(n_cont):
        cols[f"x{k}"] = draw(st.lists(st.sampled_from(CONT_POOL), min_size=n, max_size=n))
    df = pd.DataFrame(cols)
    _, cont = mt.split_kinds(df, list(df.columns))
    tol = {c: draw(st.sampled_from(TOL_POOL)) for c in cont}
    return df, tol, draw(st.integers(1, 4)), draw(st.sampled_from([1, 2, mt.MAX_CANDIDATES]))


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sub_case())
def test_fast_matches_brute_force(case):
    df, tol, k0, chunk = case
    cat, cont = mt.split_kinds(df, list(df.columns))
    saved = mt.MAX_CANDIDATES
    mt.MAX_CANDIDATES = chunk
    try:
        res = risk_subgroups(df, list(df.columns), k0=k0, tolerance=tol or None)
    finally:
        mt.MAX_CANDIDATES = saved
    rows = df.astype(object).to_dict("records")
    a, c = [], []
    for i, t in enumerate(rows):
        others = [y for j, y in enumerate(rows) if j != i]
        a.append(sum(brute_match(t, y, cat, [], {}) for y in others))
        c.append(sum(brute_match(t, y, cat, cont, tol) for y in others))
    a, c = np.array(a), np.array(c)
    np.testing.assert_array_equal(res.n_same_categorical.to_numpy(), a)
    np.testing.assert_array_equal(res.n_close.to_numpy(), c)
    want = np.where(c >= k0, "low", np.where(a >= k0, "medium", "high"))
    assert res.labels.astype(str).tolist() == want.tolist()


def test_adult_shape():
    from synthmi.data import load_adult

    df = load_adult(recode=True)
    res = risk_subgroups(df, ["age", "sex", "race", "education"], k0=5, tolerance={"age": 2})
    assert int(res.counts.sum()) == len(df)
    # Widening the tolerance can only move records towards low risk.
    wide = risk_subgroups(df, ["age", "sex", "race", "education"], k0=5, tolerance={"age": 5})
    assert (wide.labels.cat.codes <= res.labels.cat.codes).all()
    assert (res.n_close <= res.n_same_categorical).all()


def test_bad_input():
    df = _hand()
    qi = ["sex", "race", "age"]
    for bad in (0, -1):
        with pytest.raises(ValueError, match="'k0' parameter of risk_subgroups must be >= 1"):
            risk_subgroups(df, qi, k0=bad, tolerance={"age": 1})
    with pytest.raises(ValueError, match="'k0'.*whole number"):
        risk_subgroups(df, qi, k0=1.5)
    with pytest.raises(ValueError, match="'tolerance' parameter of risk_subgroups must be >= 0 for column 'age'"):
        risk_subgroups(df, qi, k0=2, tolerance={"age": -0.5})
    with pytest.raises(ValueError, match="'quasi_identifiers'.*\\['height'\\]"):
        risk_subgroups(df, ["sex", "height"], k0=2)
    with pytest.raises(ValueError, match="'tolerance'.*'height'"):
        risk_subgroups(df, qi, k0=2, tolerance={"height": 1})
    with pytest.raises(ValueError, match="'quasi_identifiers'"):
        risk_subgroups(df, [], k0=2)


@pytest.mark.slow
def test_cli_subgroups(tmp_path):
    import json

    from synthmi.cli import main

    df = _hand()
    df.to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "sg.json"
    rc = main(["subgroups", "--data", str(tmp_path / "d.csv"), "--qi", "sex,race,age", "--k0", "2",
               "--tol", "age=1", "--out", str(out), "--quiet"])
    assert rc == 0
    assert json.loads(out.read_text())["counts"] == {"low": 3, "medium": 8, "high": 4}
    assert pd.read_csv(tmp_path / "sg.records.csv")["label"].tolist()[:5] == ["low"] * 3 + ["medium"] * 2
    assert main(["subgroups", "--data", str(tmp_path / "d.csv"), "--qi", "sex,age", "--k0", "0",
                 "--out", str(out), "--overwrite", "--quiet"]) == 1
