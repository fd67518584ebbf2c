r"""Exact privacy audit of the private Beta-posterior mechanisms.

Every mechanism in :mod:`synthmi.privacy.dp_bayes` has an output law that is
finite (or, for one posterior sample, a density with a closed form) and depends on
the data only through the count :math:`k`. Under the substitution relation
(:math:`\|x - y\|_1 = 1`) the neighbouring data sets are exactly those with counts
:math:`(k, k \pm 1)`, so enumerating :math:`k = 0, \dots, n - 1` enumerates all
neighbouring pairs. For each ordered pair the audit computes

.. math::

    L = \max_{r} \big|\log P(M(x) = r) - \log P(M(y) = r)\big|, \qquad
    \delta(\varepsilon) = \max_{(x, y)} \sum_r \big(P(M(x) = r) - e^{\varepsilon} P(M(y) = r)\big)_+ ,

the worst-case privacy loss (pure DP holds iff :math:`L \le \varepsilon`) and the
smallest :math:`\delta` for which :math:`(\varepsilon, \delta)`-DP holds (the
hockey-stick divergence; e.g. Balle & Wang 2018, Theorem 5). No sampling: exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from .._validate import check_epsilon, check_scalar, param_error
from ..results import Result
from .dp_bayes import FINITE_OUTPUT, PrivateBetaPosterior

__all__ = ["audit_privacy_loss", "AuditResult"]

# Rows of the (n+1) x (n+1) log-probability matrix computed at once (memory ~ 8 * _BLOCK * n bytes).
_BLOCK = 512


@dataclass
class AuditResult(Result):
    """Outcome of :func:`audit_privacy_loss`."""

    mechanism: str
    n: int
    epsilon: float
    delta: float
    max_loss: float
    worst_pair: tuple[int, int]
    worst_output: float
    delta_at_epsilon: float
    private: bool

    @property
    def exceeds_epsilon(self) -> bool:
        """True when some neighbouring pair has log-probability ratio above epsilon."""
        return self.max_loss > self.epsilon * (1.0 + 1e-12)

    @property
    def holds(self) -> bool:
        """The claimed guarantee (pure: L <= eps; approximate: delta(eps) <= delta) holds exactly."""
        if self.delta > 0:
            return self.delta_at_epsilon <= self.delta * (1.0 + 1e-9)
        return not self.exceeds_epsilon

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "mechanism": self.mechanism, "n": self.n, "epsilon": self.epsilon, "delta": self.delta,
            "max_loss": self.max_loss, "k_x": self.worst_pair[0], "k_y": self.worst_pair[1],
            "output": self.worst_output, "delta_at_epsilon": self.delta_at_epsilon,
            "exceeds_epsilon": self.exceeds_epsilon, "holds": self.holds,
        }])

    @property
    def _summary_title(self) -> str:
        return f"Exact privacy audit of '{self.mechanism}'"

    def _summary_rows(self) -> dict[str, Any]:
        return self.to_frame().iloc[0].to_dict()

    def _summary_notes(self) -> list[str]:
        verdict = "guarantee holds" if self.holds else "GUARANTEE VIOLATED"
        return [(
            f"Exact privacy audit of '{self.mechanism}' at n={self.n}, epsilon={self.epsilon:g}, delta={self.delta:g}: "
            f"max privacy loss {self.max_loss:.6g} ({self.max_loss / self.epsilon:.4f} x epsilon) on the pair "
            f"k={self.worst_pair[0]} vs k={self.worst_pair[1]} at output {self.worst_output:g}; "
            f"delta(epsilon) = {self.delta_at_epsilon:.3g}; {verdict}."
        )]


def _pair_stats(lp_x: np.ndarray, lp_y: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise max |log ratio|, its argmax, and the hockey-stick divergence both ways."""
    diff = lp_x - lp_y
    absd = np.abs(diff)
    arg = np.argmax(absd, axis=1)
    loss = absd[np.arange(absd.shape[0]), arg]
    with np.errstate(over="ignore"):
        hs_xy = np.sum(np.exp(lp_x) * np.maximum(-np.expm1(np.minimum(eps - diff, 0.0)), 0.0), axis=1)
        hs_yx = np.sum(np.exp(lp_y) * np.maximum(-np.expm1(np.minimum(eps + diff, 0.0)), 0.0), axis=1)
    return loss, arg, np.maximum(hs_xy, hs_yx)


