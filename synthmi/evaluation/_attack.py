r"""What anonymeter's three attacks share: success rates, the risk, the nearest-neighbour search.

Giomi, Boenisch, Wehmeyer & Tasnádi (2023), "A Unified Framework for Quantifying
Privacy Risk in Synthetic Data", PoPETs 2023(2), as implemented by the
``anonymeter`` package 1.1.0 (``anonymeter/stats/confidence.py`` and
``anonymeter/neighbors/mixed_types_kneighbors.py``; the reference implementation,
which :mod:`benchmarks.anonymeter_agreement` runs on the same inputs).

An attack is run :math:`n` times against three targets: the records the release
was made from (the *main* attack), original records of the same population that
were **not** used (the *control* attack) and, as a sanity check, a naive attacker
who guesses at random (the *baseline*). Each success rate gets the Wilson score
estimate and error bound (Wilson 1927; ``success_rate`` in anonymeter):

.. math::

    \hat r = \frac{k + z^2/2}{n + z^2}, \qquad
    e = \frac{z}{n + z^2} \sqrt{\frac{k (n - k)}{n} + \frac{z^2}{4}}, \qquad
    z = \Phi^{-1}\!\left(\frac{1 + \gamma}{2}\right),

with :math:`k` successes out of :math:`n` attacks and confidence level :math:`\gamma`.
The risk is the main attack's excess over the control attack, normalised by the
room left above the control rate (``residual_success``), its error propagated to
first order, and both clipped to :math:`[0, 1]` (``bind_value``):

.. math::

    R = \frac{\hat r_{\mathrm{main}} - \hat r_{\mathrm{control}}}{1 - \hat r_{\mathrm{control}}},
    \qquad
    e_R = \sqrt{\left(\frac{e_{\mathrm{main}}}{1 - \hat r_{\mathrm{control}}}\right)^2
          + \left(\frac{(\hat r_{\mathrm{main}} - 1)\, e_{\mathrm{control}}}
                       {(1 - \hat r_{\mathrm{control}})^2}\right)^2},

    \mathrm{risk} = \min(\max(R, 0), 1), \qquad
    \mathrm{CI} = [\min(\max(R - e_R, 0), 1),\ \min(\max(R + e_R, 0), 1)].

With :math:`M` synthetic copies the attack runs on each copy; the headline risk and
its interval are anonymeter's on the counts pooled over the copies (:math:`M n`
attacks of each kind; with one copy exactly anonymeter's), so the interval belongs
to the estimate it surrounds. The mean of the :math:`M` per-copy risks is kept
(``<key>_per_copy_mean``) with its Monte Carlo error across copies
:math:`s_R / \sqrt{M}` (:math:`s_R` the sample standard deviation of the per-copy
risks).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import numpy as np
import pandas as pd
from scipy.stats import norm

from .._validate import (
    check_columns_exist,
    check_copies,
    check_dataframe,
    check_random_state,
    check_scalar,
    param_error,
)
from ..errors import ColumnError
from ..results import Result

__all__ = [
    "AttackResult",
    "SuccessRate",
    "success_rate",
    "residual_success",
    "bind_value",
    "MixedEncoder",
    "kneighbors",
]


class SuccessRate(NamedTuple):
    """A Wilson estimate of an attack's success rate and its error bound."""

    value: float
    error: float


def probit(confidence_level: float) -> float:
    r""":math:`z = \Phi^{-1}((1 + \gamma) / 2)`, the two-sided normal quantile."""
    return float(norm.ppf(0.5 * (1.0 + confidence_level)))


def success_rate(n_total: float, n_success: float, confidence_level: float) -> SuccessRate:
    r"""Wilson score estimate of a success rate and its error bound (anonymeter's ``success_rate``).

    .. math::

        \hat r = \frac{k + z^2/2}{n + z^2}, \qquad
        e = \frac{z}{n + z^2}\sqrt{\frac{k(n-k)}{n} + \frac{z^2}{4}}

    Source: Wilson (1927), JASA 22, 209-212; ``anonymeter.stats.confidence.success_rate`` (1.1.0).
    ``n_success`` may be fractional (the singling-out control count after the size correction).
    """
    z = probit(confidence_level)
    z2 = z * z
    var = n_success * (n_total - n_success) / n_total
    denominator = n_total + z2
    rate = (n_success + 0.5 * z2) / denominator
    error = (z / denominator) * np.sqrt(var + 0.25 * z2)
    return SuccessRate(float(rate), float(error))


