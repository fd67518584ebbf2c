import math

import numpy as np
import pytest
from scipy import integrate, stats

from synthmi.privacy.discrete import discrete_laplace_pmf
from synthmi.privacy.mechanisms import (
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    exponential_mechanism,
    exponential_mechanism_probabilities,
    gaussian_delta,
)

from _privacy_stats import ALPHA, chisquare_pvalue

N = 100_000


# ---------------------------------------------------------------- Laplace
def test_laplace_ks_and_scale():
    mech = LaplaceMechanism(epsilon=0.5, sensitivity=2.0)
    assert mech.scale == pytest.approx(4.0)
    out = mech.randomise(np.full(N, 3.0), random_state=1)
    assert stats.kstest(out, stats.laplace(loc=3.0, scale=4.0).cdf).pvalue > ALPHA
    # power: scale 4.2 (5% off) is rejected by the same test on the same draws
    assert stats.kstest(out, stats.laplace(loc=3.0, scale=4.2).cdf).pvalue < 1e-6


def test_laplace_scalar_and_seed():
    m = LaplaceMechanism(1.0)
    assert isinstance(m.randomise(2.0, random_state=3), float)
    assert m.randomise([1.0, 2.0], random_state=3).tolist() == m.randomise([1.0, 2.0], random_state=3).tolist()


def test_discrete_laplace_mechanism_is_integer_and_matches_pmf():
    m = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1)
    out = m.randomise(np.full(N, 10, dtype=np.int64), random_state=4)
    assert out.dtype == np.int64
    support = np.arange(-150, 151)
    assert chisquare_pvalue(out - 10, support, discrete_laplace_pmf(support, 2.0)) > ALPHA
    with pytest.raises(ValueError, match="'value' parameter"):
        m.randomise(np.array([1.5]))
    with pytest.raises(ValueError, match="'sensitivity' parameter"):
        DiscreteLaplaceMechanism(1.0, sensitivity=0.5).randomise(1)


def test_discrete_laplace_mechanism_exact_noise_matches_pmf(monkeypatch):
    from synthmi.privacy import mechanisms as mech_mod

    flags = []
    real = mech_mod.sample_discrete_laplace
    monkeypatch.setattr(mech_mod, "sample_discrete_laplace", lambda *a, **k: flags.append(k.get("exact")) or real(*a, **k))
    m = DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1, exact_noise=True)
    out = m.randomise(np.full(4000, 10, dtype=np.int64), random_state=5)  # rational arithmetic: ~0.5 s
    assert flags == [True] and out.dtype == np.int64
    support = np.arange(-60, 61)
    assert chisquare_pvalue(out - 10, support, discrete_laplace_pmf(support, 2.0)) > ALPHA
    assert np.array_equal(out, m.randomise(np.full(4000, 10, dtype=np.int64), random_state=5))
    with pytest.raises(ValueError, match="'exact_noise' parameter"):
        DiscreteLaplaceMechanism(1.0, exact_noise="no").randomise(1)


def test_laplace_scale_gives_density_ratio_bound_epsilon():
    # Analytic check of the calibration only: with scale = Delta/eps the Laplace log density ratio of
    # neighbouring inputs |f - f'| = Delta is bounded by eps, tight far out. The mechanism's own output
    # is audited in test_laplace_privacy_loss_audit_on_neighbouring_inputs.
    b = LaplaceMechanism(0.7, 1.0).scale
    z = np.linspace(-30, 30, 10001)
    ratio = stats.laplace(0, b).logpdf(z) - stats.laplace(1.0, b).logpdf(z)
    assert np.abs(ratio).max() == pytest.approx(0.7, rel=1e-12)


def _tail_log_ratio(out0: np.ndarray, out1: np.ndarray) -> tuple[float, float, float]:
    """log P(out < 0 | f=0) / P(out < 0 | f'=1), its mirror on out > 1, and the delta-method se of each."""
    n = out0.size
    p0l, p1l = (out0 < 0).mean(), (out1 < 0).mean()
    p0r, p1r = (out0 > 1).mean(), (out1 > 1).mean()
    se = math.sqrt((1 - p0l) / (n * p0l) + (1 - p1l) / (n * p1l))  # the two tails have the same se by symmetry
    return math.log(p0l / p1l), math.log(p1r / p0r), se


