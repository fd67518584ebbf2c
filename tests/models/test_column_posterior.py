"""Per-column posterior draws (synthmi.models.column_posterior) and the batched logit gradient they use."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from synthmi.models.column_posterior import column_draws, draw_columns
from synthmi.models.glm import CategoricalModel, group_rows, logit_logp_grad
from synthmi.models.rubin import RubinSynthesizer
from test_glm import _many_separated_dummies


def _model(C: int, sparse: bool, seed: int = 0) -> CategoricalModel:
    rng = np.random.default_rng(seed)
    n = 3000 if sparse else 200
    lev = rng.integers(0, 40, n)
    D = np.column_stack([np.ones(n), rng.standard_normal(n), (lev[:, None] == np.arange(1, 40)).astype(float)])
    if not sparse:
        D = D[:, :6]
    y = rng.integers(0, C, n)
    X, Y = group_rows(D, y, C)
    m = CategoricalModel("logit", X, Y, prior_sd=3.0)
    assert (m._Xs is not None) == sparse  # both code paths of xmul / xtmul
    return m


@pytest.mark.parametrize("C", [2, 4])
@pytest.mark.parametrize("sparse", [False, True])
def test_logit_logp_grad_matches_the_direct_formula_and_finite_differences(C, sparse):
    """log pi(B) = sum_g [sum_c Y_gc eta_gc - n_g log sum_c exp(eta_gc)] - |B|^2 / (2 s^2), eta_g0 = 0,
    written out directly; the gradient against central differences (step 1e-5: error O(h^2) ~ 1e-10
    relative to curvature ~ n, so 1e-4 absolute is ample)."""
    m = _model(C, sparse)
    rng = np.random.default_rng(1)
    theta = rng.normal(scale=0.3, size=(3, m.dim))
    lp, g = logit_logp_grad(m, theta)
    for s in range(3):
        B = theta[s].reshape(m.p, C - 1)
        eta = np.column_stack([np.zeros(m.G), m.X @ B])
        direct = (m.Y * eta).sum() - m.n_ @ logsumexp(eta, axis=1) - 0.5 * theta[s] @ theta[s] / m.prior_sd**2
        assert lp[s] == pytest.approx(direct, rel=1e-12, abs=1e-8)
        for i in rng.choice(m.dim, 5, replace=False):
            e = np.zeros(m.dim)
            e[i] = 1e-5
            fd = (logit_logp_grad(m, theta[s] + e, grad=False)[0] - logit_logp_grad(m, theta[s] - e, grad=False)[0]) / 2e-5
            assert g[s, i] == pytest.approx(fd[0], abs=1e-4)
    # the same values without the gradient, and the model's own log posterior
    assert np.allclose(logit_logp_grad(m, theta, grad=False)[0], lp)
    assert np.allclose(m.log_post(theta), lp)


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.choice(list("abcdefgh"), n)
    x = rng.standard_normal(n)
    race = np.where(rng.random(n) < 0.3, "r1", np.where(rng.random(n) < 0.5, "r2", "r3"))
    sex = np.where(rng.random(n) < 0.5 + 0.2 * (race == "r1"), "F", "M")
    return pd.DataFrame({"z": pd.Categorical(z), "x": x, "race": race, "sex": sex,
                         "y": x + (sex == "F") + rng.standard_normal(n)})


@pytest.mark.slow
def test_draws_do_not_depend_on_n_jobs():
    """One child stream per column, split before anything is drawn: two worker processes give
    exactly the copies (hence parameter draws) and diagnostics of one process."""
    df = _frame()
    res = []
    for n_jobs in (1, 2):
        syn = RubinSynthesizer(progressbar=False, draws=300, n_jobs=n_jobs)
        syn.fit(df, ["race", "sex", "y"], keep=["z", "x"])
        res.append(syn.sample(3, random_state=11))
    o1, o2 = res
    assert o1.diagnostics["columns"]["race"]["r_hat"] == o2.diagnostics["columns"]["race"]["r_hat"]
    for a, b in zip(o1.copies, o2.copies):
        pd.testing.assert_frame_equal(a, b)
    assert o1.diagnostics["columns"].keys() == o2.diagnostics["columns"].keys()


@pytest.mark.slow
def test_draw_columns_keeps_task_order_and_reports_progress_in_order():
    m2, m4 = _model(2, False, seed=2), _model(4, False, seed=3)
    rng = np.random.default_rng(0)
    streams = rng.spawn(3)
    tasks = [{"family": "logit", "method": "logit", "fast": f, "m": 2, "rng": s, "chains": 2, "draws": 200,
              "sampler": "fast"} for f, s in zip([m2, m4, m2], streams)]
    seen = []
    out = draw_columns(tasks, n_jobs=2, on_done=lambda j, d: seen.append(j))
    assert seen == [0, 1, 2]
    assert [o[0][0]["beta"].shape for o in out] == [(m2.p, 1), (m4.p, 3), (m2.p, 1)]
    # the first and third tasks differ only in their stream
    assert not np.array_equal(out[0][0][0]["beta"], out[2][0][0]["beta"])
    # serial run of one task from a copy of its stream: identical
    again = column_draws({**tasks[1], "rng": np.random.default_rng(0).spawn(3)[1]})
    np.testing.assert_array_equal(again[0][1]["beta"], out[1][0][1]["beta"])


def test_sparse_design_hessian_blocks_equal_the_dense_product():
    """CategoricalModel.xtwx of a dummy-coded design (a 40-level predictor: sparse path, from the dense
    and sparse columns) equals X' diag(w) X to rounding, for weights of either sign (the off-diagonal
    blocks of the multinomial Hessian are negative); and the mode's Hessian is still the finite-difference
    derivative of the gradient (step 1e-5: error ~1e-10 relative to curvature ~ n, 1e-4 absolute is ample)."""
    m = _model(4, sparse=True)
    w = np.random.default_rng(2).normal(size=m.G)
    dense = (m.X.T * w) @ m.X
    assert np.abs(m.xtwx(w) - dense).max() < 1e-12 * np.abs(dense).max()
    theta = np.random.default_rng(3).normal(scale=0.2, size=m.dim)
    _, _, H = m.derivs(theta)
    for i in (0, 5, m.dim - 1):
        e = np.zeros(m.dim)
        e[i] = 1e-5
        fd = (logit_logp_grad(m, theta + e)[1][0] - logit_logp_grad(m, theta - e)[1][0]) / 2e-5
        assert np.allclose(H[:, i], fd, atol=1e-4)


def test_screen_tries_the_split_t_proposal_when_the_laplace_t_pilot_is_poor_but_not_degenerate():
    """Issue 29 item 6: the pilot that picks independence MH or HMC scores the proposal independence MH uses.
    On 40 near-separated dummies (42 coefficients) the Laplace t pilot's Kish fraction is 0.008-0.10 over
    seeds 0-7 and the split-t's 0.12-0.25: with this stream (Laplace t 0.019, split-t 0.154) the column is
    drawn by independence MH from the split-t (before: HMC, on the Laplace t's figure alone), with both
    fractions recorded."""
    model = _many_separated_dummies()
    task = {"family": "logit", "method": "logit", "fast": model, "m": 5, "rng": np.random.default_rng(0),
            "chains": 2, "draws": 1000, "sampler": "fast"}
    sets, diag = column_draws(task)
    assert 0.01 < diag["importance_ess_fraction_laplace_t"] < 0.1 <= diag["importance_ess_fraction"]
    assert diag["method"] == "independence Metropolis-Hastings"
    assert diag["r_hat"] <= 1.01 and diag["ess_bulk"] >= 400
    assert len(sets) == 5
