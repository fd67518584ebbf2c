"""pMSE / S_pMSE, utility tables, CI overlap and standardized difference."""
import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation import ci_overlap, pmse, standardized_difference, utility_tables
from synthmi.evaluation.pmse import table_pmse


def _cat(values, cats):
    return pd.Categorical(values, categories=cats)


def test_pmse_by_hand_single_binary_variable():
    # original a,a,a,b ; synthetic a,b,b,b. Saturated logit: p(a) = 1/4, p(b) = 3/4.
    # c = 1/2, N = 8 -> pMSE = (4 * (1/4)^2 + 4 * (1/4)^2) / 8 = 1/16
    # k = 2 -> E0 = (k - 1)(1 - c)^2 c / N = 1 * 1/4 * 1/2 / 8 = 1/64 -> S_pMSE = 4
    o = pd.DataFrame({"x": _cat(list("aaab"), ["a", "b"])})
    s = pd.DataFrame({"x": _cat(list("abbb"), ["a", "b"])})
    res = pmse(o, s, method="logit", maxorder=0)
    assert res.pmse[0] == pytest.approx(1 / 16, rel=1e-6)
    assert res.expected_null[0] == pytest.approx(1 / 64)
    assert res.s_pmse[0] == pytest.approx(4.0, rel=1e-5)
    assert res.k[0] == 2
    # the table version is the same saturated model
    val, e0, df = table_pmse(np.array([0, 0, 0, 1]), np.array([0, 1, 1, 1]))
    assert (val, e0, df) == (pytest.approx(1 / 16), pytest.approx(1 / 64), 1)


def test_unequal_sizes_use_c_equal_n_syn_over_n():
    # original a,a,b,b (n1 = 4); synthetic a,b (n2 = 2): c = 1/3, cells hold 2:1 each
    # -> fitted p = 1/3 = c everywhere, pMSE = 0
    o = pd.DataFrame({"x": _cat(list("aabb"), ["a", "b"])})
    s = pd.DataFrame({"x": _cat(list("ab"), ["a", "b"])})
    res = pmse(o, s, maxorder=0)
    assert res.pmse[0] == pytest.approx(0.0, abs=1e-12)
    assert res.expected_null[0] == pytest.approx(1 * (2 / 3) ** 2 * (1 / 3) / 6)


def test_aliased_columns_are_not_counted():
    # y duplicates x in both frames: y[b] and x[b]:y[b] are aliased with x[b] -> k = 2
    o = pd.DataFrame({"x": _cat(list("aabb"), ["a", "b"]), "y": _cat(list("aabb"), ["a", "b"])})
    s = pd.DataFrame({"x": _cat(list("abab"), ["a", "b"]), "y": _cat(list("abab"), ["a", "b"])})
    assert pmse(o, s, maxorder=1).k[0] == 2
    # in the copy y differs from x: the four cells of x by y are all seen -> full rank, k = 4
    s_free = pd.DataFrame({"x": _cat(list("abab"), ["a", "b"]), "y": _cat(list("abba"), ["a", "b"])})
    assert pmse(o, s_free, maxorder=1).k[0] == 4
    o2 = pd.DataFrame({"x": _cat(list("aabb"), ["a", "b"]), "z": [1.0, 1.0, 2.0, 2.0]})
    s2 = pd.DataFrame({"x": _cat(list("aabb"), ["a", "b"]), "z": [1.0, 1.0, 2.0, 2.0]})
    # z is a linear function of x in both: intercept + one of (x, z) + the interaction
    # x:z, which is itself aliased with x -> k = 2
    assert pmse(o2, s2, maxorder=1).k[0] == 2


def _draw(n, rng):
    x1 = rng.normal(size=n)
    x2 = (rng.uniform(size=n) < 1 / (1 + np.exp(-x1))).astype(int)
    x3 = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame(
        {"x1": x1, "x2": _cat(np.where(x2 == 1, "y", "n"), ["n", "y"]), "x3": _cat(np.array(list("abc"))[x3], list("abc"))}
    )