def test_laplace_privacy_loss_audit_on_neighbouring_inputs():
    """Statistical audit of the released values for neighbouring f = 0, f' = 1 (Delta = 1, eps = 0.7).

    Exact targets: for a Laplace(f, 1/eps) release, P(out < 0 | f) / P(out < 0 | f') = e^eps and
    the mirror on out > 1, so both pooled-tail log ratios equal eps (the loss bound is attained).
    With 200 000 independent releases per input, se of each log ratio ~ 0.0045 (delta method,
    p = 0.5 and 0.248); 4 se = 0.018, so a 5 % scale error (eps off by 0.035 ~ 7.8 se) is detected,
    as the power check below shows on the same sample size.
    """
    eps, n = 0.7, 200_000
    mech = LaplaceMechanism(eps, 1.0)
    out0 = mech.randomise(np.zeros(n), random_state=21)
    out1 = mech.randomise(np.ones(n), random_state=22)  # another seed: independent releases
    left, right, se = _tail_log_ratio(out0, out1)
    assert abs(left - eps) < 4 * se and abs(right - eps) < 4 * se, (left, right, se)
    # histogram audit of the whole output range: every bin's log probability ratio is <= eps
    # (up to its own MC se); ~35 bins, one-sided 4.5 se has prob 3e-6 each
    edges = np.arange(-8.0, 9.01, 0.5)
    c0, _ = np.histogram(out0, edges)
    c1, _ = np.histogram(out1, edges)
    ok = (c0 >= 500) & (c1 >= 500)
    assert ok.sum() >= 20
    lr = np.abs(np.log(c0[ok] / c1[ok]))
    se_bin = np.sqrt(1 / c0[ok] + 1 / c1[ok])
    assert np.all(lr <= eps + 4.5 * se_bin), (lr - eps) / se_bin
    # power: the same audit on releases with a 5 % smaller scale (true loss 0.735) rejects
    rng = np.random.default_rng(23)
    b_bad = mech.scale / 1.05
    left_bad, right_bad, se_bad = _tail_log_ratio(rng.laplace(0.0, b_bad, n), rng.laplace(1.0, b_bad, n))
    assert abs(left_bad - eps) > 4 * se_bad and abs(right_bad - eps) > 4 * se_bad


# ---------------------------------------------------------------- Gaussian
def test_classic_gaussian_sigma_hand_value():
    # eps = 0.5, delta = 1e-5: sigma = sqrt(2 log 125000) / 0.5 = 9.689...
    assert classic_gaussian_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-14)
    with pytest.raises(ValueError, match="'epsilon' parameter.*classic"):
        classic_gaussian_sigma(1.0, 1e-5)


def test_analytic_gaussian_solves_balle_wang_equation():
    for eps, delta, sens in [(1.0, 1e-5, 1.0), (0.2, 1e-6, 3.0), (4.0, 1e-3, 0.5)]:
        s = analytic_gaussian_sigma(eps, delta, sens)
        assert gaussian_delta(s, eps, sens) == pytest.approx(delta, rel=1e-8)
        # independent check: hockey-stick divergence by quadrature of the two normal densities
        f = lambda x: max(stats.norm.pdf(x, 0, s) - math.exp(eps) * stats.norm.pdf(x, sens, s), 0.0)  # noqa: E731
        hs = integrate.quad(f, -40 * s, 40 * s, points=[0.0, sens], limit=500, epsabs=1e-14)[0]
        assert hs == pytest.approx(delta, rel=1e-5)
    # analytic is tighter than classic where classic is valid
    assert analytic_gaussian_sigma(0.5, 1e-5) < classic_gaussian_sigma(0.5, 1e-5)
    # reference: Balle & Wang (2018) report sigma ~ 3.73 at eps = 1, delta = 1e-5 (the fixed point of Alg. 1)
    assert analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.73, abs=0.01)


def test_gaussian_ks():
    m = GaussianMechanism(1.0, 1e-5)
    s = m.sigma
    out = m.randomise(np.zeros(N), random_state=5)
    assert stats.kstest(out, stats.norm(0, s).cdf).pvalue > ALPHA
    assert stats.kstest(out, stats.norm(0, 1.05 * s).cdf).pvalue < 1e-6
    assert GaussianMechanism(0.5, 1e-5, calibration="classic").sigma == pytest.approx(classic_gaussian_sigma(0.5, 1e-5))


# ---------------------------------------------------------------- randomized response
def test_binary_rr_matches_seed_probabilities():
    rr = RandomizedResponse(epsilon=1.0)
    p_true = math.e / (math.e + 1)
    assert rr.transition_matrix()[1, 1] == pytest.approx(p_true)
    out = rr.randomise(np.ones(N, dtype=int), random_state=6)
    counts = np.bincount(out, minlength=2)
    assert stats.chisquare(counts, N * np.array([1 - p_true, p_true])).pvalue > ALPHA


@pytest.mark.parametrize("k, eps", [(2, 0.3), (5, 1.0), (12, 2.0)])
def test_kary_rr_chisquare_and_privacy(k, eps):
    rr = RandomizedResponse(epsilon=eps, k=k)
    P = rr.transition_matrix()
    # exact audit: every column's likelihood ratio between two true values is at most e^eps, tight
    logp = np.log(P)
    assert np.max(np.abs(logp[:, None, :] - logp[None, :, :])) == pytest.approx(eps, rel=1e-12)
    x = np.full(N, 1)
    out = rr.randomise(x, random_state=7)
    counts = np.bincount(out, minlength=k)
    assert stats.chisquare(counts, N * P[1]).pvalue > ALPHA