def _audit_finite(logprob: Callable[[np.ndarray], np.ndarray], n: int, eps: float):
    best = (-1.0, (0, 1), 0)
    delta = 0.0
    for start in range(0, n, _BLOCK):
        ks = np.arange(start, min(start + _BLOCK, n) + 1)
        lp = logprob(ks)
        loss, arg, hs = _pair_stats(lp[:-1], lp[1:], eps)
        i = int(np.argmax(loss))
        if loss[i] > best[0]:
            best = (float(loss[i]), (int(ks[i]), int(ks[i] + 1)), int(arg[i]))
        delta = max(delta, float(hs.max()))
    return best, delta


def _audit_posterior_sample(mech: PrivateBetaPosterior, n: int, eps: float, n_quad: int = 20000):
    # log f_k(theta) - log f_{k+1}(theta) is monotone in theta (it is -w log(theta/(1-theta)) + const),
    # so its maximum modulus over [tau, 1 - tau] sits at an endpoint: exact.
    tau = float(mech.tau)
    ends = np.array([tau, 1.0 - tau])
    best = (-1.0, (0, 1), 0.0)
    delta = 0.0
    u = (np.arange(n_quad) + 0.5) / n_quad
    for k in range(n):
        d = mech.ops_log_density(n, k, ends) - mech.ops_log_density(n, k + 1, ends)
        i = int(np.argmax(np.abs(d)))
        if abs(d[i]) > best[0]:
            best = (float(abs(d[i])), (k, k + 1), float(ends[i]))
        if abs(d).max() > eps:
            # Only then can delta(eps) be positive; midpoint rule in the quantile domain of each side.
            for kx, ky in ((k, k + 1), (k + 1, k)):
                th = mech._ops_quantiles(n, kx, u)
                r = mech.ops_log_density(n, ky, th) - mech.ops_log_density(n, kx, th)
                delta = max(delta, float(np.mean(np.maximum(-np.expm1(np.minimum(eps + r, 0.0)), 0.0))))
    return best, delta


def audit_privacy_loss(mechanism: Any, n: int, eps: float | None = None) -> AuditResult:
    """Exact worst-case privacy loss of a Beta-posterior mechanism over all neighbouring pairs.

    Parameters
    ----------
    mechanism : PrivateBetaPosterior or str
        The mechanism (a name is shorthand for ``PrivateBetaPosterior(mechanism=name,
        epsilon=eps)``; ``"smooth"`` then uses delta = 1e-5, ``"local"`` is allowed for study).
    n : int
        Public data set size (>= 1); all 2^n data sets are covered through their counts.
    eps : float, optional
        Epsilon at which to report ``delta_at_epsilon`` (default: the mechanism's epsilon).

    Returns
    -------
    AuditResult
        ``max_loss``, the worst pair ``(k_x, k_y)`` and output, ``delta_at_epsilon``,
        ``exceeds_epsilon`` and ``holds``.
    """
    owner = "audit_privacy_loss"
    n = int(check_scalar(n, "n", owner, kind="int", lower=1))
    if isinstance(mechanism, str):
        e = 1.0 if eps is None else eps
        mechanism = PrivateBetaPosterior(
            epsilon=e, mechanism=mechanism, delta=1e-5 if mechanism == "smooth" else None,
            allow_non_private=(mechanism == "local"),
        )
    if not isinstance(mechanism, PrivateBetaPosterior):
        raise param_error("mechanism", owner, "a PrivateBetaPosterior or a mechanism name", type(mechanism).__name__)
    mech, m_eps, m_delta, _ = mechanism._params()
    eps = m_eps if eps is None else check_epsilon(eps, owner, "eps")
    if mech in FINITE_OUTPUT:
        (loss, pair, out), delta = _audit_finite(lambda ks: mechanism.output_log_probabilities(n, ks), n, eps)
        out = float(out)
    else:
        (loss, pair, out), delta = _audit_posterior_sample(mechanism, n, eps)
    return AuditResult(mech, n, float(eps), float(m_delta), float(loss), pair, out, float(delta), mech != "local")
