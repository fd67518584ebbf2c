"""Privacy accounting: basic sequential composition and Renyi-DP composition.

A :class:`PrivacyAccountant` records every release (a Gaussian mechanism, a pure
:math:`\\varepsilon`-DP mechanism, or an :math:`(\\varepsilon, \\delta)`-DP one) and
reports the total spend either by *basic composition* (epsilons and deltas add;
Dwork & Roth 2014, Theorem 3.16) or by *Renyi-DP composition* (RDP curves add
order by order; Mironov 2017, Proposition 1) followed by a conversion to
:math:`(\\varepsilon, \\delta)`:

* simple (Mironov 2017, Proposition 3; the conversion DPSyn uses):
  :math:`\\varepsilon = \\min_\\lambda\\, \\mathrm{rdp}(\\lambda) + \\log(1/\\delta)/(\\lambda - 1)`;
* improved (Canonne, Kamath & Steinke 2020, Proposition 12; Balle et al. 2020,
  Theorem 21): :math:`\\varepsilon = \\min_\\lambda\\, \\mathrm{rdp}(\\lambda)
  + \\log(1 - 1/\\lambda) - (\\log\\delta + \\log\\lambda)/(\\lambda - 1)`.

Both minimise over a continuous order :math:`\\lambda > 1` (a log-spaced grid,
then a bounded scalar refinement), so reference values match closed forms.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from .._validate import check_delta, check_epsilon, check_option, check_scalar, param_error
from ..errors import InputError, ParameterError

__all__ = [
    "PrivacyAccountant",
    "LedgerEntry",
    "gaussian_rdp",
    "pure_dp_rdp",
    "rdp_to_dp_simple",
    "rdp_to_dp_improved",
    "dpsyn_sigma",
]

RdpCurve = Callable[[np.ndarray], np.ndarray]

# log(lambda - 1) grid: lambda from 1 + e^-8 to 1 + e^14 (~1.2e6) covers every
# optimum met in practice (the optimum order grows like sqrt(log(1/delta)/rho)).
_LOG_U_GRID = np.linspace(-8.0, 14.0, 2201)


def gaussian_rdp(orders: np.ndarray, sigma: float, sensitivity: float = 1.0) -> np.ndarray:
    r"""RDP curve of the Gaussian mechanism (Mironov 2017, Proposition 7).

    .. math:: \mathrm{rdp}(\lambda) = \frac{\lambda \Delta^2}{2 \sigma^2}.

    The discrete Gaussian has the same curve (Canonne, Kamath & Steinke 2020, Theorem 4).
    """
    return np.asarray(orders, dtype=float) * sensitivity**2 / (2.0 * sigma**2)


def pure_dp_rdp(orders: np.ndarray, epsilon: float) -> np.ndarray:
    r"""Tightest RDP curve implied by pure :math:`\varepsilon`-DP (Mironov 2017, Proposition 3).

    .. math::

        \mathrm{rdp}(\lambda) = \frac{1}{\lambda - 1}
        \log\frac{\sinh(\lambda\varepsilon) - \sinh((\lambda-1)\varepsilon)}{\sinh\varepsilon}
        = \frac{\operatorname{logaddexp}(\lambda\varepsilon, -(\lambda-1)\varepsilon)
                - \log(1 + e^{\varepsilon})}{\lambda - 1},

    the Renyi divergence of binary randomized response, written in log space; capped at
    :math:`\varepsilon` (its limit as :math:`\lambda \to \infty`) against rounding.
    """
    lam = np.asarray(orders, dtype=float)
    num = np.logaddexp(lam * epsilon, -(lam - 1.0) * epsilon) - np.logaddexp(0.0, epsilon)
    return np.minimum(num / (lam - 1.0), epsilon)


def _minimise_over_orders(objective: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
    """Minimise ``objective(lambda)`` over lambda > 1; returns (value, argmin)."""
    lam = 1.0 + np.exp(_LOG_U_GRID)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        vals = objective(lam)
    vals = np.where(np.isfinite(vals), vals, np.inf)
    i = int(np.argmin(vals))
    lo = _LOG_U_GRID[max(i - 1, 0)]
    hi = _LOG_U_GRID[min(i + 1, _LOG_U_GRID.size - 1)]

    def f(log_u: float) -> float:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            v = float(objective(np.array([1.0 + math.exp(log_u)]))[0])
        return v if math.isfinite(v) else math.inf

    res = minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best_v, best_lam = float(vals[i]), float(lam[i])
    if res.success and res.fun < best_v:
        best_v, best_lam = float(res.fun), 1.0 + math.exp(res.x)
    return best_v, best_lam


def _as_curve(rdp: RdpCurve | float, owner: str) -> RdpCurve:
    if callable(rdp):
        return rdp
    # A number is read as the zCDP coefficient rho: rdp(lambda) = rho * lambda.
    rho = float(check_scalar(rdp, "rdp", owner, lower=0.0))
    return lambda lam: rho * np.asarray(lam, dtype=float)


def rdp_to_dp_simple(rdp: RdpCurve | float, delta: float) -> tuple[float, float]:
    r"""Convert an RDP curve to :math:`(\varepsilon, \delta)`-DP (Mironov 2017, Proposition 3).

    .. math:: \varepsilon = \min_{\lambda > 1}\; \mathrm{rdp}(\lambda) + \frac{\log(1/\delta)}{\lambda - 1}.

    Parameters
    ----------
    rdp : callable or float
        Vectorised RDP curve ``lambda -> rdp(lambda)``, or a number ``rho`` meaning
        ``rdp(lambda) = rho * lambda`` (a Gaussian with ``rho = Delta^2 / (2 sigma^2)``).
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    (epsilon, order) : the bound and the minimising order lambda.
    """
    owner = "rdp_to_dp_simple"
    delta = check_delta(delta, owner)
    curve = _as_curve(rdp, owner)
    log_inv_delta = -math.log(delta)
    eps, lam = _minimise_over_orders(lambda l: curve(l) + log_inv_delta / (l - 1.0))
    return max(eps, 0.0), lam


def rdp_to_dp_improved(rdp: RdpCurve | float, delta: float) -> tuple[float, float]:
    r"""Convert an RDP curve to :math:`(\varepsilon, \delta)`-DP, tighter version.

    .. math::

        \varepsilon = \min_{\lambda > 1}\; \mathrm{rdp}(\lambda) + \log\!\Big(1 - \frac{1}{\lambda}\Big)
        - \frac{\log\delta + \log\lambda}{\lambda - 1}

    (Canonne, Kamath & Steinke 2020, Proposition 12; Balle et al. 2020, Theorem 21).
    Arguments and return value as :func:`rdp_to_dp_simple`.
    """
    owner = "rdp_to_dp_improved"
    delta = check_delta(delta, owner)
    curve = _as_curve(rdp, owner)
    log_delta = math.log(delta)
    eps, lam = _minimise_over_orders(
        lambda l: curve(l) + np.log1p(-1.0 / l) - (log_delta + np.log(l)) / (l - 1.0)
    )
    return max(eps, 0.0), lam


def dpsyn_sigma(epsilon: float, delta: float, n_marginals: int) -> float:
    r"""Gaussian noise scale DPSyn uses for ``t`` marginals at :math:`(\varepsilon, \delta)`.

    Each marginal has :math:`\ell_2` sensitivity 1 under add/remove-one, so ``t`` of them
    compose to :math:`\mathrm{rdp}(\lambda) = t\lambda/(2\sigma^2)`; the simple conversion
    then gives (the DPSyn write-up of Li, Zhang & Wang; Mironov 2017):

    .. math::

        \sigma = \min_{\lambda > 1 + \log(1/\delta)/\varepsilon}
        \sqrt{\frac{t\lambda}{2(\varepsilon - \log(1/\delta)/(\lambda - 1))}} ,

    whose minimiser solves :math:`\varepsilon u^2 - 2Lu - L = 0` for :math:`u = \lambda - 1`,
    :math:`L = \log(1/\delta)`, i.e. :math:`u^* = (L + \sqrt{L^2 + \varepsilon L})/\varepsilon`.
    """
    owner = "dpsyn_sigma"
    epsilon = check_epsilon(epsilon, owner)
    delta = check_delta(delta, owner)
    t = int(check_scalar(n_marginals, "n_marginals", owner, kind="int", lower=1))
    big_l = -math.log(delta)
    u = (big_l + math.sqrt(big_l * big_l + epsilon * big_l)) / epsilon
    lam = 1.0 + u
    return math.sqrt(t * lam / (2.0 * (epsilon - big_l / u)))


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded release."""

    kind: str  # "gaussian" | "pure" | "approx"
    label: str
    count: int
    epsilon: float | None = None
    delta: float | None = None
    sigma: float | None = None
    sensitivity: float | None = None


