"""Categorical regression models and their exact fast posterior sampler.

Families (C categories, design X with p columns, counts Y_gc of category c
among the n_g records sharing design row g):

``logit``
    multinomial logit (binary logistic when C = 2),
    :math:`P(y = c \\mid x) = \\exp(x^\\top\\beta_c) / \\sum_k \\exp(x^\\top\\beta_k)`,
    :math:`\\beta_0 = 0`;
``probit``
    binary probit, :math:`P(y = 1 \\mid x) = \\Phi(x^\\top\\beta)`;
``ologit`` / ``oprobit``
    cumulative (ordered) logit / probit (McCullagh 1980, JRSS-B 42:109-142),
    :math:`P(y \\le k \\mid x) = F(\\kappa_k - x^\\top\\beta)` with cutpoints
    :math:`\\kappa_1 < \\dots < \\kappa_{C-1}` and no intercept in X.

Prior: independent :math:`N(0, s^2)` on every coefficient of the
standardised design and on every cutpoint (``prior_sd`` s = 10 by default:
weak, but it keeps the posterior proper under separation). The likelihood
is evaluated on grouped records (identical design rows pooled into counts),
which is the same likelihood up to a constant.

Exact fast sampler
------------------
Independence Metropolis-Hastings (Tierney 1994, Ann. Statist. 22:1701-1762,
Section 2.3.3) with a multivariate-t proposal :math:`q = t_\\nu(\\hat\\theta,
(-H)^{-1})` centred at the posterior mode with the inverse negative Hessian
as scale. The chain's stationary law is the exact posterior whatever the
proposal (the proposal only sets the efficiency); with n in the thousands
the posterior is close to normal and acceptance is high. Because proposals
do not depend on the state, all of them are drawn and scored in one
vectorised batch; only the accept/reject recursion is sequential:

.. math:: \\alpha(\\theta \\to \\theta^*) = \\min\\left(1,
    \\frac{\\pi(\\theta^*) q(\\theta)}{\\pi(\\theta) q(\\theta^*)}\\right).

Several chains give split-:math:`\\hat R` and ESS (ArviZ). The same models
written in PyMC (the specification, sampled by NUTS) live in
:mod:`synthmi.models.pymc_specs`; a test keeps the two in agreement.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import linalg, optimize
from scipy.special import log_expit, log_ndtr, ndtri

FAMILIES = ("logit", "probit", "ologit", "oprobit")


def group_rows(X: np.ndarray, y: np.ndarray, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """Pool identical design rows: (unique rows (G, p), category counts (G, C))."""
    X = np.asarray(X, dtype=float)
    uniq, inv = np.unique(X, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.zeros((uniq.shape[0], n_categories))
    np.add.at(counts, (inv, np.asarray(y, dtype=np.int64)), 1.0)
    return uniq, counts


@dataclass
class CategoricalModel:
    """A categorical regression on grouped data with a N(0, prior_sd^2) prior."""

    family: str
    X: np.ndarray  # (G, p) grouped design
    Y: np.ndarray  # (G, C) counts
    prior_sd: float = 10.0

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"Unknown family {self.family!r}; expected one of {FAMILIES}.")
        self.G, self.p = self.X.shape
        self.C = self.Y.shape[1]
        if self.family == "probit" and self.C != 2:
            raise ValueError("The probit family is binary; use 'oprobit' or 'logit' for more categories.")

    # ---- parameter layout --------------------------------------------------
    @property
    def dim(self) -> int:
        if self.family == "logit":
            return self.p * (self.C - 1)
        if self.family == "probit":
            return self.p
        return self.p + self.C - 1

    def unpack(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """Unconstrained (S, d) -> named constrained parameters with a leading S axis."""
        theta = np.atleast_2d(theta)
        S = theta.shape[0]
        if self.family == "logit":
            return {"beta": theta.reshape(S, self.p, self.C - 1)}
        if self.family == "probit":
            return {"beta": theta}
        beta = theta[:, : self.p]
        raw = theta[:, self.p :]
        cut = np.concatenate([raw[:, :1], raw[:, :1] + np.cumsum(np.exp(raw[:, 1:]), axis=1)], axis=1)
        return {"beta": beta, "cutpoints": cut}

    def pack(self, params: dict[str, np.ndarray]) -> np.ndarray:
        """Inverse of :meth:`unpack` for one parameter set."""
        beta = np.asarray(params["beta"], dtype=float)
        if self.family in ("logit", "probit"):
            return beta.reshape(-1)
        cut = np.asarray(params["cutpoints"], dtype=float)
        return np.concatenate([beta, cut[:1], np.log(np.diff(cut))])

    # ---- probabilities -----------------------------------------------------
    def log_probs(self, params: dict[str, np.ndarray], X: np.ndarray) -> np.ndarray:
        """log P(y = c | x) for S parameter sets: shape (S, n, C)."""
        beta = params["beta"]
        if self.family == "logit":
            if beta.shape[2] == 1:
                eta = beta[:, :, 0] @ X.T
                return np.stack([log_expit(-eta), log_expit(eta)], axis=2)
            eta = np.matmul(X[None], beta)
            eta = np.concatenate([np.zeros(eta.shape[:2] + (1,)), eta], axis=2)
            mx = eta.max(axis=2, keepdims=True)
            return eta - mx - np.log(np.exp(eta - mx).sum(axis=2, keepdims=True))
        eta = beta @ X.T
        if self.family == "probit":
            return np.stack([log_ndtr(-eta), log_ndtr(eta)], axis=2)
        cut = params["cutpoints"]  # (S, C-1)
        a = cut[:, None, :] - eta[:, :, None]  # (S, n, C-1)
        logF = log_ndtr(a) if self.family == "oprobit" else log_expit(a)
        # log(F(a_k) - F(a_{k-1})) = log F(a_k) + log1p(-exp(log F(a_{k-1}) - log F(a_k)))
        mid = logF[:, :, 1:] + np.log1p(-np.exp(np.minimum(logF[:, :, :-1] - logF[:, :, 1:], -1e-300)))
        last = log_ndtr(-a[:, :, -1:]) if self.family == "oprobit" else log_expit(-a[:, :, -1:])
        return np.concatenate([logF[:, :, :1], mid, last], axis=2)

    # ---- posterior density on the unconstrained scale ----------------------
    def log_post(self, theta: np.ndarray, chunk: int = 64) -> np.ndarray:
        """Unnormalised log posterior of (S, d) unconstrained parameters, shape (S,)."""
        theta = np.atleast_2d(theta)
        out = np.empty(theta.shape[0])
        for s0 in range(0, theta.shape[0], chunk):
            th = theta[s0 : s0 + chunk]
            pr = self.unpack(th)
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                lp = self.log_probs(pr, self.X)
                ll = np.einsum("sgc,gc->s", np.where(self.Y[None] > 0, lp, 0.0), self.Y)
            lprior = -0.5 * (pr["beta"].reshape(th.shape[0], -1) ** 2).sum(axis=1) / self.prior_sd**2
            if "cutpoints" in pr:
                lprior = lprior - 0.5 * (pr["cutpoints"] ** 2).sum(axis=1) / self.prior_sd**2
                # log-Jacobian of the ordered transform cut_k = cut_1 + sum exp(raw)
                lprior = lprior + th[:, self.p + 1 :].sum(axis=1)
            val = ll + lprior
            out[s0 : s0 + chunk] = np.where(np.isfinite(val), val, -np.inf)
        return out

    def initial(self) -> np.ndarray:
        if self.family in ("ologit", "oprobit"):
            cum = np.cumsum(self.Y.sum(axis=0))[:-1] / self.Y.sum()
            cum = np.clip(cum, 1e-3, 1 - 1e-3)
            cut = np.log(cum / (1 - cum)) if self.family == "ologit" else np.sqrt(np.pi / 8) * np.log(cum / (1 - cum))
            cut = np.maximum.accumulate(cut + np.arange(cut.size) * 1e-3)
            return self.pack({"beta": np.zeros(self.p), "cutpoints": cut})
        return np.zeros(self.dim)

    # ---- mode and curvature -------------------------------------------------
    def _grad(self, theta: np.ndarray, h: float = 1e-5) -> np.ndarray:
        d = theta.size
        E = np.eye(d) * h
        f = self.log_post(np.vstack([theta + E, theta - E]))
        return (f[:d] - f[d:]) / (2 * h)

    def _hessian(self, theta: np.ndarray, h: float = 1e-3) -> np.ndarray:
        d = theta.size
        iu = np.triu_indices(d)
        pts = []
        for i, j in zip(*iu):
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                t = theta.copy()
                t[i] += si * h
                t[j] += sj * h
                pts.append(t)
        f = self.log_post(np.array(pts)).reshape(-1, 4)
        vals = (f[:, 0] - f[:, 1] - f[:, 2] + f[:, 3]) / (4 * h * h)
        H = np.zeros((d, d))
        H[iu] = vals
        return H + np.triu(H, 1).T

    def mode(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mode and the proposal covariance (-H)^{-1} on the unconstrained scale."""
        x0 = self.initial()
        res = optimize.minimize(
            lambda t: -self.log_post(t)[0], x0, jac=lambda t: -self._grad(t), method="BFGS",
            options={"gtol": 1e-6 * max(1.0, self.Y.sum()) ** 0.5, "maxiter": 500},
        )
        theta = res.x
        H = self._hessian(theta)
        try:
            cov = linalg.inv(-H)
            linalg.cholesky(cov, lower=True)
        except (linalg.LinAlgError, ValueError):
            cov = np.asarray(res.hess_inv) if hasattr(res, "hess_inv") else np.eye(theta.size)
        cov = (cov + cov.T) / 2
        w, V = linalg.eigh(cov)
        cov = (V * np.maximum(w, 1e-10 * max(w.max(), 1e-12))) @ V.T
        return theta, cov