def residual_success(attack: SuccessRate, control: SuccessRate) -> SuccessRate:
    r"""Excess of the main over the control success rate and its propagated error.

    .. math::

        R = \frac{r_a - r_c}{1 - r_c}, \qquad
        e_R = \sqrt{\left(\frac{e_a}{|1 - r_c|}\right)^2 + \left(\frac{(r_a - 1) e_c}{(1 - r_c)^2}\right)^2}

    Source: ``anonymeter.stats.confidence.residual_success`` (1.1.0); Giomi et al. (2023), eq. (1).
    Not clipped (negative when the control set is attacked more successfully).
    """
    if control.value >= 1.0:
        # anonymeter divides by zero here (it warns "cannot measure residual risk"); NaN says so
        return SuccessRate(float("nan"), float("nan"))
    residual = (attack.value - control.value) / (1.0 - control.value)
    d_attack = 1.0 / abs(1.0 - control.value)
    d_control = (attack.value - 1.0) / (1.0 - control.value) ** 2
    error = np.sqrt((attack.error * d_attack) ** 2 + (control.error * d_control) ** 2)
    return SuccessRate(float(residual), float(error))


def bind_value(point: float, error: float) -> tuple[float, float, float]:
    r"""Clip a point estimate and its symmetric interval to [0, 1]: ``(value, ci_low, ci_high)``.

    .. math:: \mathrm{clip}(R),\ [\mathrm{clip}(R - e),\ \mathrm{clip}(R + e)], \quad \mathrm{clip}(x) = \min(\max(x, 0), 1)

    Source: ``anonymeter.stats.confidence.bind_value`` (1.1.0).
    """
    if not np.isfinite(point):
        return float("nan"), float("nan"), float("nan")

    def clip(x: float) -> float:
        return float(min(max(x, 0.0), 1.0))

    return clip(point), clip(point - error), clip(point + error)


def attack_figures(n_attacks: tuple[float, float, float], n_success: float, n_control: float,
                   n_baseline: float, confidence_level: float) -> dict[str, float]:
    """The rates, the risk and its interval from the three counts (anonymeter's ``EvaluationResults``).

    ``n_attacks`` is (main, baseline, control), as anonymeter's tuple form (it differs between the
    three only for the inference attack on small frames).
    """
    n_main, n_base, n_ctrl = n_attacks
    a = success_rate(n_main, n_success, confidence_level)
    b = success_rate(n_base, n_baseline, confidence_level)
    c = success_rate(n_ctrl, n_control, confidence_level)
    res = residual_success(a, c)
    risk, lo, hi = bind_value(res.value, res.error)
    b_risk, b_lo, b_hi = bind_value(b.value, b.error)
    return {
        "n_attacks": n_main, "n_success": n_success, "n_control_attacks": n_ctrl, "n_control": n_control,
        "n_baseline_attacks": n_base, "n_baseline": n_baseline,
        "attack_rate": a.value, "attack_error": a.error,
        "control_rate": c.value, "control_error": c.error,
        "baseline_rate": b.value, "baseline_error": b.error,
        "residual": res.value, "residual_error": res.error,
        "risk": risk, "ci_low": lo, "ci_high": hi,
        "baseline_risk": b_risk, "baseline_ci_low": b_lo, "baseline_ci_high": b_hi,
    }


