"""DPSyn faithful on agency-sized files (issue 25, items 3-4): common levels survive, numeric
tails are kept by a DP hierarchy, and the release's reported range / mean check is a
function of the noisy counts only."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from synthmi.privacy import DPSynSynthesizer
from synthmi.privacy.dpsyn import _tree_estimate, _tree_maps, _tree_weights

DOMAIN = {"columns": {
    "age": {"kind": "integer", "bounds": [16, 99], "missing": False},
    "income": {"kind": "continuous", "bounds": [0, 1_000_000], "point_masses": [0], "missing": False},
    "lang": {"kind": "categorical", "levels": ["en", "es", "fr"], "missing": False},
    "emp": {"kind": "categorical", "levels": ["work", "none", "retired"], "missing": False},
}}


def _survey(n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Ages with 15% over 65 and 10% under 22; incomes lognormal (mean ~24,000, max far
    below the declared 1,000,000) with 10% zeros; a language spoken by 10% ('es')."""
    rng = np.random.default_rng(seed)
    grp = rng.choice(3, n, p=[0.10, 0.75, 0.15])
    age = np.where(grp == 0, rng.integers(16, 22, n), np.where(grp == 1, rng.integers(22, 66, n), rng.integers(66, 95, n)))
    income = np.where(rng.random(n) < 0.1, 0.0, np.round(rng.lognormal(9.9, 0.6, n), 2))
    lang = rng.choice(["en", "es", "fr"], n, p=[0.85, 0.10, 0.05])
    emp = np.where(grp == 2, "retired", rng.choice(["work", "none"], n, p=[0.8, 0.2]))
    return pd.DataFrame({"age": age.astype(np.int64), "income": income, "lang": lang, "emp": emp})


def _fit(df, seed, eps=1.0):
    return DPSynSynthesizer(epsilon=eps, delta=1e-9, random_state=seed).fit(df, domain=DOMAIN)


