import math

import numpy as np
import pytest

from synthmi.privacy.discrete import (
    discrete_gaussian_normaliser,
    discrete_gaussian_pmf,
    discrete_laplace_pmf,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)

from _privacy_stats import ALPHA, chisquare_pvalue

N = 100_000


def test_discrete_laplace_pmf_hand_values():
    # t = 1: q = e^-1, P(0) = (1 - q)/(1 + q) = 0.46211715726..., P(2) = P(0) e^-2.
    q = math.exp(-1.0)
    assert discrete_laplace_pmf(0, 1.0) == pytest.approx((1 - q) / (1 + q), rel=1e-14)
    assert discrete_laplace_pmf(-2, 1.0) == pytest.approx(0.46211715726000974 * math.exp(-2), rel=1e-12)
    x = np.arange(-400, 401)
    assert discrete_laplace_pmf(x, 3.7).sum() == pytest.approx(1.0, abs=1e-12)


def test_discrete_gaussian_pmf_hand_values():
    # sigma^2 = 1, Poisson summation: Z = sqrt(2 pi) * sum_k exp(-2 pi^2 k^2)
    # = sqrt(2 pi) (1 + 2 e^{-2 pi^2} + O(e^{-8 pi^2})) = 2.50662828804...
    z = math.sqrt(2 * math.pi) * (1 + 2 * math.exp(-2 * math.pi**2))
    assert discrete_gaussian_normaliser(1.0) == pytest.approx(z, rel=1e-14)
    assert discrete_gaussian_pmf(1, 1.0) == pytest.approx(math.exp(-0.5) / z, rel=1e-13)
    # tiny sigma: essentially all mass at 0, P(1) = e^{-50} / (1 + 2e^{-50} + ...)
    assert discrete_gaussian_pmf(1, 0.01) == pytest.approx(math.exp(-50.0), rel=1e-9)


@pytest.mark.parametrize("scale", [0.3, 1.0, 4.5, 60.0])
def test_discrete_laplace_chisquare(scale):
    draws = sample_discrete_laplace(scale, N, np.random.default_rng(11))
    assert draws.dtype == np.int64
    support = np.arange(-int(60 * scale) - 5, int(60 * scale) + 6)
    p = chisquare_pvalue(draws, support, discrete_laplace_pmf(support, scale))
    assert p > ALPHA


@pytest.mark.parametrize("sigma2", [0.2, 1.0, 7.3, 2185.0])
def test_discrete_gaussian_chisquare(sigma2):
    draws = sample_discrete_gaussian(sigma2, N, np.random.default_rng(12))
    assert draws.dtype == np.int64
    r = int(12 * math.sqrt(sigma2)) + 3
    support = np.arange(-r, r + 1)
    p = chisquare_pvalue(draws, support, discrete_gaussian_pmf(support, sigma2))
    assert p > ALPHA


def test_chisquare_has_power_against_rounded_continuous_noise():
    # Rounded continuous Laplace (scale 1) is *not* the discrete Laplace: the test rejects it.
    rng = np.random.default_rng(13)
    rounded = np.rint(rng.laplace(0.0, 1.0, N)).astype(np.int64)
    support = np.arange(-65, 66)
    assert chisquare_pvalue(rounded, support, discrete_laplace_pmf(support, 1.0)) < 1e-10
    # and a discrete Gaussian of the wrong variance (1.1 instead of 1) is rejected too.
    wrong = sample_discrete_gaussian(1.1, N, np.random.default_rng(14))
    support = np.arange(-15, 16)
    assert chisquare_pvalue(wrong, support, discrete_gaussian_pmf(support, 1.0)) < 1e-6


def test_moments_match_closed_forms():
    # Var of discrete Laplace = 2q/(1-q)^2; with 1e5 draws at t = 5 the MC s.e. of the
    # sample variance is about sqrt((m4 - v^2)/n) ~ 0.6 (v ~ 50.5), so 4 s.e. = 2.4.
    t = 5.0
    q = math.exp(-1 / t)
    d = sample_discrete_laplace(t, N, np.random.default_rng(15))
    assert abs(d.mean()) < 4 * math.sqrt(2 * q / (1 - q) ** 2 / N)
    assert d.var() == pytest.approx(2 * q / (1 - q) ** 2, abs=2.4)


def test_shapes_scalars_and_seeds():
    rng = np.random.default_rng(0)
    assert isinstance(sample_discrete_laplace(2.0, None, rng), int)
    assert isinstance(sample_discrete_gaussian(2.0, None, rng), int)
    assert sample_discrete_gaussian(3.0, (4, 5), rng).shape == (4, 5)
    assert sample_discrete_laplace(3.0, 0, rng).shape == (0,)
    a = sample_discrete_gaussian(9.0, 1000, np.random.default_rng(5))
    b = sample_discrete_gaussian(9.0, 1000, np.random.default_rng(5))
    assert np.array_equal(a, b)


def test_large_draws_are_fast():
    import time

    t0 = time.perf_counter()
    sample_discrete_gaussian(2185.0, 1_000_000, np.random.default_rng(1))
    sample_discrete_laplace(30.0, 1_000_000, np.random.default_rng(1))
    # ~0.25 s measured on a loaded 2-core box; 10 s leaves room for CI load.
    assert time.perf_counter() - t0 < 10.0


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: sample_discrete_laplace(0.0, 3), "scale"),
        (lambda: sample_discrete_laplace(-1.0, 3), "scale"),
        (lambda: sample_discrete_gaussian(0.0, 3), "sigma2"),
        (lambda: sample_discrete_gaussian(float("nan"), 3), "sigma2"),
        (lambda: sample_discrete_gaussian(1.0, -2), "size"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        call()


@pytest.mark.slow
def test_exact_rational_samplers_match_targets():
    # CKS Algorithms 1-3 in rational arithmetic: 2e4 draws each (pure Python, ~1-2 s each), same level.
    d = sample_discrete_laplace(1.0, 20_000, np.random.default_rng(31), exact=True)
    support = np.arange(-40, 41)
    assert chisquare_pvalue(d, support, discrete_laplace_pmf(support, 1.0)) > ALPHA
    g = sample_discrete_gaussian(7.3, 20_000, np.random.default_rng(32), exact=True)
    support = np.arange(-40, 41)
    assert chisquare_pvalue(g, support, discrete_gaussian_pmf(support, 7.3)) > ALPHA
    # reproducible from the Generator's seed
    a = sample_discrete_gaussian(2.5, 50, np.random.default_rng(3), exact=True)
    assert np.array_equal(a, sample_discrete_gaussian(2.5, 50, np.random.default_rng(3), exact=True))
    assert isinstance(sample_discrete_laplace(0.7, None, np.random.default_rng(0), exact=True), int)


def test_exact_bernoulli_exp_neg():
    from fractions import Fraction

    from synthmi.privacy.discrete import _bernoulli_exp_neg, _ExactSource

    src = _ExactSource(np.random.default_rng(33))
    for gamma in (Fraction(1, 3), Fraction(5, 2)):
        hits = sum(_bernoulli_exp_neg(gamma, src) for _ in range(20_000))
        p = math.exp(-float(gamma))
        # binomial s.e. sqrt(p(1-p)/2e4) <= 0.0036; 4 s.e.
        assert abs(hits / 20_000 - p) < 4 * math.sqrt(p * (1 - p) / 20_000)
