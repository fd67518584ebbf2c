"""Masking models M_mask: pseudo-variables W generated from a quasi-identifier X.

The data-augmented multiple-imputation framework (DA-MI; Jiang, Mitra, Gao &
Wang 2022, JASA 117:52-66; short-course slides, "How to choose M_mask to
generate W?") augments the confidential data with pseudo-variables W drawn
from a masking model with a tuning parameter lambda fixed by the data
provider:

* continuous X (:class:`NormalMasking`):
  :math:`W_{ik} = X_i + e_{ik},\\ e_{ik} \\sim N(0, \\sigma_e^2),\\ k = 1..K`;
* categorical X in {0..C-1} (:class:`LinearCategoricalMasking`):
  :math:`W_i = \\alpha X_i + u_i,\\ u_i \\sim N(0, 1)`;
* categorical X (:class:`TransitionMasking`):
  :math:`P(W_i = v \\mid X_i = u) = \\pi_{uv}`.

Each object draws W given X and evaluates log p(W | X, lambda); DA-MI and the
risk-targeted model share them. Because lambda is known and X is observed
when fitting, W carries no information about the association parameters; it
only informs the synthetic X through the posterior predictive
p(X~ | Z~, W~) (see :mod:`synthmi.models.dami`).

A masking model with no information (K = 0, alpha = 0, rows of pi all
equal) is *null*: DA-MI with null masks is exactly Rubin's MI synthesis.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .._validate import check_scalar, param_error
from ..errors import InputError, InputTypeError

__all__ = [
    "MaskingModel",
    "NormalMasking",
    "LinearCategoricalMasking",
    "TransitionMasking",
    "make_masking",
]

_LOG_2PI = float(np.log(2.0 * np.pi))


class MaskingModel:
    """Common interface of masking models."""

    #: ``"continuous"`` or ``"categorical"``: the kind of X the model masks
    target: str = ""

    @property
    def is_null(self) -> bool:  # pragma: no cover - overridden
        raise InputTypeError("abstract")

    def to_dict(self) -> dict[str, Any]:  # pragma: no cover - overridden
        raise InputTypeError("abstract")

    def __repr__(self) -> str:
        d = self.to_dict()
        d.pop("type", None)
        args = ", ".join(f"{k}={v!r}" for k, v in d.items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.to_dict() == other.to_dict()  # type: ignore[union-attr]

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------------------
class NormalMasking(MaskingModel):
    r"""K noisy copies of a continuous X.

    .. math::

        W_{ik} = X_i + e_{ik}, \quad e_{ik} \overset{iid}{\sim} N(0, \sigma_e^2),
        \quad k = 1, \dots, K

    (Jiang et al. 2022, Section 3.1). The mean
    :math:`\bar W_i` is sufficient for :math:`X_i`, and
    :math:`\bar W_i \mid X_i \sim N(X_i, \sigma_e^2 / K)`.

    Parameters
    ----------
    K : int >= 0
        Number of pseudo-variables per record. ``K = 0`` means no masking
        information (DA-MI reduces to Rubin's MI).
    sigma_e : float > 0, optional
        Noise standard deviation, in the units of X.
    reliability : float in (0, 1), optional
        Alternative to ``sigma_e``: the share of the variance of
        :math:`\bar W` that is signal,

        .. math:: \rho = \frac{1}{1 + \sigma_e^2 / (K \operatorname{var} X)},

        converted to :math:`\sigma_e^2 = K \operatorname{var}(X) (1/\rho - 1)`
        by :meth:`calibrate` (which needs the column). Give exactly one of
        ``sigma_e`` and ``reliability`` when ``K > 0``.
    """

    target = "continuous"

    def __init__(self, K: int, sigma_e: float | None = None, reliability: float | None = None):
        owner = "NormalMasking"
        self.K = int(check_scalar(K, "K", owner, kind="int", lower=0))
        if sigma_e is not None and reliability is not None:
            raise InputError(
                "The 'sigma_e' and 'reliability' parameters of NormalMasking are alternatives; "
                f"give one of them, not both. Got sigma_e={sigma_e!r} and reliability={reliability!r}."
            )
        self.sigma_e = None if sigma_e is None else float(check_scalar(sigma_e, "sigma_e", owner, lower=0, lower_inclusive=False))
        self.reliability = None if reliability is None else float(
            check_scalar(reliability, "reliability", owner, lower=0, upper=1, lower_inclusive=False, upper_inclusive=False)
        )
        if self.K > 0 and self.sigma_e is None and self.reliability is None:
            raise InputError(
                f"NormalMasking with K={self.K} needs the noise level: give 'sigma_e' (> 0) or "
                "'reliability' (in (0, 1))."
            )

    @property
    def is_null(self) -> bool:
        return self.K == 0

    @property
    def is_calibrated(self) -> bool:
        return self.K == 0 or self.sigma_e is not None

    def calibrate(self, x: np.ndarray) -> "NormalMasking":
        r"""Return a copy with ``sigma_e`` set from ``reliability`` and var(x).

        .. math:: \sigma_e^2 = K \operatorname{var}(X)\,(1/\rho - 1)
        """
        if self.is_calibrated:
            return self
        return self.calibrate_variance(float(np.var(np.asarray(x, dtype=float), ddof=1)))

    def calibrate_variance(self, var: float) -> "NormalMasking":
        r""":meth:`calibrate` from var(X) (ddof 1), e.g. summed over the partitions of a Dask frame."""
        if self.is_calibrated:
            return self
        if not np.isfinite(var) or var <= 0:
            raise InputError("NormalMasking.calibrate needs a column with positive, finite variance.")
        sigma_e = float(np.sqrt(self.K * var * (1.0 / self.reliability - 1.0)))
        return NormalMasking(self.K, sigma_e=sigma_e)

    def _sigma(self) -> float:
        if self.sigma_e is None:
            raise InputError(
                "This NormalMasking was given a 'reliability'; call calibrate(x) to turn it into sigma_e first."
            )
        return self.sigma_e

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """W of shape (n, K): X plus independent N(0, sigma_e^2) noise."""
        x = np.asarray(x, dtype=float)
        if self.K == 0:
            return np.empty((x.shape[0], 0))
        return x[:, None] + self._sigma() * rng.standard_normal((x.shape[0], self.K))

    def draw_mean(self, x: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        r"""The mean of K fresh replicates, drawn directly, and its variance: :math:`\bar W_i \sim N(X_i, \sigma_e^2/K)`.

        The mean of K independent :math:`N(X_i, \sigma_e^2)` replicates has
        exactly this law, and it is all of W that the normal predictive uses
        (:meth:`posterior_normal`), so one normal per record replaces K.
        """
        x = np.asarray(x, dtype=float)
        v = self._sigma() ** 2 / self.K
        return x + np.sqrt(v) * rng.standard_normal(x.shape[0]), v

    def posterior_normal(self, w: np.ndarray) -> tuple[np.ndarray, float]:
        r"""The Gaussian likelihood of X carried by W: (:math:`\bar W_i`, :math:`\sigma_e^2/K`).

        With K = 0 the variance is infinite (no information) and the mean is 0.
        """
        w = np.asarray(w, dtype=float)
        if self.K == 0:
            return np.zeros(w.shape[0]), float("inf")
        if w.ndim != 2 or w.shape[1] != self.K:
            raise InputError(f"NormalMasking.posterior_normal expects W of shape (n, {self.K}). Got {w.shape} instead.")
        return w.mean(axis=1), self._sigma() ** 2 / self.K

    def loglik(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        r"""Per record :math:`\log p(W_i \mid X_i) = \sum_k \log N(W_{ik}; X_i, \sigma_e^2)`, shape (n,)."""
        w = np.asarray(w, dtype=float)
        x = np.asarray(x, dtype=float)
        if self.K == 0:
            return np.zeros(x.shape[0])
        s = self._sigma()
        r = (w - x[:, None]) / s
        return (-0.5 * r**2 - np.log(s) - 0.5 * _LOG_2PI).sum(axis=1)

    def to_dict(self) -> dict[str, Any]:
        return {"type": "normal", "K": self.K, "sigma_e": self.sigma_e, "reliability": self.reliability}


# ---------------------------------------------------------------------------
class LinearCategoricalMasking(MaskingModel):
    r"""A Gaussian mixture signal of a categorical X with codes 0..C-1.

    .. math:: W_i = \alpha X_i + u_i, \quad u_i \sim N(0, 1)

    (Jiang et al. 2022). The C mixture components sit
    alpha apart: alpha = 0 gives no information, large alpha reveals X.

    Parameters
    ----------
    alpha : float >= 0
    """

    target = "categorical"

    def __init__(self, alpha: float):
        self.alpha = float(check_scalar(alpha, "alpha", "LinearCategoricalMasking", lower=0))

    @property
    def is_null(self) -> bool:
        return self.alpha == 0.0

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """W of shape (n,) given integer codes x."""
        x = np.asarray(x, dtype=float)
        return self.alpha * x + rng.standard_normal(x.shape[0])

    def loglik_table(self, w: np.ndarray, n_categories: int) -> np.ndarray:
        r"""(n, C) table of :math:`\log p(W_i \mid X_i = c) = \log \phi(W_i - \alpha c)`."""
        w = np.asarray(w, dtype=float)
        c = np.arange(int(n_categories), dtype=float)
        r = w[:, None] - self.alpha * c[None, :]
        return -0.5 * r**2 - 0.5 * _LOG_2PI

    def loglik(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Per record log p(W_i | X_i), shape (n,)."""
        r = np.asarray(w, dtype=float) - self.alpha * np.asarray(x, dtype=float)
        return -0.5 * r**2 - 0.5 * _LOG_2PI

    def to_dict(self) -> dict[str, Any]:
        return {"type": "linear", "alpha": self.alpha}


# ---------------------------------------------------------------------------
class TransitionMasking(MaskingModel):
    r"""A categorical W drawn from a transition matrix given categorical X.

    .. math:: P(W_i = v \mid X_i = u) = \pi_{uv}

    Rows index X (the seed writes :math:`\pi_{vu}` with the roles of the
    indices swapped); each row is a probability vector. With ``p`` instead of
    ``pi`` the matrix is p on the diagonal and (1 - p)/(C - 1) elsewhere
    (randomized-response style), built once C is known.

    Parameters
    ----------
    pi : array (C, C), optional
        Non-negative, rows summing to 1.
    p : float in [0, 1], optional
        Probability that W equals X.
    n_categories : int >= 2, optional
        C, needed with ``p`` for :attr:`is_null` and :attr:`matrix`; set by
        :meth:`bind`.
    """

    target = "categorical"

    def __init__(self, pi: Any = None, p: float | None = None, n_categories: int | None = None):
        owner = "TransitionMasking"
        if (pi is None) == (p is None):
            raise InputError(
                "TransitionMasking needs exactly one of 'pi' (a C x C transition matrix) and 'p' "
                f"(the diagonal probability). Got pi={'None' if pi is None else 'a matrix'} and p={p!r}."
            )
        self.n_categories = None if n_categories is None else int(
            check_scalar(n_categories, "n_categories", owner, kind="int", lower=2)
        )
        if pi is not None:
            arr = np.asarray(pi, dtype=float)
            if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
                raise param_error("pi", owner, "a square C x C matrix with C >= 2", f"shape {arr.shape}")
            if not np.all(np.isfinite(arr)) or np.any(arr < 0):
                raise param_error("pi", owner, "a matrix of finite non-negative probabilities", "negative or non-finite entries")
            sums = arr.sum(axis=1)
            if not np.allclose(sums, 1.0, rtol=0, atol=1e-8):
                raise param_error("pi", owner, "a matrix whose rows sum to 1", f"row sums {np.round(sums, 6).tolist()}")
            if self.n_categories is not None and self.n_categories != arr.shape[0]:
                raise param_error("n_categories", owner, f"equal to the size of 'pi' ({arr.shape[0]})", self.n_categories)
            self.pi = arr / sums[:, None]
            self.p = None
            self.n_categories = arr.shape[0]
        else:
            self.p = float(check_scalar(p, "p", owner, lower=0, upper=1))
            self.pi = None

    def bind(self, n_categories: int) -> "TransitionMasking":
        """A copy that knows C (checks it matches ``pi`` when given)."""
        C = int(check_scalar(n_categories, "n_categories", "TransitionMasking", kind="int", lower=2))
        if self.pi is not None:
            if self.pi.shape[0] != C:
                raise InputError(
                    f"The 'pi' matrix of TransitionMasking is {self.pi.shape[0]} x {self.pi.shape[0]} but the "
                    f"column it masks has {C} categories."
                )
            return self
        return TransitionMasking(p=self.p, n_categories=C)

    def matrix(self, n_categories: int | None = None) -> np.ndarray:
        """The (C, C) matrix pi[u, v] = P(W = v | X = u)."""
        if self.pi is not None:
            return self.pi
        C = self.n_categories if n_categories is None else int(n_categories)
        if C is None:
            raise InputError("TransitionMasking given 'p' needs the number of categories: call bind(C) first.")
        off = (1.0 - self.p) / (C - 1)
        out = np.full((C, C), off)
        np.fill_diagonal(out, self.p)
        return out

    @property
    def is_null(self) -> bool:
        if self.pi is None and self.n_categories is None:
            return False
        P = self.matrix()
        return bool(np.allclose(P, P[0:1, :], rtol=0, atol=1e-12))

    def draw(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Integer W of shape (n,) with P(W = v | X = u) = pi[u, v] (inverse-CDF draws)."""
        x = np.asarray(x, dtype=np.int64)
        P = self.matrix()
        cdf = np.cumsum(P, axis=1)
        cdf[:, -1] = 1.0
        u = rng.random(x.shape[0])
        return (u[:, None] > cdf[x]).sum(axis=1).astype(np.int64)

    def loglik_table(self, w: np.ndarray, n_categories: int) -> np.ndarray:
        """(n, C) table of log P(W_i | X_i = c) = log pi[c, W_i]."""
        P = self.matrix(n_categories)
        w = np.asarray(w, dtype=np.int64)
        with np.errstate(divide="ignore"):
            return np.log(P[:, w].T)

    def loglik(self, w: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Per record log P(W_i | X_i), shape (n,)."""
        P = self.matrix()
        with np.errstate(divide="ignore"):
            return np.log(P[np.asarray(x, dtype=np.int64), np.asarray(w, dtype=np.int64)])

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "transition",
            "pi": None if self.pi is None else self.pi.tolist(),
            "p": self.p,
            "n_categories": self.n_categories,
        }


# ---------------------------------------------------------------------------
def mask_kind_error(column: str, kind: str, mask: MaskingModel) -> InputError:
    """The error for a mask that does not fit its column's kind, in the settings a user
    changes: the ``--mask`` option, the spec's ``masks`` (the same keys as a Python mask
    dict), and ``--categorical`` when a numerically coded category was modelled as a number.
    """
    c = column
    if kind == "continuous":
        return InputError(
            f"Column '{c}' is modelled as a number (continuous), so its mask adds normal noise: K noisy copies "
            f"and their noise level, e.g. --mask {c}:K=3,sigma=5 or --mask {c}:K=3,reliability=0.9 (in a spec's "
            f'masks: {{"{c}": {{"K": 3, "sigma_e": 5}}}}). Got a categorical mask (alpha or p) instead. If '
            f"'{c}' holds codes of categories, declare it categorical: --categorical {c} (kind \"nominal\" or "
            f"\"binary\" in the spec)."
        )
    return InputError(
        f"Column '{c}' is categorical ({kind}), so its mask works on its categories: --mask {c}:alpha=2 "
        f"(W = alpha * code + N(0, 1)) or --mask {c}:p=0.8 (the category kept with probability p) (in a spec's "
        f'masks: {{"{c}": {{"alpha": 2}}}}). Got a normal-noise mask (K, sigma) instead.'
    )


def bind_mask(mask: MaskingModel, column: str, variable: Any, variance: Callable[[], float]) -> MaskingModel:
    """``mask`` made ready for its column: its kind checked against the column's (a normal mask for a
    continuous column, a categorical one otherwise), a normal mask given by its reliability calibrated
    with ``variance()`` (var(X), ddof 1: :meth:`NormalMasking.calibrate_variance`), a transition mask
    bound to (and a given matrix checked against) the column's levels. The one path of DA-MI (in memory and on partitions) and of the
    risk-targeted model."""
    kind = variable.kind
    if (mask.target == "continuous") != (kind == "continuous"):
        raise mask_kind_error(column, kind, mask)
    if isinstance(mask, NormalMasking) and not mask.is_calibrated:
        return mask.calibrate_variance(variance())
    if isinstance(mask, TransitionMasking):
        return mask.bind(variable.n_levels)  # checks a given matrix's size against the column's levels
    return mask


def make_masking(spec: Any, column: str = "?") -> MaskingModel:
    """Build a masking model from an object or a dict spec.

    Dict forms: ``{"K": 3, "sigma_e": 5}`` or ``{"K": 3, "reliability": 0.8}``
    (normal); ``{"alpha": 1.5}`` (linear categorical); ``{"p": 0.8}`` or
    ``{"pi": [[...]]}`` (transition). ``"sigma"`` is accepted for ``sigma_e``.
    """
    if isinstance(spec, MaskingModel):
        return spec
    if not isinstance(spec, Mapping):
        raise InputError(
            f"The mask for column '{column}' must be a masking model or a dict such as "
            f"{{'K': 3, 'sigma_e': 5}}, {{'alpha': 1}} or {{'p': 0.8}}. Got {type(spec).__name__} instead."
        )
    d = dict(spec)
    d.pop("type", None)
    if "sigma" in d and "sigma_e" not in d:
        d["sigma_e"] = d.pop("sigma")
    keys = set(d)
    if keys & {"K", "sigma_e", "reliability"}:
        if not keys <= {"K", "sigma_e", "reliability"}:
            raise InputError(f"The mask for column '{column}' mixes normal-masking keys with others: {sorted(keys)}.")
        if "K" not in d:
            raise InputError(f"The mask for column '{column}' needs 'K' (the number of noisy copies).")
        return NormalMasking(d["K"], sigma_e=d.get("sigma_e"), reliability=d.get("reliability"))
    if keys == {"alpha"}:
        return LinearCategoricalMasking(d["alpha"])
    if keys and keys <= {"pi", "p", "n_categories"}:
        return TransitionMasking(pi=d.get("pi"), p=d.get("p"), n_categories=d.get("n_categories"))
    raise InputError(
        f"The mask for column '{column}' has unknown keys {sorted(keys)}; expected K/sigma_e/reliability, "
        "alpha, or p/pi."
    )

