"""Closed-form posterior draws for the normal linear regression.

The imputation model for a continuous quasi-identifier is

.. math:: y_i \\mid x_i, \\beta, \\sigma \\sim N(x_i^\\top \\beta, \\sigma^2)

with the standard noninformative prior :math:`p(\\beta, \\log\\sigma) \\propto 1`
(i.e. :math:`p(\\beta, \\sigma^2) \\propto \\sigma^{-2}`), the prior of Rubin's
(1987, Multiple Imputation for Nonresponse in Surveys, Section 5.3 / Example
5.1) normal-model imputation. Its posterior is exact and conjugate
(Gelman et al. 2013, BDA3, Section 14.2, eqs. 14.5-14.8):

.. math::

    \\sigma^2 \\mid y &\\sim (n - p)\\, s^2 / \\chi^2_{n-p}, \\\\
    \\beta \\mid \\sigma^2, y &\\sim N(\\hat\\beta, \\sigma^2 (X^\\top X)^{-1}),

with :math:`\\hat\\beta = (X^\\top X)^{-1} X^\\top y` and
:math:`s^2 = \\lVert y - X\\hat\\beta \\rVert^2 / (n - p)`. The PyMC
specification of the same model is in :mod:`synthmi.models.pymc_specs`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg
from .._numeric import independent_columns_gram
from ..errors import InputError


@dataclass
class NormalRegressionPosterior:
    """Sufficient summaries of the posterior of a normal linear regression."""

    beta_hat: np.ndarray  # (p,)
    chol_inv: np.ndarray  # (p, p) lower Cholesky factor of (X'X)^{-1}
    s2: float
    df: int

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray) -> "NormalRegressionPosterior":
        """Least-squares summaries (QR for stability on collinear-ish designs)."""
        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        n, p = X.shape
        if n <= p:
            raise InputError(f"A normal regression with {p} coefficients needs more than {p} rows. Got {n} instead.")
        Q, R = linalg.qr(X, mode="economic")
        diag = np.abs(np.diag(R))
        if diag.min() <= 1e-10 * max(diag.max(), 1.0):
            raise InputError(
                "The predictors of a normal regression are collinear (the design matrix is rank deficient); "
                "drop a redundant column from the kept (Z) or quasi-identifier columns."
            )
        beta_hat = linalg.solve_triangular(R, Q.T @ y)
        resid = y - X @ beta_hat
        df = n - p
        s2 = float(resid @ resid) / df
        # (X'X)^{-1} = R^{-1} R^{-T}; R^{-1} is upper, so its lower Cholesky factor is obtained by
        # a Cholesky of the explicit inverse (p is small).
        Rinv = linalg.solve_triangular(R, np.eye(p))
        cov = Rinv @ Rinv.T
        chol_inv = linalg.cholesky((cov + cov.T) / 2, lower=True)
        return cls(beta_hat=beta_hat, chol_inv=chol_inv, s2=s2, df=df)

    @classmethod
    def from_stats(cls, XtX: np.ndarray, Xty: np.ndarray, yty: float, n: float) -> "NormalRegressionPosterior":
        r"""The same summaries from sufficient statistics (which a partitioned fit sums over partitions):

        .. math:: \hat\beta = (X^\top X)^{-1} X^\top y, \qquad
            s^2 = \frac{y^\top y - 2\hat\beta^\top X^\top y + \hat\beta^\top X^\top X \hat\beta}{n - p},

        (BDA3 eqs. 14.4-14.7), :math:`(X^\top X)^{-1}` by Cholesky; equal to :meth:`fit` up to rounding.
        The design is collinear when a column is aliased with the columns before it by the rule the
        fits drop aliased columns with (:func:`~synthmi._numeric.independent_columns_gram`: residual sum
        of squares at most 1e-10 of the column's): a Cholesky pivot of the Gram matrix carries its
        rounding (1e-16 relative), so an exactly aliased column (female = sex) passed the former test
        ``pivot <= 1e-20`` and gave posterior sds of 1e7.
        """
        XtX = np.asarray(XtX, dtype=float)
        p = XtX.shape[0]
        n = int(round(n))
        if n <= p:
            raise InputError(f"A normal regression with {p} coefficients needs more than {p} rows. Got {n} instead.")
        collinear = ("The predictors of a normal regression are collinear (the design matrix is rank deficient); "
                     "drop a redundant column from the kept (Z) or quasi-identifier columns.")
        A = (XtX + XtX.T) / 2
        if not independent_columns_gram(A).all():
            raise InputError(collinear)
        try:
            cf = linalg.cho_factor(A, lower=True)
        except linalg.LinAlgError:
            raise InputError(collinear) from None
        d = np.diag(cf[0]) ** 2
        if d.min() <= 1e-20 * max(d.max(), 1.0):
            raise InputError(collinear)
        beta_hat = linalg.cho_solve(cf, Xty)
        # residual sum of squares ||y - X b||^2 = y'y - 2 b'X'y + b'X'X b (= y'y - b'X'y at the solution)
        rss = float(yty - 2 * beta_hat @ Xty + beta_hat @ A @ beta_hat)
        df = n - p
        inv = linalg.cho_solve(cf, np.eye(p))
        chol_inv = linalg.cholesky((inv + inv.T) / 2, lower=True)
        return cls(beta_hat=beta_hat, chol_inv=chol_inv, s2=max(rss, 0.0) / df, df=df)

    def draw(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``size`` independent posterior draws: beta (size, p), sigma (size,)."""
        p = self.beta_hat.shape[0]
        sigma2 = self.df * self.s2 / rng.chisquare(self.df, size=size)
        z = rng.standard_normal((size, p))
        beta = self.beta_hat[None, :] + np.sqrt(sigma2)[:, None] * (z @ self.chol_inv.T)
        return beta, np.sqrt(sigma2)

    def moments(self) -> dict[str, np.ndarray]:
        """Exact posterior means and sds of beta and sigma (for checks).

        beta has a multivariate t posterior: mean beta_hat, covariance
        s^2 (X'X)^{-1} (n-p)/(n-p-2). sigma's moments follow from the scaled
        inverse chi-square: E sigma = s sqrt(nu/2) Gamma((nu-1)/2)/Gamma(nu/2).
        """
        from scipy.special import gammaln

        nu = self.df
        cov = self.chol_inv @ self.chol_inv.T * self.s2 * nu / (nu - 2)
        e_sigma = np.sqrt(self.s2 * nu / 2) * np.exp(gammaln((nu - 1) / 2) - gammaln(nu / 2))
        e_sigma2 = self.s2 * nu / (nu - 2)
        return {
            "beta_mean": self.beta_hat.copy(),
            "beta_sd": np.sqrt(np.diag(cov)),
            "sigma_mean": np.array(e_sigma),
            "sigma_sd": np.array(np.sqrt(e_sigma2 - e_sigma**2)),
        }