def _synthesize_from_fitted_true_model(o, rng):
    """A copy from a correctly specified model fitted to ``o`` by maximum
    likelihood (synthpop's proper = FALSE): x1 normal, x2 | x1 logistic,
    x3 | x1, x2 multinomial logit. The last could be x3 alone (the truth) but
    must carry every term of the propensity model (x1:x3, x2:x3): a dimension
    the synthesizer does not fit carries the original's sampling noise and
    counts twice (measured: mean S_pMSE 1.32 with x3 independent, against the
    (5 + 4 * 2) / 9 = 1.44 this argument predicts)."""
    import statsmodels.api as sm

    n = len(o)
    x1 = rng.normal(o["x1"].mean(), o["x1"].std(ddof=0), size=n)
    fit = sm.Logit((o["x2"] == "y").astype(float), sm.add_constant(o["x1"].to_numpy())).fit(disp=0)
    p2 = 1 / (1 + np.exp(-(fit.params.iloc[0] + fit.params.iloc[1] * x1)))
    x2 = rng.uniform(size=n) < p2
    D = sm.add_constant(np.column_stack([o["x1"].to_numpy(), (o["x2"] == "y").to_numpy(float)]))
    mfit = sm.MNLogit(o["x3"].cat.codes.to_numpy(), D).fit(disp=0)
    probs = mfit.predict(sm.add_constant(np.column_stack([x1, x2.astype(float)])))
    x3 = (rng.uniform(size=(n, 1)) > np.cumsum(probs, axis=1)).sum(axis=1)
    return pd.DataFrame(
        {"x1": x1, "x2": _cat(np.where(x2, "y", "n"), ["n", "y"]), "x3": _cat(np.array(list("abc"))[x3], list("abc"))}
    )


@pytest.mark.slow
def test_null_calibration_of_s_pmse_logit():
    """Copies from the correct model fitted to the original: E[S_pMSE] = 1
    (Snoke et al. 2018; Raab, Nowok & Dibben 2021). S_pMSE ~ chi2_{k-1}/(k-1),
    here k - 1 = 9 (4 main effects + 5 interactions): sd sqrt(2/9) = 0.47 per
    copy, so the mean over R = 400 replications has SE 0.024 and the tolerance
    0.085 is 3.5 SE. Separately measured (400 replications each, another seed):
    1.02, 0.998 and 0.999 at n = 500, 1000 and 4000 per side — no finite-sample
    bias to allow for. This test's seed: 0.961 and 1.989.

    Two independent samples from the data-generating model are a different
    null: the original's sampling noise adds to the copy's, E[pMSE] =
    (k-1) c (1-c) / N, so S_pMSE -> 1 / (1 - c) = 2 at c = 1/2 (tested too,
    tolerance 2 x 0.085 as the statistic is twice as large)."""
    rng = np.random.default_rng(11)
    fitted, independent = [], []
    for _ in range(400):
        o = _draw(1000, rng)
        fitted.append(pmse(o, _synthesize_from_fitted_true_model(o, rng)).s_pmse[0])
        independent.append(pmse(o, _draw(1000, rng)).s_pmse[0])
    assert abs(np.mean(fitted) - 1.0) < 0.085, np.mean(fitted)
    assert abs(np.mean(independent) - 2.0) < 0.17, np.mean(independent)
    # and the statistic detects a copy from a different model
    o = _draw(1000, rng)
    bad = _draw(1000, rng)
    bad["x1"] = bad["x1"] * 1.5 + 0.3
    assert pmse(o, bad).s_pmse[0] > 5


