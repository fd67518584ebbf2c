"""Membership inference: distance attack and DOMIAS (synthmi.evaluation.membership)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.errors import ParameterError
from synthmi.evaluation.membership import (KNN_DISTANCE_FLOOR, _kde_encode, _log_kde, _log_knn, auc_mann_whitney,
                                           membership_inference, tpr_at_fpr)


def test_auc_and_tpr_by_hand():
    # members [3, 2, 2], non-members [2, 1, 0]: 3 beats all three (3), each 2 ties one (1/2) and beats two
    # (2): (3 + 2.5 + 2.5) / 9
    m, n = np.array([3.0, 2.0, 2.0]), np.array([2.0, 1.0, 0.0])
    assert auc_mann_whitney(m, n) == pytest.approx(8 / 9)
    assert auc_mann_whitney(np.array([0.9, 0.8]), np.array([0.7, 0.85])) == pytest.approx(3 / 4)
    # ROC vertices (FPR, TPR): (0, 0), t=3 (0, 1/3), t=2 (1/3, 1), t=1 (2/3, 1), t=0 (1, 1);
    # at FPR 0.1 the line from (0, 1/3) to (1/3, 1): 1/3 + 0.3 * 2/3
    assert tpr_at_fpr(m, n, 0.1) == pytest.approx(1 / 3 + 0.3 * 2 / 3)
    assert tpr_at_fpr(m, n, 0.01) == pytest.approx(1 / 3 + 0.03 * 2 / 3)
    assert tpr_at_fpr(m, n, 1 / 3) == pytest.approx(1.0)  # a vertex
    # all scores tied: the diagonal (the randomised guess)
    assert tpr_at_fpr(np.zeros(4), np.zeros(4), 0.1) == pytest.approx(0.1)
    assert auc_mann_whitney(np.zeros(4), np.zeros(4)) == 0.5


def test_distance_attack_by_hand():
    # x ranges over train + holdout [0, 20]. Copy [0, 7.5]: members 0 -> 0, 10 -> 2.5/20; non-members
    # 5 -> 2.5/20, 20 -> 12.5/20. Scores -distance: member 0 beats both (2), member -0.125 ties one (1/2)
    # and beats one (1): AUC 3.5 / 4
    train = pd.DataFrame({"x": [0.0, 10.0]})
    holdout = pd.DataFrame({"x": [5.0, 20.0]})
    syn = pd.DataFrame({"x": [0.0, 7.5]})
    r = membership_inference(train, holdout, syn, attack="distance", n_boot=20, random_state=0)
    assert r.figures["membership_auc"] == pytest.approx(0.875)
    assert r.figures["distance_auc"] == r.figures["membership_auc"]
    assert r.figures["n_members"] == r.figures["n_non_members"] == 2


def test_kde_matches_formula_and_sklearn():
    # one point, one dimension: h = 1^(-1/5) = 1, log N(0; 0, 1) = -log(2 pi) / 2
    assert _log_kde(np.zeros((1, 1)), np.zeros((1, 1)))[0] == pytest.approx(-0.5 * np.log(2 * np.pi))
    from sklearn.neighbors import KernelDensity

    rng = np.random.default_rng(3)
    pts, q = rng.normal(size=(300, 4)), rng.normal(size=(50, 4))
    ref = KernelDensity(kernel="gaussian", bandwidth="scott", rtol=0.0, atol=0.0).fit(pts).score_samples(q)
    np.testing.assert_allclose(_log_kde(pts, q), ref, rtol=1e-8, atol=1e-8)
    ref = KernelDensity(kernel="gaussian", bandwidth=0.4, rtol=0.0, atol=0.0).fit(pts).score_samples(q)
    np.testing.assert_allclose(_log_kde(pts, q, 0.4), ref, rtol=1e-8, atol=1e-8)


def test_cv_bandwidth_by_hand_and_on_normal_data():
    from scipy.stats import norm

    from synthmi.evaluation.membership import CV_FACTORS, cv_bandwidth

    pts = np.array([[0.0], [0.1], [0.3], [1.0], [1.1], [3.0]])
    n = len(pts)
    grid = n ** (-1 / 5) * CV_FACTORS
    # leave-one-out log-likelihood of every point (validation = all 6), written out (log 0 = -inf at the
    # smallest h for the isolated 3.0: that h cannot win)
    with np.errstate(divide="ignore"):
        loo = [np.mean([np.log(np.mean([norm.pdf(pts[i, 0], pts[j, 0], h) for j in range(n) if j != i]))
                        for i in range(n)]) for h in grid]
    assert cv_bandwidth(pts, np.random.default_rng(0)) == pytest.approx(grid[int(np.argmax(loo))])
    # normal data: Scott's rule is near the optimal bandwidth there, and cross-validation keeps it (k = 0)
    x = np.random.default_rng(1).normal(size=(2000, 2))
    assert cv_bandwidth(x, np.random.default_rng(2)) == pytest.approx(2000 ** (-1 / 6))
    # a sample of few distinct values: a much smaller bandwidth
    tied = np.repeat(np.random.default_rng(3).normal(size=(20, 2)), 50, axis=0)
    assert cv_bandwidth(tied, np.random.default_rng(4)) < 0.1 * 1000 ** (-1 / 6)


def test_kde_encoding_standardises_and_one_hot():
    ref = pd.DataFrame({"x": [0.0, 2.0], "c": ["a", "b"]})
    q = pd.DataFrame({"x": [1.0, np.nan], "c": ["b", None]})
    e_ref, e_q = _kde_encode([ref, q], ["x", "c"], ref)
    # x: mean 1, sd 1 -> (-1, 1); missing -> 0 with a missingness column; c one-hot over a, b, missing
    np.testing.assert_allclose(e_ref, [[-1, 0, 1, 0, 0], [1, 0, 0, 1, 0]])
    np.testing.assert_allclose(e_q, [[0, 0, 0, 1, 0], [0, 1, 0, 0, 1]])


def _population(n, rng):
    return pd.DataFrame({"age": rng.integers(18, 90, n).astype(float), "inc": rng.gamma(2.0, 20000.0, n),
                         "hours": rng.normal(40, 8, n).round(1),
                         "sex": rng.choice(["F", "M"], n), "reg": rng.choice(list("ABCDEFG"), n)})


def test_knn_density_by_hand():
    # log p + log V_d = log k - log n - d log r_k (Loftsgaarden & Quesenberry 1965), r floored
    pts = np.array([[0.0], [1.0], [3.0]])
    got = _log_knn(pts, np.array([[0.5], [3.0]]), k=1)
    np.testing.assert_allclose(got, [-np.log(3) - np.log(0.5), -np.log(3) - np.log(KNN_DISTANCE_FLOOR)])
    # k = 2 at 0.5: the second neighbour is 1 (or 0), both at 0.5
    assert _log_knn(pts, np.array([[0.5]]), k=2)[0] == pytest.approx(np.log(2) - np.log(3) - np.log(0.5))
    # two dimensions: the 2nd neighbour of (0, 1) among (0, 0), (3, 4) is at sqrt(9 + 9)
    got = _log_knn(np.array([[0.0, 0.0], [3.0, 4.0]]), np.array([[0.0, 1.0]]), k=2)[0]
    assert got == pytest.approx(np.log(2) - np.log(2) - 2 * np.log(np.sqrt(18.0)))


def test_domias_knn_log_ratio_by_hand():
    # one numeric column (d = 1): score = log(n_ref / n_syn) + log r_ref - log r_syn; the standardisation
    # divides both radii by the same sd and cancels. Reference {1, 2, 3}, release {0, 12}:
    #   member 0:  r_syn 0 (floored: a finite top score), r_ref 1
    #   member 10: r_syn 2, r_ref 7  -> ratio 3.5
    #   non-member 5:  r_syn 5, r_ref 2  -> 0.4
    #   non-member 13: r_syn 1, r_ref 10 -> 10
    # AUC: member 0 beats both (2), member 10 beats 0.4 only (1): 3/4
    train, holdout = pd.DataFrame({"x": [0.0, 10.0]}), pd.DataFrame({"x": [5.0, 13.0]})
    ref = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    f = membership_inference(train, holdout, pd.DataFrame({"x": [0.0, 12.0]}), attack="domias", reference=ref,
                             density="knn", n_boot=20, random_state=0).figures
    assert f["membership_auc"] == pytest.approx(0.75) and f["density"] == "knn" and f["k"] == 1
    # two one-row copies {0} and {12}: the headline is ONE kNN density of the pooled rows (the same 3/4);
    # copy {0} alone: member 10 -> 7/10, non-members 2/5 and 10/13: AUC 3/4; copy {12} alone: member 0 ->
    # 1/12, member 10 -> 3.5, non-members 2/7 and 10: AUC 1/4; per-copy mean 1/2
    r = membership_inference(train, holdout, [pd.DataFrame({"x": [0.0]}), pd.DataFrame({"x": [12.0]})],
                             attack="domias", reference=ref, density="knn", n_boot=20, random_state=0)
    assert r.figures["membership_auc"] == pytest.approx(0.75)
    np.testing.assert_allclose(r.to_frame()["auc"], [0.75, 0.25])


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(0)
    return _population(1500, rng), _population(1500, rng), [_population(1500, rng) for _ in range(2)]


def test_original_released_as_is_is_recognised(frames):
    train, holdout, _ = frames
    d = membership_inference(train, holdout, train, attack="distance", sample=500, random_state=1).figures
    # every member is at distance 0 and no non-member is (continuous columns: no exact twin)
    assert d["membership_auc"] == 1.0 and d["membership_tpr_at_fpr_0.01"] == 1.0
    dom = membership_inference(train, holdout, train, attack="domias", density="kde", sample=500,
                               random_state=1).figures
    # DOMIAS's smooth densities on 12 encoded dimensions are weaker than the distance attack on a copy,
    # but its AUC is far (> 5 null sds) above 0.5
    assert dom["membership_auc"] > 0.5 + 5 * dom["null_auc_sd"]
    # the cross-validated bandwidths (the default) see the copy better than Scott's rule (which oversmooths
    # near-identical records): more than 2 null sds apart on the same candidates
    scott = membership_inference(train, holdout, train, attack="domias", density="kde", sample=500, random_state=1,
                                 bandwidth="scott").figures
    assert dom["membership_auc"] > scott["membership_auc"] + 2 * dom["null_auc_sd"]


def test_domias_knn_recognises_the_original_and_not_an_independent_release(frames):
    train, holdout, fresh = frames
    before = [train.copy(), holdout.copy(), fresh[0].copy()]
    # the original released as is: every member has its own record in the release (r_syn floored) and no
    # non-member has a twin (continuous columns), so members outrank non-members up to sampling of the
    # 1,500-row release (all of it is in the density sample): AUC near 1
    f = membership_inference(train, holdout, train, attack="domias", density="knn", sample=500,
                             random_state=1).figures
    assert f["membership_auc"] >= 0.95 and f["membership_tpr_at_fpr_0.01"] >= 0.9
    # an independent release: no membership signal, the AUC within 3 null sds (0.3% two-sided) of 0.5 and
    # its bootstrap interval covering 0.5
    g = membership_inference(train, holdout, fresh, attack="domias", density="knn", sample=500,
                             random_state=2).figures
    assert abs(g["membership_auc"] - 0.5) < 3 * g["null_auc_sd"]
    assert g["membership_auc_ci_low"] < 0.5 < g["membership_auc_ci_high"]
    # same seed, same output; inputs untouched
    again = membership_inference(train, holdout, fresh, attack="domias", density="knn", sample=500,
                                 random_state=2).figures
    assert again == g
    for x, y in zip(before, [train, holdout, fresh[0]]):
        pd.testing.assert_frame_equal(x, y)
    with pytest.raises(ParameterError, match="'density' parameter of membership_inference"):
        membership_inference(train, holdout, train, attack="domias", density="flow")
    with pytest.raises(ParameterError, match="'k' parameter of membership_inference"):
        membership_inference(train, holdout, train, attack="domias", density="knn", k=0)


@pytest.mark.parametrize("attack", ["distance", "domias"])
def test_independent_release_is_near_guessing(frames, attack):
    train, holdout, fresh = frames
    r = membership_inference(train, holdout, fresh, attack=attack, sample=500, random_state=2)
    f = r.figures
    # no membership signal: the whole-release score is independent of membership, so its AUC has the null sd
    # (Mann-Whitney) and 3 null sds is a 0.3% two-sided tolerance; the bootstrap interval covers 0.5
    assert abs(f["membership_auc"] - 0.5) < 3 * f["null_auc_sd"]
    assert f["membership_auc_ci_low"] < 0.5 < f["membership_auc_ci_high"]
    # TPR at FPR 0.1 under no signal is 0.1 with binomial sd sqrt(0.1 * 0.9 / 500) = 0.013 (plus the FPR's own)
    assert abs(f["membership_tpr_at_fpr_0.1"] - 0.1) < 4 * np.sqrt(2 * 0.1 * 0.9 / 500)
    assert len(r.to_frame()) == 2 and f["copies"] == 2 and np.isfinite(f["membership_auc_per_copy_mc_error"])


def test_same_seed_same_output_and_no_mutation(frames):
    train, holdout, fresh = frames
    before = [train.copy(), holdout.copy(), fresh[0].copy()]
    a = membership_inference(train, holdout, fresh[0], attack="domias", sample=200, random_state=5)
    b = membership_inference(train, holdout, fresh[0], attack="domias", sample=200, random_state=5)
    assert a.to_dict() == b.to_dict()
    for x, y in zip(before, [train, holdout, fresh[0]]):
        pd.testing.assert_frame_equal(x, y)
    d = a.to_dict()
    assert "note" in d and "intruder" in d["note"] and "membership_auc" in d
    assert "Membership inference (domias attack)" in str(a.summary())


def test_bad_input():
    t = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    with pytest.raises(ParameterError, match="'attack' parameter of membership_inference"):
        membership_inference(t, t, t, attack="shadow")
    with pytest.raises(ParameterError, match="'fpr'"):
        membership_inference(t, t, t, fpr=(0.0,))
    with pytest.raises(ParameterError, match="'reference'"):
        membership_inference(t, t, t, attack="distance", reference=t)
    with pytest.raises(Exception, match="'columns'"):
        membership_inference(t, t, t, columns=["nope"])
    with pytest.raises(ParameterError, match="'bandwidth'"):
        membership_inference(t, t, t, attack="domias", bandwidth=-1.0)
    with pytest.raises(ParameterError, match="'holdout'"):
        membership_inference(t, t.iloc[:1], t)


def test_a_holdout_of_training_records_is_refused(frames):
    """Fail closed: non-members that are training records make every attack look like guessing."""
    train, holdout, fresh = frames
    for attack in ("distance", "domias"):
        with pytest.raises(ParameterError, match=r"'holdout' parameter of membership_inference.*100% of its "
                                                 r"records are records of 'train'"):
            membership_inference(train, train.iloc[:700], fresh, attack=attack, random_state=0)
    # DOMIAS's reference density estimated on the members divides their signal away
    with pytest.raises(ParameterError, match=r"'reference' parameter of membership_inference.*100% of its"):
        membership_inference(train, holdout, train, attack="domias", reference=train.iloc[:700], random_state=0)
    # a reference holding the non-members: each would find itself there (issue 26 follow-up)
    with pytest.raises(ParameterError, match=r"'reference' parameter of membership_inference.*apart from the "
                                             r"holdout.*100% of its records are records of 'holdout'"):
        membership_inference(train, holdout, fresh, attack="domias", reference=holdout, random_state=0)
    # categorical-only data: exact twins are the rule in the population, not a sign of a mistake
    rng = np.random.default_rng(4)
    cat = pd.DataFrame({"a": rng.choice(list("xy"), 600), "b": rng.choice(list("uv"), 600)})
    r = membership_inference(cat.iloc[:400], cat.iloc[400:], cat.iloc[:400], attack="distance", n_boot=20,
                             random_state=0)
    assert r.figures["n_non_members"] == 200


def test_the_headline_attacks_the_whole_release():
    """The intruder holds all M copies. x ranges over train + holdout [0, 20]. Copy A = [0, 0]: members
    0 -> 0, 10 -> 10/20; non-members 5 -> 5/20, 20 -> 1: AUC (2 + 1) / 4. Copy B = [10, 10]: members
    0 -> 1/2, 10 -> 0; non-members 1/4, 1/2: AUC (2 + 1/2) / 4. One copy at a time: mean 0.6875 (the
    headline before this test). The release {0, 0, 10, 10} puts both members at distance 0 and no
    non-member: AUC 1, TPR 1 at every FPR."""
    train, holdout = pd.DataFrame({"x": [0.0, 10.0]}), pd.DataFrame({"x": [5.0, 20.0]})
    copies = [pd.DataFrame({"x": [0.0, 0.0]}), pd.DataFrame({"x": [10.0, 10.0]})]
    f = membership_inference(train, holdout, copies, attack="distance", n_boot=20, random_state=0).figures
    assert f["membership_auc"] == 1.0 and f["membership_tpr_at_fpr_0.01"] == 1.0
    assert f["membership_auc_per_copy"] == pytest.approx((0.75 + 0.625) / 2)
    assert f["membership_auc_per_copy_mc_error"] == pytest.approx(abs(0.75 - 0.625) / 2)  # sd of 2 / sqrt(2)
    # DOMIAS: the release's density is the equal mixture of the copies' KDEs (each its own Scott bandwidth)
    rng = np.random.default_rng(7)
    tr, ho, ref = (pd.DataFrame({"x": rng.normal(size=k)}) for k in (30, 30, 40))
    cps = [pd.DataFrame({"x": rng.normal(size=k)}) for k in (25, 35)]
    g = membership_inference(tr, ho, cps, attack="domias", density="kde", reference=ref, n_boot=20,
                             random_state=0).figures
    enc = _kde_encode([tr, ho, ref, *cps], ["x"], ref)
    cand = np.vstack([enc[0], enc[1]])
    mix = np.logaddexp(_log_kde(enc[3], cand), _log_kde(enc[4], cand)) - np.log(2) - _log_kde(enc[2], cand)
    assert g["membership_auc"] == pytest.approx(auc_mann_whitney(mix[:30], mix[30:]))
    # kNN (the default): one kNN density of the copies' pooled rows over the reference's
    g = membership_inference(tr, ho, cps, attack="domias", reference=ref, n_boot=20, random_state=0).figures
    pooled = _log_knn(np.vstack(enc[3:]), cand) - _log_knn(enc[2], cand)
    assert g["membership_auc"] == pytest.approx(auc_mann_whitney(pooled[:30], pooled[30:]))


def test_tpr_interval_by_hand():
    from scipy import stats

    from synthmi.evaluation.membership import _tpr_interval
    # no member above the threshold: the bootstrap's [0, 0] widens to Clopper-Pearson's [0, 1 - 0.025^(1/n)]
    lo, hi = _tpr_interval(0.0, 250, 0.0, 0.0)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 250), rel=1e-9)  # 0.0146 > the null's 0.01
    # x = 250 * 0.012 = 3 members: CP [B(0.025; 3, 248), B(0.975; 4, 247)]; a wider bootstrap end is kept
    lo, hi = _tpr_interval(0.012, 250, 0.0, 0.036)
    assert lo == 0.0 and hi == pytest.approx(max(0.036, stats.beta.ppf(0.975, 4, 247)))
    lo, hi = _tpr_interval(0.012, 250, 0.008, 0.02)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 3, 248)) and hi == pytest.approx(stats.beta.ppf(0.975, 4, 247))
    # an interpolated count (2.5): the floor's lower end, the ceiling's upper end
    lo, hi = _tpr_interval(0.01, 250, 1.0, 0.0)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 2, 249)) and hi == pytest.approx(stats.beta.ppf(0.975, 4, 247))


def test_tpr_interval_does_not_collapse_when_no_member_passes():
    # the release repeats the non-members: they are all at distance 0, no member is, so no member passes the
    # threshold at FPR 0.01 in the sample nor in any bootstrap resample; the percentile interval was [0, 0]
    rng = np.random.default_rng(5)
    train, holdout = _population(250, rng), _population(250, rng)
    f = membership_inference(train, holdout, holdout, attack="distance", sample=250, random_state=0).figures
    assert f["membership_tpr_at_fpr_0.01"] == 0.0
    assert f["membership_tpr_at_fpr_0.01_ci_low"] == 0.0
    assert f["membership_tpr_at_fpr_0.01_ci_high"] == pytest.approx(1 - 0.025 ** (1 / 250), rel=1e-9)
