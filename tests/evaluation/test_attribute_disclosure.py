"""Attribute disclosure (DiSCO and the synthpop key-table measures, repU, the
matching attribute risk): brute-force reference on random cases, a hand-worked
example, behaviour in simulation, and bad input."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synthmi.evaluation import _matching as mt
from synthmi.evaluation.attribute_disclosure import attribute_disclosure
from _attribute_reference import brute_key_measures, brute_matching_attribute
from _matching_reference import CAT_POOL, CONT_POOL, TOL_POOL

TARGET_CAT_POOL = ["yes", "no", "maybe", None]
TARGET_CONT_POOL = [0.0, 0.1, 0.2, 0.3, 1.0, 5.0, float("nan")]


@st.composite
def attribute_case(draw):
    n = draw(st.integers(1, 8))
    n_cat = draw(st.integers(0, 2))
    n_cont = draw(st.integers(0 if n_cat else 1, 2))
    as_categorical = draw(st.booleans())
    target_continuous = draw(st.booleans())

    def cat_col(k, size, pool):
        vals = draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size))
        s = pd.Series(vals, dtype=object)
        return pd.Categorical(s, categories=["a", "b"]) if as_categorical else s

    def frame(size, cat_pool):
        cols = {f"c{k}": cat_col(k, size, cat_pool) for k in range(n_cat)}
        for k in range(n_cont):
            cols[f"x{k}"] = draw(st.lists(st.sampled_from(CONT_POOL), min_size=size, max_size=size))
        pool = TARGET_CONT_POOL if target_continuous else TARGET_CAT_POOL
        vals = draw(st.lists(st.sampled_from(pool), min_size=size, max_size=size))
        cols["y"] = pd.Series(vals, dtype=float if target_continuous else object)
        return pd.DataFrame(cols)

    original = frame(n, CAT_POOL)
    # Copies need not be row-aligned: any size; object columns may carry a level the original lacks.
    copies = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            copies.append(original.copy())
        else:
            copies.append(frame(draw(st.integers(1, 9)), CAT_POOL if as_categorical else CAT_POOL + ["z"]))
    _, cont = mt.split_kinds(original, [c for c in original.columns if c != "y"])
    tol = {c: draw(st.sampled_from(TOL_POOL)) for c in cont}
    _, t_cont = mt.split_kinds(original, ["y"])
    t_tol = draw(st.sampled_from([None, 0.1, 1.0])) if t_cont else None
    return original, copies, tol, t_tol


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attribute_case())
def test_fast_matches_brute_force(case):
    original, copies, tol, t_tol = case
    before = [original.copy()] + [c.copy() for c in copies]
    qis = [c for c in original.columns if c != "y"]
    res = attribute_disclosure(original, copies, qis, "y", tolerance=tol or None, target_tolerance=t_tol)
    cat, cont = mt.split_kinds(original, qis)
    _, t_cont = mt.split_kinds(original, ["y"])
    m = len(copies)
    acc = {k: np.zeros(len(original)) for k in ("disco", "dis", "in_s", "dcap", "repu", "a", "allc", "none")}
    for j, cp in enumerate(copies):
        km, uis = brute_key_measures(original, cp, qis, "y")
        a, s, allc = brute_matching_attribute(original, cp, cat, cont, tol, "y", bool(t_cont), t_tol)
        row = res.per_copy.iloc[j]
        assert row["DiSCO"] == pytest.approx(km["disco"].mean(), abs=1e-12)
        assert row["DiS"] == pytest.approx(km["dis"].mean(), abs=1e-12)
        assert row["iS"] == pytest.approx(km["in_s"].mean(), abs=1e-12)
        assert row["Dorig"] == pytest.approx(km["dorig"].mean(), abs=1e-12)
        assert row["DiSDiO"] == pytest.approx((km["disco"] * km["dorig"]).mean(), abs=1e-12)
        assert row["DCAP"] == pytest.approx(km["dcap"].mean(), abs=1e-12)
        assert row["repU"] == pytest.approx(km["repu"].mean(), abs=1e-12)
        assert row["UiO"] == pytest.approx(km["uio"].mean(), abs=1e-12)
        assert row["UiS"] == pytest.approx(uis, abs=1e-12)
        if km["dis"].sum():
            assert row["TCAP"] == pytest.approx(km["disco"].sum() / km["dis"].sum(), abs=1e-12)
        else:
            assert math.isnan(row["TCAP"])
        assert row["expected_correct_attributions"] == pytest.approx(a.sum(), abs=1e-12)
        assert row["all_matches_correct_share"] == pytest.approx(allc.mean(), abs=1e-12)
        assert row["no_match_share"] == pytest.approx((s == 0).mean(), abs=1e-12)
        for k, v in (("disco", km["disco"]), ("dis", km["dis"]), ("in_s", km["in_s"]), ("dcap", km["dcap"]),
                     ("repu", km["repu"]), ("a", a), ("allc", allc), ("none", (s == 0).astype(float))):
            acc[k] += v
    rec = res.records
    for col, k in (("disco", "disco"), ("dis", "dis"), ("in_synthetic", "in_s"), ("dcap", "dcap"), ("repU", "repu"),
                   ("attribute_risk", "a"), ("all_matches_correct", "allc"), ("no_match", "none")):
        np.testing.assert_allclose(rec[col].to_numpy(), acc[k] / m, rtol=0, atol=1e-12, err_msg=col)
    assert res.figures["expected_correct_attributions"] == pytest.approx(acc["a"].sum() / m, abs=1e-12)
    assert res.figures["share_above_threshold"] == pytest.approx(((acc["a"] / m) > 0.5).mean(), abs=1e-12)
    for a_, b_ in zip(before, [original] + copies):
        pd.testing.assert_frame_equal(a_, b_)  # inputs never mutated


def _hand():
    original = pd.DataFrame({
        "sex": pd.Categorical(["F", "F", "M", "M"]),
        "age": [30.0, 30.0, 40.0, 50.0],
        "y": pd.Categorical(["yes", "no", "yes", "no"]),
    })
    # A fully synthetic copy: four rows, not aligned with the original.
    copy = pd.DataFrame({
        "sex": pd.Categorical(["F", "M", "M", "M"]),
        "age": [30.0, 40.0, 40.0, 50.0],
        "y": pd.Categorical(["yes", "yes", "yes", "yes"], categories=["no", "yes"]),
    })
    return original, copy


def test_hand_worked_example():
    # Keys (sex, age) exactly. Copy: F30 -> {yes}; M40 -> {yes, yes}; M50 -> {yes}.
    #   rec0 F30 yes: p_s = 1 -> DiSCO;  rec1 F30 no: p_s = 0, key disclosive (DiS) but wrong;
    #   rec2 M40 yes: p_s = 1 -> DiSCO;  rec3 M50 no: p_s = 0, DiS.
    # DiSCO 2/4, DiS 4/4, iS 1, DCAP (1+0+1+0)/4, TCAP = 0.5.
    # Original: F30 has {yes, no} (not disclosive), M40 and M50 unique -> Dorig 2/4, DiSDiO 1/4 (rec2).
    # UiO 2/4 (M40, M50); repU: M50 unique in both -> 1/4; UiS: F30 and M50 unique in the copy -> 2/4.
    # Matching, age within 10: rec0 F[20,40] -> {F30 yes}: A = 1; rec1 -> {F30 yes}: A = 0;
    #   rec2 M[30,50] -> {M40, M40, M50}, all yes: A = 1; rec3 M[40,60] -> same three, all yes: A = 0.
    original, copy = _hand()
    res = attribute_disclosure(original, copy, ["sex", "age"], "y", tolerance={"age": 10}, by="sex")
    s = res.figures
    expect = {"DiSCO": 0.5, "DiS": 1.0, "iS": 1.0, "DCAP": 0.5, "TCAP": 0.5, "Dorig": 0.5, "DiSDiO": 0.25,
              "UiO": 0.5, "repU": 0.25, "UiS": 0.5, "UiOiS": 0.5, "expected_correct_attributions": 2.0,
              "attribute_risk_mean": 0.5, "share_above_threshold": 0.5, "all_matches_correct_share": 0.5,
              "no_match_share": 0.0}
    for k, v in expect.items():
        assert s[k] == pytest.approx(v, abs=1e-15), k
    np.testing.assert_allclose(res.records["attribute_risk"], [1, 0, 1, 0])
    np.testing.assert_allclose(res.records["disco"], [1, 0, 1, 0])
    np.testing.assert_allclose(res.records["mean_n_matches"], [1, 1, 3, 3])
    np.testing.assert_allclose(res.by_group.loc["M", ["disco", "repU", "dcap"]].to_numpy(dtype=float), [0.5, 0.5, 0.5])
    # Releasing the original itself: DiSCO = Dorig and repU = UiO, whatever the data.
    same = attribute_disclosure(original, original, ["sex", "age"], "y").figures
    assert same["DiSCO"] == same["Dorig"] == 0.5 and same["repU"] == same["UiO"] == 0.5
    assert same["DCAP"] == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)  # synthpop's CAPd of the original
    assert "yes" not in res.report() and "F" not in str(res.to_dict()["summary"])  # no confidential values


def test_dcap_equals_matching_risk_with_exact_keys():
    # With exact matching on categorical keys and a categorical target, A_im is record i's DCAP term.
    rng = np.random.default_rng(3)
    n = 400
    o = pd.DataFrame({"a": pd.Categorical(rng.integers(0, 4, n)), "b": pd.Categorical(rng.integers(0, 3, n)),
                      "y": pd.Categorical(rng.integers(0, 3, n))})
    c = o.sample(frac=1.0, random_state=1).reset_index(drop=True)
    c["y"] = pd.Categorical(rng.integers(0, 3, n), categories=o["y"].cat.categories)
    res = attribute_disclosure(o, [c, o], ["a", "b"], "y")
    np.testing.assert_allclose(res.records["dcap"], res.records["attribute_risk"], rtol=0, atol=1e-15)


def test_simulation_independent_target_gives_base_cap():
    # A copy whose target is drawn independently of the keys: p_s(t|k) estimates P(t), so
    # DCAP -> sum_t P(t)^2 = 0.3^2 + 0.7^2 = 0.58. n = 30,000 in 3 keys: each p_s has sd
    # <= sqrt(0.21 / 10,000) ~ 0.005; DCAP's sd is below that, so 0.02 is > 4 sd.
    rng = np.random.default_rng(11)
    n = 30_000
    o = pd.DataFrame({"k": pd.Categorical(rng.integers(0, 3, n)), "y": pd.Categorical(rng.random(n) < 0.3)})
    c = o.copy()
    c["y"] = pd.Categorical(rng.random(n) < 0.3, categories=o["y"].cat.categories)
    s = attribute_disclosure(o, c, ["k"], "y").figures
    assert s["DCAP"] == pytest.approx(0.58, abs=0.02)
    assert s["DiSCO"] == 0.0  # every key shows both target values
    # The original released as is: every record's key group is (nearly) a 30/70 mix, the same figure.
    assert attribute_disclosure(o, o, ["k"], "y").figures["DCAP"] == pytest.approx(0.58, abs=0.02)


def test_simulation_masking_lowers_disco():
    # Unique keys make the target disclosive; perturbing the keys of half the records lowers DiSCO.
    # 300 records in 144 keys: about 2 per key, so some keys show one target value.
    rng = np.random.default_rng(5)
    n = 300
    o = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float), "sex": pd.Categorical(rng.integers(0, 2, n)),
                      "y": pd.Categorical(rng.integers(0, 5, n))})
    noisy = o.copy()
    flip = rng.random(n) < 0.5
    noisy.loc[flip, "age"] = noisy.loc[flip, "age"] + rng.integers(1, 4, flip.sum())
    d0 = attribute_disclosure(o, o, ["age", "sex"], "y").figures["DiSCO"]
    d1 = attribute_disclosure(o, noisy, ["age", "sex"], "y").figures["DiSCO"]
    assert d0 > 0.2 and d1 < 0.75 * d0  # seed 5: 0.22 -> 0.13


def test_bad_input():
    original, copy = _hand()
    with pytest.raises(ValueError, match="'target'.*not a quasi-identifier"):
        attribute_disclosure(original, copy, ["sex", "age"], "sex")
    with pytest.raises(ValueError, match="target_tolerance"):
        attribute_disclosure(original, copy, ["sex", "age"], "y", target_tolerance=1.0)
    with pytest.raises(ValueError, match="nope"):
        attribute_disclosure(original, copy, ["sex", "age"], "nope")
    with pytest.raises(ValueError, match="lacks the columns"):
        attribute_disclosure(original, copy.drop(columns="y"), ["sex", "age"], "y")
    with pytest.raises(ValueError, match="threshold"):
        attribute_disclosure(original, copy, ["sex", "age"], "y", threshold=2)
    with pytest.raises(ValueError, match="by"):
        attribute_disclosure(original, copy, ["sex", "age"], "y", by="age")  # a float column as labels


def test_cli_disclosure_with_target(tmp_path):
    import json

    from synthmi.cli import main
    from synthmi.synthetic import SyntheticData

    original, copy = _hand()
    original.to_csv(tmp_path / "orig.csv", index=False)
    SyntheticData(copies=[copy], method="test", quasi_identifiers=["sex", "age", "y"]).to_dir(tmp_path / "syn")
    out = tmp_path / "risk.json"
    rc = main(["disclosure", "--original", str(tmp_path / "orig.csv"), "--synthetic", str(tmp_path / "syn"),
               "--qi", "sex,age", "--tol", "age=10", "--target", "y", "--out", str(out), "--quiet"])
    assert rc == 0
    d = json.loads(out.read_text())["attribute_disclosure"]["summary"]
    assert d["DiSCO"] == pytest.approx(0.5) and d["expected_correct_attributions"] == pytest.approx(2.0)
    rec = pd.read_csv(tmp_path / "risk.records.csv")
    np.testing.assert_allclose(rec["attr_attribute_risk"], [1, 0, 1, 0])
    assert not {"age", "sex", "y"} & set(rec.columns)  # no confidential values in the output


def test_numeric_key_grouped_by_hand():
    """synthpop's ngroups_keys: a numeric key cut at the pooled (original + copies) quantiles, by hand.

    Original k = 1..6 with targets a a b b c c; the copy's k = 1.5 .. 6.5 (every value off the original's
    support) with targets a a b c c c. Pooled sorted values 1, 1.5, ..., 6.5 (12); type-7 quantiles at 1/3
    and 2/3: h = 11/3 -> 2.5 + (2/3)(0.5) = 2.8333, h = 22/3 -> 4.5 + (1/3)(0.5) = 4.6667; breaks
    [1, 2.833, 4.667, 6.5], groups {1, 2 | 1.5, 2.5}, {3, 4 | 3.5, 4.5}, {5, 6 | 5.5, 6.5}. The copy's groups
    hold (a, a), (b, c), (c, c): DiSCO = DiS = 4/6 (groups 1 and 3), iS = 1, DCAP = (1+1+.5+.5+1+1)/6 = 5/6,
    TCAP = 1, repU = UiS = 0 (two records per group). Exact keys read 0 for all but UiS (1), with a warning."""
    o = pd.DataFrame({"k": [1.0, 2, 3, 4, 5, 6], "t": pd.Categorical(list("aabbcc"))})
    c = pd.DataFrame({"k": o["k"] + 0.5, "t": pd.Categorical(list("aabccc"))})
    exact = attribute_disclosure(o, [c], ["k"], "t")
    assert exact.figures["DiSCO"] == 0.0 and exact.figures["iS"] == 0.0 and exact.figures["UiS"] == 1.0
    assert len(exact.settings["warnings"]) == 1 and "'k'" in exact.settings["warnings"][0]
    assert "100%" in exact.settings["warnings"][0] and "WARNING" in exact.report()
    g = attribute_disclosure(o, [c], ["k"], "t", ngroups_keys=3)
    f = g.figures
    assert f["DiSCO"] == pytest.approx(4 / 6) and f["DiS"] == pytest.approx(4 / 6) and f["iS"] == 1.0
    assert f["DCAP"] == pytest.approx(5 / 6) and f["TCAP"] == 1.0 and f["repU"] == 0.0 and f["UiS"] == 0.0
    assert g.settings["key_groups"]["k"] == {"ngroups": 3, "distinct": 12, "groups": 3, "style": "quantile"}
    assert g.settings["warnings"] == [] and "grouped into 3 quantile groups" in g.report()
    # a dict names keys; the matching measures are unchanged by grouping (it is for the key tables only)
    d = attribute_disclosure(o, [c], ["k"], "t", ngroups_keys={"k": 3})
    assert d.figures["DiSCO"] == f["DiSCO"]
    assert g.figures["expected_correct_attributions"] == exact.figures["expected_correct_attributions"]
    # at most ngroups distinct pooled values: left exact (grouping would only merge levels)
    few = attribute_disclosure(o, [o], ["k"], "t", ngroups_keys=6)
    assert few.settings["key_groups"]["k"]["groups"] == 0 and few.figures["DiSCO"] == 1.0


def test_continuous_copy_key_tables_read_the_grouped_figure():
    """randhie's case (new-user review): a key with 30 integer values that a DA-MI-like release smooths
    (each copy value = the original's + N(0, 0.3)), target tied to the key. Exact key tables read DiSCO 0
    (every copy key unique) and warn; with ngroups_keys = 5 they read the grouped figure, equal to the
    brute-force key measures on frames cut at the same pooled type-7 quantiles ([b_j, b_j+1), last closed),
    and near the figure of a release that copies the key exactly (the smear moves few records across a
    break: DiSCO within 0.1 of it, its binomial sd sqrt(.25/300) = 0.03 x 3)."""
    rng = np.random.default_rng(11)
    n = 300
    k = rng.integers(0, 30, n).astype(float)
    t = pd.Categorical(np.where(k + rng.normal(0, 3, n) > 15, "hi", "lo"))
    o = pd.DataFrame({"k": k, "t": t})
    copies = [pd.DataFrame({"k": k + rng.normal(0, 0.3, n), "t": t}) for _ in range(2)]
    exact = attribute_disclosure(o, copies, ["k"], "t")
    assert exact.figures["DiSCO"] == 0.0 and exact.figures["repU"] == 0.0 and exact.settings["warnings"]
    g = attribute_disclosure(o, copies, ["k"], "t", ngroups_keys=5)
    assert g.settings["warnings"] == [] and g.settings["key_groups"]["k"]["groups"] == 5
    pooled = np.concatenate([k, *[c["k"].to_numpy() for c in copies]])
    breaks = np.quantile(pooled, np.linspace(0, 1, 6))
    breaks[-1] = np.inf  # R's cut(right = FALSE, include.lowest = TRUE) closes the last interval; pandas' does not

    def cut(df):
        return df.assign(k=pd.cut(df["k"], breaks, right=False).astype(str))

    disco = [brute_key_measures(cut(o), cut(c), ["k"], "t")[0]["disco"].mean() for c in copies]
    assert g.figures["DiSCO"] == pytest.approx(np.mean(disco))
    assert g.figures["DiSCO"] > 0.1
    same = attribute_disclosure(o, [o, o], ["k"], "t", ngroups_keys=5)
    assert abs(g.figures["DiSCO"] - same.figures["DiSCO"]) < 0.1


def test_ngroups_bad_input():
    o = pd.DataFrame({"k": [1.0, 2, 3], "s": pd.Categorical(list("abc")), "t": pd.Categorical(list("xyx"))})
    with pytest.raises(ValueError, match="'ngroups_keys' parameter of attribute_disclosure must be >= 2"):
        attribute_disclosure(o, [o], ["k"], "t", ngroups_keys=1)
    with pytest.raises(ValueError, match="'ngroups_keys'.*categorical key"):
        attribute_disclosure(o, [o], ["k", "s"], "t", ngroups_keys={"s": 3})
    with pytest.raises(ValueError, match="'ngroups_target'.*categorical target"):
        attribute_disclosure(o, [o], ["k"], "t", ngroups_target=3)