@pytest.mark.slow
def test_cart_pmse_permutation_null_and_detection():
    """CART's S_pMSE ranks a copy with x1 shifted by one sd above a copy from
    the true model in every one of 5 seeded replications."""
    rng = np.random.default_rng(5)
    for rep in range(5):
        o = _draw(600, rng)
        good = pmse(o, _draw(600, rng), method="cart", n_perm=20, random_state=rep)
        bad_copy = _draw(600, rng)
        bad_copy["x1"] = bad_copy["x1"] + 1.0
        bad = pmse(o, bad_copy, method="cart", n_perm=20, random_state=rep)
        assert good.expected_null[0] > 0
        assert bad.s_pmse[0] > good.s_pmse[0]
    # same seed -> same result
    again = pmse(o, bad_copy, method="cart", n_perm=20, random_state=rep)
    assert again.s_pmse[0] == bad.s_pmse[0]


def test_several_copies_give_one_result_each_and_the_mean():
    rng = np.random.default_rng(2)
    o = _draw(300, rng)
    copies = [_draw(300, rng) for _ in range(3)]
    res = pmse(o, copies)
    assert len(res.pmse) == 3
    assert res.mean_s_pmse == pytest.approx(np.mean(res.s_pmse))
    assert res.to_frame().shape[0] == 3
    for j, c in enumerate(copies):
        assert pmse(o, c).s_pmse[0] == pytest.approx(res.s_pmse[j])


def test_utility_tables_one_and_two_way():
    rng = np.random.default_rng(4)
    o = _draw(500, rng)
    s = _draw(500, rng)
    s["x3"] = _cat(np.where(rng.uniform(size=500) < 0.8, "c", s["x3"].astype(str)), list("abc"))
    tab = utility_tables(o, [s, _draw(500, rng)], n_bins=5).to_frame()
    assert set(tab["way"]) == {1, 2}
    assert len(tab) == 3 + 3
    one = tab[tab.way == 1].set_index("variables")
    assert one.loc["x3", "s_pmse_copy_1"] > 20  # the distorted variable stands out
    assert one.loc["x1", "df"] == 4  # 5 bins -> 4 df
    assert "s_pmse_copy_2" in tab.columns


def test_ci_overlap_by_hand():
    # identical -> 1; [0,2] vs [1,3]: overlap 1, lengths 2 and 2 -> 0.5
    assert ci_overlap(0, 2, 0, 2) == pytest.approx(1.0)
    assert ci_overlap(0, 2, 1, 3) == pytest.approx(0.5)
    # [0,1] vs [2,4]: min(U) - max(L) = 1 - 2 = -1 -> 0.5 (-1/1 + -1/2) = -0.75
    assert ci_overlap(0, 1, 2, 4) == pytest.approx(-0.75)
    # nested [0,4] and [1,2]: 0.5 (1/4 + 1/1) = 0.625
    assert ci_overlap(0, 4, 1, 2) == pytest.approx(0.625)
    np.testing.assert_allclose(ci_overlap([0, 0], [2, 1], [1, 2], [3, 4]), [0.5, -0.75])


def test_standardized_difference_by_hand():
    assert standardized_difference(1.0, 0.7, 0.2) == pytest.approx(1.5)
    np.testing.assert_allclose(standardized_difference([1, -1], [1.5, -2], [0.5, 0.25]), [1.0, 4.0])


