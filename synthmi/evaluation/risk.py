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

from .._json import jsonable
from ..results import Result
from .._validate import (
    check_columns_exist,
    check_copies,
    check_dataframe,
    check_same_structure,
    check_scalar,
    param_error,
)
from ..engine import (
    call,
    compute,
    copies_of,
    frame_from_parts,
    frame_offsets,
    is_dask_frame,
    key_buckets,
    meta_of,
    n_key_buckets,
)
from . import _matching as mt
from ..errors import ColumnError, InputError

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


#: a by-group row of fewer original records than this is left out of ``to_dict()``
MIN_GROUP_RECORDS = 5


def _summaries_to_dict(result: Any) -> dict[str, Any]:
    """JSON-ready summary, per-copy, settings and by-group tables of a risk result (no record-level values).

    ``to_dict()`` promises no record-level value, but a level of ``by`` held by one
    record would show that record's risk (its ``max_risk``, its mean) under its label.
    So a ``by_group`` row of fewer than :data:`MIN_GROUP_RECORDS` (5) original records
    is omitted, and ``by_group_omitted`` says how many were and why (the object's
    ``by_group`` table and its text report still hold every group).
    """
    out: dict[str, Any] = {
        "summary": {k: jsonable(v) for k, v in result.figures.items()},
        "per_copy": [{k: jsonable(v) for k, v in r.items()} for r in result.per_copy.to_dict("records")],
        "settings": jsonable(result.settings),
    }
    if result.by_group is not None:
        rows = result.by_group.to_dict(orient="index")
        kept = {idx: row for idx, row in rows.items() if int(row["n_records"]) >= MIN_GROUP_RECORDS}
        out["by_group"] = {str(idx): {k: jsonable(v) for k, v in row.items()} for idx, row in kept.items()}
        out["by_group_omitted"] = {
            "min_records": MIN_GROUP_RECORDS, "n_groups": len(rows) - len(kept),
            "note": f"groups of fewer than {MIN_GROUP_RECORDS} original records are left out: "
                    "their figures would describe single records",
        }
    return out


def _fmt(x: float) -> str:
    return "undefined (no unique matches)" if not np.isfinite(x) else f"{x:.4f}"




