"""The shared pieces of the anonymeter-style attacks: Wilson rates, the risk, its interval,
the combination over copies and the mixed-type neighbour search, against hand-computed values.

The reference values were computed from the formulas in synthmi.evaluation._attack
(Wilson 1927; anonymeter 1.1.0 stats/confidence.py) by hand in a separate session, and
agree with anonymeter 1.1.0's own success_rate / residual_success / EvaluationResults.risk
on the same counts (checked in its venv, see benchmarks/anonymeter_agreement.py).
"""
import math

import numpy as np
import pandas as pd
import pytest

from synthmi.evaluation._attack import (
    MixedEncoder,
    attack_figures,
    bind_value,
    combine_copies,
    kneighbors,
    residual_success,
    success_rate,
)
from synthmi.errors import ColumnError


def test_wilson_rate_and_error_hand_computed():
    # z = 1.959964; rate = (30 + z^2/2) / (100 + z^2); error = z/(100 + z^2) * sqrt(30*70/100 + z^2/4)
    r = success_rate(100, 30, 0.95)
    assert r.value == pytest.approx(0.3073986996413971, abs=1e-12)
    assert r.error == pytest.approx(0.08844984669206951, abs=1e-12)
    r = success_rate(200, 45, 0.95)
    assert r.value == pytest.approx(0.23018246475374832, abs=1e-12)
    assert r.error == pytest.approx(0.057558767602857004, abs=1e-12)


def test_wilson_extremes_stay_inside_0_1():
    # k = 0 and k = n: the Wilson estimate is pulled toward 1/2 by z^2/2, never 0 or 1
    lo, hi = success_rate(500, 0, 0.95), success_rate(500, 500, 0.95)
    z2 = 1.959963984540054 ** 2
    assert lo.value == pytest.approx(0.5 * z2 / (500 + z2)) and hi.value == pytest.approx(1 - lo.value)


def test_residual_risk_and_propagated_interval_hand_computed():
    a, c = success_rate(100, 30, 0.95), success_rate(100, 10, 0.95)
    res = residual_success(a, c)
    # R = (0.307399 - 0.114797) / (1 - 0.114797); e_R from dR/da = 1/(1-c), dR/dc = (a-1)/(1-c)^2
    assert res.value == pytest.approx(0.2175787782396415, abs=1e-12)
    assert res.error == pytest.approx(0.1129438129752852, abs=1e-12)
    f = attack_figures((100, 100, 100), 30, 10, 5, 0.95)
    assert (f["risk"], f["ci_low"], f["ci_high"]) == pytest.approx((0.2175787782396415, 0.1046349652643563,
                                                                  0.3305225912149267), abs=1e-12)


def test_bind_value_clips_to_unit_interval():
    assert bind_value(-0.1, 0.05) == (0.0, 0.0, 0.0)
    assert bind_value(0.02, 0.05) == pytest.approx((0.02, 0.0, 0.07))
    assert bind_value(0.99, 0.05) == pytest.approx((0.99, 0.94, 1.0))
    assert all(math.isnan(v) for v in bind_value(float("nan"), 0.1))


def test_control_rate_one_gives_nan_not_a_division_error():
    f = attack_figures((10, 10, 10), 10, 10, 0, 0.95)
    assert f["control_rate"] < 1  # Wilson never reaches 1 ...
    assert np.isfinite(f["risk"])  # ... so the risk stays defined


def test_combination_over_copies_mean_mc_error_and_pooled_interval():
    rows = [attack_figures((100, 100, 100), 30, 10, 5, 0.95), attack_figures((100, 100, 100), 50, 10, 5, 0.95)]
    res = combine_copies("linkability", "linkability", rows, 0.95, {}, "note")
    r1, r2 = rows[0]["risk"], rows[1]["risk"]
    assert res.figures["linkability_per_copy_mean"] == pytest.approx((r1 + r2) / 2)
    # sd of two values = |r1 - r2| / sqrt(2); MC error = sd / sqrt(2) = |r1 - r2| / 2
    assert res.figures["linkability_mc_error"] == pytest.approx(abs(r1 - r2) / 2)
    pooled = attack_figures((200, 200, 200), 80, 20, 10, 0.95)
    assert res.figures["linkability_ci_low"] == pytest.approx(pooled["ci_low"])
    assert res.figures["linkability_ci_high"] == pytest.approx(pooled["ci_high"])
    # the headline is the pooled estimate its interval belongs to
    assert res.figures["linkability"] == pytest.approx(pooled["risk"])
    assert list(res.to_frame()["copy"]) == [0, 1]
    d = res.to_dict()
    assert d["key"] == "linkability" and d["describe"] == "note"
    single = combine_copies("linkability", "linkability", rows[:1], 0.95, {}, "")
    assert math.isnan(single.figures["linkability_mc_error"])


def test_kneighbors_gower_like_distance_hand_computed():
    cand = pd.DataFrame({"a": [0.0, np.nan, 10.0, 5.0], "b": ["x", "y", "x", "y"]})
    query = pd.DataFrame({"a": [4.0, np.nan], "b": ["x", "y"]})
    idx = kneighbors(MixedEncoder(cand, query, ["a", "b"]), 4)
    # range of a over both frames: 10. Query 0 (4, x): 0.4, undefined (one missing), 0.6, 0.1 + 1 = 1.1
    assert idx[0].tolist() == [0, 2, 3, 1]
    # query 1 (missing, y): candidate 1 both missing -> 1 (anonymeter counts it as different), rest undefined
    assert idx[1, 0] == 1
    assert kneighbors(MixedEncoder(cand, query, ["a", "b"]), 1).shape == (2, 1)


def test_kneighbors_ties_lowest_index_without_rng_random_with_rng():
    cand = pd.DataFrame({"b": ["x", "y", "x", "x"]})
    enc = MixedEncoder(cand, pd.DataFrame({"b": ["x"]}), ["b"])
    assert kneighbors(enc, 2)[0].tolist() == [0, 2]
    rng = np.random.default_rng(0)
    picks = np.array([kneighbors(enc, 1, rng)[0, 0] for _ in range(600)])
    # one random order per call: each of the 3 tied candidates ~1/3 of the time (binomial sd of a
    # share over 600 calls: 0.019; 0.08 is > 4 sd); the non-tied candidate 1 never
    assert set(picks) == {0, 2, 3}
    assert all(abs(np.mean(picks == c) - 1 / 3) < 0.08 for c in (0, 2, 3))


def test_encoder_refuses_a_column_numeric_in_one_frame_only():
    with pytest.raises(ColumnError, match="'a'"):
        MixedEncoder(pd.DataFrame({"a": [1.0, 2.0]}), pd.DataFrame({"a": ["1", "2"]}), ["a"])


def test_the_headline_lies_in_its_own_interval_when_per_copy_risks_clip():
    # a copy whose residual clips at 1 and one just below: the mean of clipped per-copy risks fell
    # outside the pooled interval (Adult CART univariate singling out 0.994 vs [0.998, 1.000])
    rows = [attack_figures((500, 500, 500), 500, 0, 0, 0.95), attack_figures((500, 500, 500), 470, 0, 0, 0.95)]
    res = combine_copies("singling_out", "singling_out", rows, 0.95, {}, "")
    f = res.figures
    assert f["singling_out_ci_low"] <= f["singling_out"] <= f["singling_out_ci_high"]