def test_bad_inputs_one_clear_error_each():
    o = pd.DataFrame({"x": _cat(list("aabb"), ["a", "b"]), "z": [1.0, 2, 3, 4]})
    with pytest.raises(ValueError, match="missing \\['z'\\]"):
        pmse(o, o[["x"]])
    s = o.copy()
    s["x"] = _cat(list("aabc"), ["a", "b", "c"])
    with pytest.raises(ValueError, match="Column 'x' of 'synthetic\\[0\\]' has 1 category"):
        pmse(o, s)
    with pytest.raises(ValueError, match="'original' DataFrame has 0 rows"):
        pmse(o.iloc[:0], o)
    with pytest.raises(ValueError, match="'method' parameter of pmse"):
        pmse(o, o, method="forest")
    with pytest.raises(ValueError, match="'variables' parameter names columns not in 'original'"):
        pmse(o, o, variables=["nope"])
    allnan = o.assign(z=np.nan)
    with pytest.raises(ValueError, match="Column 'z' of 'original' is entirely missing"):
        pmse(allnan, o)
    with pytest.raises(ValueError, match="NaN"):
        ci_overlap(0, np.nan, 0, 1)
    with pytest.raises(ValueError, match="upper > lower"):
        ci_overlap(1, 0, 0, 1)
    with pytest.raises(ValueError, match="'se_orig'"):
        standardized_difference(1, 2, 0)
    with pytest.raises(ValueError, match="NaN"):
        standardized_difference(1, np.nan, 1)


def test_error_messages_do_not_echo_category_labels():
    o = pd.DataFrame({"x": _cat(list("aabb"), ["a", "b"])})
    s = pd.DataFrame({"x": _cat(["secret-label"] * 4, ["secret-label"])})
    with pytest.raises(ValueError) as info:
        pmse(o, s)
    assert "secret-label" not in str(info.value)


def test_inputs_not_mutated():
    rng = np.random.default_rng(9)
    o = _draw(200, rng)
    o.loc[3, "x1"] = np.nan
    s = _draw(200, rng)
    o0, s0 = o.copy(deep=True), s.copy(deep=True)
    pmse(o, s)
    pmse(o, s, method="cart", n_perm=2)
    utility_tables(o, s)
    pd.testing.assert_frame_equal(o, o0)
    pd.testing.assert_frame_equal(s, s0)


@pytest.mark.slow
def test_cart_permutation_null_is_halved_as_synthpop():
    """The permutation null relabels original and copy at random, so it mimics
    two independent samples; synthpop halves it to get the null of a copy from
    the fitted model. Hence an independent sample from the data-generating model
    has CART S_pMSE ~ 2 (the logit statistic's 1/(1-c), c = 1/2). Over 60
    seeded replications the per-replication sd is ~0.15 (measured), SE 0.019:
    the tolerance 0.08 is ~4 SE. Measured mean 1.96."""
    rng = np.random.default_rng(8)
    vals = [
        pmse(_draw(400, rng), _draw(400, rng), method="cart", n_perm=10, random_state=r).s_pmse[0]
        for r in range(60)
    ]
    assert abs(np.mean(vals) - 2.0) < 0.08, np.mean(vals)


def test_copy_notes_merge_once_with_their_copies_and_number_ranges():
    from synthmi.evaluation.pmse import merge_copy_notes

    per_copy = [["design reduced from 900 to 221 columns", "'v2': 4 levels pooled"],
                ["design reduced from 900 to 219 columns", "'v3': 4 levels pooled"],
                ["design reduced from 900 to 220 columns"]]
    assert merge_copy_notes(per_copy, 3) == [
        "design reduced from 900 to 219-221 columns; in all 3 copies",
        "'v2': 4 levels pooled; in copy 1 of 3",  # a name in quotes is never merged
        "'v3': 4 levels pooled; in copy 2 of 3",
    ]
    assert merge_copy_notes([["a {b} 1.5 x"]], 1) == ["a {b} 1.5 x"]
    assert merge_copy_notes([["x 1"], [], ["x 1"]], 3) == ["x 1; in copies 1, 3 of 3"]


def test_unchanged_columns_are_those_every_copy_releases_as_is():
    from synthmi.evaluation.pmse import unchanged_columns

    o = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": pd.Categorical(["x", "y", "x"]), "c": [1, 2, 3]})
    s1 = o.assign(c=[1, 3, 2])
    s2 = o.assign(a=[1.0, 2.0, 3.0])  # a missing value filled: changed
    assert unchanged_columns(o, [s1, s1.copy()]) == ["a", "b"]
    assert unchanged_columns(o, [s1, s2]) == ["b"]


