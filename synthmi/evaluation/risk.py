"""Record-level re-identification risk of released copies, by matching.

The intruder knows the true quasi-identifiers ``t_i`` of every target and
that every target is in the data (short-course slides, "Disclosure /
re-identification risk"; Reiter and Mitra 2009; Hu, Reiter and Wang 2014).
For copy ``m`` the candidate matches of ``t_i`` are the released records with
the same value on every categorical quasi-identifier and every continuous one
within a tolerance of ``t_i`` (see :mod:`synthmi.evaluation._matching` for the
exact rule, including missing values). With ``s_im`` candidates the intruder
picks one at random, so

.. math::

    \\Pr(J = i \\mid t_i, D^{(m)}) = \\frac{1[i \\in S_{im}]}{s_{im}}
    \\quad (0 \\text{ when } s_{im} = 0), \\qquad
    I_i = \\frac{1}{M} \\sum_{m=1}^{M} \\Pr(J = i \\mid t_i, D^{(m)}).

The copies are *partially synthetic*: row ``i`` of every copy is the released
version of original record ``i``, so "the true record is among the matches"
means "row ``i`` of the copy is in ``S_im``".
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..results import Result
from .._validate import (
    check_columns_exist,
    check_copies,
    check_dataframe,
    check_same_structure,
    check_scalar,
    param_error,
)
from . import _matching as mt

__all__ = ["reidentification_risk", "RiskResult"]

_OWNER = "reidentification_risk"
_SUMMARY_KEYS = (
    "n_records",
    "n_copies",
    "expected_matches",
    "true_match_rate",
    "false_match_rate",
    "share_above_threshold",
    "mean_risk",
    "max_risk",
    "unique_match_share",
    "no_match_share",
)


@dataclass
class RiskResult(Result):
    """Re-identification risk of M released copies.

    Attributes
    ----------
    individual : Series
        ``I_i`` per original record (index = the original's index).
    figures : dict
        The headline figures (:meth:`summary` shows them as a table):
        ``n_records`` (N), ``n_copies`` (M), ``expected_matches``,
        ``true_match_rate``, ``false_match_rate``, ``share_above_threshold``,
        ``mean_risk``, ``max_risk``, ``unique_match_share``, ``no_match_share``,
        ``threshold`` (see :func:`reidentification_risk`).
    by_group : DataFrame or None
        The same summaries per level of ``by`` (index = level).
    per_copy : DataFrame
        ``expected_matches``, ``true_match_rate``, ``false_match_rate``,
        ``n_unique_matches`` for each copy (index 1..M).
    records : DataFrame
        Per record: ``risk`` (I_i), ``mean_n_matches`` (mean of s_im over
        copies), ``true_unique_copies``, ``false_unique_copies``,
        ``no_match_copies`` (number of copies with a unique correct / unique
        wrong / no match).
    settings : dict
        Quasi-identifiers (categorical / continuous), tolerances, threshold.
    """

    individual: pd.Series
    figures: dict[str, Any]
    by_group: pd.DataFrame | None
    per_copy: pd.DataFrame
    records: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Per-record table (``risk`` = I_i plus match counts), original index."""
        return self.records.copy()

    def summary_frame(self) -> pd.DataFrame:
        """One row ``"all"`` with the summaries, then one row per group if ``by`` was given."""
        cols = [k for k in _SUMMARY_KEYS if k != "n_copies"]
        rows = pd.DataFrame([{k: self.figures[k] for k in cols}], index=pd.Index(["all"], name="group"))
        if self.by_group is not None:
            g = self.by_group[cols].copy()
            g.index = pd.Index([str(x) for x in g.index], name="group")
            rows = pd.concat([rows, g])
        return rows

    def __str__(self) -> str:
        return self.report()

    def report(self) -> str:
        """Plain-text summary (statsmodels-like; ``figures`` is the dict of figures)."""
        s, st = self.figures, self.settings
        tol = ", ".join(f"{c}: {v}" for c, v in st["tolerance"].items()) or "none (no continuous QI)"
        lines = [
            "Re-identification risk by matching",
            "=" * 60,
            f"quasi-identifiers : {', '.join(st['quasi_identifiers'])}",
            f"tolerance         : {tol}",
            f"records, copies    : {s['n_records']}, {s['n_copies']}",
            "-" * 60,
            f"expected correct matches (sum I_i) : {s['expected_matches']:.3f}",
            f"true-match rate                    : {s['true_match_rate']:.4f}",
            f"false-match rate                   : {_fmt(s['false_match_rate'])}",
            f"share with I_i > {s['threshold']:<6g}            : {s['share_above_threshold']:.4f}",
            f"mean / max I_i                     : {s['mean_risk']:.4f} / {s['max_risk']:.4f}",
        ]
        if self.by_group is not None:
            lines += ["-" * 60, f"by {st['by']}:", self.by_group.to_string(float_format=lambda x: f"{x:.4f}")]
        return "\n".join(lines)

    _summary_title = "Re-identification risk by matching"

    def _summary_rows(self) -> pd.DataFrame:
        return self.summary_frame()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summaries (no record-level values)."""
        return _summaries_to_dict(self)


def _summaries_to_dict(result: Any) -> dict[str, Any]:
    """JSON-ready summary, per-copy, settings and by-group tables of a risk result (no record-level values)."""
    out: dict[str, Any] = {
        "summary": {k: _json_num(v) for k, v in result.figures.items()},
        "per_copy": [{k: _json_num(v) for k, v in r.items()} for r in result.per_copy.to_dict("records")],
        "settings": result.settings,
    }
    if result.by_group is not None:
        out["by_group"] = {
            str(idx): {k: _json_num(v) for k, v in row.items()}
            for idx, row in result.by_group.to_dict(orient="index").items()
        }
    return out


def _fmt(x: float) -> str:
    return "undefined (no unique matches)" if not np.isfinite(x) else f"{x:.4f}"


def _json_num(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if not np.isfinite(v) else float(v)
    return v


def _rates(risk, n_unique, n_true_unique, n_no_match, n_copies, threshold) -> dict[str, float]:
    n = len(risk)
    nu = float(n_unique.sum())
    return {
        "n_records": int(n),
        "expected_matches": float(risk.sum()),
        "true_match_rate": float(n_true_unique.sum()) / (n * n_copies) if n else np.nan,
        "false_match_rate": (nu - float(n_true_unique.sum())) / nu if nu > 0 else np.nan,
        "share_above_threshold": float((risk > threshold).mean()) if n else np.nan,
        "mean_risk": float(risk.mean()) if n else np.nan,
        "max_risk": float(risk.max()) if n else np.nan,
        "unique_match_share": nu / (n * n_copies) if n else np.nan,
        "no_match_share": float(n_no_match.sum()) / (n * n_copies) if n else np.nan,
    }


class MatchTally:
    r"""Per-record tallies of the identity-risk terms over copies, added copy by copy.

    The one kernel of :func:`reidentification_risk` and of its Dask version
    (:mod:`synthmi.scale.risk`, which runs it per key bucket): after copies
    ``m = 1..M`` with match counts :math:`s_{im}` and own-box indicators
    :math:`1[i \in S_{im}]`,

    .. math:: I_i = \frac{1}{M} \sum_{m=1}^{M} \frac{1[i \in S_{im}]}{s_{im}},

    together with the mean number of matches and the counts of unique true,
    unique false and empty matches per record. Copies are added in copy
    order, so per-record values do not depend on how the records were split.
    """

    def __init__(self, n: int):
        self.m = 0
        self.risk_sum = np.zeros(n)
        self.s_sum = np.zeros(n)
        self.n_true_unique = np.zeros(n, dtype=np.int64)
        self.n_unique = np.zeros(n, dtype=np.int64)
        self.n_none = np.zeros(n, dtype=np.int64)

    def add(self, s: np.ndarray, true_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add one copy; returns its per-record terms ``1[i in S]/s`` and the unique-match flags."""
        pr = np.where(true_in, 1.0 / np.maximum(s, 1), 0.0)
        unique = s == 1
        self.risk_sum += pr
        self.s_sum += s
        self.n_true_unique += unique & true_in
        self.n_unique += unique
        self.n_none += s == 0
        self.m += 1
        return pr, unique

    @property
    def risk(self) -> np.ndarray:
        return self.risk_sum / self.m

    def columns(self) -> dict[str, np.ndarray]:
        """The per-record columns of ``RiskResult.records``."""
        return {
            "risk": self.risk,
            "mean_n_matches": self.s_sum / self.m,
            "true_unique_copies": self.n_true_unique,
            "false_unique_copies": self.n_unique - self.n_true_unique,
            "no_match_copies": self.n_none,
        }


def _align_copy(original: pd.DataFrame, copy: pd.DataFrame, j: int) -> pd.DataFrame:
    """Row i of the result is the released version of original row i."""
    if len(copy) != len(original):
        raise ValueError(
            f"'synthetic[{j}]' has {len(copy)} rows but 'original' has {len(original)}; re-identification "
            "risk by matching needs partially synthetic copies, row-aligned with the original."
        )
    if copy.index.equals(original.index) or copy.index.equals(pd.RangeIndex(len(copy))):
        return copy  # same labels, or positional (e.g. read back from CSV)
    if original.index.is_unique and copy.index.is_unique and set(copy.index) == set(original.index):
        return copy.loc[original.index]
    raise ValueError(
        f"The index of 'synthetic[{j}]' neither equals the original's, nor is a default RangeIndex, "
        "nor a reordering of it; cannot tell which released row belongs to which original record."
    )


def _check_categorical_groups(groups: pd.Series) -> pd.Series:
    """Group labels become row labels of published tables: a float column would
    publish each distinct (confidential) value with its count, so only
    categorical, boolean, string or integer-coded labels are accepted."""
    if pd.api.types.is_float_dtype(groups) and not isinstance(groups.dtype, pd.CategoricalDtype):
        raise param_error(
            "by", _OWNER,
            "categorical labels (a Categorical, bool, string or integer column); a continuous column would "
            "publish its values as group labels",
            f"a float column ({groups.name!r})",
        )
    return groups


def _group_labels(by: Any, original: pd.DataFrame) -> tuple[pd.Series | None, str | None]:
    if by is None:
        return None, None
    if isinstance(by, str):
        check_columns_exist(original, [by], "by", "original")
        return _check_categorical_groups(original[by]), by
    if isinstance(by, pd.Series):
        if len(by) != len(original) or not by.index.equals(original.index):
            if len(by) == len(original) and set(by.index) == set(original.index):
                by = by.loc[original.index]
            else:
                raise param_error("by", _OWNER, "a column name or a Series aligned to the original's index", "a Series with another index")
        return _check_categorical_groups(by), str(by.name) if by.name is not None else "group"
    arr = np.asarray(by)
    if arr.ndim != 1 or len(arr) != len(original):
        raise param_error("by", _OWNER, f"a column name or labels of length {len(original)}", f"shape {arr.shape}")
    return _check_categorical_groups(pd.Series(arr, index=original.index, name="group")), "group"


def reidentification_risk(
    original: pd.DataFrame,
    synthetic: Any,
    quasi_identifiers: Sequence[str] | None = None,
    tolerance: Any = None,
    threshold: float = 0.5,
    by: Any = None,
    spec: Any = None,
) -> RiskResult:
    """Record-level re-identification risk of partially synthetic copies.

    Parameters
    ----------
    original : DataFrame
        The confidential data; its rows are the intruder's targets.
    synthetic : DataFrame, list of DataFrame or SyntheticData
        The M released copies, each with the original's columns and with
        row i the released version of original row i (same length; index
        equal to the original's, a default RangeIndex, or a reordering of
        the original's labels).
    quasi_identifiers : list of str, optional
        The intruder's matching variables (default: the spec's). Kinds come from
        the spec when given, else from dtypes
        (:class:`~synthmi.schema.Schema`): categorical, binary and ordinal
        ones match exactly, continuous ones within ``tolerance``.
    tolerance : None, number or dict, default None
        Per continuous QI: a number or ``"2"`` (absolute: ``|y - t| <= 2``),
        ``"5%"`` or ``("relative", 0.05)`` (relative: ``|y - t| <= 0.05 |t|``).
        A bare number applies to every continuous QI. Default (None, and for
        continuous QIs not named): 0, i.e. exact matching. Must be >= 0.
    threshold : float in [0, 1], default 0.5
        ``share_above_threshold`` is the share of records with ``I_i > threshold``
        (strictly above).
    by : str, Series or array, optional
        Grouping variable (a column of ``original`` or labels aligned to its
        rows, e.g. the labels of :func:`risk_subgroups`); every summary is
        also reported per group. Missing labels form their own group.
    spec : ReleaseSpec, dict or path, optional
        Roles and kinds of the columns (instead of dtypes).

    Returns
    -------
    RiskResult

    Notes
    -----
    Matching rule (``lo`` and ``hi`` computed in float64): released record
    ``y`` matches target ``t`` when every categorical QI is equal and every
    continuous QI satisfies ``t - h <= y <= t + h`` with ``h = tol`` or
    ``h = r |t|``. A missing value matches only a missing value (in the same
    QI), categorical or continuous. With ``s_im`` matches in copy ``m``:

    .. math::

        I_i = \\frac{1}{M} \\sum_{m=1}^{M} \\frac{1[i \\in S_{im}]}{s_{im}},

    (short-course slide "Disclosure/Re-identification risk").
    Summaries over N targets and M copies, after Reiter and Mitra (2009,
    Sect. 3: expected match risk, true match rate sum K_i / N, false match
    rate sum F_i / s), applied to each copy and pooled over copies:

    .. math::

        \\text{expected\\_matches} = \\sum_i I_i, \\qquad
        \\text{true\\_match\\_rate} = \\frac{1}{NM} \\sum_{m,i} 1[s_{im} = 1,\\ i \\in S_{im}],

        \\text{false\\_match\\_rate} =
        \\frac{\\sum_{m,i} 1[s_{im} = 1,\\ i \\notin S_{im}]}{\\sum_{m,i} 1[s_{im} = 1]}

    (NaN when no target has a unique match in any copy). Also
    ``unique_match_share`` = share of (target, copy) pairs with ``s_im = 1``
    and ``no_match_share`` = share with ``s_im = 0``.

    Cost: O(M n log n) time and O(n) memory per copy with at most one
    continuous QI; see :mod:`synthmi.evaluation._matching` for several.
    """
    from ..spec import spec_frames, spec_quasi_identifiers

    check_dataframe(original, "original")
    copies = check_copies(synthetic, "synthetic")
    spec, original, copies = spec_frames(spec, original, copies)
    qis = spec_quasi_identifiers(quasi_identifiers, spec, original, _OWNER, "original")
    threshold = float(check_scalar(threshold, "threshold", _OWNER, lower=0.0, upper=1.0))
    aligned = []
    for j, c in enumerate(copies):
        missing = [col for col in original.columns if col not in c.columns]
        extra = [col for col in c.columns if col not in original.columns]
        if missing or extra:
            raise ValueError(
                f"Columns of 'synthetic[{j}]' do not match the original: missing {missing}, unexpected {extra}."
            )
        # dtypes and levels matter only where records are compared
        check_same_structure(original, c, name=f"synthetic[{j}]", columns=qis)
        aligned.append(_align_copy(original, c, j))
    categorical, continuous = mt.split_kinds(original, qis, spec)
    tol = mt.parse_tolerance(tolerance, categorical, continuous, _OWNER)
    groups, by_name = _group_labels(by, original)

    enc = mt.Encoder(original, categorical, continuous, "original")
    t_codes, t_vals = enc.encode(original, "original")
    lo, hi = mt.box_bounds(t_vals, [tol[c] for c in continuous])

    n, m_copies = len(original), len(aligned)
    tally = MatchTally(n)
    per_copy = []
    for j, c in enumerate(aligned):
        p_codes, p_vals = enc.encode(c, f"synthetic[{j}]")
        t_key, p_key = mt.joint_keys(t_codes, p_codes, cards=enc.cards)
        s = mt.count_in_boxes(t_key, lo, hi, p_key, p_vals)
        true_in = mt.in_own_box(t_key, lo, hi, p_key, p_vals)
        pr, unique = tally.add(s, true_in)
        nu = int(unique.sum())
        ntu = int((unique & true_in).sum())
        per_copy.append(
            {
                "expected_matches": float(pr.sum()),
                "true_match_rate": ntu / n,
                "false_match_rate": (nu - ntu) / nu if nu else np.nan,
                "n_unique_matches": nu,
            }
        )

    risk = tally.risk
    records = pd.DataFrame(tally.columns(), index=original.index)
    n_unique, n_true_unique, n_none = tally.n_unique, tally.n_true_unique, tally.n_none
    figures = _rates(risk, n_unique, n_true_unique, n_none, m_copies, threshold)
    figures["n_copies"] = m_copies
    figures["threshold"] = threshold

    by_group = None
    if groups is not None:
        rows = {}
        if isinstance(groups.dtype, pd.CategoricalDtype):  # category order, unused levels dropped
            codes, levels = groups.cat.codes.to_numpy(), list(groups.cat.categories)
        else:
            codes, levels = pd.factorize(groups, sort=True)
            levels = list(levels)
        for k in [*range(len(levels)), -1]:  # -1: missing labels, a group of their own
            idx = np.flatnonzero(codes == k)
            if len(idx):
                label = "<missing>" if k < 0 else levels[k]
                rows[label] = _rates(risk[idx], n_unique[idx], n_true_unique[idx], n_none[idx], m_copies, threshold)
        by_group = pd.DataFrame.from_dict(rows, orient="index")
        by_group.index.name = by_name

    settings = {
        "quasi_identifiers": qis,
        "categorical": categorical,
        "continuous": continuous,
        "tolerance": {c: tol[c].to_json() for c in continuous},
        "threshold": threshold,
        "by": by_name,
        "missing_rule": "a missing value matches only a missing value",
    }
    return RiskResult(
        individual=pd.Series(risk, index=original.index, name="risk"),
        figures=figures,
        by_group=by_group,
        per_copy=pd.DataFrame(per_copy, index=pd.RangeIndex(1, m_copies + 1, name="copy")),
        records=records,
        settings=settings,
    )
