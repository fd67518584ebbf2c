"""Distance to closest record against a holdout baseline (synthmi.evaluation.dcr)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation.dcr import _encode, distance_to_closest_record, gower_nearest


def test_gower_by_hand():
    orig = pd.DataFrame({"x": [0.0, 10.0, 4.0], "c": ["a", "b", "a"]})
    syn = pd.DataFrame({"x": [5.0, 10.0], "c": ["b", "b"]})
    enc, num, cat = _encode([orig, syn], ["x", "c"], orig)
    assert num == ["x"] and cat == ["c"]
    d = gower_nearest(enc[1], enc[0])
    # range of x is 10. syn 0 = (5, b): to (0,a) (0.5+1)/2, to (10,b) (0.5+0)/2 = 0.25, to (4,a) (0.1+1)/2 -> 0.25
    # syn 1 = (10, b) is an exact copy of original row 1 -> 0
    np.testing.assert_allclose(d, [0.25, 0.0], rtol=1e-6)
    # missing values: both missing 0, one missing 1
    o2 = pd.DataFrame({"x": [np.nan, 1.0], "c": [None, "a"]})
    s2 = pd.DataFrame({"x": [np.nan], "c": ["a"]})
    (r2, q2), _, _ = _encode([o2, s2], ["x", "c"], o2)
    # to row 0: x both NaN 0, c missing vs 'a' 1 -> 0.5; to row 1: x NaN vs 1 -> 1, c equal 0 -> 0.5
    np.testing.assert_allclose(gower_nearest(q2, r2), [0.5])


def _population(n, rng):
    return pd.DataFrame({"age": rng.integers(18, 90, n).astype(float), "inc": rng.gamma(2.0, 20000.0, n),
                         "sex": rng.choice(["F", "M"], n), "reg": rng.choice(list("ABCDEFG"), n)})


def test_copies_are_flagged_and_fresh_draws_are_not():
    rng = np.random.default_rng(0)
    train, holdout, fresh = _population(3000, rng), _population(1000, rng), _population(3000, rng)
    # a release that copies training records: every DCR is 0, all below the holdout's 5% quantile
    leak = distance_to_closest_record(train, [train.sample(1000, random_state=1)], holdout=holdout, sample=500).figures
    assert leak["share_exact_synthetic"] == 1.0 and leak["share_exact_baseline"] == 0.0
    assert leak["share_below_holdout_q05"] == 1.0
    assert "holdout" in leak["baseline"]
    # new draws of the same population: about 5% below the holdout's 5% quantile
    # (binomial sd for 1000 sampled records 0.007; the quantile itself from 1000 holdout records ~0.007)
    ok = distance_to_closest_record(train, [fresh], holdout=holdout, sample=1000).figures
    assert ok["share_below_holdout_q05"] == pytest.approx(0.05, abs=0.035)
    assert ok["median_dcr_synthetic"] == pytest.approx(ok["median_dcr_baseline"], rel=0.15)
    # leave-one-out baseline when no holdout is given
    loo = distance_to_closest_record(train, [fresh], sample=500).figures
    assert "leave-one-out" in loo["baseline"] and loo["n_baseline_sampled"] == 500
    assert 0 <= loo["share_below_holdout_q05"] < 0.15


def test_bad_input():
    df = pd.DataFrame({"x": [1.0, 2.0]})
    with pytest.raises(ValueError, match="columns"):
        distance_to_closest_record(df, [df], columns=["zz"])
    with pytest.raises(ValueError, match="'sample' parameter"):
        distance_to_closest_record(df, [df], sample=1)


def test_near_copies_of_large_values_are_not_exact():
    """Values 0.01 apart on a range of 1e6 differ (a float32 encoding made 500000.01 equal to 500000.00)."""
    rng = np.random.default_rng(0)
    x = np.round(rng.uniform(400000, 600000, 50), 2)
    x[0], x[1] = 0.0, 1e6
    orig = pd.DataFrame({"income": x, "sex": rng.choice(["f", "m"], 50)})
    syn = orig.assign(income=orig["income"] + 0.01)
    r = distance_to_closest_record(orig, syn, sample=50, random_state=0)
    assert r.figures["share_exact_synthetic"] == 0.0
    # each record's nearest original is itself, 0.01 / 1e6 away on one of 2 columns
    np.testing.assert_allclose(r.dcr_synthetic, 0.01 / 1e6 / 2, rtol=1e-3)
    assert distance_to_closest_record(orig, orig, sample=50, random_state=0).figures["share_exact_synthetic"] == 1.0