# --------------------------------------------------------------------------- result
@dataclass
class AttackResult(Result):
    """One anonymeter-style attack on a release of one or more copies (aggregates only).

    Attributes
    ----------
    key : str
        The figure name: ``"singling_out"``, ``"linkability"`` or ``"inference[<secret>]"``.
    label : str
        A name unique per setting (``"singling_out[multivariate]"``, ...), for tables that hold several.
    figures : dict
        ``key`` (anonymeter's risk on the counts pooled over copies), ``key_ci_low`` / ``key_ci_high``
        (its interval), ``key_per_copy_mean`` (the mean of the per-copy risks), ``key_mc_error`` (sd of
        the per-copy risks / sqrt(M), the between-copy Monte Carlo error; NaN for one copy), ``key_attack_rate``, ``key_control_rate``, ``key_baseline_rate`` (pooled Wilson
        estimates), ``copies``, ``n_attacks``.
    per_copy : DataFrame
        One row per copy: counts, Wilson rates and errors, the unclipped residual and the risk with
        its interval (:meth:`to_frame`).
    settings : dict
        The attack's parameters (columns, n_attacks, confidence level, ...).
    describe : str
        Plain-language note for a reviewer: what the intruder is assumed to know, what the number means.
    """

    key: str
    label: str
    figures: dict[str, Any]
    per_copy: pd.DataFrame = field(repr=False)
    settings: dict[str, Any] = field(default_factory=dict)
    describe: str = ""

    @property
    def _summary_title(self) -> str:  # type: ignore[override]
        return f"{self.label} risk (anonymeter's definition; Giomi et al. 2023)"

    def _summary_rows(self) -> dict[str, Any]:
        return self.figures

    def _summary_notes(self) -> list[str]:
        return [self.describe]

    def to_frame(self) -> pd.DataFrame:
        """The per-copy rows (counts, rates, risk and interval per copy)."""
        return self.per_copy.copy()

    def _dict_extra(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "figures": self.figures, "settings": self.settings,
                "per_copy": self.per_copy.to_dict(orient="records"), "describe": self.describe}

    @property
    def risk(self) -> float:
        """The headline risk (anonymeter's on the counts pooled over the copies)."""
        return float(self.figures[self.key])


def combine_copies(key: str, label: str, rows: list[dict[str, float]], confidence_level: float,
                   settings: dict[str, Any], describe: str) -> AttackResult:
    """Per-copy figures -> an :class:`AttackResult` (pooled risk and interval, per-copy mean, MC error)."""
    per_copy = pd.DataFrame(rows)
    per_copy.insert(0, "copy", np.arange(len(rows)))
    risks = per_copy["risk"].to_numpy(dtype=float)
    m = len(rows)
    pooled = attack_figures(
        (float(per_copy["n_attacks"].sum()), float(per_copy["n_baseline_attacks"].sum()),
         float(per_copy["n_control_attacks"].sum())),
        float(per_copy["n_success"].sum()), float(per_copy["n_control"].sum()),
        float(per_copy["n_baseline"].sum()), confidence_level,
    )
    figures = {
        # the headline is the estimate the interval belongs to (anonymeter's on the counts pooled over the
        # copies; its own value at M = 1): the mean of per-copy risks, each clipped at 0 and 1, can fall
        # outside that interval (Adult CART univariate singling out: 0.994 against [0.998, 1.000])
        key: pooled["risk"],
        f"{key}_per_copy_mean": float(np.mean(risks)),
        f"{key}_ci_low": pooled["ci_low"],
        f"{key}_ci_high": pooled["ci_high"],
        # between-copy Monte Carlo error of the mean risk (synthesis variability + attack sampling)
        f"{key}_mc_error": float(np.std(risks, ddof=1) / np.sqrt(m)) if m > 1 else float("nan"),
        f"{key}_attack_rate": pooled["attack_rate"],
        f"{key}_control_rate": pooled["control_rate"],
        f"{key}_baseline_rate": pooled["baseline_rate"],
        "copies": m,
        "n_attacks": int(per_copy["n_attacks"].iloc[0]),
        "confidence_level": confidence_level,
    }
    return AttackResult(key, label, figures, per_copy, settings, describe)


# --------------------------------------------------------------------------- shared validation
def check_attack_inputs(
    original: Any, synthetic: Any, control: Any, columns: Sequence[str] | None, owner: str,
    confidence_level: Any, columns_name: str = "columns",
) -> tuple[pd.DataFrame, list[pd.DataFrame], pd.DataFrame, list[str], float]:
    """Frames, copies, columns (default: the original's) and the confidence level, checked."""
    check_dataframe(original, "original")
    copies = check_copies(synthetic, "synthetic")
    check_dataframe(control, "control")
    cols = list(original.columns) if columns is None else check_columns_exist(original, columns, columns_name,
                                                                               "original")
    if not cols:
        raise param_error(columns_name, owner, "a non-empty list of column names", list(cols))
    check_columns_exist(control, cols, columns_name, "control")
    for j, c in enumerate(copies):
        check_columns_exist(c, cols, columns_name, f"synthetic[{j}]")
    if isinstance(confidence_level, bool) or not isinstance(confidence_level, (int, float, np.floating)) \
            or not 0.0 < float(confidence_level) < 1.0:
        raise param_error("confidence_level", owner, "in the open interval (0, 1)", confidence_level)
    return original, copies, control, cols, float(confidence_level)


