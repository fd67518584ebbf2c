r"""Normal regression with random intercepts for a grouping column (partial pooling).

For a continuous quasi-identifier y of record i in group (area) g(i):

.. math::

    y_i = x_i^\top\beta + u_{g(i)} + e_i,\quad e_i \sim N(0, \sigma^2),\quad
    u_g \overset{iid}{\sim} N(0, \tau^2),

with :math:`p(\beta, \log\sigma) \propto 1` (as the fixed-effects normal
model, :mod:`synthmi.models.conjugate`) and a uniform prior on
:math:`\tau > 0` (Gelman 2006, Bayesian Analysis 1:515-534, Section 4: the
uniform prior on the group-level sd, proper posterior for G >= 3 groups).
Small groups borrow strength from the others: :math:`E(u_g \mid \cdot)`
shrinks the group's mean residual by :math:`\frac{n_g/\sigma^2}{n_g/\sigma^2
+ 1/\tau^2}`.

Exact fast path: a blocked Gibbs sampler (Gelman et al. 2013, BDA3,
Sections 15.4-15.5; all full conditionals conjugate). The coefficients and
the group effects are drawn as one block, which removes the slow seesaw
between the intercept and the mean of the u's: their joint full conditional
is normal with precision

.. math:: A = \begin{pmatrix} X^\top X/\sigma^2 & X^\top Z_g/\sigma^2 \\
    Z_g^\top X/\sigma^2 & D \end{pmatrix},\quad
    D = \mathrm{diag}(n_g/\sigma^2 + 1/\tau^2),

(:math:`Z_g` the group indicators) and, because D is diagonal, it is drawn
as :math:`\beta` from its marginal, with precision the Schur complement
:math:`S = X^\top X/\sigma^2 - (X^\top Z_g/\sigma^2) D^{-1} (Z_g^\top
X/\sigma^2)` (a p x p Cholesky), then :math:`u \mid \beta` with independent
components:

.. math::

    u_g \mid \beta, \cdot &\sim N\left(\frac{\sum_{i \in g} (y_i - x_i^\top\beta)/\sigma^2}
        {n_g/\sigma^2 + 1/\tau^2}, \frac{1}{n_g/\sigma^2 + 1/\tau^2}\right), \\
    \sigma^2 \mid \cdot &\sim \lVert y - X\beta - u_g \rVert^2 / \chi^2_n, \\
    \tau^2 \mid \cdot &\sim \textstyle\sum_g u_g^2 / \chi^2_{G-1},

run as several chains, with split-R-hat and bulk ESS
(:func:`synthmi.diagnostics.summarize_draws`, i.e. ArviZ). The PyMC specification of the same
model (NUTS, compiled once per shape) is :func:`pymc_model`; a test keeps the
two in agreement.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from ..diagnostics import summarize_draws
from ..errors import InputError


@dataclass
class HierarchicalNormal:
    """Sufficient pieces of the random-intercept normal regression."""

    X: np.ndarray  # (n, p) fixed-effects design, intercept included
    y: np.ndarray  # (n,)
    g: np.ndarray  # (n,) group codes 0..G-1
    n_groups: int

    def __post_init__(self) -> None:
        n, p = self.X.shape
        if n <= p + 1:
            raise InputError(f"A random-intercept regression with {p} coefficients needs more than {p + 1} rows.")
        if self.n_groups < 3:
            raise InputError("The 'hierarchical' method needs a grouping column with at least 3 levels.")
        Q, R = linalg.qr(self.X, mode="economic")
        diag = np.abs(np.diag(R))
        if diag.min() <= 1e-10 * max(diag.max(), 1.0):
            raise InputError("The fixed-effects predictors of the hierarchical model are collinear; drop a redundant column.")
        # (X'X)^{-1} X' = R^{-1} Q'
        self._proj = linalg.solve_triangular(R, Q.T)
        Rinv = linalg.solve_triangular(R, np.eye(p))
        self._chol_inv = linalg.cholesky(Rinv @ Rinv.T, lower=True)
        self.n_g = np.bincount(self.g, minlength=self.n_groups).astype(float)

    def sample(self, n_keep: int, rng: np.random.Generator, chains: int = 2, burn: int = 200,
               thin: int = 1) -> dict[str, np.ndarray]:
        """Blocked Gibbs draws: arrays with leading axes (chains, n_keep)."""
        X, y, g, G = self.X, self.y, self.g, self.n_groups
        n, p = X.shape
        XtX = X.T @ X
        XtZ = np.stack([np.bincount(g, weights=X[:, k], minlength=G) for k in range(p)])  # (p, G)
        Xty = X.T @ y
        Zty = np.bincount(g, weights=y, minlength=G)
        b0 = self._proj @ y
        r0 = y - X @ b0
        s0 = float(np.sqrt(r0 @ r0 / (n - p)))
        gm = np.bincount(g, weights=r0, minlength=G) / np.maximum(self.n_g, 1)
        # over-dispersed starts: tau from 0.5x to 2x the sd of the group mean residuals
        tau = np.maximum(np.std(gm), 1e-3 * s0) * np.exp(rng.uniform(-0.7, 0.7, chains))
        sigma = s0 * np.exp(rng.uniform(-0.2, 0.2, chains))
        u = np.zeros((chains, G))
        out = {"beta": np.empty((chains, n_keep, p)), "sigma": np.empty((chains, n_keep)),
               "tau": np.empty((chains, n_keep)), "u": np.empty((chains, n_keep, G))}
        beta = np.empty((chains, p))
        for it in range(burn + n_keep * thin):
            for c in range(chains):
                s2, t2 = sigma[c] ** 2, tau[c] ** 2
                d = self.n_g / s2 + 1.0 / t2  # the u block of the precision is diagonal
                Q = XtZ / s2
                S = XtX / s2 - (Q / d) @ Q.T  # Schur complement: the marginal precision of beta
                L = linalg.cholesky(S, lower=True, check_finite=False)
                rhs = Xty / s2 - Q @ (Zty / s2 / d)
                h = linalg.solve_triangular(L, rhs, lower=True, check_finite=False)
                beta[c] = linalg.solve_triangular(L.T, h + rng.standard_normal(p), lower=False, check_finite=False)
                u[c] = (Zty / s2 - Q.T @ beta[c]) / d + rng.standard_normal(G) / np.sqrt(d)
            # sigma | beta, u
            e = y[None, :] - beta @ X.T - u[:, g]
            sigma = np.sqrt((e * e).sum(axis=1) / rng.chisquare(n, chains))
            # tau | u
            tau = np.sqrt((u * u).sum(axis=1) / rng.chisquare(G - 1, chains))
            k = it - burn
            if k >= 0 and k % thin == 0:
                k //= thin
                out["beta"][:, k], out["sigma"][:, k], out["tau"][:, k], out["u"][:, k] = beta, sigma, tau, u
        return out

    def draw(self, m: int, rng: np.random.Generator, chains: int = 2, draws: int = 1000,
             burn: int = 200) -> tuple[list[dict[str, np.ndarray]], dict[str, Any]]:
        """``m`` parameter sets spread evenly over the pooled chains, and the chains' diagnostics.

        R-hat and ESS are taken over beta, sigma, tau and the group effects.
        """
        n_keep = max(int(draws), -(-m // chains))
        s = self.sample(n_keep, rng, chains=chains, burn=burn)
        flat = np.concatenate([s["beta"], s["sigma"][..., None], np.log(s["tau"])[..., None], s["u"]], axis=2)
        r_hat, ess = summarize_draws(flat)
        pooled = {k: v.reshape((-1,) + v.shape[2:]) for k, v in s.items()}
        total = pooled["sigma"].shape[0]
        idx = np.linspace(0, total - 1, m).round().astype(int) if m > 1 else np.array([total - 1])
        sets = [{k: pooled[k][i] for k in ("beta", "sigma", "u", "tau")} for i in idx]
        return sets, {"r_hat": r_hat, "ess_bulk": ess, "chains": chains, "draws_per_chain": n_keep, "burn": burn}


def pymc_model(X: np.ndarray, y: np.ndarray, g: np.ndarray, n_groups: int):
    """The PyMC specification of the same model (flat beta and log sigma, uniform tau > 0)."""
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model() as model:
        beta = pm.Flat("beta", shape=X.shape[1])
        log_sigma = pm.Flat("log_sigma")
        tau = pm.HalfFlat("tau")
        u = pm.Normal("u", 0.0, tau, shape=n_groups)
        mu = pt.dot(X, beta) + u[g]
        pm.Normal("y", mu, pt.exp(log_sigma), observed=y)
    return model
