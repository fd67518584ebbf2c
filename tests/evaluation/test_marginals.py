"""Marginal total variation distance: hand-computed values and sampling behaviour."""
from itertools import combinations
from math import comb, pi, sqrt

import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation.marginals import marginal_tvd, total_variation


def test_total_variation_hand_values():
    assert total_variation([0.5, 0.5], [1.0, 0.0]) == pytest.approx(0.5)
    # counts are normalised: (2, 2) vs (3, 1) -> 0.5 * (|0.5-0.75| + |0.5-0.25|) = 0.25
    assert total_variation([2, 2], [3, 1]) == pytest.approx(0.25)
    assert total_variation([1, 2, 3], [1, 2, 3]) == 0.0
    assert total_variation([1, 0, 0], [0, 0, 1]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same size"):
        total_variation([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="non-negative"):
        total_variation([0, 0], [1, 1])


def test_marginal_tvd_hand_built_frames():
    # original: a/b binary; cells (0,0)=2, (0,1)=1, (1,0)=0, (1,1)=1 (n=4)
    orig = pd.DataFrame({"a": [0, 0, 0, 1], "b": [0, 0, 1, 1], "c": ["x", "y", "x", "y"]})
    # synthetic: (0,0)=1, (0,1)=1, (1,0)=1, (1,1)=1
    syn = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1], "c": ["x", "x", "x", "y"]})
    dom = {"a": 2, "b": 2}
    res = marginal_tvd(orig, syn, ways=2, domain=dom)
    f = res.to_frame().set_index("columns")["tvd"]
    # (a, b): 0.5 * (|.5-.25| + |.25-.25| + |0-.25| + |.25-.25|) = 0.25
    assert f[("a", "b")] == pytest.approx(0.25)
    # (a, c): orig (0,x)=2,(0,y)=1,(1,y)=1 ; syn (0,x)=2,(1,x)=1,(1,y)=1 -> 0.5*(0 + .25 + .25 + 0) = 0.25
    assert f[("a", "c")] == pytest.approx(0.25)
    # (b, c): orig (0,x)=1,(0,y)=1,(1,x)=1,(1,y)=1 ; syn (0,x)=1,(1,x)=2,(1,y)=1 -> 0.5*(0+.25+.25+0)
    assert f[("b", "c")] == pytest.approx(0.25)
    assert res.mean[2] == pytest.approx(0.25)
    one = marginal_tvd(orig, syn, ways=1, domain=dom).to_frame().set_index("columns")["tvd"]
    assert one[("a",)] == pytest.approx(0.25)  # 3/4 vs 2/4
    assert one[("c",)] == pytest.approx(0.25)  # 2/4 vs 3/4


def test_counts_cells_and_filters():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"v{j}": rng.integers(0, j + 2, 300) for j in range(6)})
    dom = {f"v{j}": j + 2 for j in range(6)}
    res = marginal_tvd(df, df.copy(), ways=(2, 3), domain=dom)
    assert res.n_marginals == {2: comb(6, 2), 3: comb(6, 3)}
    assert res.mean == {2: 0.0, 3: 0.0}
    cells = {tuple(r.columns): r.cells for r in res.to_frame().itertuples()}
    assert cells[("v0", "v5")] == 2 * 7
    # max_cells keeps exactly the marginals with few enough cells
    small = marginal_tvd(df, df, ways=2, domain=dom, max_cells=12)
    expect = sum((a + 2) * (b + 2) <= 12 for a, b in combinations(range(6), 2))
    assert small.n_marginals[2] == expect
    with pytest.raises(ValueError, match="max_cells"):
        marginal_tvd(df, df, ways=3, domain=dom, max_cells=2)


def test_continuous_columns_are_binned_and_copies_averaged():
    # x takes 0.5, 1.5, ..., 9.5 (100 each); 9 equal-width bins over [0.5, 9.5] have
    # interior edges 1.5, ..., 8.5, so bins 0..7 hold one value each (0.1) and bin 8
    # holds 8.5 and 9.5 (0.2).
    x = np.repeat(np.arange(10) + 0.5, 100)
    g = pd.Categorical(np.tile(["a", "b"], 500))
    orig = pd.DataFrame({"x": x, "g": g})
    shifted = orig.assign(x=x + 1.0)  # bins: 0 -> 0, 1..7 -> 0.1, 8 -> 0.3
    res = marginal_tvd(orig, [orig, shifted], ways=1, bins=9)
    by = res.by_marginal.set_index(["columns", "copy"])["tvd"]
    assert by[(("x",), 0)] == 0.0
    assert by[(("x",), 1)] == pytest.approx(0.5 * (0.1 + 0.1))
    assert by[(("g",), 1)] == 0.0
    assert res.mean[1] == pytest.approx(0.1 / 4)


def test_sampling_behaviour_matches_theory():
    # One binary column with p = 0.5 in the original; synthetic samples of size m drawn
    # from it. TVD = |q_hat - p| with E = sqrt(2/pi) sqrt(p(1-p)/m) (half-normal mean).
    rng = np.random.default_rng(2)
    n = 2000
    orig = pd.DataFrame({"a": np.repeat([0, 1], n // 2)})
    m, reps = 10_000, 200
    vals = [
        marginal_tvd(orig, pd.DataFrame({"a": rng.integers(0, 2, m)}), ways=1, domain={"a": 2}).mean[1]
        for _ in range(reps)
    ]
    expect = sqrt(2 / pi) * sqrt(0.25 / m)  # 0.00399
    # MC sd of one draw = sqrt(0.25/m) * sqrt(1 - 2/pi) = 0.0030; se of the mean = 0.00021
    assert np.mean(vals) == pytest.approx(expect, abs=4 * 0.00021)


def test_bad_input_and_no_mutation():
    df = pd.DataFrame({"a": [0, 1, 0], "b": [1, 1, 0]})
    before = df.copy()
    marginal_tvd(df, df, ways=2, domain={"a": 2, "b": 2})
    pd.testing.assert_frame_equal(df, before)
    with pytest.raises(ValueError, match="'ways' parameter of marginal_tvd"):
        marginal_tvd(df, df, ways=3)
    with pytest.raises(ValueError, match="missing"):
        marginal_tvd(df, df[["a"]], ways=1)
    with pytest.raises(ValueError, match="'domain' parameter"):
        marginal_tvd(df, df, ways=1, domain={"zz": 2})
    with pytest.raises(ValueError, match="'bins' parameter"):
        marginal_tvd(df, df, ways=1, bins=0)
