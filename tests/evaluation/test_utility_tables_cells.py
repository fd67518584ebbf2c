"""The cells of a numeric column in utility_tables: a point mass gets a cell of its own.

Found by the new-user review (statsmodels randhie): ``physlm`` is 83% zeros; its
pooled quintile edges collapsed to ``[0]``, every value landed in one cell and
its one-way S_pMSE was NaN (df 0), its two-way tables 0 -- whatever the copy did.
"""
import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation import utility_tables
from synthmi.evaluation.pmse import numeric_table_edges


def _zero_heavy():
    # original: 16 zeros (80%) and 1, 2, 3, 4; copy: 18 zeros and 5, 6 (its tail moved up)
    o = pd.DataFrame({"x": np.r_[np.zeros(16), 1.0, 2, 3, 4],
                      "k": pd.Categorical(list("ab") * 10)})
    s = pd.DataFrame({"x": np.r_[np.zeros(18), 5.0, 6],
                      "k": o["k"].copy()})
    return o, s


def test_zero_heavy_column_cells_and_s_pmse_by_hand():
    """Pooled (40 values): 0 x 34 (85% >= 1/5: a point mass, its own cell); the
    other six values (1..6 once each) cut at their quartiles into the remaining
    5 - 1 = 4 groups: NumPy's linear rule, h = 5q -> 2.25, 3.5, 4.75.
    Cells [0], (0, 2.25), [2.25, 3.5), [3.5, 4.75), [4.75, inf):
    original 16, 2, 1, 1, 0; copy 18, 0, 0, 0, 2; N = 40, c = 1/2, df = 4.
    pMSE = (34 (18/34 - 1/2)^2 + 2/4 + 1/4 + 1/4 + 2/4) / 40 = (1/34 + 3/2) / 40 = 13/340,
    E0 = 4 (1/2)^2 (1/2) / 40 = 1/80, S_pMSE = 1040/340 = 52/17.
    (Before: edges [0], one cell, df 0, S_pMSE NaN.)"""
    o, s = _zero_heavy()
    pooled = pd.concat([o["x"], s["x"]]).value_counts()
    edges = numeric_table_edges(pooled.index.to_numpy(float), pooled.to_numpy(), 5)
    np.testing.assert_array_equal(edges, [0.0, np.nextafter(0.0, np.inf), 2.25, 3.5, 4.75])
    tab = utility_tables(o, s, variables=["x", "k"], n_bins=5).to_frame().set_index("variables")
    assert tab.loc["x", "df"] == 4
    assert tab.loc["x", "pmse"] == pytest.approx(13 / 340, rel=1e-12)
    assert tab.loc["x", "s_pmse"] == pytest.approx(52 / 17, rel=1e-12)
    # the two-way table with the kept column k sees the change too (was 0: one x cell)
    assert tab.loc["x:k", "df"] >= 4 and tab.loc["x:k", "s_pmse"] > 0
    assert tab["s_pmse"].notna().all()


def test_numeric_table_edges_rule():
    """No point mass: the pooled quantiles as before (quantile_from_counts is
    np.nanquantile exactly; np.quantile can differ in the last bit). Masses: each its own cell,
    the rest cut into n_bins - #masses groups (at least one), >= 2 cells
    whenever there are >= 2 distinct values."""
    v = np.arange(10.0)
    c = np.ones(10, dtype=np.int64)
    np.testing.assert_array_equal(numeric_table_edges(v, c, 5), np.nanquantile(v, np.linspace(0, 1, 6)[1:-1]))
    # two masses (0 and 9 hold 10 of 28 values each) -> 5 - 2 = 3 groups of the rest
    c2 = c.copy()
    c2[0] = c2[9] = 10
    e = numeric_table_edges(v, c2, 5)
    rest = np.nanquantile(np.arange(1.0, 9.0), np.linspace(0, 1, 4)[1:-1])
    np.testing.assert_array_equal(e, np.sort(np.r_[0.0, np.nextafter(0.0, np.inf), rest, 9.0,
                                                   np.nextafter(9.0, np.inf)]))
    # a second heap: 9 is 15% of all values (no mass at 1/5) but 75% of those left
    # after 0 (80%): a mass of the rest (else the rest's quartiles 8, 9, 9 put it on a cut)
    v4, c4 = np.array([0.0, 1, 2, 3, 4, 5, 9]), np.array([80, 1, 1, 1, 1, 1, 15])
    rest4 = np.nanquantile(np.arange(1.0, 6.0), np.linspace(0, 1, 4)[1:-1])
    np.testing.assert_array_equal(numeric_table_edges(v4, c4, 5),
                                  np.r_[0.0, np.nextafter(0.0, np.inf), rest4, 9.0, np.nextafter(9.0, np.inf)])
    # a mass holding exactly 1/n_bins counts (integer comparison: 2 of 10 with n_bins 5)
    c3 = np.r_[2, np.ones(8, dtype=np.int64)]
    assert 3.0 in numeric_table_edges(np.arange(3.0, 12.0), c3, 5)
    # five masses of 1/5 each and nothing else: one cell per value
    e5 = numeric_table_edges(np.arange(5.0), np.full(5, 3), 5)
    codes = np.searchsorted(e5, np.arange(5.0), side="right")
    assert len(np.unique(codes)) == 5
    # two distinct values, one a 99% mass: two cells
    e2 = numeric_table_edges(np.array([0.0, 7.0]), np.array([99, 1]), 5)
    assert len(np.unique(np.searchsorted(e2, [0.0, 7.0], side="right"))) == 2


def _mass_frame(n, rng):
    # 85% zeros (physlm-like), the rest lognormal
    x = np.where(rng.random(n) < 0.85, 0.0, np.round(rng.lognormal(1.0, 0.8, n), 2))
    return pd.DataFrame({"x": x})


def test_copy_keeping_the_mass_vs_one_smearing_it():
    """A copy drawn from the original's empirical distribution (a bootstrap: the
    saturated model fitted to the original, synthpop's proper = FALSE null) keeps
    the zeros as zeros: S_pMSE about 1. One that adds |N(0, 1e-6)| to every value
    (the zeros become tiny positives) puts none in the zero cell: far above.
    Before the fix both were NaN (85% zeros: one cell).

    Tolerance: d S_pMSE is about chi^2_d under this null (Snoke et al. 2018), d = 4
    here, so the mean of M = 40 copies has sd sqrt(2 / (M d)) = 0.11; the band
    [0.6, 1.4] is 3.5 sd either side. Measured: 0.96 with seed 7 (per-copy sd 0.65,
    sqrt(2/4) = 0.71 predicted); 0.99 (sd 0.09) over 20 other seeds; smeared 1681."""
    rng = np.random.default_rng(7)
    o = _mass_frame(2000, rng)
    keep = [o.sample(len(o), replace=True, random_state=int(rng.integers(2**31))).reset_index(drop=True)
            for _ in range(40)]
    smear = [k.assign(x=k["x"] + np.abs(rng.normal(0, 1e-6, len(k)))) for k in keep[:5]]
    t_keep = utility_tables(o, keep, ways=(1,)).to_frame().set_index("variables")
    t_smear = utility_tables(o, smear, ways=(1,)).to_frame().set_index("variables")
    assert t_keep.loc["x", "df"] >= 4
    assert 0.6 < t_keep.loc["x", "s_pmse"] < 1.4
    assert t_smear.loc["x", "s_pmse"] > 100