def check_n_attacks(n_attacks: Any, owner: str, default: int, available: dict[str, int]) -> int:
    """``n_attacks`` > 0 (None: ``default`` capped by what ``available`` allows); never more records
    than a frame that is sampled without replacement holds."""
    if n_attacks is None:
        return int(min(default, *available.values()))
    n = int(check_scalar(n_attacks, "n_attacks", owner, kind="int", lower=1))
    for name, size in available.items():
        if n > size:
            raise param_error("n_attacks", owner, f"<= the {size} records of '{name}' (attacked without "
                              "replacement)", n)
    return n


def spawn(random_state: Any, m: int) -> list[np.random.Generator]:
    """One independent stream per copy from the caller's seed (same seed -> same streams)."""
    return check_random_state(random_state).spawn(m)


# --------------------------------------------------------------------------- mixed-type neighbours
def _is_numeric(s: pd.Series) -> bool:
    # pandas' select_dtypes("number"), as anonymeter's detect_col_types: bool and categorical are not numbers
    return (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
            and not isinstance(s.dtype, pd.CategoricalDtype))


class MixedEncoder:
    r"""anonymeter's ``mixed_types_transform`` for a candidate frame and a query frame.

    Numeric columns (pandas' ``"number"`` dtypes, as anonymeter's ``detect_col_types``) are
    divided by their range over *both* frames, so two values differ by at most 1
    (a zero range is left unscaled); the other columns get shared integer codes, a
    missing value a code of its own (as scikit-learn's ``LabelEncoder`` gives it).
    A column numeric in one frame and not in the other is an error (anonymeter raises too).

    :func:`synthmi.evaluation.dcr.gower_nearest` is not reused: it scales by the original's
    range only, counts two missing numbers as equal (anonymeter: distance 1), returns
    distances but not the neighbours' indices, and has no k > 1.
    """

    def __init__(self, candidates: pd.DataFrame, queries: pd.DataFrame, columns: Sequence[str]):
        self.num = [c for c in columns if _is_numeric(candidates[c])]
        self.cat = [c for c in columns if c not in self.num]
        for c in columns:
            if _is_numeric(queries[c]) != (c in self.num):
                raise ColumnError(f"Column '{c}' is numeric in one frame and not in the other; the attack "
                                  "compares like with like.", column=c, problem="numeric in one frame only")
        self.candidates = self._encode(candidates, queries, first=True)
        self.queries = self._encode(queries, candidates, first=False)

    def _encode(self, df: pd.DataFrame, other: pd.DataFrame, first: bool) -> tuple[np.ndarray, np.ndarray]:
        X = np.empty((len(df), len(self.num)))
        for j, c in enumerate(self.num):
            a = df[c].to_numpy(dtype=float, na_value=np.nan)
            b = other[c].to_numpy(dtype=float, na_value=np.nan)
            both = np.concatenate([a, b])
            finite = both[~np.isnan(both)]
            rng = float(finite.max() - finite.min()) if finite.size else 0.0
            X[:, j] = a / (rng if rng > 0 else 1.0)
        C = np.empty((len(df), len(self.cat)), dtype=np.int64)
        for j, c in enumerate(self.cat):
            pair = (df[c], other[c]) if first else (other[c], df[c])
            joined = pd.concat([pair[0].astype(object), pair[1].astype(object)], ignore_index=True)
            codes, _ = pd.factorize(joined, use_na_sentinel=False)  # missing: one code, equal to itself
            C[:, j] = codes[: len(pair[0])] if first else codes[len(pair[0]):]
        return X, C