class PrivacyAccountant:
    r"""Record privacy spends and report the total.

    Parameters
    ----------
    epsilon, delta : float, optional
        A budget. When given, a spend that would push the total above it (by the
        tighter of basic and RDP composition at ``delta``) raises ``ValueError``
        and is not recorded.

    Notes
    -----
    Gaussian releases (continuous or discrete) enter the RDP composition through
    :func:`gaussian_rdp`, pure releases through :func:`pure_dp_rdp`. Approximate
    :math:`(\varepsilon_i, \delta_i)` releases have no RDP curve; they are added by
    basic composition to whatever the RDP part converts to (composition of an
    :math:`(\varepsilon_1, \delta_1)` and an :math:`(\varepsilon_2, \delta_2)`
    mechanism is :math:`(\varepsilon_1+\varepsilon_2, \delta_1+\delta_2)`-DP).
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self._entries: list[LedgerEntry] = []
        owner = "PrivacyAccountant"
        if epsilon is not None:
            check_epsilon(epsilon, owner)
        if delta is not None:
            check_delta(delta, owner)

    # ------------------------------------------------------------------ spends
    def add_gaussian(self, sigma: float, sensitivity: float = 1.0, count: int = 1, label: str = "") -> "PrivacyAccountant":
        """Record ``count`` Gaussian releases with noise ``sigma`` and l2 ``sensitivity``."""
        owner = "PrivacyAccountant.add_gaussian"
        sigma = float(check_scalar(sigma, "sigma", owner, lower=0.0, lower_inclusive=False))
        sensitivity = float(check_scalar(sensitivity, "sensitivity", owner, lower=0.0, lower_inclusive=False))
        count = int(check_scalar(count, "count", owner, kind="int", lower=1))
        return self._record(LedgerEntry("gaussian", str(label), count, sigma=sigma, sensitivity=sensitivity))

    def add_pure(self, epsilon: float, count: int = 1, label: str = "") -> "PrivacyAccountant":
        """Record ``count`` releases that are each ``epsilon``-DP."""
        owner = "PrivacyAccountant.add_pure"
        epsilon = check_epsilon(epsilon, owner)
        count = int(check_scalar(count, "count", owner, kind="int", lower=1))
        return self._record(LedgerEntry("pure", str(label), count, epsilon=epsilon, delta=0.0))

    def add_approx(self, epsilon: float, delta: float, label: str = "") -> "PrivacyAccountant":
        """Record one ``(epsilon, delta)``-DP release."""
        owner = "PrivacyAccountant.add_approx"
        epsilon = check_epsilon(epsilon, owner)
        delta = check_delta(delta, owner)
        return self._record(LedgerEntry("approx", str(label), 1, epsilon=epsilon, delta=delta))

    def _record(self, entry: LedgerEntry) -> "PrivacyAccountant":
        self._entries.append(entry)
        if self.epsilon is not None:
            try:
                eps = self._budget_epsilon()
            except ValueError:
                self._entries.pop()
                raise
            if eps > self.epsilon * (1.0 + 1e-12):
                self._entries.pop()
                raise InputError(
                    f"The privacy budget of PrivacyAccountant is exceeded: spending {entry.kind} "
                    f"'{entry.label}' would bring the total to epsilon={eps:.6g} > {self.epsilon:g}"
                    + (f" at delta={self.delta:g}." if self.delta is not None else ".")
                )
        return self

    def _budget_epsilon(self) -> float:
        approx_delta = sum(e.delta for e in self._entries if e.kind == "approx")
        has_rdp_part = any(e.kind == "gaussian" for e in self._entries)
        if self.delta is None:
            if has_rdp_part or approx_delta > 0:
                raise ParameterError(
                    "The 'delta' parameter of PrivacyAccountant must be set to spend on Gaussian or "
                    "(epsilon, delta) mechanisms. Got None instead.", parameter='delta', owner='PrivacyAccountant'
                )
            return self.spent(method="basic")[0]
        room = self.delta - approx_delta
        if room <= 0:
            return math.inf
        if not has_rdp_part and not any(e.kind == "pure" for e in self._entries):
            return self.spent(method="basic")[0]
        candidates = [self.spent(delta=room, method="rdp")[0]]
        candidates.append(self.spent(delta=room, method="basic")[0])
        return min(candidates)

    # ------------------------------------------------------------------ totals
    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """Composed RDP curve of the Gaussian and pure releases at ``orders``."""
        lam = np.asarray(orders, dtype=float)
        out = np.zeros_like(lam)
        for e in self._entries:
            if e.kind == "gaussian":
                out = out + e.count * gaussian_rdp(lam, e.sigma, e.sensitivity)
            elif e.kind == "pure":
                out = out + e.count * pure_dp_rdp(lam, e.epsilon)
        return out

    def spent(
        self, delta: float | None = None, method: str = "rdp", conversion: str = "improved"
    ) -> tuple[float, float]:
        r"""Total privacy loss ``(epsilon, delta)`` of everything recorded.

        Parameters
        ----------
        delta : float, optional
            Delta allotted to the Gaussian/pure part (default: the budget's delta).
            The returned delta adds the deltas of approximate releases to it.
        method : {"rdp", "basic"}
            ``"rdp"``: compose RDP curves, convert once. ``"basic"``: epsilons and deltas
            add; each Gaussian release is first converted on its own at
            ``delta / (number of Gaussian releases)``.
        conversion : {"improved", "simple"}
            RDP -> DP conversion (see module docstring).
        """
        owner = "PrivacyAccountant.spent"
        method = check_option(method, "method", owner, ["rdp", "basic"])
        conversion = check_option(conversion, "conversion", owner, ["improved", "simple"])
        if delta is None:
            delta = self.delta
        approx_eps = sum(e.epsilon for e in self._entries if e.kind == "approx")
        approx_delta = sum(e.delta for e in self._entries if e.kind == "approx")
        pure_eps = sum(e.count * e.epsilon for e in self._entries if e.kind == "pure")
        gauss = [e for e in self._entries if e.kind == "gaussian"]
        n_gauss = sum(e.count for e in gauss)
        convert = rdp_to_dp_improved if conversion == "improved" else rdp_to_dp_simple

        if method == "basic":
            if n_gauss == 0:
                return pure_eps + approx_eps, approx_delta
            if delta is None:
                raise param_error("delta", owner, "set (Gaussian releases need a delta)", None)
            delta = check_delta(delta, owner)
            each = delta / n_gauss
            eps = pure_eps + approx_eps
            for e in gauss:
                rho = e.sensitivity**2 / (2.0 * e.sigma**2)
                eps += e.count * convert(rho, each)[0]
            return eps, delta + approx_delta

        if n_gauss == 0 and pure_eps == 0.0:
            return approx_eps, approx_delta
        if delta is None:
            raise param_error("delta", owner, "set for RDP accounting", None)
        delta = check_delta(delta, owner)
        eps, _ = convert(self.rdp, delta)
        return eps + approx_eps, delta + approx_delta

    # ------------------------------------------------------------------ views
    @property
    def ledger(self) -> list[LedgerEntry]:
        """The recorded releases, oldest first (a copy)."""
        return list(self._entries)

    def to_frame(self) -> pd.DataFrame:
        """The ledger as a DataFrame, one row per recorded spend."""
        cols = ["kind", "label", "count", "epsilon", "delta", "sigma", "sensitivity"]
        return pd.DataFrame([asdict(e) for e in self._entries], columns=cols)

    def summary(self, delta: float | None = None) -> str:
        """Ledger and totals under every method/conversion that applies."""
        lines = [f"PrivacyAccountant: {len(self._entries)} spend(s)"]
        if self._entries:
            lines.append(self.to_frame().to_string(index=False))
        d = self.delta if delta is None else delta
        for method, conv in (("basic", "improved"), ("rdp", "simple"), ("rdp", "improved")):
            try:
                eps, dl = self.spent(delta=d, method=method, conversion=conv)
            except ValueError as exc:
                lines.append(f"  {method}/{conv}: {exc}")
                continue
            lines.append(f"  {method:5s} {conv:8s}: epsilon = {eps:.6g}, delta = {dl:.3g}")
        if self.epsilon is not None:
            lines.append(f"  budget: epsilon = {self.epsilon:g}, delta = {self.delta}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PrivacyAccountant(epsilon={self.epsilon!r}, delta={self.delta!r}) with {len(self._entries)} spend(s)"
