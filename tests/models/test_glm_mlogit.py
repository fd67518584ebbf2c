"""The compiled one-pass multinomial logit log posterior and score on a sparse design (issue 29 item 6)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from synthmi.models.glm import CategoricalModel, group_rows, logit_logp_grad


def _survey_like(rng: np.random.Generator, n: int, C: int) -> CategoricalModel:
    """Intercept, two numeric columns and dummy-coded 30- and 8-level factors (reference level dropped): a
    design sparse enough (density < 0.3, more than 50,000 cells) for the model's CSR path."""
    num = rng.normal(size=(n, 2))
    a, b = rng.integers(0, 30, n), rng.integers(0, 8, n)
    X = np.column_stack([np.ones(n), num, np.eye(30)[a][:, 1:], np.eye(8)[b][:, 1:]])
    eta = np.column_stack([np.zeros(n), X @ rng.normal(0, 0.5, (X.shape[1], C - 1))])
    y = (np.exp(eta - logsumexp(eta, axis=1, keepdims=True)).cumsum(1) < rng.random((n, 1))).sum(1)
    Xg, Y = group_rows(X, y, C)
    model = CategoricalModel("logit", Xg, Y, prior_sd=3.0)
    assert model._Xs is not None  # the sparse path is the one under test
    return model


def _dense_reference(model: CategoricalModel, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The log posterior and its gradient written out from the dense design, per parameter set:
    sum_g [sum_c Y_gc eta_gc - n_g log sum_c exp(eta_gc)] - |theta|^2 / (2 s^2) with eta_g0 = 0, and
    X'(Y_{1:} - n P_{1:}) - theta / s^2."""
    X, Y, s2 = model.X, model.Y, model.prior_sd**2
    lps, grads = [], []
    for th in theta:
        B = th.reshape(model.p, model.C - 1)
        eta = np.column_stack([np.zeros(model.G), X @ B])
        lse = logsumexp(eta, axis=1)
        lps.append(np.sum(Y * eta) - Y.sum(1) @ lse - th @ th / (2 * s2))
        P = np.exp(eta - lse[:, None])
        grads.append((X.T @ (Y[:, 1:] - Y.sum(1)[:, None] * P[:, 1:])).reshape(-1) - th / s2)
    return np.array(lps), np.array(grads)


@pytest.mark.parametrize(("C", "S", "seed"), [(3, 1, 0), (5, 2, 1), (7, 4, 2)])
def test_sparse_multinomial_logp_grad_equals_the_dense_product(C, S, seed):
    """Same function as the dense design's formula to 1e-10 (relative to the gradient's scale), for one and
    several parameter sets at once (the sampler's chains), with and without the gradient. The tolerance is
    rounding only: sums of ~2,000 terms of size ~1e2 in a different order (about 1e-13 relative)."""
    rng = np.random.default_rng(seed)
    model = _survey_like(rng, 2500, C)
    theta = rng.normal(0, 0.7, (S, model.dim))
    lp, g = logit_logp_grad(model, theta)
    lp_ref, g_ref = _dense_reference(model, theta)
    np.testing.assert_allclose(lp, lp_ref, rtol=1e-10)
    np.testing.assert_allclose(g, g_ref, rtol=0, atol=1e-10 * np.abs(g_ref).max())
    lp_only, none = logit_logp_grad(model, theta, grad=False)
    assert none is None
    np.testing.assert_array_equal(lp_only, lp)
    # the log posterior of model.log_post (the samplers' screen) is the same function
    np.testing.assert_allclose(model.log_post(theta), lp_ref, rtol=1e-10)


def test_sparse_multinomial_logp_propagates_non_finite_linear_predictors():
    """An overflowing coefficient gives a non-finite log posterior (NaN or -inf, which the sampler
    rejects), as the NumPy form does, rather than a finite number."""
    rng = np.random.default_rng(3)
    model = _survey_like(rng, 2500, 4)
    theta = rng.normal(0, 0.5, (2, model.dim))
    theta[0, 0] = np.inf
    theta[1, 1] = np.nan
    with np.errstate(invalid="ignore", over="ignore"):
        lp, _ = logit_logp_grad(model, theta)
    assert not np.isfinite(lp).any()


def test_whitened_hmc_reports_the_gradients_it_evaluated(monkeypatch):
    """``gradient_evaluations`` is the number of (parameter set, gradient) evaluations the sampler made,
    warm-up and the starting point included (the benchmark's unit of the sampler's cost), counted here
    independently by wrapping the gradient function."""
    import synthmi.models.glm as glm

    seen = []
    real = glm.logit_logp_grad

    def counting(model, theta, grad=True):
        seen.append(np.atleast_2d(theta).shape[0] if grad else 0)
        return real(model, theta, grad)

    monkeypatch.setattr(glm, "logit_logp_grad", counting)
    model = CategoricalModel("logit", np.ones((1, 1)), np.array([[280.0, 120.0]]), prior_sd=100.0)
    res = glm.whitened_hmc(model, 50, np.random.default_rng(0), chains=2, warmup=20, max_doublings=0)
    assert res.info["gradient_evaluations"] == sum(seen)
    # at least the starting point and one leapfrog step per transition, for each of the 2 chains
    assert sum(seen) >= 2 * (1 + 20 + 50 * res.info["n_leapfrog"])