def test_blocked_gram_gives_the_pmse_of_the_one_product(monkeypatch):
    """A large design forms X'WX block by block (issue 29 item 6); forcing the blocked form on a
    small design (blocks of 7 rows, so the sums run in another order) must give the same pMSE to
    rounding: the Newton iterations see Hessians equal to ~1e-15 relative, and pMSE depends on them
    only through the step lengths."""
    import importlib

    pm = importlib.import_module("synthmi.evaluation.pmse")  # the package exports the function pmse

    rng = np.random.default_rng(3)
    n = 400
    o = pd.DataFrame({"x": rng.normal(size=n), "g": _cat(rng.choice(list("abcd"), n), list("abcd")),
                      "h": _cat(rng.choice(list("uv"), n), list("uv"))})
    s = pd.DataFrame({"x": rng.normal(0.3, 1, n), "g": _cat(rng.choice(list("abcd"), n, p=[.4, .3, .2, .1]), list("abcd")),
                      "h": _cat(rng.choice(list("uv"), n), list("uv"))})
    one = pmse(o, s)
    X = rng.normal(size=(50, 6))
    w = rng.uniform(0.1, 0.25, 50)
    monkeypatch.setattr(pm, "BLOCKED_GRAM_CELLS", 1)
    monkeypatch.setattr(pm, "GRAM_BLOCK_ROWS", 7)
    blocked = pmse(o, s)
    assert blocked.pmse[0] == pytest.approx(one.pmse[0], rel=1e-9)
    assert blocked.k[0] == one.k[0]
    assert np.allclose(pm._gram(X, w), (X.T * w) @ X, rtol=1e-13, atol=0)
    assert np.allclose(pm._gram(X), X.T @ X, rtol=1e-13, atol=0)


def test_split_gram_equals_the_dense_product():
    """X'WX from the dense and the sparse columns of a design (SplitGram: the large propensity
    designs of issue 29 item 6) is the dense product to rounding, whatever the mix: an intercept,
    numerics, a common dummy, rare dummies and their products, and a column of zeros; and so is
    the split restricted to a subset of the columns (the non-aliased ones)."""
    from synthmi import _numeric as pm

    rng = np.random.default_rng(5)
    n = 3000
    x = rng.normal(size=n)
    common = (rng.random(n) < 0.5).astype(float)
    rare = (rng.integers(0, 30, n)[:, None] == np.arange(29)).astype(float)  # each level ~3% of rows
    X = np.column_stack([np.ones(n), x, common, rare, rare[:, :5] * x[:, None], common * x, np.zeros(n)])
    share = np.count_nonzero(X, axis=0) / n
    assert (share > pm.SPARSE_COLUMN_SHARE).sum() == 4 and (share <= pm.SPARSE_COLUMN_SHARE).sum() == X.shape[1] - 4
    w = rng.uniform(1e-3, 0.25, n)
    gram = pm.SplitGram(X)
    scale = np.abs((X.T * w) @ X).max()
    assert np.abs(gram(w) - (X.T * w) @ X).max() < 1e-13 * scale
    assert np.abs(gram() - X.T @ X).max() < 1e-13 * np.abs(X.T @ X).max()
    assert np.array_equal(gram(w), gram(w).T)
    keep = np.setdiff1d(np.arange(X.shape[1]), [2, 7, X.shape[1] - 1])  # a dense, a sparse, the zeros
    Xk = X[:, keep]
    sub = gram.select(keep)
    assert np.abs(sub(w) - (Xk.T * w) @ Xk).max() < 1e-13 * scale
    # and the design's products: X b and X' r
    b = rng.normal(size=len(keep))
    assert np.allclose(sub.matvec(b), Xk @ b, rtol=1e-13, atol=1e-13)
    assert np.allclose(sub.rmatvec(w), Xk.T @ w, rtol=1e-13, atol=1e-13)