@dataclass
class IMHResult:
    """Draws of an independence Metropolis-Hastings run."""

    draws: np.ndarray  # (chains, n_keep, d) unconstrained
    acceptance: float
    r_hat: float
    ess_bulk: float
    info: dict[str, Any] = field(default_factory=dict)


def independence_mh(
    model: CategoricalModel,
    n_keep: int,
    rng: np.random.Generator,
    chains: int = 2,
    burn: int = 100,
    nu: float = 8.0,
    scale: float = 1.1,
) -> IMHResult:
    r"""Independence MH with a :math:`t_\nu(\hat\theta, \mathrm{scale}^2 (-H)^{-1})` proposal.

    The proposal is slightly wider than the Laplace approximation
    (``scale`` = 1.1) and heavy-tailed (``nu`` = 8) so that the importance
    ratio :math:`\pi/q` stays bounded in the tails, which makes the chain
    uniformly ergodic (Mengersen & Tweedie 1996, Ann. Statist. 24:101-121).
    """
    mode, cov = model.mode()
    d = mode.size
    L = linalg.cholesky(cov * scale**2, lower=True)
    total = chains * (burn + n_keep)
    z = rng.standard_normal((total, d))
    g = rng.chisquare(nu, size=total) / nu
    delta = (z @ L.T) / np.sqrt(g)[:, None]
    prop = mode[None, :] + delta
    # log q up to a constant: -(nu + d)/2 log(1 + delta' Sigma^{-1} delta / nu)
    sol = linalg.solve_triangular(L, delta.T, lower=True)
    log_q = -0.5 * (nu + d) * np.log1p((sol**2).sum(axis=0) / nu)
    log_w = model.log_post(prop) - log_q
    log_u = np.log(rng.random(total))
    draws = np.empty((chains, n_keep, d))
    accepted = 0
    per = burn + n_keep
    for c in range(chains):
        base = c * per
        cur = base  # each chain starts at its first proposal
        for t in range(1, per):
            k = base + t
            if log_u[k] < log_w[k] - log_w[cur]:
                cur = k
                if t >= burn:
                    accepted += 1
            if t >= burn:
                draws[c, t - burn] = prop[cur]
        if burn == 0:
            draws[c, 0] = prop[base]
    acceptance = accepted / max(1, chains * (n_keep - (1 if burn == 0 else 0)))
    r_hat, ess = _rhat_ess(draws)
    if r_hat > 1.01:
        warnings.warn(
            f"Independence MH for a {model.family} model has r_hat = {r_hat:.3f} > 1.01; "
            "the posterior draws may not have converged.",
            RuntimeWarning,
            stacklevel=2,
        )
    return IMHResult(draws=draws, acceptance=float(acceptance), r_hat=float(r_hat), ess_bulk=float(ess),
                     info={"mode": mode, "cov": cov, "n_proposals": total})


