r"""Basic differentially private mechanisms.

Laplace (real and integer valued), Gaussian (classic and analytic calibration),
randomized response (binary and k-ary) and the exponential mechanism over a
finite candidate set. Definitions follow the DP part of the short-course slides (Dwork
& Roth 2014); the analytic Gaussian follows Balle & Wang (2018); the integer
Laplace is the discrete Laplace of Canonne, Kamath & Steinke (2020): with
``exact_noise=False`` (default) drawn as a difference of two geometric variables
by NumPy's floating-point inverse CDF (the discrete law up to double rounding of
:math:`e^{-\varepsilon/\Delta}`, relative ~1e-16; not rounded continuous noise),
with ``exact_noise=True`` by CKS Algorithm 2 in exact rational arithmetic.

Every mechanism stores its parameters unchanged in ``__init__`` and validates
them when used: ``epsilon > 0``, ``0 < delta < 1``, ``sensitivity > 0``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, logsumexp, ndtr

from .._validate import check_delta, check_epsilon, check_option, check_random_state, check_scalar, param_error
from .discrete import sample_discrete_laplace

__all__ = [
    "LaplaceMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "RandomizedResponse",
    "ExponentialMechanism",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "gaussian_delta",
]


def _sensitivity(value: Any, owner: str) -> float:
    return float(check_scalar(value, "sensitivity", owner, lower=0.0, lower_inclusive=False))


class LaplaceMechanism:
    r"""Laplace mechanism for real-valued queries (Dwork & Roth 2014, Def. 3.3).

    .. math:: \mathcal{M}(x) = f(x) + (Y_1, \dots, Y_k), \quad Y_i \sim \mathrm{Lap}(\Delta_1 f/\varepsilon),

    which is :math:`\varepsilon`-DP when :math:`\Delta_1 f` is the :math:`\ell_1`
    sensitivity of :math:`f` (short-course slides, "The Laplace mechanism is eps-DP").
    For integer-valued queries use :class:`DiscreteLaplaceMechanism`.
    """

    def __init__(self, epsilon: float, sensitivity: float = 1.0) -> None:
        self.epsilon = epsilon
        self.sensitivity = sensitivity

    @property
    def scale(self) -> float:
        """Laplace scale :math:`b = \\Delta/\\varepsilon`."""
        eps = check_epsilon(self.epsilon, type(self).__name__)
        return _sensitivity(self.sensitivity, type(self).__name__) / eps

    def randomise(self, value: Any, random_state: Any = None) -> np.ndarray | float:
        """Return ``value`` plus i.i.d. Laplace noise (same shape as ``value``)."""
        scale = self.scale
        rng = check_random_state(random_state)
        v = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(v)):
            raise param_error("value", type(self).__name__, "finite", "a non-finite value")
        out = v + rng.laplace(0.0, scale, size=v.shape)
        return float(out) if out.ndim == 0 else out


class DiscreteLaplaceMechanism:
    r"""Laplace mechanism for integer-valued queries with exact discrete noise.

    .. math:: \mathcal{M}(x) = f(x) + Y, \quad P(Y = y) \propto e^{-\varepsilon |y| / \Delta},

    :math:`\varepsilon`-DP for integer queries of :math:`\ell_1` sensitivity
    :math:`\Delta` (Canonne, Kamath & Steinke 2020, Theorem 29). Noise is drawn by
    :func:`synthmi.privacy.discrete.sample_discrete_laplace`, never by rounding;
    ``exact_noise=True`` selects its rational-arithmetic sampler (CKS Algorithm 2),
    ``False`` (default) the double-precision geometric sampler.
    """

    def __init__(self, epsilon: float, sensitivity: int = 1, exact_noise: bool = False) -> None:
        self.epsilon = epsilon
        self.sensitivity = sensitivity
        self.exact_noise = exact_noise

    @property
    def scale(self) -> float:
        owner = type(self).__name__
        eps = check_epsilon(self.epsilon, owner)
        sens = check_scalar(self.sensitivity, "sensitivity", owner, kind="int", lower=1)
        return sens / eps

    def randomise(self, value: Any, random_state: Any = None) -> np.ndarray | int:
        """Return integer ``value`` plus discrete Laplace noise."""
        scale = self.scale
        rng = check_random_state(random_state)
        v = np.asarray(value)
        if v.dtype.kind not in "iu":
            if v.dtype.kind == "f" and np.all(np.isfinite(v)) and np.all(v == np.round(v)):
                v = v.astype(np.int64)
            else:
                raise param_error("value", type(self).__name__, "integer-valued", f"dtype {v.dtype}")
        if not isinstance(self.exact_noise, (bool, np.bool_)):
            raise param_error("exact_noise", type(self).__name__, "True or False", self.exact_noise)
        noise = sample_discrete_laplace(scale, v.shape if v.ndim else 1, rng, exact=bool(self.exact_noise))
        out = v.astype(np.int64) + noise.reshape(v.shape)
        return int(out) if out.ndim == 0 else out


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    r"""Classic calibration :math:`\sigma = \Delta_2 \sqrt{2\log(1.25/\delta)}/\varepsilon`.

    Valid only for :math:`\varepsilon < 1` (Dwork & Roth 2014, Theorem A.1).
    """
    owner = "GaussianMechanism"
    eps = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner)
    sens = _sensitivity(sensitivity, owner)
    if eps >= 1.0:
        raise param_error(
            "epsilon", owner, "< 1 for the classic calibration (use calibration='analytic')", epsilon
        )
    return sens * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    r"""Exact :math:`\delta(\varepsilon)` of the Gaussian mechanism (Balle & Wang 2018, Theorem 8).

    .. math::

        \delta = \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
        - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big).
    """
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(ndtr(a - b) - math.exp(epsilon + log_ndtr(-a - b)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    r"""Smallest :math:`\sigma` with :math:`\delta(\varepsilon; \sigma) \le \delta` (Balle & Wang 2018, Alg. 1).

    :func:`gaussian_delta` is decreasing in :math:`\sigma`; the root is found by
    Brent's method on :math:`\log\sigma` to relative accuracy 1e-12.
    """
    owner = "GaussianMechanism"
    eps = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner)
    sens = _sensitivity(sensitivity, owner)

    def f(log_s: float) -> float:
        return gaussian_delta(math.exp(log_s), eps, sens) - delta

    lo, hi = math.log(sens) - 10.0, math.log(sens) + 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    return math.exp(brentq(f, lo, hi, xtol=1e-13, rtol=1e-13))


class GaussianMechanism:
    r"""Gaussian mechanism :math:`f(x) + \mathcal{N}(0, \sigma^2 I)`, :math:`(\varepsilon, \delta)`-DP.

    Parameters
    ----------
    epsilon, delta : float
        Privacy parameters (``epsilon > 0``, ``0 < delta < 1``).
    sensitivity : float
        :math:`\ell_2` sensitivity of the query.
    calibration : {"analytic", "classic"}
        ``"analytic"``: the exact smallest sigma (Balle & Wang 2018);
        ``"classic"``: :math:`\Delta\sqrt{2\log(1.25/\delta)}/\varepsilon`, valid for eps < 1.
    """

    def __init__(self, epsilon: float, delta: float, sensitivity: float = 1.0, calibration: str = "analytic") -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.sensitivity = sensitivity
        self.calibration = calibration

    @property
    def sigma(self) -> float:
        cal = check_option(self.calibration, "calibration", "GaussianMechanism", ["analytic", "classic"])
        fn = analytic_gaussian_sigma if cal == "analytic" else classic_gaussian_sigma
        return fn(self.epsilon, self.delta, self.sensitivity)

    def randomise(self, value: Any, random_state: Any = None) -> np.ndarray | float:
        sigma = self.sigma
        rng = check_random_state(random_state)
        v = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(v)):
            raise param_error("value", "GaussianMechanism", "finite", "a non-finite value")
        out = v + rng.normal(0.0, sigma, size=v.shape)
        return float(out) if out.ndim == 0 else out


class RandomizedResponse:
    r"""k-ary randomized response (Warner 1965; the short-course slides for k = 2).

    Each value in :math:`\{0, \dots, k-1\}` is reported truthfully with probability
    :math:`e^\varepsilon/(e^\varepsilon + k - 1)` and otherwise replaced by one of the
    other :math:`k-1` values uniformly, so every likelihood ratio is at most
    :math:`e^\varepsilon` (:math:`\varepsilon`-DP per record; for k = 2 this is the
    slides' :math:`e^\varepsilon/(e^\varepsilon+1)`).
    """

    def __init__(self, epsilon: float, k: int = 2) -> None:
        self.epsilon = epsilon
        self.k = k

    def _params(self) -> tuple[float, int]:
        owner = "RandomizedResponse"
        eps = check_epsilon(self.epsilon, owner)
        k = int(check_scalar(self.k, "k", owner, kind="int", lower=2))
        return eps, k

    def transition_matrix(self) -> np.ndarray:
        """``P[i, j] = P(report j | true i)``."""
        eps, k = self._params()
        denom = math.exp(eps) + k - 1
        p = np.full((k, k), 1.0 / denom)
        np.fill_diagonal(p, math.exp(eps) / denom)
        return p

    def randomise(self, x: Any, random_state: Any = None) -> np.ndarray:
        """Randomise an array of category codes in ``{0, ..., k-1}``."""
        eps, k = self._params()
        rng = check_random_state(random_state)
        x = np.asarray(x)
        if x.size and (x.dtype.kind not in "iub" or x.min() < 0 or x.max() > k - 1):
            raise param_error("x", "RandomizedResponse", f"integer codes in {{0, ..., {k - 1}}}", "values outside that set")
        x = x.astype(np.int64)
        p_keep = math.exp(eps) / (math.exp(eps) + k - 1)
        keep = rng.random(x.shape) < p_keep
        # A uniform draw among the k-1 *other* values: shift 1..k-1 modulo k.
        other = (x + rng.integers(1, k, size=x.shape)) % k
        return np.where(keep, x, other)

    def estimate_frequencies(self, reports: Any) -> np.ndarray:
        r"""Unbiased frequency estimate :math:`\hat\pi = P^{-T} \hat q` from the reports."""
        _, k = self._params()
        reports = np.asarray(reports, dtype=np.int64)
        q = np.bincount(reports.ravel(), minlength=k)[:k] / max(reports.size, 1)
        return np.linalg.solve(self.transition_matrix().T, q)


def exponential_mechanism_probabilities(scores: Any, epsilon: float, sensitivity: float) -> np.ndarray:
    r"""Exact output probabilities of the exponential mechanism.

    .. math::

        P(Y = y) = \frac{\exp\big(\frac{\varepsilon}{2\Delta} q(y; x)\big)}
                        {\sum_{y'} \exp\big(\frac{\varepsilon}{2\Delta} q(y'; x)\big)}

    (McSherry & Talwar 2007; short-course slides, Algorithm 1), normalised in log space.
    ``scores`` may be 2-D (rows = data sets), probabilities are per row.
    """
    owner = "ExponentialMechanism"
    eps = check_epsilon(epsilon, owner)
    sens = _sensitivity(sensitivity, owner)
    s = np.asarray(scores, dtype=float)
    if s.ndim == 0 or s.shape[-1] == 0:
        raise param_error("scores", owner, "a non-empty array of candidate scores", "an empty candidate set")
    if not np.all(np.isfinite(s)):
        raise param_error("scores", owner, "finite", "non-finite scores")
    logits = (eps / (2.0 * sens)) * s
    return np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))


def exponential_mechanism(
    scores: Any, epsilon: float, sensitivity: float, size: int | None = None, random_state: Any = None
) -> np.ndarray | int:
    """Sample candidate indices from :func:`exponential_mechanism_probabilities` (1-D scores).

    Sampling is by inversion of the exact normalised CDF (one uniform per draw).
    """
    p = exponential_mechanism_probabilities(scores, epsilon, sensitivity)
    if p.ndim != 1:
        raise param_error("scores", "ExponentialMechanism", "1-D", f"{p.ndim}-D array")
    rng = check_random_state(random_state)
    return _sample_categorical(p, size, rng)


def _sample_categorical(p: np.ndarray, size: int | None, rng: np.random.Generator) -> np.ndarray | int:
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    n = 1 if size is None else int(check_scalar(size, "size", "ExponentialMechanism", kind="int", lower=0))
    idx = np.searchsorted(cdf, rng.random(n), side="right")
    idx = np.minimum(idx, p.size - 1)
    return int(idx[0]) if size is None else idx


class ExponentialMechanism:
    """Exponential mechanism over a finite candidate set (object form).

    Parameters
    ----------
    epsilon : float
    sensitivity : float
        Bound on ``|q(y; x) - q(y; x')|`` over candidates ``y`` and neighbours ``x, x'``.
    """

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.epsilon = epsilon
        self.sensitivity = sensitivity

    def probabilities(self, scores: Any) -> np.ndarray:
        return exponential_mechanism_probabilities(scores, self.epsilon, self.sensitivity)

    def select(self, scores: Any, size: int | None = None, random_state: Any = None) -> np.ndarray | int:
        return exponential_mechanism(scores, self.epsilon, self.sensitivity, size, random_state)
