"""The default prior of the categorical models (:mod:`synthmi.models.glm`, issue 29 item 6).

N(0, 2.5^2) on every coefficient of the design but the intercept (a 0/1 dummy's raw log odds ratio, one
sd of a standardised predictor), N(0, 10^2) on the intercept; ``prior_sd=s`` overrides it with N(0, s^2)
on everything.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_expit

from synthmi.errors import InputError
from synthmi.models import RubinSynthesizer
from synthmi.models.glm import CategoricalModel, default_prior_sd, describe_prior, independence_mh, whitened_hmc


def _frame_rare(n_common: int = 1000, n_rare: int = 5, seed: int = 0) -> pd.DataFrame:
    """Kept g (level 'a' on ``n_common`` records, half of them y = 'v'; the rare level 'b' on ``n_rare``
    records, every one y = 'u': complete separation of b's dummy) and a kept numeric z (sd 7)."""
    rng = np.random.default_rng(seed)
    n = n_common + n_rare
    g = np.r_[np.zeros(n_common, dtype=int), np.ones(n_rare, dtype=int)]
    y = np.r_[np.arange(n_common) % 2, np.zeros(n_rare, dtype=int)]
    return pd.DataFrame({
        "g": pd.Categorical.from_codes(g, ["a", "b"]),
        "z": 7.0 * rng.standard_normal(n),
        "y": pd.Categorical.from_codes(y, ["u", "v"]),
    })


def test_default_prior_scale_of_a_rare_dummy_is_2_5_on_its_raw_log_odds_ratio():
    """The default's sds per design column, hand-written: 10 on the intercept, 2.5 on g's dummy and on z.
    The dummy column is the raw 0/1 indicator (not scaled by its sd, 0.07 for 5 of 1,005 records), so
    2.5 is the sd of the rare level's log odds ratio itself; z enters standardised, so its raw
    coefficient (per unit of z) has sd 2.5 / sd(z). The log prior and its derivatives are the hand
    formula, and prior_sd=10 is the former N(0, 10^2) on everything."""
    df = _frame_rare()
    syn = RubinSynthesizer(progressbar=False).fit(df, quasi_identifiers=["y"], keep=["g", "z"])
    assert syn.prior_sd is None  # the parameter is stored as given
    cond = syn.conditionals_[0]
    assert cond.coef_names == ["(Intercept)", "g[1]", "z"]
    np.testing.assert_array_equal(cond.fast.prior_sd, [10.0, 2.5, 2.5])
    D = cond.design.matrix({})
    np.testing.assert_array_equal(np.unique(D[:, 1]), [0.0, 1.0])  # the rare dummy, unscaled
    assert D[:, 1].sum() == 5
    z = df["z"].to_numpy()
    np.testing.assert_allclose(D[:, 2], (z - z.mean()) / z.std(), atol=1e-12)
    # the prior of z's raw coefficient: beta_raw = beta_std / sd(z), sd 2.5 / sd(z)
    assert 2.5 / z.std() == pytest.approx(2.5 / 7.0, rel=0.05)
    # log prior, gradient and Hessian at a point, by hand
    theta = np.array([1.5, -4.0, 0.5])
    f, g, H = CategoricalModel("logit", np.zeros((0, 3)), np.zeros((0, 2)), prior_sd=cond.fast.prior_sd).derivs(theta)
    assert f == pytest.approx(-0.5 * (1.5**2 / 100 + 4.0**2 / 6.25 + 0.5**2 / 6.25), abs=1e-15)
    np.testing.assert_allclose(g, [-1.5 / 100, 4.0 / 6.25, -0.5 / 6.25], atol=1e-15)
    np.testing.assert_allclose(H, -np.diag([1 / 100, 1 / 6.25, 1 / 6.25]), atol=1e-15)
    assert cond.fast.prior_logp(theta[None])[0] == pytest.approx(f, abs=1e-15)
    # the diagnostics record it
    out = syn.sample(1, random_state=0)
    assert out.metadata()["diagnostics"]["columns"]["y"]["prior"] == (
        "N(0, 10^2) on the coefficients of 1 design column(s); N(0, 2.5^2) on the coefficients of 2 design "
        "column(s); N(0, 10^2) on any cutpoint")
    # the user's override: one scale on everything, stored as given
    over = RubinSynthesizer(progressbar=False, prior_sd=10.0).fit(df, quasi_identifiers=["y"], keep=["g", "z"])
    assert over.prior_sd == 10.0 and over.conditionals_[0].fast.prior_sd == 10.0
    assert describe_prior(10.0) == "N(0, 10^2) on every coefficient and cutpoint"


def test_multinomial_prior_layout_and_bad_scales():
    """theta is beta (p, C-1) row-major: every category's coefficient of design column j has sd_j."""
    sd = default_prior_sd(["(Intercept)", "state[3]"])
    np.testing.assert_array_equal(sd, [10.0, 2.5])
    m = CategoricalModel("logit", np.zeros((0, 2)), np.zeros((0, 3)), prior_sd=sd)
    theta = np.array([[1.0, 2.0, 3.0, 4.0]])  # (intercept c1, intercept c2, state c1, state c2)
    assert m.prior_logp(theta)[0] == pytest.approx(-0.5 * ((1 + 4) / 100 + (9 + 16) / 6.25), abs=1e-15)
    np.testing.assert_allclose(m.prior_grad(theta), [[-1 / 100, -2 / 100, -3 / 6.25, -4 / 6.25]], atol=1e-15)
    with pytest.raises(InputError, match="one per design column"):
        CategoricalModel("logit", np.zeros((1, 2)), np.ones((1, 3)), prior_sd=np.array([1.0, 2.0, 3.0]))
    # the diagnostics' words count design columns: this model has 2 intercepts (one per category), not 1
    assert describe_prior(sd) == ("N(0, 10^2) on the coefficients of 1 design column(s); N(0, 2.5^2) on the "
                                  "coefficients of 1 design column(s); N(0, 10^2) on any cutpoint")


@pytest.mark.parametrize("bad", [0.0, -2.5, np.nan, np.inf])
def test_a_scalar_prior_sd_that_is_not_a_positive_number_is_refused(bad):
    """The array form refused non-positive sds; the scalar form divided by zero (0: log_post NaN) or took
    a negative s as |s|. Both forms now say what was wrong (the synthesizers' prior_sd is checked earlier,
    by their parameter constraints)."""
    with pytest.raises(InputError, match="must be a positive number"):
        CategoricalModel("logit", np.zeros((1, 2)), np.ones((1, 2)), prior_sd=bad)


def _quadrature(s1: float) -> tuple[float, float]:
    """Posterior mean and sd of the rare level's coefficient b1 by 2-D quadrature (b0: intercept, sd 10):
    500 'v' of 1,000 at b0, 0 of 5 at b0 + b1, so the likelihood is flat in b1 -> -inf."""
    b0 = np.linspace(-0.6, 0.6, 601)  # the intercept's sd is 0.032: +-19 sd
    b1 = np.linspace(-60.0, 10.0, 7001)
    B0, B1 = np.meshgrid(b0, b1, indexing="ij")
    lp = (500 * log_expit(B0) + 500 * log_expit(-B0) + 5 * log_expit(-(B0 + B1))
          - 0.5 * B0**2 / 100 - 0.5 * B1**2 / s1**2)
    w = np.exp(lp - lp.max())
    w /= w.sum()
    mean = float((w * B1).sum())
    return mean, float(np.sqrt((w * (B1 - mean) ** 2).sum()))


@pytest.mark.parametrize("prior_sd, sampler", [(None, "imh"), (None, "hmc"), (10.0, "hmc")])
def test_separated_rare_level_is_held_by_the_prior(prior_sd, sampler):
    """Five records of a rare level, all in one category (complete separation): the likelihood is flat on
    one side of the level's coefficient, so only the prior holds it there. By quadrature the posterior
    mean is -2.95 (sd 1.50) under the default N(0, 2.5^2), within two prior sds of 0, against -9.25
    (sd 5.77) under the former N(0, 10^2): an odds ratio of e^-9. The exact samplers (independence MH,
    whitened HMC) reproduce the quadrature whatever the prior, within 4 Monte Carlo se (sd / sqrt(ESS)
    for the mean, sd / sqrt(2 ESS) for the sd). Fails on the former default (prior_sd 10): mean -9.25."""
    df = _frame_rare()
    syn = RubinSynthesizer(progressbar=False, prior_sd=prior_sd).fit(df, quasi_identifiers=["y"], keep=["g"])
    model = syn.conditionals_[0].fast
    assert syn.conditionals_[0].coef_names == ["(Intercept)", "g[1]"]
    s1 = 2.5 if prior_sd is None else prior_sd
    mean, sd = _quadrature(s1)
    rng = np.random.default_rng(3)
    if sampler == "imh":
        res = independence_mh(model, 4000, rng, chains=2, warn=False)
    else:
        res = whitened_hmc(model, 2000, rng, chains=2)
    b1 = res.draws[:, :, 1].reshape(-1)
    assert res.r_hat <= 1.01 and res.ess_bulk >= 400
    assert abs(b1.mean() - mean) < 4 * sd / np.sqrt(res.ess_bulk)
    assert abs(b1.std() - sd) < 4 * sd / np.sqrt(2 * res.ess_bulk)
    if prior_sd is None:
        assert mean == pytest.approx(-2.953, abs=0.001) and sd == pytest.approx(1.498, abs=0.001)
        assert -2 * 2.5 < b1.mean() < 0
    else:
        assert mean == pytest.approx(-9.251, abs=0.001) and sd == pytest.approx(5.765, abs=0.001)
        assert b1.mean() < -2 * 2.5


@pytest.mark.slow
@pytest.mark.parametrize("family, C", [("logit", 2), ("logit", 3), ("ologit", 4), ("probit", 2), ("oprobit", 3)])
def test_pymc_spec_states_the_same_per_column_prior(family, C):
    """The PyMC specification (NUTS's target) with the default's per-column sds is the fast sampler's
    log posterior: the difference of the two at two parameter vectors agrees to rounding (measured
    1.4e-14 to 2.8e-14 on values of 1-20; bound 1e-9). Multinomial: sd_j broadcast over the categories;
    ordered: N(0, 10^2) on the cutpoints, PyMC's ordered transform = glm's (first, log differences).
    The probit families' likelihood is PyTensor's normal log-CDF against scipy's ``log_ndtr``, which
    differ by up to 1.6e-7 on log posteriors of 60-100 with the scalar prior as well (measured,
    seed 0), so their bound is 1e-6: still far below what the prior changes (1e-3 and more, below)."""
    import pymc as pm

    from synthmi.models.pymc_specs import get_model

    rng = np.random.default_rng(0)
    n, p = 20, 3
    if family in ("ologit", "oprobit"):  # no intercept in the ordered design
        X = np.column_stack([rng.normal(size=n), rng.integers(0, 2, n), rng.normal(size=n)])
        sd = default_prior_sd(["age", "sex[1]", "hours"])
    else:
        X = np.column_stack([np.ones(n), rng.normal(size=n), rng.integers(0, 2, n)])
        sd = default_prior_sd(["(Intercept)", "age", "sex[1]"])
    Y = rng.multinomial(3, np.ones(C) / C, size=n).astype(float)
    m = CategoricalModel(family, X, Y, prior_sd=sd)
    model, logp_dlogp, _ = get_model(family, p, C, sd)
    with model:
        pm.set_data({"X": X, "Y": Y})
    logp_dlogp.set_extra_values({})
    th = rng.normal(size=(2, m.dim)) * 0.8
    if family in ("ologit", "oprobit"):
        th[:, p + 1:] = np.log(np.abs(th[:, p + 1:]) + 0.3)
    d_fast = m.log_post(th[:1])[0] - m.log_post(th[1:])[0]
    d_spec = logp_dlogp(th[0])[0] - logp_dlogp(th[1])[0]
    assert abs(d_fast - d_spec) < (1e-6 if family in ("probit", "oprobit") else 1e-9)
    # and the prior matters: with N(0, 10^2) on everything the difference is another number
    m10 = CategoricalModel(family, X, Y, prior_sd=10.0)
    assert abs((m10.log_post(th[:1])[0] - m10.log_post(th[1:])[0]) - d_spec) > 1e-3


@pytest.mark.slow
def test_pymc_spec_cache_tells_a_scalar_prior_from_a_per_column_array():
    """An ordered model with one design column: ``prior_sd=2.5`` (N(0, 2.5^2) on the coefficient and the
    cutpoints) and the default's ``[2.5]`` (N(0, 2.5^2) on the coefficient, N(0, 10^2) on the cutpoints)
    are different posteriors. The compiled-model cache keyed both as (2.5,), so whichever came first was
    NUTS's target for both (a log-posterior difference off by 0.035 at these points before the fix)."""
    import pymc as pm

    from synthmi.models.pymc_specs import get_model

    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 1))
    Y = rng.multinomial(3, np.ones(3) / 3, size=20).astype(float)
    th = rng.normal(size=(2, 3))
    th[:, 1:] = np.log(np.abs(th[:, 1:]) + 0.3)
    for prior in (2.5, np.array([2.5])):
        m = CategoricalModel("ologit", X, Y, prior_sd=prior)
        model, logp_dlogp, _ = get_model("ologit", 1, 3, prior)
        with model:
            pm.set_data({"X": X, "Y": Y})
        logp_dlogp.set_extra_values({})
        d_fast = m.log_post(th[:1])[0] - m.log_post(th[1:])[0]
        d_spec = logp_dlogp(th[0])[0] - logp_dlogp(th[1])[0]
        assert abs(d_fast - d_spec) < 1e-9