def test_rr_frequency_estimate_is_unbiased():
    rng = np.random.default_rng(8)
    k = 4
    truth = np.array([0.1, 0.2, 0.3, 0.4])
    x = rng.choice(k, size=N, p=truth)
    rr = RandomizedResponse(1.0, k)
    est = rr.estimate_frequencies(rr.randomise(x, random_state=9))
    emp = np.bincount(x, minlength=k) / N
    # MC s.e. of each estimate ~ sqrt(q(1-q)/N) / (p_keep - p_other) ~ 0.0015/0.33 ~ 0.0045; 5 s.e. = 0.023
    assert np.max(np.abs(est - emp)) < 0.023
    with pytest.raises(ValueError, match="'x' parameter"):
        rr.randomise(np.array([0, 4]))


# ---------------------------------------------------------------- exponential mechanism
def test_em_probabilities_hand_values():
    # scores (0, -1, -2), eps = 2, Delta = 1: weights e^0, e^-1, e^-2
    p = exponential_mechanism_probabilities([0.0, -1.0, -2.0], 2.0, 1.0)
    w = np.exp([0.0, -1.0, -2.0])
    assert np.allclose(p, w / w.sum(), rtol=1e-14)
    # extreme scores do not overflow (log-space normalisation)
    p = exponential_mechanism_probabilities([0.0, -5000.0, 1e4], 1.0, 1.0)
    assert p[2] == pytest.approx(1.0) and np.isfinite(p).all()


def test_em_sampler_chisquare():
    scores = -np.abs(np.arange(30) - 12.0)
    m = ExponentialMechanism(epsilon=1.0, sensitivity=1.0)
    p = m.probabilities(scores)
    draws = m.select(scores, size=N, random_state=10)
    assert chisquare_pvalue(draws, np.arange(30), p) > ALPHA
    # power: the same draws against eps = 1.1 are rejected
    assert chisquare_pvalue(draws, np.arange(30), exponential_mechanism_probabilities(scores, 1.1, 1.0)) < 1e-6
    assert isinstance(exponential_mechanism(scores, 1.0, 1.0, random_state=1), int)


def test_em_exact_privacy_for_counting_utility():
    # Utility q(y; k) = -|y - k| has sensitivity 1 under k -> k +- 1; exact loss <= eps on all pairs.
    eps = 0.8
    ys = np.arange(51)
    lp = np.log(np.array([exponential_mechanism_probabilities(-np.abs(ys - k), eps, 1.0) for k in range(51)]))
    loss = np.abs(lp[1:] - lp[:-1]).max()
    assert loss <= eps + 1e-12


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: LaplaceMechanism(0.0).randomise(1.0), "epsilon"),
        (lambda: LaplaceMechanism(-1.0).randomise(1.0), "epsilon"),
        (lambda: LaplaceMechanism(1.0, sensitivity=0).randomise(1.0), "sensitivity"),
        (lambda: DiscreteLaplaceMechanism(-2).randomise(1), "epsilon"),
        (lambda: GaussianMechanism(1.0, 0.0).sigma, "delta"),
        (lambda: GaussianMechanism(1.0, 1.0).sigma, "delta"),
        (lambda: GaussianMechanism(1.0, 1.5).sigma, "delta"),
        (lambda: GaussianMechanism(0.0, 1e-5).sigma, "epsilon"),
        (lambda: GaussianMechanism(1.0, 1e-5, sensitivity=-1).sigma, "sensitivity"),
        (lambda: GaussianMechanism(1.0, 1e-5, calibration="magic").sigma, "calibration"),
        (lambda: RandomizedResponse(0.0).transition_matrix(), "epsilon"),
        (lambda: RandomizedResponse(1.0, k=1).transition_matrix(), "k"),
        (lambda: exponential_mechanism([], 1.0, 1.0), "scores"),
        (lambda: exponential_mechanism([0.0, 1.0], -1.0, 1.0), "epsilon"),
        (lambda: exponential_mechanism([0.0, 1.0], 1.0, 0.0), "sensitivity"),
        (lambda: exponential_mechanism([0.0, np.nan], 1.0, 1.0), "scores"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=f"The '{name}' parameter"):
        call()


def test_error_message_form():
    with pytest.raises(ValueError) as exc:
        LaplaceMechanism(-1).randomise(0.0)
    assert str(exc.value) == "The 'epsilon' parameter of LaplaceMechanism must be > 0.0. Got -1 instead."


def test_input_not_mutated():
    v = np.array([1.0, 2.0, 3.0])
    LaplaceMechanism(1.0).randomise(v, random_state=0)
    GaussianMechanism(1.0, 1e-5).randomise(v, random_state=0)
    assert v.tolist() == [1.0, 2.0, 3.0]
