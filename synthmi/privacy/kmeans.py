r"""Differentially private k-means (Lloyd's algorithm with Laplace noise).

The slides' Algorithm 2 (short-course slides, "A differentially private version of
Lloyd's algorithm"): data in the :math:`\ell_1` ball
:math:`\mathcal{X} = \{x \in \mathbb{R}^d : \|x\|_1 \le c\}`; for each of :math:`T`
iterations release noisy cluster counts and noisy cluster sums,

.. math::

    \hat n_j = n_j + Y_j, \quad \hat a_j = a_j + (Z_{j1}, \dots, Z_{jd}), \qquad
    \varepsilon' = \frac{\varepsilon}{2T},

each a Laplace mechanism with :math:`\ell_1` sensitivity 2 (counts) and :math:`2c`
(sums) under substitution of one record, so each release costs
:math:`\varepsilon'` and the :math:`2T` releases compose to :math:`\varepsilon`
(basic composition). New centres :math:`\hat a_j/\hat n_j` are post-processing;
a cluster with :math:`\hat n_j < 1` gets a fresh uniform centre in
:math:`\mathcal{X}`. Counts are integers and get exact discrete Laplace noise
(Canonne, Kamath & Steinke 2020) with the same scale.

Records outside the ball are scaled onto it (a per-record map, chosen without
looking at the data, so it costs no budget); ``clip_norm`` must be public.
:func:`step_statistics` computes exactly the two quantities released per
iteration, so the tests audit their sensitivities on random neighbouring pairs.

Public domain: with ``fit(X, domain=...)`` (a DataFrame and its declared
:class:`~synthmi.domain.PublicDomain`), each column is mapped onto
:math:`[-1, 1]` by its *declared* bounds, :math:`z = 2(x - l)/(u - l) - 1`, the
ball's radius ``clip_norm`` is in those units (``d`` keeps every record
unclipped), and the released centres are mapped back. No bound is ever read from
the data. The noise comes from OS entropy unless ``random_state`` is given (see
:mod:`synthmi.privacy.noise_source`).

Noise sampling: with ``exact_noise=False`` (default) the counts' discrete Laplace
noise is the difference of two geometric variables drawn by NumPy's
floating-point inverse CDF: an integer-valued draw from the discrete Laplace law
up to double rounding of :math:`e^{-1/t}` (relative ~1e-16), not rounded
continuous noise. ``exact_noise=True`` uses Canonne, Kamath & Steinke's (2020)
Algorithm 2 in rational arithmetic (no floating point in the law; slower). The
sums are real-valued and get continuous Laplace noise either way.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._validate import NotFittedError, check_epsilon, check_scalar, param_error
from ..domain import as_public_domain
from .accountant import PrivacyAccountant
from .discrete import sample_discrete_laplace
from .noise_source import SecretSeedMixin, noise_generator, noise_provenance, user_seed_given
from ..errors import ColumnError

__all__ = ["DPKMeans", "uniform_l1_ball", "clip_l1", "step_statistics"]

_OWNER = "DPKMeans"


def uniform_l1_ball(size: int, d: int, radius: float, rng: np.random.Generator) -> np.ndarray:
    r"""Uniform points in :math:`\{x : \|x\|_1 \le r\}`: the first d coordinates of a
    Dirichlet(1, ..., 1) vector of length d + 1 (uniform on the simplex's interior) with random signs."""
    g = rng.dirichlet(np.ones(d + 1), size=size)[:, :d]
    return radius * g * rng.choice([-1.0, 1.0], size=(size, d))


def clip_l1(X: np.ndarray, c: float) -> np.ndarray:
    r"""Scale each row onto the :math:`\ell_1` ball of radius c when it lies outside (a new array)."""
    norms = np.abs(X).sum(axis=1)
    return X * np.minimum(1.0, c / np.maximum(norms, 1e-300))[:, None]


def step_statistics(X: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The two statistics one Lloyd iteration releases (before noise): cluster counts
    :math:`n_j` and cluster sums :math:`a_j` of the (clipped) records assigned to their
    nearest centre. Substituting one record moves the counts by at most 2 and the
    sums by at most :math:`2c` in :math:`\ell_1` when every record has norm <= c."""
    k = centres.shape[0]
    d2 = ((X[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    label = np.argmin(d2, axis=1)
    counts = np.bincount(label, minlength=k)
    sums = np.zeros((k, X.shape[1]))
    np.add.at(sums, label, X)
    return counts, sums


class DPKMeans(SecretSeedMixin):
    """Differentially private k-means, the slides' Algorithm 2.

    Parameters
    ----------
    n_clusters : int
        k (>= 1, and <= number of records at fit time).
    epsilon : float
        Total privacy budget (> 0); each of the 2T Laplace releases gets eps/(2T).
    n_iter : int
        T, the number of Lloyd iterations (>= 1).
    clip_norm : float
        Public l1 radius c of the data domain.
    init : "random" or array (k, d)
        Initial centres: uniform in the domain (data independent) or public centres.
    random_state : None, int or Generator
        Seed of the noise. Default ``None``: fresh OS randomness, never stored. A
        seed (with a warning) makes the release reproducible and hence not private
        against anyone who learns it; it is never shown in ``repr`` or pickled.
    exact_noise : bool
        Draw the counts' discrete Laplace noise with CKS 2020 Algorithm 2 in rational
        arithmetic (``True``) or the double-precision geometric sampler (``False``,
        default; see the module docstring).

    Attributes
    ----------
    cluster_centers_ : ndarray (k, d)
    noisy_counts_ : ndarray (k,) last iteration's released counts
    accountant_ : PrivacyAccountant with the 2T spends
    history_ : list of centre arrays, one per iteration (all released, hence public)
    """

    def __init__(
        self,
        n_clusters: int = 3,
        epsilon: float = 1.0,
        n_iter: int = 5,
        clip_norm: float = 1.0,
        init: Any = "random",
        random_state: Any = None,
        exact_noise: bool = False,
    ) -> None:
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.n_iter = n_iter
        self.clip_norm = clip_norm
        self.init = init
        self.random_state = random_state
        self.exact_noise = exact_noise

    def fit(self, X: Any, domain: Any = None) -> "DPKMeans":
        """Run the private Lloyd iterations on ``X`` (n records x d features).

        With ``domain`` (a :class:`~synthmi.domain.PublicDomain`, its JSON path or
        dict), ``X`` is a DataFrame whose columns are declared numeric; they are
        scaled onto [-1, 1] by the declared bounds and the centres are returned in
        the original units. Values outside the declared bounds raise an error naming
        the column only.
        """
        eps = check_epsilon(self.epsilon, _OWNER)
        k = int(check_scalar(self.n_clusters, "n_clusters", _OWNER, kind="int", lower=1))
        T = int(check_scalar(self.n_iter, "n_iter", _OWNER, kind="int", lower=1))
        c = float(check_scalar(self.clip_norm, "clip_norm", _OWNER, lower=0.0, lower_inclusive=False))
        if not isinstance(self.exact_noise, (bool, np.bool_)):
            raise param_error("exact_noise", _OWNER, "True or False", self.exact_noise)
        self.scale_ = None
        if domain is not None:
            X = self._scaled(X, as_public_domain(domain))
        X = np.asarray(X.to_numpy() if isinstance(X, pd.DataFrame) else X, dtype=float)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise param_error("X", _OWNER, "a non-empty 2-D array (n records x d features)", f"shape {X.shape}")
        if not np.all(np.isfinite(X)):
            raise param_error("X", _OWNER, "finite", "non-finite values")
        n, d = X.shape
        if k > n:
            # No n in the message: under add/remove-one neighbours the record count is private.
            raise param_error("n_clusters", _OWNER, "at most the number of records", k)
        rng = noise_generator(self.random_state, _OWNER)
        self.user_seed_given_ = user_seed_given(self.random_state)
        X = clip_l1(X, c)

        if isinstance(self.init, str):
            if self.init != "random":
                raise param_error("init", _OWNER, "'random' or an array of shape (n_clusters, d)", self.init)
            centres = uniform_l1_ball(k, d, c, rng)
        else:
            centres = np.array(self.init, dtype=float)
            if centres.shape != (k, d):
                raise param_error("init", _OWNER, f"an array of shape ({k}, {d})", f"shape {centres.shape}")

        eps_step = eps / (2 * T)
        scale_counts = 2.0 / eps_step
        scale_sums = 2.0 * c / eps_step
        acc = PrivacyAccountant(epsilon=eps)
        history = []
        for t in range(T):
            counts, sums = step_statistics(X, centres)
            n_hat = counts + sample_discrete_laplace(scale_counts, k, rng, exact=bool(self.exact_noise))
            acc.add_pure(eps_step, label=f"iteration {t + 1}: counts")
            a_hat = sums + rng.laplace(0.0, scale_sums, size=(k, d))
            acc.add_pure(eps_step, label=f"iteration {t + 1}: sums")
            new = np.empty_like(centres)
            ok = n_hat >= 1
            new[ok] = a_hat[ok] / n_hat[ok, None]
            if np.any(~ok):
                new[~ok] = uniform_l1_ball(int((~ok).sum()), d, c, rng)
            centres = new
            history.append(centres.copy())
        if self.scale_ is not None:
            lo, hi = self.scale_
            centres = lo + (centres + 1.0) * (hi - lo) / 2.0
            history = [lo + (h + 1.0) * (hi - lo) / 2.0 for h in history]
        self.cluster_centers_ = centres
        self.noisy_counts_ = n_hat
        self.accountant_ = acc
        self.history_ = history
        return self

    def _scaled(self, X: Any, domain) -> np.ndarray:
        """``X``'s columns on [-1, 1] by their declared bounds (sets ``scale_``)."""
        if not isinstance(X, pd.DataFrame):
            raise param_error("X", _OWNER, "a DataFrame when a domain is given", type(X).__name__)
        domain.require(X.columns, flag="--domain", parameter="domain")
        for col in X.columns:
            if domain[col].is_discrete:
                raise ColumnError(f"Column '{col}' is declared {domain[col].kind}; DP k-means needs numeric columns.")
        Z = domain.select(X.columns).conform(X)
        for col in Z.columns:
            if Z[col].isna().any():
                # No count: how many values are missing is a data-dependent figure.
                raise ColumnError(f"Column '{col}' has missing values; DP k-means needs complete numeric columns.")
        lo = np.array([domain[col].bounds[0] for col in X.columns])
        hi = np.array([domain[col].bounds[1] for col in X.columns])
        hi = np.where(hi > lo, hi, lo + 1.0)  # an integer column declared with one value
        self.scale_ = (lo, hi)
        self.columns_ = list(X.columns)
        return 2.0 * (Z.to_numpy(dtype=float) - lo) / (hi - lo) - 1.0

    def privacy_statement(self) -> dict[str, Any]:
        """The guarantee of the fitted release (no data values)."""
        if not hasattr(self, "cluster_centers_"):
            raise NotFittedError("This DPKMeans instance is not fitted yet; call fit first.")
        return {
            "guarantee": f"{float(self.epsilon):g}-differential privacy",
            "epsilon": float(self.epsilon),
            "delta": 0.0,
            "neighbours": "substitution of one record (and so also add/remove one record)",
            "composition": f"basic composition of {2 * int(self.n_iter)} Laplace releases of epsilon/(2T) each",
            "noise": noise_provenance(bool(getattr(self, "user_seed_given_", False))),
        }

    def predict(self, X: Any) -> np.ndarray:
        """Nearest released centre for each row (post-processing)."""
        if not hasattr(self, "cluster_centers_"):
            raise NotFittedError("This DPKMeans instance is not fitted yet; call fit first.")
        X = np.asarray(X.to_numpy() if isinstance(X, pd.DataFrame) else X, dtype=float)
        d2 = ((X[:, None, :] - self.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
        return np.argmin(d2, axis=1)