@pytest.mark.parametrize("family, C, sparse", [("logit", 2, False), ("logit", 3, False), ("logit", 4, True),
                                               ("probit", 2, False), ("ologit", 3, False), ("oprobit", 4, False)])
def test_derivatives_with_per_column_prior_sds_match_the_log_posterior(family, C, sparse):
    """With one prior sd per design column (0.5-10, drawn), the Newton/HMC derivatives agree with log_post:
    value to rounding, gradient and Hessian with central differences (h = 1e-5: error O(h^2) ~ 1e-9, bound
    1e-6 relative), and log_post's prior part is the hand formula -1/2 sum_jk beta_jk^2 / s_j^2 (theta's
    beta (p, C-1) row-major for the multinomial logit; beta then cutpoints, N(0, 10^2), for the ordered
    families). ``sparse``: a dummy-coded design large enough for the compiled sparse kernels."""
    rng = np.random.default_rng(5)
    if sparse:
        G, p = 2000, 40
        X = np.zeros((G, p))
        X[:, 0] = 1.0
        X[np.arange(G), 1 + rng.integers(0, p - 1, G)] = 1.0
    else:
        G, p = 40, 4
        X = np.column_stack([np.ones(G), rng.integers(0, 2, G), rng.normal(size=(G, p - 2))])
    if family in ("ologit", "oprobit"):
        X, p = X[:, 1:], p - 1
    Y = rng.multinomial(5, np.ones(C) / C, size=G).astype(float)
    sd = rng.uniform(0.5, 10.0, size=p)
    m = CategoricalModel(family, X, Y, prior_sd=sd)
    assert (m._Xs is not None) == sparse
    th = rng.normal(size=m.dim) * 0.3
    f, g, H = m.derivs(th)
    assert f == pytest.approx(m.log_post(th[None])[0], rel=1e-12, abs=1e-12)
    h = 1e-5
    E = np.eye(m.dim)
    g_fd = np.array([(m.log_post((th + h * e)[None])[0] - m.log_post((th - h * e)[None])[0]) / (2 * h) for e in E])
    H_fd = np.array([(m.derivs(th + h * e)[1] - m.derivs(th - h * e)[1]) / (2 * h) for e in E])
    np.testing.assert_allclose(g, g_fd, atol=1e-6 * max(1.0, np.abs(g).max()))
    np.testing.assert_allclose(H, H_fd, atol=1e-6 * max(1.0, np.abs(H).max()))
    # the prior part: doubling every sd changes log_post by the hand difference of the two priors
    nb = p * (C - 1) if family == "logit" else p
    s = np.repeat(sd, C - 1) if family == "logit" else sd
    b = th[:nb]
    hand = -0.5 * np.sum(b**2 / s**2) + 0.5 * np.sum(b**2 / (2 * s) ** 2)
    m2 = CategoricalModel(family, X, Y, prior_sd=2 * sd)
    assert m.log_post(th[None])[0] - m2.log_post(th[None])[0] == pytest.approx(hand, rel=1e-9, abs=1e-10)