def _rhat_ess(draws: np.ndarray) -> tuple[float, float]:
    """Max rank-normalised split-R-hat and min bulk ESS over parameters.

    Vehtari, Gelman, Simpson, Carpenter & Burkner (2021, Bayesian Analysis
    16:667-718), eqs. 3-4 and Section 3.2 (the estimators ArviZ implements;
    a test checks agreement with ``arviz.rhat`` / ``arviz.ess``).
    """
    chains, n, d = draws.shape
    if n < 4:
        return float("nan"), float("nan")
    half = n // 2
    # split chains: (2*chains, half, d)
    sp = np.concatenate([draws[:, :half], draws[:, n - half:]], axis=0)
    r_hats, esss = [], []
    for k in range(d):
        x = sp[:, :, k]
        z = _rank_normal(x)
        # max of bulk and folded (tail) R-hat, Vehtari et al. (2021) eq. 4
        folded = _rank_normal(np.abs(x - np.median(x)))
        r_hats.append(max(_split_rhat(z), _split_rhat(folded)))
        esss.append(_ess(z))
    return float(np.nanmax(r_hats)), float(np.nanmin(esss))


def _rank_normal(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    S = x.size
    r = rankdata(x.reshape(-1), method="average").reshape(x.shape)
    return ndtri((r - 3 / 8) / (S + 1 / 4))


def _split_rhat(z: np.ndarray) -> float:
    m, n = z.shape
    means = z.mean(axis=1)
    B = n * means.var(ddof=1)
    W = z.var(axis=1, ddof=1).mean()
    if W <= 0:
        return float("nan")
    return float(np.sqrt(((n - 1) / n * W + B / n) / W))


def _ess(z: np.ndarray) -> float:
    """ESS with Geyer's initial monotone sequence of paired autocorrelations (BDA3 eq. 11.8)."""
    m, n = z.shape
    zc = z - z.mean(axis=1, keepdims=True)
    nfft = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(zc, n=nfft, axis=1)
    acov = np.fft.irfft(f * np.conj(f), n=nfft, axis=1)[:, :n] / n
    chain_var = acov[:, 0] * n / (n - 1)
    mean_var = chain_var.mean()
    var_plus = mean_var * (n - 1) / n
    if m > 1:
        var_plus += z.mean(axis=1).var(ddof=1)
    if var_plus <= 0:
        return float("nan")
    rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus
    rho[0] = 1.0
    # pair sums P_t = rho_{2t} + rho_{2t+1}; keep while positive, enforce monotone decrease
    npair = n // 2
    P = rho[: 2 * npair : 2] + rho[1 : 2 * npair : 2]
    pos = np.where(P <= 0)[0]
    P = P[: pos[0]] if pos.size else P
    P = np.minimum.accumulate(P)
    tau = -1.0 + 2.0 * P.sum()
    tau = max(tau, 1.0 / np.log10(m * n))
    return float(m * n / tau)