class MatchTally:
    r"""Per-record tallies of the identity-risk terms over copies, added copy by copy.

    The one kernel of :func:`reidentification_risk`, run per key bucket on
    pandas and Dask frames alike: after copies
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
        raise InputError(
            f"'synthetic[{j}]' has {len(copy)} rows but 'original' has {len(original)}; re-identification "
            "risk by matching needs partially synthetic copies, row-aligned with the original."
        )
    if copy.index.equals(original.index) or copy.index.equals(pd.RangeIndex(len(copy))):
        return copy  # same labels, or positional (e.g. read back from CSV)
    if original.index.is_unique and copy.index.is_unique and set(copy.index) == set(original.index):
        return copy.loc[original.index]
    raise InputError(
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
    n_buckets: int | None = None,
) -> RiskResult:
    """Record-level re-identification risk of partially synthetic copies (pandas or Dask).

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
    n_buckets : int, optional
        Number of key buckets the records are shuffled into (default: one per
        500,000 original records); results do not depend on it.

    Returns
    -------
    RiskResult
        With a dask ``original`` (and dask copies: a dask DataFrame, a list of
        them or a release holding them in ``copies``), ``records`` and
        ``individual`` are persisted dask frames with a ``position`` column
        (global record position) instead of the original index, and ``by``
        must be a column name; every other field is the same as in memory.

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

    Execution (one code path for pandas and Dask, :mod:`synthmi.engine`): a
    released record can match target ``t`` only if its exact key (categorical
    QIs and missingness flags of continuous ones) equals ``t``'s, so the
    records of the original and of every copy are sent to buckets by a hash
    of that key and :class:`MatchTally` runs bucket by bucket; a pandas frame
    is one partition. Per-record values and counts are the same for every
    partitioning and number of buckets; sums of ``I_i`` agree up to
    floating-point summation order.
    """
    from ..spec import as_spec, spec_frames, spec_quasi_identifiers

    lazy = is_dask_frame(original)
    if lazy:  # a Dask original: dask copies, compared on the QIs' dtypes; groups from a column
        copies = copies_of(synthetic)
        spec = None if spec is None else as_spec(spec)
        qis = spec_quasi_identifiers(quasi_identifiers, spec, meta_of(original), _OWNER, "original")
        for j, c in enumerate(copies):
            _check_copy_columns(list(original.columns), list(c.columns), j)
            check_same_structure(meta_of(original), meta_of(c), name=f"synthetic[{j}]", columns=qis)
        if by is not None and not (isinstance(by, str) and by in original.columns):
            # describe, never quote: a Series or list of labels holds record values
            raise param_error("by", _OWNER, "a column name of 'original' (on Dask)",
                              by if isinstance(by, str) else f"a {type(by).__name__} of labels")
        by_name = by
        if by is not None:
            _check_categorical_groups(meta_of(original)[by])
        o_frame = original[qis + ([by] if by is not None and by not in qis else [])]
        c_frames = [c[qis] for c in copies]
        group_dtype = None if by is None else meta_of(original)[by].dtype
    else:
        check_dataframe(original, "original")
        copies = check_copies(synthetic, "synthetic")
        spec, original, copies = spec_frames(spec, original, copies)
        qis = spec_quasi_identifiers(quasi_identifiers, spec, original, _OWNER, "original")
        c_frames = []
        for j, c in enumerate(copies):
            _check_copy_columns(list(original.columns), list(c.columns), j)
            # dtypes and levels matter only where records are compared
            check_same_structure(original, c, name=f"synthetic[{j}]", columns=qis)
            c_frames.append(_align_copy(original, c, j)[qis].reset_index(drop=True))
        groups, by_name = _group_labels(by, original)
        o_frame = original[qis].reset_index(drop=True)
        group_dtype = None
        if groups is not None:
            o_frame = o_frame.assign(**{_GROUP: groups.to_numpy()})
            group_dtype = groups.dtype
    threshold = float(check_scalar(threshold, "threshold", _OWNER, lower=0.0, upper=1.0))
    categorical, continuous = mt.split_kinds(original, qis, spec)
    tol = mt.parse_tolerance(tolerance, categorical, continuous, _OWNER)
    enc = mt.Encoder(mt.reference(original, qis, categorical), categorical, continuous, "original")
    tols = [tol[c] for c in continuous]

    # offsets of the frames that are mapped: dask's read_parquet merges files into fewer partitions when
    # only some columns are read, so the whole frame's offsets do not fit its column projection
    o_off = frame_offsets(o_frame)
    n, m_copies = int(o_off[-1]), len(c_frames)
    c_offs = []
    for j, c in enumerate(c_frames):
        off = frame_offsets(c)
        if int(off[-1]) != n:
            raise InputError(f"'synthetic[{j}]' has {int(off[-1])} rows but 'original' has {n}; re-identification risk "
                             "by matching needs partially synthetic copies, row-aligned with the original.")
        c_offs.append(off)
    B = n_key_buckets(n, n_buckets)
    kw = len(enc.cards)  # the exact key: categorical codes and missingness flags
    extra = None if by_name is None else (by if lazy else _GROUP)
    o_b = key_buckets(o_frame, o_off, mt.split_by_key, B, enc, "original", B, kw, extra)
    c_b = [key_buckets(c, off, mt.split_by_key, B, enc, f"synthetic[{j}]", B, kw)
           for j, (c, off) in enumerate(zip(c_frames, c_offs))]
    results = [call(lazy, _risk_bucket, o_b[k], [cb[k] for cb in c_b], enc.cards, tols, nout=2) for k in range(B)]
    meta = pd.DataFrame({"position": np.zeros(0, np.int64), **{c: np.zeros(0, dt) for c, dt in _RECORD_DTYPES.items()}})
    if by_name is not None:
        meta = meta.assign(group=pd.Series([], dtype=object if group_dtype is None else group_dtype))
    records = frame_from_parts([r[0] for r in results], meta, lazy)
    per_bucket_copy = compute(*[r[1] for r in results])

    # ---- summaries: sums over records (distributed on Dask) and exact per-bucket pieces per copy
    (tot,) = compute(_record_sums(records, threshold))
    figures = _summarise(_as_numbers(tot), m_copies)
    figures["n_copies"] = m_copies
    figures["threshold"] = threshold
    per_copy = []
    for j in range(m_copies):
        nu = sum(b[j]["nu"] for b in per_bucket_copy)
        ntu = sum(b[j]["ntu"] for b in per_bucket_copy)
        hist: dict[int, int] = {}
        for b in per_bucket_copy:
            for s_, c_ in b[j]["hist"].items():
                hist[s_] = hist.get(s_, 0) + c_
        # sum over records of 1[i in S]/s, added by value of s: the same for every partitioning
        em = float(sum(c_ / s_ for s_, c_ in sorted(hist.items())))
        per_copy.append({"expected_matches": em, "true_match_rate": ntu / n if n else np.nan,
                         "false_match_rate": (nu - ntu) / nu if nu else np.nan, "n_unique_matches": nu})
    by_group = None
    if by_name is not None:
        by_group = _group_summaries(records, threshold, m_copies, group_dtype, by_name)

    if not lazy:  # in memory: the original's index, no position column
        records = records.sort_values("position", kind="stable")
        records = records.drop(columns=["position", *(["group"] if by_name is not None else [])])
        records.index = original.index
        individual = records["risk"].rename("risk")
    else:
        individual = records[["position", "risk"]]
    settings = {
        "quasi_identifiers": qis,
        "categorical": categorical,
        "continuous": continuous,
        "tolerance": {c: tol[c].to_json() for c in continuous},
        "threshold": threshold,
        "by": by_name,
        "missing_rule": "a missing value matches only a missing value",
    }
    if lazy:
        settings["engine"] = f"dask: shuffle on the exact-match key into {B} buckets"
    return RiskResult(
        individual=individual,
        figures=figures,
        by_group=by_group,
        per_copy=pd.DataFrame(per_copy, index=pd.RangeIndex(1, m_copies + 1, name="copy")),
        records=records,
        settings=settings,
    )


_GROUP = "\x00group"  # the column that carries in-memory group labels through the key shuffle
_RECORD_DTYPES = {"risk": np.float64, "mean_n_matches": np.float64, "true_unique_copies": np.int64,
                  "false_unique_copies": np.int64, "no_match_copies": np.int64}


def _check_copy_columns(cols: list, copy_cols: list, j: int) -> None:
    missing = [col for col in cols if col not in copy_cols]
    extra = [col for col in copy_cols if col not in cols]
    if missing or extra:
        raise ColumnError(f"Columns of 'synthetic[{j}]' do not match the original: missing {missing}, unexpected {extra}.")


def _risk_bucket(orig_pieces: list, copy_pieces: list[list], cards: list[int], tols: list) -> tuple:
    """The per-record kernel on one key bucket: :class:`MatchTally` over the copies, in copy order.

    Row ``i`` of a copy is the released version of original record ``i`` (same global
    position); it is in the bucket whenever it can be in record ``i``'s box (its key
    must equal record ``i``'s).
    """
    pos, t_codes, t_vals, labels = mt.join_pieces(orig_pieces)
    lo, hi = mt.box_bounds(t_vals, tols)
    n = len(pos)
    tally = MatchTally(n)
    per_copy = []
    for pieces in copy_pieces:
        p_pos, p_codes, p_vals, _ = mt.join_pieces(pieces)
        t_key, p_key = mt.joint_keys(t_codes, p_codes, cards=cards)
        s = mt.count_in_boxes(t_key, lo, hi, p_key, p_vals)
        # row-aligned check: the copy row of record i, if it is in this bucket (both sorted by position)
        if np.array_equal(p_pos, pos):  # every copy row of the bucket's records is here (always in memory)
            true_in = mt.in_own_box(t_key, lo, hi, p_key, p_vals)
        else:
            where = np.searchsorted(p_pos, pos)
            where_c = np.minimum(where, max(len(p_pos) - 1, 0))
            present = (where < len(p_pos)) & (p_pos[where_c] == pos) if len(p_pos) else np.zeros(n, dtype=bool)
            true_in = np.zeros(n, dtype=bool)
            if present.any():
                idx = where_c[present]
                true_in[present] = mt.in_own_box(t_key[present], lo[present], hi[present], p_key[idx], p_vals[idx])
        _, unique = tally.add(s, true_in)
        # exact per-copy pieces: unique counts, and the histogram of s among true-in records
        hist_s, hist_c = np.unique(s[true_in], return_counts=True)
        per_copy.append({"nu": int(unique.sum()), "ntu": int((unique & true_in).sum()),
                         "hist": dict(zip(hist_s.tolist(), hist_c.tolist()))})
    records = pd.DataFrame({"position": pos, **tally.columns()})
    if labels is not None:
        records["group"] = labels
    return records, per_copy


def _record_sums(rec, threshold: float) -> list:
    """The sums over records that the summaries need (lazy on a Dask frame)."""
    return [len(rec), rec["risk"].sum(), (rec["true_unique_copies"] + rec["false_unique_copies"]).sum(),
            rec["true_unique_copies"].sum(), (rec["risk"] > threshold).sum(), rec["risk"].max(),
            rec["no_match_copies"].sum()]


def _as_numbers(t) -> dict:
    n, risk_sum, nu, ntu, above, mx, none = t
    return {"n": int(n), "risk_sum": float(risk_sum), "nu": int(nu), "ntu": int(ntu), "above": int(above),
            "max": float(mx) if int(n) else np.nan, "none": int(none)}


def _summarise(agg: dict, n_copies: int) -> dict[str, float]:
    r"""The summaries of :func:`reidentification_risk` from sums over N records and M copies."""
    nn, risk_sum, nu, ntu = agg["n"], agg["risk_sum"], agg["nu"], agg["ntu"]
    return {
        "n_records": int(nn),
        "expected_matches": float(risk_sum),
        "true_match_rate": ntu / (nn * n_copies) if nn else np.nan,
        "false_match_rate": (nu - ntu) / nu if nu > 0 else np.nan,
        "share_above_threshold": agg["above"] / nn if nn else np.nan,
        "mean_risk": float(risk_sum) / nn if nn else np.nan,
        "max_risk": agg["max"] if nn else np.nan,
        "unique_match_share": nu / (nn * n_copies) if nn else np.nan,
        "no_match_share": agg["none"] / (nn * n_copies) if nn else np.nan,
    }


def _group_summaries(records, threshold: float, n_copies: int, dtype: Any, by_name: str) -> pd.DataFrame:
    """The summaries per group label (category order, else sorted; missing labels last, a group of their own)."""
    g = records.assign(above=records["risk"] > threshold,
                       unique=records["true_unique_copies"] + records["false_unique_copies"])
    g = g.groupby("group", observed=True, dropna=False)
    parts = compute(g["risk"].sum(), g["risk"].count(), g["risk"].max(), g["unique"].sum(),
                    g["true_unique_copies"].sum(), g["above"].sum(), g["no_match_copies"].sum())
    rs, cnt, mx, nu, tu, above, none = parts
    present = list(cnt.index)
    if isinstance(dtype, pd.CategoricalDtype):
        levels = [lev for lev in dtype.categories if any(not pd.isna(x) and x == lev for x in present)]
    else:
        levels = sorted([x for x in present if not pd.isna(x)])
    rows = {}
    for lev in levels + ([None] if any(pd.isna(x) for x in present) else []):
        key = next(x for x in present if (pd.isna(x) if lev is None else (not pd.isna(x) and x == lev)))
        t = (cnt[key], rs[key], nu[key], tu[key], above[key], mx[key], none[key])
        rows["<missing>" if lev is None else lev] = _summarise(_as_numbers(t), n_copies)
    by_group = pd.DataFrame.from_dict(rows, orient="index")
    by_group.index.name = by_name
    return by_group
