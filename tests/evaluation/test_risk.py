"""Re-identification risk by matching: brute-force reference, hand-worked
example, simulation, missing values, alignment and bad input."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synthmi.evaluation import _matching as mt
from synthmi.evaluation.risk import reidentification_risk
from _matching_reference import CAT_POOL, CONT_POOL, TOL_POOL, brute_risk

# --------------------------------------------------------------------------
# Property test: fast implementation == brute force on random small inputs.
# --------------------------------------------------------------------------

@st.composite
def risk_case(draw):
    n = draw(st.integers(1, 9))
    n_cat = draw(st.integers(0, 2))
    n_cont = draw(st.integers(0 if n_cat else 1, 2))
    as_categorical = draw(st.booleans())
    cols = {}
    for k in range(n_cat):
        vals = draw(st.lists(st.sampled_from(CAT_POOL), min_size=n, max_size=n))
        s = pd.Series(vals, dtype=object)
        cols[f"c{k}"] = pd.Categorical(s, categories=["a", "b"]) if as_categorical else s
    for k in range(n_cont):
        cols[f"x{k}"] = draw(st.lists(st.sampled_from(CONT_POOL), min_size=n, max_size=n))
    original = pd.DataFrame(cols)
    # Kinds come from dtypes (an all-0/1 or all-NaN numeric column is binary and
    # matches exactly); the brute force uses the same split.
    _, cont = mt.split_kinds(original, list(original.columns))
    m = draw(st.integers(1, 3))
    copies = []
    for _ in range(m):
        if draw(st.booleans()):
            copies.append(original.copy())  # identical copy: risk must still be computed
            continue
        cp = original.copy()
        for c in cp.columns:
            if c.startswith("c"):  # object columns: a copy may not invent levels
                pool = CAT_POOL if as_categorical else list(original[c].dropna().unique()) + [None]
            else:
                pool = CONT_POOL
            new = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
            keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            vals = [o if k else v for o, v, k in zip(original[c].astype(object), new, keep)]
            if c.startswith("c"):
                s = pd.Series(vals, dtype=object)
                cp[c] = pd.Categorical(s, categories=["a", "b"]) if as_categorical else s
            else:
                cp[c] = pd.Series(vals, dtype=float)
        copies.append(cp)
    tol = {c: draw(st.sampled_from(TOL_POOL)) for c in cont}
    chunk = draw(st.sampled_from([1, 3, mt.MAX_CANDIDATES]))
    return original, copies, tol, chunk


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(risk_case())
def test_fast_matches_brute_force(case):
    original, copies, tol, chunk = case
    before = [original.copy()] + [c.copy() for c in copies]
    cat, cont = mt.split_kinds(original, list(original.columns))
    saved = mt.MAX_CANDIDATES
    mt.MAX_CANDIDATES = chunk  # small chunks exercise the chunked several-continuous path
    try:
        res = reidentification_risk(original, copies, list(original.columns), tolerance=tol or None)
    finally:
        mt.MAX_CANDIDATES = saved
    risk, s_sum, tu, fu, none = brute_risk(original, copies, cat, cont, tol)
    m = len(copies)
    # Same arithmetic (1/s summed in copy order, / M) -> bitwise equal.
    np.testing.assert_array_equal(res.individual.to_numpy(), risk)
    np.testing.assert_array_equal(np.rint(res.records["mean_n_matches"].to_numpy() * m), s_sum)
    np.testing.assert_array_equal(res.records["true_unique_copies"].to_numpy(), tu)
    np.testing.assert_array_equal(res.records["false_unique_copies"].to_numpy(), fu)
    np.testing.assert_array_equal(res.records["no_match_copies"].to_numpy(), none)
    n = len(original)
    assert res.figures["expected_matches"] == pytest.approx(risk.sum(), abs=1e-12)
    assert res.figures["true_match_rate"] == pytest.approx(tu.sum() / (n * m), abs=1e-12)
    if tu.sum() + fu.sum():
        assert res.figures["false_match_rate"] == pytest.approx(fu.sum() / (tu.sum() + fu.sum()), abs=1e-12)
    else:
        assert math.isnan(res.figures["false_match_rate"])
    for a, b in zip(before, [original] + copies):
        pd.testing.assert_frame_equal(a, b)


# --------------------------------------------------------------------------
# Hand-worked example.
# --------------------------------------------------------------------------


def _hand_data():
    original = pd.DataFrame(
        {"sex": pd.Categorical(["F", "F", "M", "M"]), "age": [30.0, 31.0, 40.0, 50.0], "y": [1.0, 2.0, 3.0, 4.0]}
    )
    c1 = pd.DataFrame(
        {"sex": pd.Categorical(["F", "F", "M", "F"]), "age": [30.0, 35.0, 41.0, 50.0], "y": [1.0, 2.0, 3.0, 4.0]}
    )
    c2 = pd.DataFrame(
        {"sex": pd.Categorical(["F", "F", "M", "M"]), "age": [31.0, 30.0, 45.0, 49.5], "y": [1.0, 2.0, 3.0, 4.0]}
    )
    return original, [c1, c2]


def test_hand_worked_example():
    # Tolerance age = 1 (absolute). Boxes: t0 F[29,31], t1 F[30,32], t2 M[39,41], t3 M[49,51].
    # Copy 1: t0 -> {0} correct, Pr 1; t1 -> {0} unique but wrong, Pr 0;
    #         t2 -> {2} correct, Pr 1; t3 -> {} (row 3 became F), Pr 0.
    # Copy 2: t0 -> {0,1}, Pr 1/2; t1 -> {0,1}, Pr 1/2; t2 -> {} Pr 0; t3 -> {3} correct, Pr 1.
    # I = (0.75, 0.25, 0.5, 0.5); sum = 2.0.
    # Unique matches over (target, copy): 4, of which 3 correct ->
    # true-match rate 3 / (4 * 2) = 0.375, false-match rate 1 / 4 = 0.25.
    # I_i > 0.5 strictly: only t0 -> 0.25. No match: (t3, copy 1), (t2, copy 2) -> 2/8.
    original, copies = _hand_data()
    res = reidentification_risk(original, copies, ["sex", "age"], tolerance={"age": 1}, threshold=0.5, by="sex")
    np.testing.assert_allclose(res.individual.to_numpy(), [0.75, 0.25, 0.5, 0.5], rtol=0, atol=1e-15)
    s = res.figures
    assert s["expected_matches"] == pytest.approx(2.0)
    assert s["true_match_rate"] == pytest.approx(0.375)
    assert s["false_match_rate"] == pytest.approx(0.25)
    assert s["share_above_threshold"] == pytest.approx(0.25)
    assert s["no_match_share"] == pytest.approx(0.25)
    assert s["unique_match_share"] == pytest.approx(0.5)
    assert s["max_risk"] == pytest.approx(0.75) and s["mean_risk"] == pytest.approx(0.5)
    np.testing.assert_allclose(res.records["mean_n_matches"], [1.5, 1.5, 0.5, 0.5])
    # Per copy: copy 1 sum Pr = 2, 2 of 4 unique-correct, 1 of 3 uniques wrong;
    #           copy 2 sum Pr = 2, 1 of 4, 0 of 1.
    pc = res.per_copy
    np.testing.assert_allclose(pc["expected_matches"], [2.0, 2.0])
    np.testing.assert_allclose(pc["true_match_rate"], [0.5, 0.25])
    np.testing.assert_allclose(pc["false_match_rate"], [1 / 3, 0.0])
    # By sex: F = {t0, t1}: sum I = 1, one correct unique of 4 pairs, 1 wrong of 2 uniques;
    #         M = {t2, t3}: sum I = 1, 2 of 4, 0 of 2.
    g = res.by_group
    assert list(g.index) == ["F", "M"]
    np.testing.assert_allclose(g["expected_matches"], [1.0, 1.0])
    np.testing.assert_allclose(g["true_match_rate"], [0.25, 0.5])
    np.testing.assert_allclose(g["false_match_rate"], [0.5, 0.0])
    np.testing.assert_allclose(g["share_above_threshold"], [0.5, 0.0])
    # A lower threshold counts t2, t3 too (0.5 > 0.4).
    low = reidentification_risk(original, copies, ["sex", "age"], tolerance={"age": 1}, threshold=0.4)
    assert low.figures["share_above_threshold"] == pytest.approx(0.75)
    # Tables and JSON form.
    assert list(res.summary_frame().index) == ["all", "F", "M"]
    assert res.to_frame()["risk"].equals(res.individual.rename("risk"))
    d = res.to_dict()
    # groups of 2 records would describe single records: left out of the JSON form, counted
    assert d["summary"]["expected_matches"] == pytest.approx(2.0) and d["by_group"] == {}
    assert d["by_group_omitted"]["n_groups"] == 2 and d["by_group_omitted"]["min_records"] == 5
    assert "expected correct matches" in res.report()


def test_relative_tolerance_hand_example():
    # 10% of the target: t=100 -> [90, 110], t=10 -> [9, 11].
    original = pd.DataFrame({"x": [100.0, 10.0]})
    copy = pd.DataFrame({"x": [109.0, 11.5]})
    res = reidentification_risk(original, copy, ["x"], tolerance={"x": "10%"})
    # t0 matches {0} (109 in [90,110]); t1 matches {} (11.5 > 11): I = (1, 0).
    np.testing.assert_array_equal(res.individual.to_numpy(), [1.0, 0.0])
    same = reidentification_risk(original, copy, ["x"], tolerance={"x": ("relative", 0.1)})
    assert same.individual.equals(res.individual)
    # Default tolerance is exact matching.
    assert reidentification_risk(original, copy, ["x"]).figures["expected_matches"] == 0.0


def test_missing_value_matches_only_missing():
    nan = np.nan
    original = pd.DataFrame({"s": pd.Categorical(["a", None, "a", "a"]), "x": [1.0, 1.0, nan, 5.0]})
    copy = pd.DataFrame({"s": pd.Categorical(["a", None, "a", "a"]), "x": [1.0, 1.0, nan, nan]})
    res = reidentification_risk(original, copy, ["s", "x"], tolerance={"x": 100.0})
    # t0 (a, 1): a-rows with observed x -> {0} only (rows 2, 3 have x missing) -> 1.
    # t1 (missing s, 1): only row 1 has missing s -> 1.
    # t2 (a, missing x): rows 2 and 3 (a, missing) -> 1/2, true row 2 among them.
    # t3 (a, 5): row 0 (|1 - 5| <= 100) -> s = 1 but wrong (row 3 released missing) -> 0.
    np.testing.assert_array_equal(res.individual.to_numpy(), [1.0, 1.0, 0.5, 0.0])
    assert res.records["false_unique_copies"].tolist() == [0, 0, 0, 1]


def test_identical_copy_is_computed():
    # anonymeter #32 failed on a copy equal to the original; here it is the worst case.
    original = pd.DataFrame({"s": pd.Categorical(["a", "a", "b", "b", "b"]), "x": [1.0, 1.0, 2.0, 3.0, 4.0]})
    res = reidentification_risk(original, [original, original.copy()], ["s", "x"])
    np.testing.assert_array_equal(res.individual.to_numpy(), [0.5, 0.5, 1.0, 1.0, 1.0])
    assert res.figures["false_match_rate"] == 0.0
    assert res.figures["true_match_rate"] == pytest.approx(3 / 5)


def test_simulation_matches_closed_form():
    # Distinct categorical keys make s_im = 1[|e_im| <= tol], so E[I_i] = P(|e| <= tol)
    # = 2 Phi(tol / sigma) - 1 for e ~ N(0, sigma^2). n = 400, M = 20, tol = sigma:
    # p = 0.6827, MC SE of the mean = sqrt(p (1 - p) / 8000) = 0.0052; 4 SE = 0.021.
    from scipy.stats import norm

    rng = np.random.default_rng(20240401)
    n, m, sigma, tol = 400, 20, 2.0, 2.0
    original = pd.DataFrame({"id": pd.Categorical([f"k{i}" for i in range(n)]), "age": rng.uniform(20, 80, n)})
    copies = []
    for _ in range(m):
        c = original.copy()
        c["age"] = original["age"] + rng.normal(0, sigma, n)
        copies.append(c)
    res = reidentification_risk(original, copies, ["id", "age"], tolerance={"age": tol})
    p = 2 * norm.cdf(tol / sigma) - 1
    se = math.sqrt(p * (1 - p) / (n * m))
    assert abs(res.figures["mean_risk"] - p) < 4 * se
    assert res.figures["false_match_rate"] == 0.0  # only the true record can share a key
    # More noise -> lower risk (same seed stream, sigma 2 -> 8: p = 0.197).
    noisy = [c.assign(age=original["age"] + rng.normal(0, 8.0, n)) for c in copies]
    assert reidentification_risk(original, noisy, ["id", "age"], tolerance={"age": tol}).figures["mean_risk"] < 0.3


def test_alignment_by_index():
    original, copies = _hand_data()
    original = original.set_axis(pd.Index([10, 20, 30, 40]), axis=0)
    ref = reidentification_risk(original, copies, ["sex", "age"], tolerance={"age": 1})  # RangeIndex copies
    assert list(ref.individual.index) == [10, 20, 30, 40]
    shuffled = [c.set_axis(pd.Index([10, 20, 30, 40]), axis=0).iloc[[2, 0, 3, 1]] for c in copies]
    res = reidentification_risk(original, shuffled, ["sex", "age"], tolerance={"age": 1})
    assert res.individual.equals(ref.individual)
    with pytest.raises(ValueError, match="row-aligned"):
        reidentification_risk(original, copies[0].iloc[:3], ["sex", "age"])
    with pytest.raises(ValueError, match="index of 'synthetic\\[0\\]'"):
        reidentification_risk(original, copies[0].set_axis(pd.Index([1, 2, 3, 4])), ["sex", "age"])


def test_by_series_and_several_continuous():
    rng = np.random.default_rng(3)
    n = 300
    original = pd.DataFrame(
        {"s": pd.Categorical(rng.choice(["a", "b"], n)), "x": rng.integers(0, 20, n).astype(float), "z": rng.normal(size=n)}
    )
    copies = [original.assign(x=original["x"] + rng.integers(-1, 2, n), z=original["z"] + rng.normal(0, 0.1, n))]
    labels = pd.Series(np.where(np.arange(n) % 3 == 0, "g1", "g2"), index=original.index)
    res = reidentification_risk(original, copies, ["s", "x", "z"], tolerance={"x": 1, "z": 0.2}, by=labels)
    cat, cont = mt.split_kinds(original, ["s", "x", "z"])
    risk = brute_risk(original, copies, cat, cont, {"x": 1, "z": 0.2})[0]
    np.testing.assert_array_equal(res.individual.to_numpy(), risk)
    by_col = reidentification_risk(original.assign(s=original["s"].cat.add_categories("c")).assign(
        s=lambda d: d["s"].where(np.arange(n) % 5 != 0)), [c.assign(s=original["s"].where(np.arange(n) % 5 != 0)) for c in copies],
        ["x", "z"], tolerance={"x": 1, "z": 0.2}, by="s")
    assert by_col.by_group.index.tolist() == ["a", "b", "<missing>"]  # category order; unused "c" dropped
    assert by_col.by_group.loc["<missing>", "n_records"] == n // 5 + (n % 5 > 0)
    g = res.by_group
    assert g.loc["g1", "expected_matches"] == pytest.approx(risk[np.arange(n) % 3 == 0].sum())
    assert int(g["n_records"].sum()) == n


def test_bad_input():
    original, copies = _hand_data()
    qi = ["sex", "age"]
    with pytest.raises(ValueError, match="'tolerance'.*>= 0.*'age'"):
        reidentification_risk(original, copies, qi, tolerance={"age": -1})
    with pytest.raises(ValueError, match="'tolerance'.*>= 0"):
        reidentification_risk(original, copies, qi, tolerance={"age": "-5%"})
    with pytest.raises(ValueError, match="'tolerance'"):
        reidentification_risk(original, copies, qi, tolerance={"agee": 1})
    with pytest.raises(ValueError, match="categorical column 'sex'"):
        reidentification_risk(original, copies, qi, tolerance={"sex": 1})
    with pytest.raises(ValueError, match="'tolerance'"):
        reidentification_risk(original, copies, qi, tolerance={"age": "two"})
    with pytest.raises(ValueError, match="'quasi_identifiers'.*\\['income'\\]"):
        reidentification_risk(original, copies, ["sex", "income"])
    with pytest.raises(ValueError, match="Columns of 'synthetic\\[1\\]' do not match"):
        reidentification_risk(original, [copies[0], copies[1].drop(columns="y")], qi)
    with pytest.raises(ValueError, match="Columns of 'synthetic\\[0\\]' do not match"):
        reidentification_risk(original, copies[0].assign(extra=1.0), qi)
    with pytest.raises(ValueError, match="Column 'age' is numeric in the original but categorical"):
        reidentification_risk(original, copies[0].assign(age=copies[0]["age"].astype(str)), qi)
    with pytest.raises(ValueError, match="'threshold'"):
        reidentification_risk(original, copies, qi, threshold=1.5)
    with pytest.raises(ValueError, match="'by'"):
        reidentification_risk(original, copies, qi, by=["a", "b"])
    with pytest.raises(ValueError, match="'by'"):
        reidentification_risk(original, copies, qi, by="nope")
    with pytest.raises(ValueError, match="Column 'age' of 'synthetic\\[0\\]' has infinite"):
        reidentification_risk(original, copies[0].assign(age=np.inf), qi)
    with pytest.raises(TypeError, match="'synthetic'"):
        reidentification_risk(original, "copies", qi)


@pytest.mark.slow
def test_cli_disclosure(tmp_path):
    import json

    from synthmi.cli import main
    from synthmi.synthetic import SyntheticData

    original, copies = _hand_data()
    original.to_csv(tmp_path / "orig.csv", index=False)
    SyntheticData(copies=copies, method="test", quasi_identifiers=["sex", "age"]).to_dir(tmp_path / "syn")
    out = tmp_path / "risk.json"
    rc = main(["disclosure", "--original", str(tmp_path / "orig.csv"), "--synthetic", str(tmp_path / "syn"),
               "--qi", "sex,age", "--tol", "age=1", "--by", "sex", "--out", str(out), "--quiet"])
    assert rc == 0
    d = json.loads(out.read_text())
    assert d["summary"]["expected_matches"] == pytest.approx(2.0)
    assert d["summary"]["false_match_rate"] == pytest.approx(0.25)
    # both groups hold 2 records (< 5): omitted from the JSON, counted
    assert d["by_group"] == {} and d["by_group_omitted"]["n_groups"] == 2
    assert d["settings"]["tolerance"] == {"age": 1.0}
    rec = pd.read_csv(tmp_path / "risk.records.csv")
    np.testing.assert_allclose(rec["risk"], [0.75, 0.25, 0.5, 0.5])
    assert "age" not in rec.columns and "sex" not in rec.columns  # no QI values in the output
    bad = main(["disclosure", "--original", str(tmp_path / "orig.csv"), "--synthetic", str(tmp_path / "syn"),
                "--qi", "sex,age", "--tol", "age=-1", "--out", str(out), "--overwrite", "--quiet"])
    assert bad == 1


def test_continuous_by_is_refused_so_values_never_become_group_labels():
    import numpy as np
    import pandas as pd
    import pytest

    from synthmi.evaluation import reidentification_risk

    df = pd.DataFrame({"age": [30.0, 31.0, 40.0, 41.0], "sex": pd.Categorical(list("abab")),
                       "income": [51234.5, 60321.25, 70000.75, 81234.0]})
    with pytest.raises(ValueError, match="'by' parameter of reidentification_risk must be categorical"):
        reidentification_risk(df, [df], ["age", "sex"], tolerance={"age": 1}, by="income")
    with pytest.raises(ValueError, match="'by' parameter"):
        reidentification_risk(df, [df], ["age", "sex"], tolerance={"age": 1}, by=np.array([1.5, 2.5, 3.5, 4.5]))
    # categorical and integer-coded labels are fine
    res = reidentification_risk(df, [df], ["age", "sex"], tolerance={"age": 1}, by="sex")
    assert list(res.by_group.index) == ["a", "b"]
    res = reidentification_risk(df, [df], ["age", "sex"], tolerance={"age": 1}, by=np.array([0, 0, 1, 1]))
    assert len(res.by_group) == 2