# ------------------------------------------------------------------ hand values
def test_tree_maps_by_hand():
    # 20 cells + missing: a level of 8 nodes (8 <= 20 / 2; 64 is not), then the cells
    maps, shapes = _tree_maps(20, True)
    assert shapes == [9, 21]
    np.testing.assert_array_equal(maps[0][:20], (np.arange(20) * 8) // 20)
    assert maps[0][20] == 8 and maps[1][20] == 20  # the missing cell is its own node
    np.testing.assert_array_equal(maps[1], np.arange(21))


def test_tree_maps_declared_points_are_their_own_nodes_by_hand():
    # 20 cells, cells 0 and 10 declared point masses, + missing: 18 interval cells in 8
    # nodes (interval cell j in node j * 8 // 18: 0,0,0,1,1,2,2,3,3,4,4,4,5,5,6,6,7,7),
    # each point its own node, nodes numbered in value order, the missing cell last
    point = np.zeros(20, dtype=bool)
    point[[0, 10]] = True
    maps, shapes = _tree_maps(20, True, point)
    assert shapes == [11, 21]
    np.testing.assert_array_equal(maps[0], [0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 6, 6, 7, 7, 8, 8, 9, 9, 10])
    np.testing.assert_array_equal(maps[1], np.arange(21))


def test_tree_weights_grow_tails_node_by_node_by_hand():
    # five top nodes (each its own cell), se 1, z = 3: only node 2 (100) resolves; the old
    # run rule keeps nothing else ({0, 1}: 1.5 < 3 and 2.0 < 3 sqrt 2; {3, 4}: 1.2, 2.0)
    maps = [np.arange(5), np.arange(5)]
    est = np.array([0.5, 1.5, 100.0, 1.2, 0.8])
    np.testing.assert_allclose(_tree_weights(est, np.eye(5), maps, z=3.0), [0, 0, 104, 0, 0])
    # grow_z = 1: right of node 2, node 3 (1.2 >= 1) is kept and node 4 (0.8) ends the
    # tail; left, node 1 (1.5) is kept and node 0 (0.5) ends it. Total 104 split 1.5 : 100 : 1.2
    w = _tree_weights(est, np.eye(5), maps, z=3.0, grow_z=1.0)
    np.testing.assert_allclose(w, 104 * np.array([0, 1.5, 100, 1.2, 0]) / 102.7)
    # a node that clears grow_z but is not next to placed mass stays empty (node 4 here)
    est2 = np.array([0.5, 0.2, 100.0, -0.3, 2.0])
    np.testing.assert_allclose(_tree_weights(est2, np.eye(5), maps, z=3.0, grow_z=1.0), [0, 0, 102.4, 0, 0])
    # the missing cell's node (last) neighbours no value: never grown into
    maps3 = [np.arange(3), np.arange(3)]
    est3 = np.array([100.0, 1.5, 1.5])
    np.testing.assert_allclose(_tree_weights(est3, np.eye(3), maps3, z=3.0, grow_z=1.0), [100, 1.5, 1.5])
    np.testing.assert_allclose(_tree_weights(est3, np.eye(3), maps3, z=3.0, grow_z=1.0, has_missing=True),
                               103 * np.array([100, 1.5, 0]) / 101.5)


def test_tree_estimate_by_hand():
    # Two nodes over four cells: y_top = (10, 20), y_cells = (4, 5, 12, 9). Least squares
    # gives each cell y_i + r / (k + 1), r = node - sum of its k = 2 cells:
    # node 1: r = 1 -> 4 1/3, 5 1/3; node 2: r = -1 -> 11 2/3, 8 2/3. Cov = sigma^2 (A'A)^-1,
    # A'A = [[2, 1], [1, 2]] per node, inverse (1/3)[[2, -1], [-1, 2]].
    maps = [np.array([0, 0, 1, 1]), np.arange(4)]
    est, cov = _tree_estimate([np.array([10, 20]), np.array([4, 5, 12, 9])], maps, 4, sigma=3.0)
    np.testing.assert_allclose(est, [4 + 1 / 3, 5 + 1 / 3, 12 - 1 / 3, 9 - 1 / 3])
    np.testing.assert_allclose(cov[:2, :2], 9.0 / 3 * np.array([[2, -1], [-1, 2]]))
    np.testing.assert_allclose(cov[:2, 2:], 0.0, atol=1e-12)


def test_tree_weights_by_hand():
    # Two top nodes over four cells, cell estimates (100, 60, 1, -1), independent with se 1:
    # top nodes 160 and 0, se sqrt(2); node 2 is below 3 se and so is its run (itself), so
    # the total 160 all goes to node 1 (an empty tail stays empty). Node 1's cells share
    # it by positive-part James-Stein: lambda = 1 - (k - 1) se^2 / sum (c - mean)^2
    # = 1 - 1 / 800, shares (1 - lambda) / 2 + lambda (100, 60) / 160.
    maps = [np.array([0, 0, 1, 1]), np.arange(4)]
    w = _tree_weights(np.array([100.0, 60.0, 1.0, -1.0]), np.eye(4), maps, z=3.0)
    lam = 1 - 1 / 800
    np.testing.assert_allclose(w, [160 * ((1 - lam) / 2 + lam * 100 / 160), 160 * ((1 - lam) / 2 + lam * 60 / 160), 0, 0])
    # node 2 = 4.5 >= 3 sqrt(2): it resolves; total 164.5 split 160 : 4.5, then its cells
    # (4, 0.5): lambda = 1 - 1 / 6.125, positive shares (8/9, 1/9)
    w = _tree_weights(np.array([100.0, 60.0, 4.0, 0.5]), np.eye(4), maps, z=3.0)
    lam = 1 - 1 / 6.125
    np.testing.assert_allclose(w[2:], 4.5 * ((1 - lam) / 2 + lam * np.array([8 / 9, 1 / 9])))
    assert w.sum() == pytest.approx(164.5)
    # An unresolved run next to a resolved node is grown from the resolved side.
    # (100, 2, 3), se 1, z = 4: 2 and 3 are below 4; the run {2, 3}: 5 < 4 sqrt(2) = 5.66 -> 0
    maps3 = [np.array([0, 1, 2]), np.arange(3)]
    w = _tree_weights(np.array([100.0, 2.0, 3.0]), np.eye(3), maps3, z=4.0)
    np.testing.assert_allclose(w, [105.0, 0.0, 0.0])
    # z = 2.5: 3 resolves; 2 alone (an interior run) does not: the total 105 goes 100 : 3
    w = _tree_weights(np.array([100.0, 2.0, 3.0]), np.eye(3), maps3, z=2.5)
    np.testing.assert_allclose(w, 105 * np.array([100.0, 0.0, 3.0]) / 103)
    # (100, 2, 2), z = 2.5: neither 2 alone; the run {2, 2} = 4 >= 2.5 sqrt(2) = 3.54 keeps 4
    w = _tree_weights(np.array([100.0, 2.0, 2.0]), np.eye(3), maps3, z=2.5)
    np.testing.assert_allclose(w, [100.0, 2.0, 2.0])


# ------------------------------------------------------------------ behaviour
SEEDS = (0, 1, 2, 3, 4)


@pytest.mark.parametrize("seed", SEEDS)
def test_common_level_survives(seed):
    """A level held by 10% at n = 1,000, eps = 1 (noise sd of its count ~17 with four
    columns, so the count is ~6 sd above 0) is in every copy and never suppressed."""
    df = _survey(1000, seed=100 + seed)
    s = _fit(df, seed)
    assert "es" not in s.suppressed_levels_.get("lang", [])
    for copy in s.sample(2, random_state=seed).copies:
        share = (copy["lang"] == "es").mean()
        # binomial sd of a 10% share at n = 1,000 is 0.0095; noise sd ~0.017: 0.02 is > 4 sd below
        assert share > 0.02, share


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_numeric_tails_survive_and_the_mean_holds(seed):
    """n = 2,000 (the issue's survey size), eps = 1. 15% of ages lie above 65 and 10%
    below 22; income's declared bound is ~5x its
    largest value. The release keeps the tails (share of people outside the copies'
    range small) and does not inflate the income mean (issue 25: ages outside 20-70
    vanished, mean income doubled)."""
    df = _survey(2000, seed=200 + seed)
    s = _fit(df, seed)
    pooled = pd.concat(s.sample(2, random_state=seed).copies)
    outside = ((df["age"] < pooled["age"].min()) | (df["age"] > pooled["age"].max())).mean()
    # the top node of the hierarchy (ages 89-99, ~2.5% of people here, ~1.5 noise sd) may be
    # lost to the noise; the 15% tail above 65 and the 10% below 22 may not
    assert outside <= 0.04, outside
    rel = abs(pooled["income"].mean() / df["income"].mean() - 1)
    # measured over seeds 0-5: 0.02-0.06; the bug this guards against doubled the mean
    assert rel < 0.15, rel
    assert pooled["income"].max() < 200_000  # nothing spread up to the declared 1,000,000
    rep = s.continuous_["age"]
    assert rep["range"][0] <= 22 and rep["range"][1] >= 80


def test_reported_range_and_mean_check_use_noisy_counts_only():
    """Same noise seed, data whose values differ but whose fine cells (hence every count)
    are equal: the reported range / mean / flags are identical, although the raw means differ."""
    df = _survey(1000, seed=7)
    s = _fit(df, 0)
    col = s._columns[s.columns_.index("income")]
    codes = np.searchsorted(col.cell_lo[~col.cell_point], df["income"].to_numpy(), side="right") - 1
    ivl_lo = col.cell_lo[~col.cell_point][codes]
    moved = df.copy()
    # move every positive income halfway towards its cell's lower end: same cell, other value
    moved["income"] = np.where(df["income"] > 0, ivl_lo + (df["income"] - ivl_lo) / 2, 0.0)
    assert abs(moved["income"].mean() - df["income"].mean()) > 100
    s2 = _fit(moved, 0)
    assert s2.continuous_ == s.continuous_
    assert s2._diagnostics()["continuous"] == s._diagnostics()["continuous"]
    assert s2.summary() == s.summary()
    assert "release range" in s.summary()


def test_hierarchy_keeps_the_total_budget():
    """The numeric hierarchy is one ledger entry of sensitivity sqrt(L); the RDP of all
    entries still sums to that of one unit Gaussian with the unit sigma."""
    from synthmi.privacy.dpsyn import unit_sigma

    s = _fit(_survey(1000), 0, eps=2.0)
    rho = sum(e.count * e.sensitivity**2 / (2 * e.sigma**2) for e in s.accountant_.ledger)
    assert rho == pytest.approx(1 / (2 * unit_sigma(2.0, 1e-9) ** 2), rel=1e-8)
    assert s.spent()[0] == pytest.approx(2.0, rel=1e-6) and s.spent()[0] <= 2.0
    tree = [e for e in s.accountant_.ledger if e.label in ("one-way: age", "one-way: income")]
    assert len(tree) == 2 and all(e.sensitivity > 1 for e in tree)
    assert tree[1].sensitivity == pytest.approx(math.sqrt(3))  # 8, 64 nodes, then 257 cells


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_declared_point_mass_at_the_bound_is_kept_and_the_gap_stays_empty(seed):
    """n = 1,000, eps = 1: a column in [0, 1] with declared point masses 0 and 1 (like
    randhie's physlm): 75% at 0, 13% at 1, 12% spread over (0, 0.15). A declared point mass
    is its own node of the hierarchy (noise of one flat count, sd ~ 30 here), so the 130
    people at 1 clear it; before, the point at 1 shared the top node (0.875, 1] and its
    2.9 sd were below the 3-sd rule: the copies held 2-5% at 1 and spread 5-9% of records
    over the empty (0.3, 1) (seeds 0-5)."""
    df = _survey(1000, seed=300 + seed)
    rng = np.random.default_rng(seed)
    u = rng.random(1000)
    df["limit"] = np.where(u < 0.75, 0.0, np.where(u < 0.88, 1.0, np.round(rng.uniform(0, 0.15, 1000), 4)))
    dom = {"columns": {**DOMAIN["columns"],
                       "limit": {"kind": "continuous", "bounds": [0, 1], "point_masses": [0, 1], "missing": False}}}
    s = DPSynSynthesizer(epsilon=1.0, delta=1e-9, random_state=seed).fit(df, domain=dom)
    pooled = pd.concat(s.sample(2, random_state=seed).copies)
    # true share 0.13; the noise sd of its count (~30 of 1,000) allows 0.07 at 2 sd;
    # measured 0.09-0.21 over seeds 0-5
    assert (pooled["limit"] == 1.0).mean() >= 0.06
    # an empty node next to placed mass passes the 1-sd growth test w.p. 0.16 and then holds
    # ~1-2 sd (3-6%); measured 0 over seeds 0-5 (0.046-0.09 before)
    assert ((pooled["limit"] > 0.3) & (pooled["limit"] < 1.0)).mean() < 0.02
    # the point nodes change no sensitivity: a record still adds 1 to one node per level
    # (8 + 2 points, 64 + 2 points, then the cells): one ledger entry of sensitivity sqrt(3)
    entry = [e for e in s.accountant_.ledger if e.label == "one-way: limit"]
    assert len(entry) == 1 and entry[0].sensitivity == pytest.approx(math.sqrt(3))


def test_report_has_the_same_fields_and_words_whatever_the_noise():
    """Which fields / words the continuous report holds must not depend on the noise
    (issue 25 battery: a field present in one run only differed between neighbours)."""
    from synthmi.privacy.dpsyn import _CONTINUOUS_KEYS, continuous_lines

    s = _fit(_survey(1000, seed=3), 0)
    assert all(tuple(e) == _CONTINUOUS_KEYS for e in s.continuous_.values())
    empty = {"x": dict.fromkeys(_CONTINUOUS_KEYS)}
    full = {"x": {"range": [1.0, 2.0], "declared": [0.0, 5.0], "mean": 1.5, "noisy_mean": 1.4, "noisy_mean_se": 0.1,
                  "mean_flag": "no", "share_outside_range": 0.1, "share_outside_range_raw": 0.1,
                  "share_outside_se": 0.02, "truncation_flag": "YES", "share_empty_inside": -0.004,
                  "share_empty_inside_se": 0.03}}
    assert continuous_lines(empty) == ["x: release range none of declared none, release mean n/a; noisy mean n/a "
                                       "(se n/a), mean moved beyond the noise: n/a; share outside the range n/a "
                                       "(se n/a), truncated: n/a; share in empty cells inside the range n/a (se n/a)"]
    # a negative unbiased share is printed as 0.0%, never as a negative share
    assert continuous_lines(full) == ["x: release range [1, 2] of declared [0, 5], release mean 1.5; noisy mean 1.4 "
                                      "(se 0.1), mean moved beyond the noise: no; share outside the range 10.0% "
                                      "(se 2.0%), truncated: YES; share in empty cells inside the range 0.0% (se 3.0%)"]
    undet = {"x": {**full["x"], "mean_flag": "not detectable", "truncation_flag": "not detectable",
                   "share_outside_range": 0.0, "share_outside_range_raw": -0.006, "share_outside_se": 0.104}}
    assert continuous_lines(undet)[0].endswith("mean moved beyond the noise: not detectable; share outside the range "
                                               "0.0% (se 10.4%), truncated: not detectable; share in empty cells "
                                               "inside the range 0.0% (se 3.0%)")
    # the fitted report: flags are one of the three words; shares within [0, 1]; declared bounds public
    for e in s.continuous_.values():
        assert e["mean_flag"] in ("YES", "no", "not detectable")
        assert e["truncation_flag"] in ("YES", "no", "not detectable")
        assert 0.0 <= e["share_outside_range"] <= 1.0 and 0.0 <= e["share_empty_inside"] <= 1.0
    assert s.continuous_["age"]["declared"] == [16.0, 99.0]


def _claims_absence(flag) -> bool:
    """A flag that says the effect is absent ("no"; ``False`` in the report before the wording fix)."""
    return flag is False or flag == "no"


def test_heavy_tail_is_kept_or_its_loss_is_not_reported_as_absent():
    """Lognormal incomes (log-sd 1: the top 1% above ~10x the median), n = 1,000, eps = 1, declared
    [0, 1,000,000], seeds 0-9. Either the release keeps the tail (<= 2% of people outside its range,
    mean within 10%) or the report does not say "no" (issue 25 follow-up: "truncated: no" at se 10.4%
    while 5% of anes96's popul was cut). Measured: the tail kept in 9 of 10 seeds (seed 4 lost 3.7%
    of people, mean -12%; rate 0.9, MC se 0.09); the share's se is 5-6% at this size, so the report
    says "not detectable" for truncation in 10 of 10 seeds (the old report said "no" in seed 4,
    where 3.7% were cut: this test failed there), and "not detectable" for the mean (3 se ~ 0.5 release sd) in 10 of 10."""
    dom = {"columns": {"income": {"kind": "continuous", "bounds": [0, 1_000_000], "missing": False},
                       "sex": {"kind": "categorical", "levels": ["f", "m"], "missing": False}}}
    kept = 0
    for seed in range(10):
        rng = np.random.default_rng(500 + seed)
        df = pd.DataFrame({"income": np.round(rng.lognormal(10, 1.0, 1000), 0),
                           "sex": rng.choice(["f", "m"], 1000)})
        e = DPSynSynthesizer(epsilon=1.0, delta=1e-9, random_state=seed).fit(df, domain=dom).continuous_["income"]
        out = float(((df["income"] < e["range"][0]) | (df["income"] > e["range"][1])).mean())
        rel = abs(e["mean"] / df["income"].mean() - 1)
        assert out <= 0.02 or not _claims_absence(e["truncation_flag"]), (seed, out, e)
        assert rel <= 0.10 or not _claims_absence(e["mean_flag"]), (seed, rel, e)
        kept += out <= 0.02
    # measured 9/10; 7 is 2 MC se (0.09 each) below
    assert kept >= 7, kept


@pytest.mark.slow
def test_anes96_popul_cut_is_not_reported_as_absent():
    """statsmodels' anes96 (944 rows) with popul declared [0, 8000] from its documentation, eps = 1:
    5% of people live above 1,000 (up to 7,300) and the true mean is 306. 95% of people lie in the
    first of the hierarchy's 8 top nodes; the other 7 hold ~47 people against a noise sd of ~65 over
    that stretch (the share's se is 6.5-8.5%), so the tail is below the noise and the release cuts it
    at 1,000 or 2,000 (mean -47% to -69% over seeds 0-9). The report must not call that "no": it says
    "not detectable" for both the truncation and the mean in 10 of 10 seeds; the declared bounds and
    the release range are printed side by side. Age (3.3% of people aged 80-91) likewise: "no" only
    in the seeds whose release keeps ages up to 89 or 99 (0.2% or 0% outside)."""
    sm = pytest.importorskip("statsmodels.api")
    from synthmi.privacy.dpsyn import continuous_lines

    df = sm.datasets.anes96.load_pandas().data[["popul", "age", "income"]].copy()
    df["age"] = df["age"].astype(int)
    df["income"] = df["income"].astype(int)
    dom = {"columns": {"popul": {"kind": "continuous", "bounds": [0, 8000], "missing": False},
                       "age": {"kind": "integer", "bounds": [18, 99], "missing": False},
                       "income": {"kind": "integer", "bounds": [1, 24], "missing": False}}}
    for seed in range(10):
        rep = DPSynSynthesizer(epsilon=1.0, delta=1e-9, random_state=seed).fit(df, domain=dom).continuous_
        for c in ("popul", "age"):
            e = rep[c]
            out = float(((df[c] < e["range"][0]) | (df[c] > e["range"][1])).mean())
            rel = abs(e["mean"] / df[c].mean() - 1)
            assert out <= 0.02 or not _claims_absence(e["truncation_flag"]), (seed, c, out, e)
            assert rel <= 0.10 or not _claims_absence(e["mean_flag"]), (seed, c, rel, e)
        # income's release range is its whole declared range: nothing can lie outside it
        if rep["income"]["range"] == rep["income"]["declared"]:
            assert rep["income"]["share_outside_range"] == 0.0 and rep["income"]["truncation_flag"] == "no"
        line = continuous_lines({"popul": rep["popul"]})[0]
        assert "of declared [0, 8000]" in line and "-" not in line.split("share outside the range ")[1][:2]