def kneighbors(encoder: MixedEncoder, n_neighbors: int, rng: np.random.Generator | None = None,
               chunk: int = 256) -> np.ndarray:
    r"""Indices of the ``n_neighbors`` closest candidates of each query (anonymeter's ``MixedTypeKNeighbors``).

    .. math::

        d(a, b) = \sum_{c\ \mathrm{numeric}} \delta_c + \sum_{c\ \mathrm{categorical}} 1[a_c \ne b_c],
        \qquad \delta_c = \begin{cases} 1 & a_c, b_c \text{ both missing}\\
        \text{undefined} & \text{one missing}\\ |a_c - b_c| & \text{else (range-scaled)} \end{cases}

    Source: ``anonymeter.neighbors.mixed_types_kneighbors.gower_distance`` (1.1.0), inspired by
    Gower (1971). As there, two missing numbers count as different (1) and a pair with one
    missing number has an undefined (NaN) distance, which sorts last: such a candidate is a
    neighbour only when too few others exist. Ties are broken at random: the candidates are
    searched in a random order drawn from ``rng`` (one per call), the first of equals wins
    (anonymeter leaves ties to numba's unstable quicksort, an arbitrary order; a fixed rule such
    as "lowest index" would make the two searches of the linkability attack pick the same record
    among ties more often than chance). Without ``rng``, ties go to the lowest index. The search
    is exact, in chunks of queries.
    """
    Xq, Cq = encoder.queries
    Xr, Cr = encoder.candidates
    perm = None
    if rng is not None:
        perm = rng.permutation(Xr.shape[0])
        Xr, Cr = Xr[perm], Cr[perm]
    n_ref = Xr.shape[0]
    k = min(n_neighbors, n_ref)
    out = np.empty((Xq.shape[0], k), dtype=np.int64)
    # categorical mismatches = (categorical columns) - (matches); the matches are a product of
    # one-hot codes (exact small integers in float32), one BLAS call per chunk
    onehot_q, onehot_r = _one_hot(Cq, Cr)
    nan_q, nan_r = np.isnan(Xq), np.isnan(Xr)
    # two buffers reused across chunks: fresh arrays of this size cost more in page faults than in arithmetic
    d_buf = np.empty((min(chunk, Xq.shape[0]), n_ref))
    diff_buf = np.empty_like(d_buf)
    Xr_cols = [np.ascontiguousarray(Xr[:, j]) for j in range(Xr.shape[1])]
    for a in range(0, Xq.shape[0], chunk):
        b = min(a + chunk, Xq.shape[0])
        d, diff = d_buf[: b - a], diff_buf[: b - a]
        d.fill(float(Cq.shape[1]))
        if Cq.shape[1]:
            d -= onehot_q[a:b] @ onehot_r.T
        for j in range(Xq.shape[1]):
            np.subtract(Xq[a:b, j][:, None], Xr_cols[j][None, :], out=diff)
            np.abs(diff, out=diff)  # NaN when either is missing
            if nan_q[a:b, j].any() and nan_r[:, j].any():
                diff[nan_q[a:b, j][:, None] & nan_r[None, :, j]] = 1.0  # both missing: 1, as anonymeter
            d += diff
        d[np.isnan(d)] = np.inf  # one missing: undefined, sorts last
        if k == 1:
            out[a:b, 0] = np.argmin(d, axis=1)  # first index among ties
        else:
            out[a:b] = np.argsort(d, axis=1, kind="stable")[:, :k]
    return out if perm is None else perm[out]


def _one_hot(Cq: np.ndarray, Cr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shared one-hot encodings of two integer code matrices (float32; one block of levels per column)."""
    if Cq.shape[1] == 0:
        return np.empty((Cq.shape[0], 0), np.float32), np.empty((Cr.shape[0], 0), np.float32)
    width = np.maximum(Cq.max(axis=0, initial=0), Cr.max(axis=0, initial=0)) + 1
    offset = np.r_[0, np.cumsum(width)[:-1]]
    out = []
    for C in (Cq, Cr):
        H = np.zeros((C.shape[0], int(width.sum())), dtype=np.float32)
        rows = np.repeat(np.arange(C.shape[0]), C.shape[1])
        H[rows, (C + offset).ravel()] = 1.0
        out.append(H)
    return out[0], out[1]


def sample_rows(df: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows drawn without replacement (anonymeter's ``df.sample(n, replace=False)``)."""
    return df.iloc[rng.choice(len(df), size=n, replace=False)]

