r"""Combining rules for multiply imputed and synthetic data: one entry, the rule named.

``combine(estimates, variances, rule=...)`` mirrors mice's ``pool(fits, rule=)``.
All rules are vectorised over coefficients (the last axis).

Notation (M copies, estimates :math:`q^{(l)}`, variances :math:`v^{(l)}`):

.. math::

    \bar q_M = \frac1M \sum_l q^{(l)}, \qquad
    \bar v_M = \frac1M \sum_l v^{(l)}, \qquad
    b_M = \frac{1}{M-1}\sum_l (q^{(l)} - \bar q_M)^2 .

Rules
-----
One name per rule; the only other names accepted are the citation aliases of
this table (the paper that gives the rule):

=============  ===================  ==============================================
rule           citation alias       for
=============  ===================  ==============================================
``partial``    ``reiter2003``       partially synthetic copies
``full``       ``raghunathan2003``  fully synthetic copies
``rubin``      ``rubin1987``        multiple imputations of missing data
``nested``     ``reiter2004``       m imputations x r synthetic copies
=============  ===================  ==============================================

``"partial"``
    Reiter (2003), *Survey Methodology* 29:181-188, partially synthetic data
    (the formula of the short-course slides):
    :math:`T_M = b_M/M + \bar v_M`,
    :math:`\nu = (M-1)(1 + r_M^{-1})^2`, :math:`r_M = (b_M/M)/\bar v_M`.
``"full"``
    Raghunathan, Reiter & Rubin (2003), *J. Official Statistics* 19:1-16:
    :math:`T_f = (1 + 1/M) b_M - \bar v_M`,
    :math:`\nu_f = (M-1)\,(1 - M\bar v_M / ((M+1) b_M))^2`. When
    :math:`T_f \le 0` the non-negative fallback of Reiter (2002, *J. Official
    Statistics* 18:531-543) is used: :math:`T_f^* = (n_{syn}/n)\,\bar v_M`,
    with a normal reference distribution (:math:`\nu = \infty`).
``"rubin"``
    Rubin (1987) for missing data: :math:`T = \bar v_M + (1 + 1/M) b_M`,
    :math:`\nu_{old} = (M-1)(1 + 1/r)^2`, :math:`r = (1+1/M) b_M/\bar v_M`;
    with complete-data degrees of freedom :math:`\nu_{com}` given, the
    Barnard & Rubin (1999, *Biometrika* 86:948-955) small-sample df
    :math:`\nu = (1/\nu_{old} + 1/\hat\nu_{obs})^{-1}`,
    :math:`\hat\nu_{obs} = \frac{\nu_{com}+1}{\nu_{com}+3}\nu_{com}(1-\gamma)`,
    :math:`\gamma = (1+1/M) b_M / T`.
``"nested"``
    Reiter (2004), *Survey Methodology* 30:235-242: missing data imputed
    first (m imputations), then r synthetic copies of each completed set;
    estimates arrive as an (m, r, p) array. With nest means
    :math:`\bar q_i`, :math:`\bar b_M = \frac1m\sum_i \frac{1}{r-1}\sum_j
    (q_{ij}-\bar q_i)^2`, :math:`B_M = \frac{1}{m-1}\sum_i(\bar q_i - \bar q_M)^2`:

    .. math::

        T_M = (1 + 1/m) B_M - \bar b_M / r + \bar v_M,\qquad
        \nu^{-1} = \frac{((1+1/m)B_M)^2}{(m-1)T_M^2} + \frac{(\bar b_M/r)^2}{m(r-1)T_M^2}.

    (Derivation of the sign: :math:`B_M` estimates the imputation variance
    plus :math:`\bar b/r` of synthesis noise in each nest mean, so
    :math:`(1+1/m)B_M - \bar b/r` leaves the imputation part plus the
    :math:`\bar b/(mr)` synthesis variance of :math:`\bar q_M`.) When
    :math:`T_M \le 0` we fall back to the conservative
    :math:`(1+1/m) B_M + \bar v_M` with Rubin's df — documented, not from the paper.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ..results import Result
from .._validate import param_error
from ..errors import InputError, ParameterError

#: rule name or citation alias -> rule (the table in the module docstring)
RULES = {
    "partial": "partial",
    "reiter2003": "partial",
    "full": "full",
    "raghunathan2003": "full",
    "rubin": "rubin",
    "rubin1987": "rubin",
    "nested": "nested",
    "reiter2004": "nested",
}


@dataclass
class CombineResult(Result):
    """Combined inference, one entry per coefficient.

    Attributes
    ----------
    estimate, variance, se, df, ci_lower, ci_upper : ndarray
        Point estimate :math:`\\bar q_M`, total variance, its square root,
        reference-t degrees of freedom (``inf`` = normal) and the
        ``1 - alpha`` interval.
    q_bar, b, v_bar, r : ndarray
        The parts: mean estimate, between-copy variance, mean within-copy
        variance and the rule's variance ratio.
    rule : str
    M : int
        Number of copies (nested: ``m * r``).
    names : list of str or None
        Coefficient names, when known.
    extra : dict
        Rule-specific parts (nested: ``B``, ``b_bar``; full: ``fallback`` mask).
    """

    estimate: np.ndarray
    variance: np.ndarray
    df: np.ndarray
    ci_lower: np.ndarray
    ci_upper: np.ndarray
    q_bar: np.ndarray
    b: np.ndarray
    v_bar: np.ndarray
    r: np.ndarray
    rule: str
    M: int
    alpha: float = 0.05
    names: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(self.variance)

    def to_frame(self) -> pd.DataFrame:
        """The combined inference as a labelled table (one row per coefficient)."""
        idx = self.names if self.names is not None else range(len(np.atleast_1d(self.estimate)))
        return pd.DataFrame(
            {
                "estimate": np.atleast_1d(self.estimate),
                "se": np.atleast_1d(self.se),
                "df": np.atleast_1d(self.df),
                "ci_lower": np.atleast_1d(self.ci_lower),
                "ci_upper": np.atleast_1d(self.ci_upper),
                "b": np.atleast_1d(self.b),
                "v_bar": np.atleast_1d(self.v_bar),
                "r": np.atleast_1d(self.r),
            },
            index=pd.Index(list(idx), name="term"),
        )

    @property
    def _summary_title(self) -> str:
        return f"Combined inference (rule={self.rule!r}, M={self.M}, {100 * (1 - self.alpha):.0f}% CI)"

    def _summary_rows(self) -> pd.DataFrame:
        return self.to_frame()

    def _dict_extra(self) -> dict[str, Any]:
        return {"rule": self.rule, "M": self.M, "alpha": self.alpha}

    def __repr__(self) -> str:
        return str(self.summary())


def _as_array(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.size == 0:
        raise InputError(f"The '{name}' parameter of combine is empty.")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"The '{name}' parameter of combine contains NaN or infinite values.")
    return arr


def combine(
    estimates: Any,
    variances: Any,
    rule: str = "partial",
    alpha: float = 0.05,
    df_complete: float | Sequence[float] | None = None,
    n_syn_over_n: float = 1.0,
    names: Sequence[str] | None = None,
) -> CombineResult:
    """Combine estimates from M copies into one inference.

    Parameters
    ----------
    estimates, variances : array_like
        Shape (M,) or (M, p); for ``rule="nested"`` shape (m, r) or (m, r, p).
        Variances are squared standard errors (within-copy variances).
    rule : {"partial", "full", "rubin", "nested"} or a citation alias
        See the module docstring for each formula and its source.
    alpha : float
        1 - confidence level of the t-based interval.
    df_complete : float or array, optional
        Complete-data degrees of freedom for the Barnard-Rubin (1999)
        adjustment (``rule="rubin"`` only).
    n_syn_over_n : float
        Ratio of synthetic to original sample size for the fully synthetic
        fallback (Reiter 2002).
    names : list of str, optional
        Coefficient names carried to :meth:`CombineResult.to_frame`.

    Returns
    -------
    CombineResult
    """
    if not isinstance(rule, str) or rule.lower() not in RULES:
        raise param_error("rule", "combine", "one of " + ", ".join(repr(r) for r in RULES), rule)
    rule = RULES[rule.lower()]
    if not (0.0 < alpha < 1.0):
        raise param_error("alpha", "combine", "in the open interval (0, 1)", alpha)
    if df_complete is not None and rule != "rubin":
        raise ParameterError(
            f"The 'df_complete' parameter of combine applies only to rule='rubin' "
            f"(Barnard-Rubin 1999). Got it with rule={rule!r}.", parameter='df_complete', owner='combine'
        )
    q = _as_array(estimates, "estimates")
    u = _as_array(variances, "variances")
    if q.shape != u.shape:
        raise InputError(
            f"The 'estimates' and 'variances' parameters of combine must have the same shape. "
            f"Got {q.shape} and {u.shape} instead."
        )
    if np.any(u < 0):
        raise ParameterError("The 'variances' parameter of combine must be >= 0 everywhere.", parameter='variances', owner='combine')

    if rule == "nested":
        if q.ndim == 2:
            q, u = q[..., None], u[..., None]
        if q.ndim != 3:
            raise InputError(
                "For rule='nested' the 'estimates' parameter of combine must have shape (m, r) or (m, r, p). "
                f"Got {q.shape} instead."
            )
        m, r = q.shape[:2]
        if m < 2 or r < 2:
            raise InputError(
                f"rule='nested' needs m >= 2 imputations and r >= 2 synthetic copies each. Got m={m}, r={r} instead."
            )
        return _nested(q, u, alpha, names)

    if q.ndim == 1:
        q, u = q[:, None], u[:, None]
    if q.ndim != 2:
        raise ParameterError(f"The 'estimates' parameter of combine must have shape (M,) or (M, p). Got {q.shape} instead.", parameter='estimates', owner='combine')
    M = q.shape[0]
    if M < 2:
        raise InputError(
            f"rule={rule!r} needs at least M = 2 copies to estimate the between-copy variance. Got M = {M} instead."
        )
    q_bar = q.mean(axis=0)
    v_bar = u.mean(axis=0)
    b = q.var(axis=0, ddof=1)
    extra: dict[str, Any] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        if rule == "partial":
            T = b / M + v_bar
            r_ratio = (b / M) / v_bar
            df = (M - 1) * (1.0 + 1.0 / r_ratio) ** 2
        elif rule == "full":
            T_f = (1.0 + 1.0 / M) * b - v_bar
            fallback = T_f <= 0
            T = np.where(fallback, n_syn_over_n * v_bar, T_f)
            r_ratio = (1.0 + 1.0 / M) * b / v_bar
            df = np.where(fallback, np.inf, (M - 1) * (1.0 - M * v_bar / ((M + 1) * b)) ** 2)
            extra["fallback"] = fallback
        else:  # rubin
            T = v_bar + (1.0 + 1.0 / M) * b
            r_ratio = (1.0 + 1.0 / M) * b / v_bar
            df = (M - 1) * (1.0 + 1.0 / r_ratio) ** 2
            if df_complete is not None:
                nu_com = np.broadcast_to(np.asarray(df_complete, dtype=float), q_bar.shape)
                if np.any(nu_com <= 0):
                    raise param_error("df_complete", "combine", "> 0", df_complete)
                gamma = (1.0 + 1.0 / M) * b / T
                nu_obs = (nu_com + 1.0) / (nu_com + 3.0) * nu_com * (1.0 - gamma)
                df = 1.0 / (1.0 / df + 1.0 / nu_obs)
                extra["df_old"] = (M - 1) * (1.0 + 1.0 / r_ratio) ** 2
    df = np.where(np.isnan(df), np.inf, df)
    return _finish(q_bar, T, df, b, v_bar, r_ratio, rule, M, alpha, names, extra)


def _nested(q: np.ndarray, u: np.ndarray, alpha: float, names) -> CombineResult:
    m, r = q.shape[:2]
    nest_means = q.mean(axis=1)  # (m, p)
    q_bar = nest_means.mean(axis=0)
    b_within = q.var(axis=1, ddof=1).mean(axis=0)  # b_bar_M
    B = nest_means.var(axis=0, ddof=1)  # B_M
    v_bar = u.mean(axis=(0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        T = (1.0 + 1.0 / m) * B - b_within / r + v_bar
        df = 1.0 / (
            ((1.0 + 1.0 / m) * B) ** 2 / ((m - 1) * T**2) + (b_within / r) ** 2 / (m * (r - 1) * T**2)
        )
        fallback = T <= 0
        T_cons = (1.0 + 1.0 / m) * B + v_bar
        r_cons = (1.0 + 1.0 / m) * B / v_bar
        df_cons = (m - 1) * (1.0 + 1.0 / r_cons) ** 2
        T = np.where(fallback, T_cons, T)
        df = np.where(fallback, df_cons, df)
        r_ratio = ((1.0 + 1.0 / m) * B - b_within / r) / v_bar
    df = np.where(np.isnan(df), np.inf, df)
    extra = {"B": B, "b_bar": b_within, "m": m, "r": r, "fallback": fallback}
    return _finish(q_bar, T, df, b_within, v_bar, r_ratio, "nested", m * r, alpha, names, extra)


def _finish(q_bar, T, df, b, v_bar, r_ratio, rule, M, alpha, names, extra) -> CombineResult:
    tq = stats.t.ppf(1.0 - alpha / 2.0, df)
    half = tq * np.sqrt(T)
    if names is not None:
        names = list(names)
        if len(names) != q_bar.shape[0]:
            raise ParameterError(
                f"The 'names' parameter of combine has {len(names)} entries for {q_bar.shape[0]} coefficients.", parameter='names', owner='combine'
            )
    return CombineResult(
        estimate=q_bar,
        variance=T,
        df=df,
        ci_lower=q_bar - half,
        ci_upper=q_bar + half,
        q_bar=q_bar,
        b=b,
        v_bar=v_bar,
        r=r_ratio,
        rule=rule,
        M=M,
        alpha=alpha,
        names=names,
        extra=extra,
    )
