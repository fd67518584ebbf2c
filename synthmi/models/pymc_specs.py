r"""PyMC specifications of the sequential conditional models, sampled by NUTS.

These models are the specification; the fast samplers in
:mod:`synthmi.models.conjugate` and :mod:`synthmi.models.glm` target the
same posteriors (a test compares them):

``normal``
    :math:`y \sim N(X\beta, \sigma^2)`, :math:`p(\beta, \log\sigma) \propto 1`
    (``pm.Flat``), Rubin (1987, Section 5.3); the likelihood is written through
    its sufficient statistics :math:`(X^\top X, X^\top y, y^\top y, n)`;
``logit`` (C = 2)
    grouped ``pm.Binomial(n_g, logit_p = X_g beta)``;
``logit`` (C > 2)
    grouped ``pm.Multinomial`` with softmax probabilities, baseline category 0;
``probit``
    grouped Bernoulli log-likelihood written with the normal ``logcdf``
    (stable in the tails, unlike ``invprobit``);
``ologit`` / ``oprobit``
    the cumulative model of ``pm.OrderedLogistic`` / ``pm.OrderedProbit``,
    :math:`P(y = k) = F(\kappa_k - \eta) - F(\kappa_{k-1} - \eta)`, written on the
    log scale (``-log1pexp(-a)`` / normal ``logcdf`` and ``log1mexp``) and weighted
    by the grouped counts; cutpoints with PyMC's ``ordered`` transform.

Coefficients and cutpoints of the categorical models get the priors of
:mod:`synthmi.models.glm` (the fast sampler's model, ``cond.fast.prior_sd``):
``prior_sd`` a number s, ``Normal(0, s)`` on every coefficient and cutpoint;
an array of one sd per design column, ``Normal(0, s_j)`` on column j's
coefficients (every category's) and ``Normal(0, 10)`` on the cutpoints (the
default, ``glm.default_prior_sd``: 10 on the intercept, 2.5 elsewhere).
Each model is built and its logp/dlogp function compiled once per
(family, shape, prior) and cached; new data go in with ``pm.set_data`` and the
compiled function is reused across copies, repetitions and synthesizers.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

_CACHE: dict[tuple, tuple[Any, Any, dict]] = {}


def _build(family: str, p: int, C: int, prior_sd: Any):
    import pymc as pm
    import pytensor.tensor as pt

    from .glm import PRIOR_SD_INTERCEPT

    sd = np.asarray(prior_sd, dtype=float)
    # the coefficients' sds (a number, or one per design column: every category's coefficient of
    # column j has sd_j) and the cutpoints' (s for a single number, the intercept's default otherwise)
    beta_sd = float(sd) if sd.ndim == 0 else sd
    beta_sd_k = float(sd) if sd.ndim == 0 else sd[:, None]
    cut_sd = float(sd) if sd.ndim == 0 else PRIOR_SD_INTERCEPT

    coords = {"coef": [f"b{k}" for k in range(p)]}
    if family == "logit" and C > 2:
        coords["category"] = [f"c{k}" for k in range(1, C)]
    if family in ("ologit", "oprobit"):
        coords["cut"] = [f"k{k}" for k in range(1, C)]
    with pm.Model(coords=coords) as model:
        if family == "normal":
            # y ~ N(X beta, sigma^2) through its sufficient statistics (X'X, X'y, y'y, n): the same
            # likelihood, O(p^2) per evaluation instead of O(n p) (48,842 rows on Adult)
            XtX = pm.Data("XtX", np.eye(p))
            Xty = pm.Data("Xty", np.zeros(p))
            # (1,)-vectors, not 0-d: a cached NUTS step did not see pm.set_data updates of 0-d data
            yty = pm.Data("yty", np.ones(1))[0]
            n_obs = pm.Data("n_obs", np.full(1, 2.0))[0]
            beta = pm.Flat("beta", dims="coef")
            log_sigma = pm.Flat("log_sigma")
            sigma = pm.Deterministic("sigma", pt.exp(log_sigma))
            rss = yty - 2.0 * pt.dot(beta, Xty) + pt.dot(beta, pt.dot(XtX, beta))
            pm.Potential("loglik", -n_obs * log_sigma - 0.5 * rss / sigma**2 - 0.5 * n_obs * np.log(2 * np.pi))
            return model
        X = pm.Data("X", np.zeros((2, p)))
        Y = pm.Data("Y", np.ones((2, C)))
        n = Y.sum(axis=1)
        if family == "logit" and C == 2:
            beta = pm.Normal("beta", 0.0, beta_sd, dims="coef")
            pm.Binomial("obs", n=n, logit_p=pt.dot(X, beta), observed=Y[:, 1])
        elif family == "logit":
            beta = pm.Normal("beta", 0.0, beta_sd_k, dims=("coef", "category"))
            eta = pt.concatenate([pt.zeros((X.shape[0], 1)), pt.dot(X, beta)], axis=1)
            pm.Multinomial("obs", n=n, p=pt.special.softmax(eta, axis=1), observed=Y)
        elif family == "probit":
            beta = pm.Normal("beta", 0.0, beta_sd, dims="coef")
            eta = pt.dot(X, beta)
            std = pm.Normal.dist(0.0, 1.0)
            pm.Potential("loglik", (Y[:, 1] * pm.logcdf(std, eta) + Y[:, 0] * pm.logcdf(std, -eta)).sum())
        else:
            beta = pm.Normal("beta", 0.0, beta_sd, dims="coef")
            cut = pm.Normal(
                "cutpoints", 0.0, cut_sd, dims="cut",
                transform=pm.distributions.transforms.ordered, initval=np.linspace(-1.0, 1.0, C - 1),
            )
            eta = pt.dot(X, beta)
            a = cut[None, :] - eta[:, None]
            if family == "ologit":
                # log sigmoid(a) = -log1pexp(-a)
                logF, log_last = -pm.math.log1pexp(-a), -pm.math.log1pexp(a[:, -1:])
            else:
                std = pm.Normal.dist(0.0, 1.0)
                logF, log_last = pm.logcdf(std, a), pm.logcdf(std, -a[:, -1:])
            # log P(y = k) = log(F(a_k) - F(a_{k-1})) = log F(a_k) + log1mexp(log F(a_{k-1}) - log F(a_k))
            mid = logF[:, 1:] + pm.math.log1mexp(logF[:, :-1] - logF[:, 1:])
            logp = pt.concatenate([logF[:, :1], mid, log_last], axis=1)
            pm.Potential("loglik", pt.sum(Y * logp))
    return model


def get_model(family: str, p: int, C: int, prior_sd: Any):
    """The cached (model, compiled logp/dlogp function, initial point) for a family and shape.

    Built and compiled on first use; :func:`sample_nuts` builds a cheap NUTS step around the
    compiled function for each call, as ``pm.init_nuts`` does (``Model.logp_dlogp_function``
    with ``ravel_inputs=True`` and ``trust_input``, then ``pm.NUTS(potential=..., logp_dlogp_func=...)``).
    """
    sd = np.asarray(prior_sd, dtype=float)
    # the prior's form is part of the key: a number s puts N(0, s^2) on the cutpoints too, an array of
    # one sd per design column N(0, 10^2) (glm.CategoricalModel), so s = 2.5 and [2.5] (an ordered
    # model with one design column under the default) are different models
    key = (family, p, C, sd.ndim, tuple(np.atleast_1d(sd).tolist()))
    if key not in _CACHE:
        model = _build(family, p, C, prior_sd)
        logp_dlogp = model.logp_dlogp_function(ravel_inputs=True)
        logp_dlogp.trust_input = True
        _CACHE[key] = (model, logp_dlogp, model.initial_point())
    return _CACHE[key]


def sample_nuts(
    family: str,
    data: dict[str, np.ndarray],
    n_categories: int,
    prior_sd: Any,
    draws: int,
    tune: int,
    chains: int,
    random_seed: int,
    progressbar: bool,
    initvals: list[dict[str, np.ndarray]] | None = None,
    cores: int | None = None,
    mass_cov: np.ndarray | None = None,
):
    """Sample one conditional model by NUTS; returns ArviZ InferenceData.

    ``mass_cov`` sets a dense mass matrix (the inverse metric) from the Laplace
    covariance: correlated dummies (Adult's marital status and relationship)
    otherwise force NUTS into deep trees under the default diagonal
    adaptation. The metric only tunes the sampler; the target is unchanged.
    """
    import pymc as pm
    from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt, QuadPotentialFull

    p = data["X"].shape[1] if "X" in data else data["XtX"].shape[0]
    model, logp_dlogp, start = get_model(family, p, n_categories, prior_sd)
    if mass_cov is not None:
        potential = QuadPotentialFull(np.asarray(mass_cov, dtype=float))
    else:
        n = sum(int(np.prod(v.shape)) for v in start.values())
        potential = QuadPotentialDiagAdapt(n, np.zeros(n), np.ones(n), 10)
    with model:
        # a fresh step per call around the compiled function (public keywords of pm.NUTS): the
        # expensive compilation happens once per model; the mass matrix is this call's own.
        # target_accept 0.9: quasi-separated coefficients (Adult: relationship -> sex) have
        # long one-sided tails where the default 0.8 leaves a few divergences
        step = pm.NUTS(potential=potential, logp_dlogp_func=logp_dlogp, initial_point=start, target_accept=0.9)
    with model:
        pm.set_data(data)
        with warnings.catch_warnings():
            # convergence is checked and reported by the caller (r_hat, ESS, divergences)
            warnings.simplefilter("ignore", UserWarning)
            idata = pm.sample(
                draws=draws, tune=tune, chains=chains, cores=cores if cores is not None else min(chains, 2),
                step=step, random_seed=random_seed, progressbar=progressbar, initvals=initvals,
                compute_convergence_checks=False, return_inferencedata=True,
            )
    return idata


def _laplace(cond) -> tuple[np.ndarray, np.ndarray]:
    """Mode and covariance of the posterior on PyMC's unconstrained scale (same ordering).

    Normal model: (beta, log sigma) with beta ~ s^2 (X'X)^{-1} and var(log sigma) ~ 1/(2(n-p)).
    Categorical models: the Newton mode and inverse negative Hessian of :mod:`.glm`, whose
    parameter vector is laid out like PyMC's value variables (beta row-major, then the
    ordered transform of the cutpoints).
    """
    if cond.family == "normal":
        post = cond.fast
        p = post.beta_hat.size
        cov = np.zeros((p + 1, p + 1))
        cov[:p, :p] = post.chol_inv @ post.chol_inv.T * post.s2
        cov[p, p] = 1.0 / (2.0 * post.df)
        return np.concatenate([post.beta_hat, [0.5 * np.log(post.s2)]]), cov
    return cond.fast.mode()


def _initvals(cond, mode: np.ndarray, cov: np.ndarray, rng: np.random.Generator, chains: int) -> list[dict]:
    """Over-dispersed starting points: draws from N(mode, 4 cov), in PyMC's constrained terms.

    (A NUTS step passed to pm.sample gets no jitter of its own.)
    """
    L = np.linalg.cholesky(cov + 1e-12 * np.eye(cov.shape[0]))
    out = []
    for _ in range(chains):
        th = mode + 2.0 * L @ rng.standard_normal(mode.size)
        if cond.family == "normal":
            out.append({"beta": th[:-1], "log_sigma": np.array(th[-1])})
            continue
        pr = cond.fast.unpack(th[None])
        b0 = pr["beta"][0]
        if cond.family == "logit" and cond.fast.C == 2:
            b0 = b0[:, 0]
        d = {"beta": b0}
        if "cutpoints" in pr:
            d["cutpoints"] = pr["cutpoints"][0]
        out.append(d)
    return out


def sample_conditionals(synth, m: int, rng: np.random.Generator):
    """NUTS draws for every conditional of a fitted Rubin/DA-MI synthesizer.

    Returns ``m`` parameter sets per conditional (evenly spaced over the pooled
    chains) and one InferenceData holding every model's posterior and sample
    stats, variables prefixed by the column name (``age_beta``, ...).
    """
    import arviz as az
    import xarray as xr

    chains = int(synth.chains)
    draws = max(int(synth.draws), -(-m // chains))
    all_draws, posts, stats = [], [], []
    diverging = None
    for cond in synth.conditionals_:
        if cond.family in ("cart", "fixed"):
            # a tree, or a column a structural rule fixes: no parameters, nothing to sample
            all_draws.append([None] * m)
            continue
        if cond.family == "tree":
            # conjugate leaves: independent closed-form draws (synthmi.models.tree), no NUTS needed
            all_draws.append(cond.fast.draw(m, rng))
            continue
        if cond.family == "normal":
            # the model is fitted on the design rebuilt from the data kept by the synthesizer,
            # on its rows (a value model's rows with a value, the rows no structural rule fixes)
            D = synth._design(cond, {c: synth._values(c) for c in cond.predictors})
            rows = synth._fit_rows(cond.column, "normal")
            if rows is not None:
                D = D[rows]
            y = cond.y_model
            data = {"XtX": D.T @ D, "Xty": D.T @ y, "yty": np.array([y @ y]), "n_obs": np.array([float(len(y))])}
        else:
            data = {"X": cond.fast.X, "Y": cond.fast.Y}
        seed = int(rng.integers(2**31 - 1))
        mode, cov = _laplace(cond)
        idata = sample_nuts(
            # the prior of the fast sampler's model (resolved per design column); unused by the normal model
            cond.family, data, max(cond.n_categories, 1), getattr(cond.fast, "prior_sd", 0.0), draws,
            int(synth.tune), chains,
            seed, bool(synth.progressbar), initvals=_initvals(cond, mode, cov, rng, chains), mass_cov=cov,
        )
        post = idata.posterior
        names = {v: f"{cond.column}_{v}" for v in post.data_vars}
        dims = {d: f"{cond.column}_{d}" for d in post.dims if d not in ("chain", "draw")}
        pst = post.rename(names).rename(dims)
        if "coef" in post.dims:
            pst = pst.assign_coords({f"{cond.column}_coef": cond.coef_names})
        posts.append(pst)
        ss = idata.sample_stats
        stats.append(ss.rename({v: f"{cond.column}_{v}" for v in ss.data_vars}))
        div = ss["diverging"].astype(int)
        diverging = div if diverging is None else diverging + div
        pooled = {v: post[v].values.reshape((-1,) + post[v].shape[2:]) for v in post.data_vars}
        total = next(iter(pooled.values())).shape[0]
        idx = np.linspace(0, total - 1, m).round().astype(int) if m > 1 else np.array([total - 1])
        keep = ("beta", "sigma") if cond.family == "normal" else ("beta", "cutpoints")
        sets = []
        for i in idx:
            th = {k: np.asarray(pooled[k][i]) for k in keep if k in pooled}
            if cond.family == "logit" and th["beta"].ndim == 1:
                th["beta"] = th["beta"][:, None]
            sets.append(th)
        all_draws.append(sets)
    sample_stats = xr.merge(stats, compat="override", join="outer")
    sample_stats["diverging"] = diverging
    idata = az.InferenceData(posterior=xr.merge(posts, join="outer"), sample_stats=sample_stats)
    return all_draws, idata

