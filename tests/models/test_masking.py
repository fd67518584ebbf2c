"""Masking models: hand-computed log-likelihoods, simulated moments, validation."""
import numpy as np
import pytest
from scipy import stats

from synthmi.models.masking import (
    LinearCategoricalMasking,
    NormalMasking,
    TransitionMasking,
    make_masking,
)


# ---- normal ---------------------------------------------------------------
def test_normal_loglik_hand_computed():
    m = NormalMasking(2, sigma_e=2.0)
    w = np.array([[1.0, 3.0]])
    x = np.array([2.0])
    # two N(2, 4) densities at 1 and 3: each log = -0.5*(1/2)^2 - log 2 - 0.5 log(2 pi)
    one = -0.125 - np.log(2.0) - 0.5 * np.log(2 * np.pi)
    assert m.loglik(w, x)[0] == pytest.approx(2 * one, abs=1e-12)
    assert m.loglik(w, x)[0] == pytest.approx(stats.norm.logpdf(w, 2.0, 2.0).sum(), abs=1e-12)
    wbar, var = m.posterior_normal(w)
    assert wbar[0] == 2.0 and var == pytest.approx(4.0 / 2)


def test_normal_draw_moments():
    rng = np.random.default_rng(1)
    x = rng.normal(size=20000)
    m = NormalMasking(3, sigma_e=0.5)
    w = m.draw(x, rng)
    assert w.shape == (20000, 3)
    e = w - x[:, None]
    # mean of 60,000 N(0, .25): MC se = 0.5/sqrt(6e4) = 0.002 -> 5 se bound
    assert abs(e.mean()) < 0.01
    # sample variance se ~ 0.25*sqrt(2/6e4) = 0.0014 -> 5 se bound
    assert abs(e.var() - 0.25) < 0.0075
    # the K copies are independent given X
    assert abs(np.corrcoef(e[:, 0], e[:, 1])[0, 1]) < 0.02  # se 1/sqrt(2e4) = 0.007


def test_normal_draw_mean_has_the_law_of_the_mean_of_k_replicates():
    """draw_mean: W-bar ~ N(x, sigma_e^2 / K), against the mean of K draws (KS) and the exact variance."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=20000)
    m = NormalMasking(3, sigma_e=0.5)
    w_bar, v = m.draw_mean(x, rng)
    assert v == pytest.approx(0.25 / 3)
    e = w_bar - x
    # variance 1/12 of 20,000 draws: se = v sqrt(2/n) = 0.00083 -> 5 se bound
    assert abs(e.var() - 0.25 / 3) < 0.0042
    assert abs(e.mean()) < 5 * np.sqrt(v / 20000)
    # same law as the mean of the K replicates that draw() gives
    assert stats.ks_2samp(e, (m.draw(x, rng) - x[:, None]).mean(axis=1)).pvalue > 1e-3


def test_normal_reliability_conversion():
    x = np.arange(10.0)
    m = NormalMasking(4, reliability=0.8).calibrate(x)
    var = np.var(x, ddof=1)
    # rho = 1/(1 + s2/(K var)) -> s2 = K var (1/rho - 1)
    assert m.sigma_e ** 2 == pytest.approx(4 * var * 0.25)
    assert 1 / (1 + m.sigma_e**2 / (4 * var)) == pytest.approx(0.8)
    with pytest.raises(ValueError, match="calibrate"):
        NormalMasking(4, reliability=0.8).draw(x, np.random.default_rng(0))


def test_normal_null():
    m = NormalMasking(0)
    assert m.is_null
    assert m.draw(np.ones(3), np.random.default_rng(0)).shape == (3, 0)
    assert m.posterior_normal(np.empty((3, 0)))[1] == np.inf
    assert not NormalMasking(1, sigma_e=1.0).is_null


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"K": 2.5, "sigma_e": 1.0}, "'K' parameter of NormalMasking must be a whole number"),
        ({"K": -1, "sigma_e": 1.0}, "'K' parameter of NormalMasking must be >= 0"),
        ({"K": 2, "sigma_e": -1.0}, "'sigma_e' parameter of NormalMasking must be > 0"),
        ({"K": 2, "sigma_e": 0.0}, "'sigma_e' parameter of NormalMasking must be > 0"),
        ({"K": 2}, "needs the noise level"),
        ({"K": 2, "reliability": 1.0}, "'reliability' parameter"),
        ({"K": 2, "sigma_e": 1.0, "reliability": 0.5}, "alternatives"),
    ],
)
def test_normal_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        NormalMasking(**kw)


# ---- linear categorical ---------------------------------------------------
def test_linear_loglik_table_hand_computed():
    m = LinearCategoricalMasking(2.0)
    t = m.loglik_table(np.array([1.0]), 3)
    # W=1 against means 0, 2, 4: residuals 1, -1, -3
    expect = -0.5 * np.array([1.0, 1.0, 9.0]) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(t[0], expect, atol=1e-12)
    assert m.loglik(np.array([1.0]), np.array([2]))[0] == pytest.approx(expect[2])


def test_linear_draw_moments_and_null():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, 30000)
    m = LinearCategoricalMasking(1.5)
    w = m.draw(x, rng)
    u = w - 1.5 * x
    assert abs(u.mean()) < 0.03 and abs(u.var() - 1.0) < 0.04  # se .006 and .008
    assert LinearCategoricalMasking(0).is_null and not m.is_null
    with pytest.raises(ValueError, match="'alpha' parameter of LinearCategoricalMasking must be >= 0"):
        LinearCategoricalMasking(-0.1)


# ---- transition -----------------------------------------------------------
def test_transition_p_matrix_and_table():
    m = TransitionMasking(p=0.7).bind(3)
    P = m.matrix()
    np.testing.assert_allclose(P, [[0.7, 0.15, 0.15], [0.15, 0.7, 0.15], [0.15, 0.15, 0.7]])
    t = m.loglik_table(np.array([2]), 3)
    np.testing.assert_allclose(t[0], np.log([0.15, 0.15, 0.7]))
    assert m.loglik(np.array([2]), np.array([2]))[0] == pytest.approx(np.log(0.7))


def test_transition_draw_frequencies():
    pi = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.0, 0.1, 0.9]])
    m = TransitionMasking(pi=pi)
    rng = np.random.default_rng(3)
    x = np.repeat([0, 1, 2], 20000)
    w = m.draw(x, rng)
    for u in range(3):
        freq = np.bincount(w[x == u], minlength=3) / 20000
        # binomial se <= sqrt(.25/2e4) = .0035 -> 5 se
        np.testing.assert_allclose(freq, pi[u], atol=0.018)
    assert not np.any((x == 2) & (w == 0))  # zero-probability transitions never occur


def test_transition_null_and_validation():
    assert TransitionMasking(p=1 / 3).bind(3).is_null
    assert TransitionMasking(pi=np.full((2, 2), 0.5)).is_null
    assert TransitionMasking(pi=[[0.3, 0.7], [0.3, 0.7]]).is_null  # W independent of X
    assert not TransitionMasking(p=0.9).bind(2).is_null
    with pytest.raises(ValueError, match="'pi' parameter of TransitionMasking must be a matrix whose rows sum to 1"):
        TransitionMasking(pi=[[0.5, 0.4], [0.5, 0.5]])
    with pytest.raises(ValueError, match="'pi' parameter"):
        TransitionMasking(pi=[[1.2, -0.2], [0.5, 0.5]])
    with pytest.raises(ValueError, match="'p' parameter of TransitionMasking must be <= 1"):
        TransitionMasking(p=1.5)
    with pytest.raises(ValueError, match="exactly one"):
        TransitionMasking()
    with pytest.raises(ValueError, match="3 categories"):
        TransitionMasking(pi=np.eye(2)).bind(3)


def test_make_masking_specs():
    assert make_masking({"K": 3, "sigma": 5}) == NormalMasking(3, sigma_e=5.0)
    assert make_masking({"alpha": 1}) == LinearCategoricalMasking(1.0)
    assert make_masking({"p": 0.8}).to_dict()["p"] == 0.8
    with pytest.raises(ValueError, match="unknown keys"):
        make_masking({"beta": 1}, "age")
    with pytest.raises(ValueError, match="'K' parameter of NormalMasking must be a whole number"):
        make_masking({"K": 1.5, "sigma_e": 1})
