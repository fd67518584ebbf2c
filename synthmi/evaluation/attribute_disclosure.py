"""Attribute disclosure of a sensitive target given quasi-identifiers (and repU for identity).

The intruder knows the quasi-identifiers (keys) of a person in the original
data and looks them up in the released copy to learn the person's value of a
sensitive *target* variable. Two families of measures, both computed from
sorted/hashed keys (no all-pairs comparison), per record, per copy and by
subgroup:

Key-table measures (synthpop's ``disclosure()``; Raab, Nowok and Dibben 2024,
"Practical privacy metrics for synthetic data", and the synthpop vignette
*disclosure*). Keys are compared exactly (synthpop turns numeric keys into
factors; a missing value is a level of its own, ``usekeysNA = usetargetNA =
TRUE``). With :math:`n^d_{kt}` (original) and :math:`n^s_{kt}` (copy) the
counts of key :math:`k` and target value :math:`t`, :math:`n^d_k, n^s_k`
the key totals, :math:`p^s_{t|k} = n^s_{kt} / n^s_k` and :math:`N_d` the
number of original records, for original record :math:`i` with key
:math:`k_i` and target :math:`t_i`:

.. math::

    \\mathrm{DiSCO} = \\frac{1}{N_d} \\sum_i 1[p^s_{t_i | k_i} = 1], \\qquad
    \\mathrm{DiS} = \\frac{1}{N_d} \\sum_i 1[\\exists t: p^s_{t | k_i} = 1], \\qquad
    \\mathrm{iS} = \\frac{1}{N_d} \\sum_i 1[n^s_{k_i} > 0],

    \\mathrm{Dorig} = \\frac{1}{N_d} \\sum_i 1[n^d_{k_i t_i} = n^d_{k_i}], \\qquad
    \\mathrm{DiSDiO} = \\frac{1}{N_d} \\sum_i 1[p^s_{t_i|k_i} = 1,\\ n^d_{k_i t_i} = n^d_{k_i}],

    \\mathrm{DCAP} = \\frac{1}{N_d} \\sum_i p^s_{t_i | k_i} \\;(\\text{synthpop's DCAPd}), \\qquad
    \\mathrm{TCAP} = \\mathrm{DiSCO} / \\mathrm{DiS},

    \\mathrm{repU} = \\frac{1}{N_d} \\sum_i 1[n^d_{k_i} = 1,\\ n^s_{k_i} = 1], \\qquad
    \\mathrm{UiO} = \\frac{1}{N_d} \\sum_i 1[n^d_{k_i} = 1], \\qquad
    \\mathrm{UiS} = \\frac{1}{N_s} \\sum_j 1[n^s_{k_j} = 1].

Numeric keys and target in groups (synthpop's ``ngroups_keys`` /
``ngroups_target``, ``group_num``): a numeric key with more than ``ngroups``
distinct values in the pooled original and copies is cut, for the key tables
only, at the pooled quantiles :math:`q_{j/g}`, :math:`j = 0..g` (R's type 7,
numpy's default), duplicates dropped, into the intervals :math:`[b_j, b_{j+1})`
(the last closed), the same cells for the original and every copy; if that
leaves fewer than 3 groups (a point mass), :math:`g` equal-width intervals
over the pooled range instead. A missing value stays a level of its own.
synthpop's default is no grouping, and so is this one's. Why it matters:
copies whose numeric key is synthesized on a continuous scale (kernel-smoothed,
a regression draw) never repeat an original value, so every exact key is
unique and DiSCO, iS and repU read 0 and UiS 1 *whatever* the disclosure (a
DA-MI release of randhie with 30.2 expected correct attributions by matching
within 1, against CART's 6.7, read DiSCO 0). The result then carries a
warning (``settings["warnings"]``, printed by :meth:`report`) naming the key
and the share of the copies' values found nowhere in the original. Key
tables do not use the matching ``tolerance``: a tolerance box around each
original record is not a partition, so "the key's table in the copy" would
not be defined (one copy record would sit in many keys' tables); grouping
gives a partition shared by the original and the copies, which the
definitions need, and the matching measures are where the tolerance applies.

DiSCO ("disclosive in synthetic, correct in original") is the share of
original records whose key, looked up in the copy, shows one target value
only, and that value is the record's own. synthpop reports these in percent;
here they are shares in [0, 1]. synthpop's exclusions (``not.targetlev``,
``exclude.keys``, ``denom_lim``) are not implemented: every record counts.

Matching attribute risk (the matching rule of
:func:`~synthmi.evaluation.reidentification_risk`, after Reiter and Mitra
2009, applied to the target): the intruder takes the released records that
match target person i's quasi-identifiers (:math:`S_{im}`, categorical QIs
equal, continuous ones within the tolerance) and guesses the target value of
one of them at random. The probability the guess is correct is

.. math::

    A_{im} = \\frac{\\#\\{j \\in S_{im} : y_j \\simeq y_i\\}}{s_{im}}
    \\quad (0 \\text{ if } s_{im} = 0), \\qquad
    A_i = \\frac{1}{M} \\sum_m A_{im},

where :math:`y_j \\simeq y_i` is equality for a categorical target and
:math:`|y_j - y_i| \\le h` (``target_tolerance``) for a continuous one. With
exact matching on all QIs and a categorical target, :math:`A_{im}` is
record i's term of DCAP. Summaries: ``expected_correct_attributions`` =
:math:`\\sum_i A_i`, ``attribute_risk_mean``, ``share_above_threshold``
(:math:`A_i >` threshold), and ``all_matches_correct_share``, the share of
(record, copy) pairs with :math:`s_{im} \\ge 1` and every match carrying the
correct value (the matching analogue of DiSCO).

None of these needs the copy to be row-aligned with the original: they
apply to partially and fully synthetic releases alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..results import Result
from .._validate import check_columns_exist, check_copies, check_dataframe, check_scalar, param_error
from ..engine import (
    bucket_of,
    call,
    compute,
    copies_of,
    frame_offsets,
    is_dask_frame,
    key_buckets,
    meta_of,
    n_key_buckets,
)
from . import _matching as mt
from .pmse import quantile_from_counts
from .risk import _GROUP, _check_categorical_groups, _group_labels, _summaries_to_dict
from ..errors import InputError, ParameterError

__all__ = ["attribute_disclosure", "AttributeDisclosureResult", "KEY_MEASURES", "MATCHING_MEASURES"]

_OWNER = "attribute_disclosure"
#: Key-table measures (shares in [0, 1]), synthpop's names.
KEY_MEASURES = ("DiSCO", "DiS", "iS", "Dorig", "DiSDiO", "DCAP", "TCAP", "repU", "UiO", "UiS", "UiOiS")
MATCHING_MEASURES = (
    "expected_correct_attributions",
    "attribute_risk_mean",
    "share_above_threshold",
    "all_matches_correct_share",
    "no_match_share",
)
# Per-record measures whose means over records give the record-based summaries.
_RECORD_COLS = ("disco", "dis", "in_synthetic", "dcap", "repU", "attribute_risk", "all_matches_correct", "no_match")


@dataclass
class AttributeDisclosureResult(Result):
    """Attribute disclosure of a target and replicated uniques, over M copies.

    Attributes
    ----------
    figures : dict
        The headline figures (:meth:`summary` shows the record-based ones as a
        table): means over copies of the per-copy measures (:data:`KEY_MEASURES`,
        :data:`MATCHING_MEASURES`), plus ``n_records``, ``n_copies``,
        ``threshold``. ``TCAP`` is the mean over the copies where it is
        defined (NaN if DiS = 0 in every copy).
    per_copy : DataFrame
        One row per copy (index 1..M), the same measures.
    records : DataFrame
        Per original record (original index; no QI or target values):
        ``disco``, ``dis``, ``in_synthetic``, ``repU``, ``all_matches_correct``,
        ``no_match`` (share of copies where the indicator holds), ``dcap``
        (mean of :math:`p^s_{t_i|k_i}`), ``attribute_risk`` (:math:`A_i`),
        ``mean_n_matches``.
    by_group : DataFrame or None
        Record-based measures per level of ``by`` (means over the group's
        records of the ``records`` columns, and ``n_records``).
    settings : dict
    """

    figures: dict[str, Any]
    per_copy: pd.DataFrame
    records: pd.DataFrame
    by_group: pd.DataFrame | None
    settings: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Per-record table (original index)."""
        return self.records.copy()

    def summary_frame(self) -> pd.DataFrame:
        """Row ``"all"`` with the record-based measures, then one row per group."""
        cols = ["n_records", *_RECORD_COLS]
        allrow = {"n_records": self.figures["n_records"], **{c: float(self.records[c].mean()) for c in _RECORD_COLS}}
        rows = pd.DataFrame([allrow], index=pd.Index(["all"], name="group"))[cols]
        if self.by_group is not None:
            g = self.by_group[cols].copy()
            g.index = pd.Index([str(x) for x in g.index], name="group")
            rows = pd.concat([rows, g])
        return rows

    def report(self) -> str:
        s, st = self.figures, self.settings
        tol = ", ".join(f"{c}: {v}" for c, v in st["tolerance"].items()) or "none"
        lines = [
            f"Attribute disclosure of '{st['target']}'",
            "=" * 64,
            f"keys (quasi-identifiers): {', '.join(st['quasi_identifiers'])}",
            f"matching tolerance      : {tol}; target: {st['target_tolerance'] if st['target_tolerance'] is not None else 'exact'}",
            f"records, copies         : {s['n_records']}, {s['n_copies']}",
            "-" * 64,
            "key tables (synthpop, shares of original records; mean over copies)",
            *[f"  {c}: {_group_text(v)}" for c, v in (st.get("key_groups") or {}).items()],
            *[f"  WARNING: {w}" for w in st.get("warnings") or []],
            f"  DiSCO {s['DiSCO']:.4f}   DiS {s['DiS']:.4f}   iS {s['iS']:.4f}   Dorig {s['Dorig']:.4f}",
            f"  DCAP {s['DCAP']:.4f}   TCAP {_fmt(s['TCAP'])}   DiSDiO {s['DiSDiO']:.4f}",
            f"  identity: repU {s['repU']:.4f}   UiO {s['UiO']:.4f}   UiS {s['UiS']:.4f}",
            "matching (intruder guesses the target of a random match)",
            f"  expected correct attributions {s['expected_correct_attributions']:.2f}; mean A_i {s['attribute_risk_mean']:.4f}",
            f"  share A_i > {s['threshold']:g}: {s['share_above_threshold']:.4f}; all matches correct: "
            f"{s['all_matches_correct_share']:.4f}; no match: {s['no_match_share']:.4f}",
        ]
        if self.by_group is not None:
            lines += ["-" * 64, f"by {st['by']}:", self.by_group.to_string(float_format=lambda x: f"{x:.4f}")]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    @property
    def _summary_title(self) -> str:
        return f"Attribute disclosure of '{self.settings.get('target')}'"

    def _summary_rows(self) -> pd.DataFrame:
        return self.summary_frame()

    def _summary_notes(self) -> list[str]:
        """How the key tables compared each grouped key, and the exact-key warnings."""
        st = self.settings
        return ([f"key tables, {c}: {_group_text(v)}" for c, v in (st.get("key_groups") or {}).items()]
                + [f"WARNING: {w}" for w in st.get("warnings") or []])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summaries (no record-level values)."""
        return _summaries_to_dict(self)


def _fmt(x: float) -> str:
    return "undefined (DiS = 0)" if not np.isfinite(x) else f"{x:.4f}"


_TAB = "\x00table:"
#: above this share of a copy's values of a numeric key found nowhere in the original, the key was
#: synthesized on a continuous scale and exact key tables read "no disclosure" by construction
_OFF_SUPPORT_WARN = 0.5


def _group_text(info: dict[str, Any]) -> str:
    if not info.get("groups"):
        return (f"not grouped: {info['distinct']} distinct pooled values, at most ngroups = {info['ngroups']} "
                "(compared exactly)")
    return (f"grouped into {info['groups']} {info['style']} groups of the pooled original and copies "
            f"(ngroups = {info['ngroups']})")


def _check_ngroups(ngroups_keys: Any, ngroups_target: Any, qis: list[str], continuous: list[str], target: str,
                   target_continuous: bool) -> dict[str, int]:
    """Column -> requested number of groups, checked (synthpop's ngroups_keys / ngroups_target)."""
    out: dict[str, int] = {}
    if isinstance(ngroups_keys, dict):
        for c, g in ngroups_keys.items():
            if c not in qis:
                raise param_error("ngroups_keys", _OWNER, "a dict keyed by quasi-identifiers", f"the key {c!r}")
            if c not in continuous:
                raise param_error("ngroups_keys", _OWNER, "groups for continuous keys only",
                                  f"{c!r}, a categorical key")
            out[c] = int(check_scalar(g, f"ngroups_keys[{c!r}]", _OWNER, kind="int", lower=2))
    elif ngroups_keys is not None:
        g = int(check_scalar(ngroups_keys, "ngroups_keys", _OWNER, kind="int", lower=2))
        out.update(dict.fromkeys(continuous, g))
    if ngroups_target is not None:
        out[target] = check_ngroups_target(ngroups_target, None, target, continuous=target_continuous)
    return out


def check_ngroups_target(ngroups_target: Any, original: Any, target: str, spec: Any = None, owner: str = _OWNER,
                         continuous: bool | None = None) -> int | None:
    """``ngroups_target`` checked (None, or an integer >= 2 for a continuous target), so a caller can refuse it
    before any work: synthpop's grouping cuts a numeric target's values into groups and has no meaning for a
    categorical one. ``continuous``: the target's kind when known, else read from ``original`` and ``spec``
    (:func:`synthmi.evaluation._matching.split_kinds`)."""
    if ngroups_target is None:
        return None
    g = int(check_scalar(ngroups_target, "ngroups_target", owner, kind="int", lower=2))
    if continuous is None:
        continuous = bool(mt.split_kinds(original, [target], spec)[1])
    if not continuous:
        raise ParameterError(
            f"The 'ngroups_target' parameter of {owner} cuts a continuous (numeric) target into groups, and the "
            f"target {target!r} is categorical (its levels are compared as they are). Got {g}; leave it out for "
            "a categorical target.", parameter="ngroups_target", owner=owner)
    return g


def _group_breaks(frames: list, column: str, ngroups: int) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Inner breaks of a numeric column's groups, from the original and every copy (synthpop's ``group_num``).

    Breaks: the pooled (original and all copies, missing left out) quantiles at
    ``j / ngroups``, ``j = 0..ngroups`` (type 7), duplicates dropped; fewer than
    3 groups -> ``ngroups`` equal-width intervals over the pooled range (synthpop's
    fallback). Intervals ``[b_j, b_{j+1})``, the last closed (:func:`_group_codes`);
    a missing value stays missing. None (and the reason) when the pooled data have
    at most ``ngroups`` distinct values: grouping would only merge levels. The
    breaks are quantiles of the original and are not returned to the user.

    pandas or Dask frames alike: the quantiles come from the exact value counts of
    the pooled column (:func:`~synthmi.evaluation.pmse.quantile_from_counts`, NumPy's
    arithmetic to the bit), so they are the same for every partitioning; on Dask
    the counts are one pass per frame and take memory for the column's distinct values.
    """
    counts = compute(*[f[column].value_counts() for f in frames])  # missing values left out
    pooled = pd.concat([pd.Series(c.to_numpy(), index=pd.Index(c.index.to_numpy(dtype=float))) for c in counts])
    pooled = pooled.groupby(level=0, sort=True).sum()
    pooled = pooled[pooled > 0]
    values, n = pooled.index.to_numpy(dtype=float), pooled.to_numpy(dtype=np.int64)
    distinct = int(len(values))
    info: dict[str, Any] = {"ngroups": int(ngroups), "distinct": distinct, "groups": 0, "style": None}
    if distinct <= ngroups:
        return None, info
    style = "quantile"
    breaks = np.unique(quantile_from_counts(values, n, np.linspace(0.0, 1.0, ngroups + 1)))
    if len(breaks) - 1 < 3:
        style = "equal-width"
        breaks = np.unique(np.linspace(values.min(), values.max(), ngroups + 1))
    info.update(groups=int(len(breaks) - 1), style=style)
    return breaks[1:-1], info


def _group_codes(s: pd.Series, inner: np.ndarray) -> pd.Series:
    """The group (0, 1, ...) of each value of one partition: ``[b_j, b_{j+1})``, the last closed; missing stays."""
    v = pd.to_numeric(s).to_numpy(dtype=float)
    c = np.searchsorted(inner, v, side="right").astype(float)
    c[np.isnan(v)] = np.nan
    return pd.Series(c, index=s.index, name=_TAB + str(s.name))


def _with_group_codes(frame, column: str, inner: np.ndarray):
    """``frame`` with the group-code column ``_TAB + column`` (lazy on Dask, partition by partition)."""
    if is_dask_frame(frame):
        codes = frame[column].map_partitions(_group_codes, inner, meta=pd.Series(dtype=float, name=_TAB + column))
    else:
        codes = _group_codes(frame[column], inner).to_numpy()
    return frame.assign(**{_TAB + column: codes})


def _exact_key_warnings(o_frame: pd.DataFrame, c_frames: list[pd.DataFrame], keys: list[str]) -> list[str]:
    """One warning per continuous key compared exactly whose copies' values are mostly found nowhere in
    the original (synthesized on a continuous scale): exact key tables then find almost no shared key,
    and DiSCO, iS, repU read near 0 (UiS near 1) by construction. Names and shares only, never a value."""
    out = []
    for c in keys:
        o = pd.to_numeric(o_frame[c]).to_numpy(dtype=float)
        seen = np.unique(o[~np.isnan(o)])
        v = np.concatenate([pd.to_numeric(f[c]).to_numpy(dtype=float) for f in c_frames])
        v = v[~np.isnan(v)]
        if not len(v):
            continue
        off = float(1.0 - np.isin(v, seen).mean())
        if off > _OFF_SUPPORT_WARN:
            out.append(f"{off:.0%} of the copies' values of the key '{c}' occur nowhere in the original (synthesized "
                       "on a continuous scale), so exact key tables find almost no shared key: DiSCO, iS and repU "
                       "read near 0 and UiS near 1 whatever the disclosure. Group the key (ngroups_keys, "
                       "synthpop's; --ngroups-keys) or read the matching measures with a tolerance.")
    return out


def _exact_codes(columns: Sequence[str], original: pd.DataFrame, copies: list[pd.DataFrame]) -> list[np.ndarray]:
    """One dense int64 code per row for the exact combination of ``columns``,
    shared by the original and every copy; a missing value is a level."""
    frames = [original, *copies]
    sizes = [len(f) for f in frames]
    per_col = []
    for c in columns:
        s = pd.concat([f[c].astype(object) if not isinstance(f[c].dtype, pd.CategoricalDtype) else f[c].astype(object)
                       for f in frames], ignore_index=True)
        if pd.api.types.is_numeric_dtype(original[c]) and not isinstance(original[c].dtype, pd.CategoricalDtype):
            s = pd.to_numeric(s)  # 30 and 30.0 are one value
        codes, _ = pd.factorize(s, use_na_sentinel=False)
        per_col.append(codes.astype(np.int64))
    key = mt._dense_rows(per_col) if per_col else np.zeros(sum(sizes), dtype=np.int64)
    return list(np.split(key, np.cumsum(sizes)[:-1]))


def attribute_disclosure(
    original: pd.DataFrame,
    synthetic: Any,
    quasi_identifiers: Sequence[str] | None,
    target: str,
    tolerance: Any = None,
    target_tolerance: float | None = None,
    threshold: float = 0.5,
    by: Any = None,
    spec: Any = None,
    n_buckets: int | None = None,
    ngroups_keys: int | dict[str, int] | None = None,
    ngroups_target: int | None = None,
) -> AttributeDisclosureResult:
    """Attribute disclosure of ``target`` from the quasi-identifiers, and repU.

    Parameters
    ----------
    original : DataFrame
        The confidential data; every record is a target person.
    synthetic : DataFrame, list of DataFrame or SyntheticData
        The M released copies with the original's columns (any number of
        rows; row alignment is not needed).
    quasi_identifiers : list of str
        The keys the intruder knows.
    target : str
        The sensitive variable (not a quasi-identifier).
    tolerance : None, number or dict
        Closeness of continuous quasi-identifiers for the *matching* measure,
        as in :func:`~synthmi.evaluation.reidentification_risk` (default
        exact). The key-table measures always compare keys exactly, as
        synthpop does.
    target_tolerance : float >= 0, optional
        For a continuous target, a match's value is "correct" when within this
        absolute distance of the person's (default 0: equal). Must be None for
        a categorical target.
    threshold : float in [0, 1], default 0.5
        ``share_above_threshold`` counts records with :math:`A_i >` threshold.
    by : str, Series or array, optional
        Subgroup labels (a categorical column of ``original`` or labels
        aligned to its rows, e.g. :func:`risk_subgroups` labels).
    spec : ReleaseSpec, dict or path, optional
        Kinds (instead of dtypes) and, when ``quasi_identifiers`` is None, the QIs.
    n_buckets : int, optional
        Key buckets the records are shuffled into (default one per 500,000
        original records); results do not depend on it.
    ngroups_keys : int >= 2 or dict, optional
        Group every continuous key (or, with a dict, the named continuous keys)
        into at most this many pooled-quantile groups for the key tables
        (synthpop's ``ngroups_keys``; module docstring). Default: exact keys.
        A key with at most this many distinct pooled values is left exact.
        pandas or Dask frames (the same groups: exact pooled value counts).
    ngroups_target : int >= 2, optional
        The same for a continuous target (synthpop's ``ngroups_target``).

    Returns
    -------
    AttributeDisclosureResult
        For a dask ``original`` (dask copies), ``records`` is a pandas frame
        with a ``position`` column (global record position) in position order,
        and ``by`` must be a column name.

    Notes
    -----
    Definitions and references in the module docstring. Cost per copy:
    O((n_d + n_s) log(n_d + n_s)) for the key tables and as
    :func:`reidentification_risk` for the matching measure. One code path for
    pandas and Dask (:mod:`synthmi.engine`): the records are shuffled by a
    hash of their categorical key and missingness flags, and every measure is
    computed bucket by bucket (a pandas frame is one partition); per-record
    values and counts are the same for every partitioning, DCAP and the
    expected correct attributions to summation order.
    """
    from ..spec import as_spec, spec_frames, spec_quasi_identifiers

    lazy = is_dask_frame(original)
    if lazy:
        copies = copies_of(synthetic)
        spec = None if spec is None else as_spec(spec)
        frame_meta = meta_of(original)
        copy_cols = [list(meta_of(c).columns) for c in copies]
    else:
        check_dataframe(original, "original")
        copies = check_copies(synthetic, "synthetic")
        spec, original, copies = spec_frames(spec, original, copies)
        frame_meta = original
        copy_cols = [list(c.columns) for c in copies]
    qis = spec_quasi_identifiers(quasi_identifiers, spec, frame_meta, _OWNER, "original")
    if not isinstance(target, str):
        raise param_error("target", _OWNER, "one column name", target)
    check_columns_exist(frame_meta, [target], "target", "original")
    if target in qis:
        raise param_error("target", _OWNER, "a column that is not a quasi-identifier", f"{target!r}, one of the keys")
    threshold = float(check_scalar(threshold, "threshold", _OWNER, lower=0.0, upper=1.0))
    for j, cols in enumerate(copy_cols):
        missing = [col for col in [*qis, target] if col not in cols]
        if missing:
            raise InputError(f"'synthetic[{j}]' lacks the columns {missing} that attribute disclosure compares.")
    categorical, continuous = mt.split_kinds(original, qis, spec)
    tol = mt.parse_tolerance(tolerance, categorical, continuous, _OWNER)
    t_cat, t_cont = mt.split_kinds(original, [target], spec)
    target_continuous = bool(t_cont)
    if target_tolerance is not None:
        if not target_continuous:
            raise param_error("target_tolerance", _OWNER, "None for a categorical target", target_tolerance)
        target_tolerance = float(check_scalar(target_tolerance, "target_tolerance", _OWNER, lower=0.0))
    groups_for = _check_ngroups(ngroups_keys, ngroups_target, qis, continuous, target, target_continuous)
    use = [*qis, target]
    if lazy:
        if by is not None and not (isinstance(by, str) and by in frame_meta.columns):
            # describe, never quote: a Series or list of labels holds record values
            raise param_error("by", _OWNER, "a column name of 'original' (on Dask)",
                              by if isinstance(by, str) else f"a {type(by).__name__} of labels")
        groups, by_name = (None, None) if by is None else (_check_categorical_groups(frame_meta[by]), by)
        o_frame = original[use + ([by] if by is not None and by not in use else [])]
        c_frames = [c[use] for c in copies]
        extra = by
    else:
        groups, by_name = _group_labels(by, original)
        o_frame = original[use].reset_index(drop=True)
        if groups is not None:
            o_frame = o_frame.assign(**{_GROUP: groups.to_numpy()})
        c_frames = [c[use].reset_index(drop=True) for c in copies]
        extra = None if groups is None else _GROUP
    # ---- the key tables' columns: a grouped key (or target) is a code column beside the raw one, which the
    # matching measures keep using; the cells come from the pooled original and copies (synthpop's group_num)
    tab_cols = {c: c for c in use}
    key_groups: dict[str, Any] = {}
    for c, g in groups_for.items():
        inner, key_groups[c] = _group_breaks([o_frame, *c_frames], c, g)
        if inner is None:
            continue
        tab_cols[c] = _TAB + c
        o_frame = _with_group_codes(o_frame, c, inner)
        c_frames = [_with_group_codes(f, c, inner) for f in c_frames]
    warnings_ = [] if lazy else _exact_key_warnings(o_frame, c_frames, [c for c in continuous if tab_cols[c] == c])

    # ---- one code path (synthmi.engine): every measure compares a person only with records sharing the
    # person's categorical QIs and missingness flags (key tables: exact keys, finer), so records are
    # shuffled by a hash of that key and the kernel runs bucket by bucket; a pandas frame is one partition
    m_cat = categorical + ([target] if not target_continuous else [])
    m_cont = continuous + ([target] if target_continuous else [])
    enc_q = mt.Encoder(mt.reference(original, qis, categorical), categorical, continuous, "original")
    enc_qt = mt.Encoder(mt.reference(original, use, m_cat), m_cat, m_cont, "original")
    tols_q = [tol[c] for c in continuous]
    tols_qt = tols_q + ([mt.Tolerance(target_tolerance or 0.0)] if target_continuous else [])
    o_off = frame_offsets(o_frame)  # of the projection that is mapped (a read_parquet may merge files)
    n, m_copies = int(o_off[-1]), len(c_frames)
    B = n_key_buckets(n, n_buckets)
    o_b = key_buckets(o_frame, o_off, _split_frames, B, enc_q, "original", B)
    c_b = [key_buckets(c, frame_offsets(c), _split_frames, B, enc_q, f"synthetic[{j}]", B)
           for j, c in enumerate(c_frames)]
    out = compute(*[call(lazy, _attr_bucket, o_b[k], [cb[k] for cb in c_b], [tab_cols[q] for q in qis],
                         tab_cols[target], enc_q, enc_qt, tols_q, tols_qt, threshold, extra) for k in range(B)])
    recs = [r for r, _ in out if r is not None]
    records = pd.concat(recs).sort_values("position", kind="stable").reset_index(drop=True) if recs else \
        pd.DataFrame({"position": np.zeros(0, np.int64), **{c: np.zeros(0) for c in (*_RECORD_COLS, "mean_n_matches")}})
    per_copy = []
    for j in range(m_copies):
        t = {k: sum(b[j][k] for _, b in out) for k in out[0][1][j]}
        d_share, dis_share = t["disco"] / n, t["dis"] / n
        per_copy.append({
            "DiSCO": d_share, "DiS": dis_share, "iS": t["in_s"] / n, "Dorig": t["dorig"] / n,
            "DiSDiO": t["disdio"] / n, "DCAP": t["dcap"] / n,
            "TCAP": d_share / dis_share if dis_share > 0 else np.nan,
            "repU": t["repu"] / n, "UiO": t["uio"] / n, "UiS": t["uis"] / t["n_s"] if t["n_s"] else np.nan,
            "UiOiS": t["uiois"] / n, "expected_correct_attributions": t["a"], "attribute_risk_mean": t["a"] / n,
            "share_above_threshold": t["above"] / n, "all_matches_correct_share": t["allc"] / n,
            "no_match_share": t["none"] / n,
        })
    pc = pd.DataFrame(per_copy, index=pd.RangeIndex(1, m_copies + 1, name="copy"))
    if lazy:
        if groups is not None:
            groups = records.pop("group").astype(groups.dtype)
    else:
        records = records.drop(columns=["position", *(["group"] if groups is not None else [])])
        records.index = original.index
    figures: dict[str, Any] = {"n_records": int(n), "n_copies": int(m_copies), "threshold": threshold}
    for k in (*KEY_MEASURES, *MATCHING_MEASURES):
        col = pc[k].to_numpy(dtype=float)
        figures[k] = float(np.nanmean(col)) if np.isfinite(col).any() else np.nan
    # A_i is averaged over copies first, so these two are record-based, not copy means
    figures["share_above_threshold"] = float((records["attribute_risk"] > threshold).mean())
    figures["expected_correct_attributions"] = float(records["attribute_risk"].sum())

    by_group = None
    if groups is not None:
        if isinstance(groups.dtype, pd.CategoricalDtype):
            codes, levels = groups.cat.codes.to_numpy(), list(groups.cat.categories)
        else:
            codes, levels = pd.factorize(groups, sort=True)
            levels = list(levels)
        rows = {}
        for k in [*range(len(levels)), -1]:
            idx = np.flatnonzero(codes == k)
            if len(idx):
                label = "<missing>" if k < 0 else levels[k]
                rows[label] = {"n_records": int(len(idx)), **{c: float(records[c].to_numpy()[idx].mean()) for c in _RECORD_COLS}}
        by_group = pd.DataFrame.from_dict(rows, orient="index")
        by_group.index.name = by_name

    settings = {
        "quasi_identifiers": qis,
        "target": target,
        "categorical": categorical,
        "continuous": continuous,
        "tolerance": {c: tol[c].to_json() for c in continuous},
        "target_tolerance": target_tolerance,
        "target_kind": "continuous" if target_continuous else "categorical",
        "threshold": threshold,
        "by": by_name,
        "key_rule": ("keys compared exactly (synthpop); a missing value is a level of its own" if not any(
            v.get("groups") for v in key_groups.values()) else
            "keys compared exactly after grouping the numeric ones in key_groups (synthpop's ngroups_keys / "
            "ngroups_target); a missing value is a level of its own"),
        "key_groups": key_groups,
        "warnings": warnings_,
        "match_rule": "as reidentification_risk; a missing value matches only a missing value",
    }
    if lazy:
        settings["engine"] = f"dask: shuffle on the exact-match key into {B} buckets"
    return AttributeDisclosureResult(figures=figures, per_copy=pc, records=records, by_group=by_group, settings=settings)


_POS = "\x00position"
_SUM_KEYS = ("disco", "dis", "in_s", "dorig", "disdio", "dcap", "repu", "uio", "uiois", "a", "above", "allc", "none",
             "uis", "n_s")


def _split_frames(part: pd.DataFrame, offset: int, enc: mt.Encoder, name: str, n_buckets: int) -> list[pd.DataFrame]:
    """One partition's rows per key bucket, with their global positions."""
    codes, _ = enc.encode(part, name)
    b = bucket_of(codes, n_buckets)
    part = part.assign(**{_POS: offset + np.arange(len(part), dtype=np.int64)})
    return [part[b == k] for k in range(n_buckets)]


def _attr_bucket(o_pieces, c_pieces, qis, target, enc_q, enc_qt, tols_q, tols_qt, threshold, extra):
    """Per-record measures of one key bucket and the per-copy sums over its records.

    Every record sharing a person's key (and every candidate match) is in the
    person's bucket, so the tables and match counts here are the global ones.
    """
    original = pd.concat(o_pieces).sort_values(_POS, kind="stable")
    copies = [pd.concat(p) for p in c_pieces]
    sums = [dict.fromkeys(_SUM_KEYS, 0) for _ in copies]
    keys = _exact_codes(qis, original, copies)
    for j, ks in enumerate(keys[1:]):  # the copy's records whose key is unique in the copy (UiS)
        sums[j]["uis"] = int((np.bincount(ks)[ks] == 1).sum()) if len(ks) else 0
        sums[j]["n_s"] = len(ks)
    n = len(original)
    if n == 0:
        return None, sums
    # ---- key tables: exact codes of the keys and of (keys, target), shared by all frames
    kt = _exact_codes([*qis, target], original, copies)
    kd, ktd = keys[0], kt[0]
    nd_k = np.bincount(kd)[kd]
    nd_kt = np.bincount(ktd)[ktd]
    dorig = nd_kt == nd_k
    uio = nd_k == 1
    # ---- matching: QIs alone and QIs + target, with the identity-risk rule
    tq_codes, tq_vals = enc_q.encode(original, "original")
    tqt_codes, tqt_vals = enc_qt.encode(original, "original")
    lo_q, hi_q = mt.box_bounds(tq_vals, tols_q)
    lo_qt, hi_qt = mt.box_bounds(tqt_vals, tols_qt)

    acc = {c: np.zeros(n) for c in _RECORD_COLS}
    n_sum = np.zeros(n)
    for j, cp in enumerate(copies):
        ks, kts = keys[j + 1], kt[j + 1]
        size = int(max(kd.max(), ks.max() if len(ks) else 0)) + 1
        ns_k_tab = np.bincount(ks, minlength=size)
        size_t = int(max(ktd.max(), kts.max() if len(kts) else 0)) + 1
        ns_kt_tab = np.bincount(kts, minlength=size_t)
        # distinct target values per key in the copy
        distinct = np.bincount(ks[np.unique(kts, return_index=True)[1]], minlength=size) if len(ks) else np.zeros(size, np.int64)
        ns_k = ns_k_tab[kd]
        ns_kt = ns_kt_tab[ktd]
        in_s = ns_k > 0
        ps = np.where(in_s, ns_kt / np.maximum(ns_k, 1), 0.0)
        disco = in_s & (ns_kt == ns_k)
        dis = in_s & (distinct[kd] == 1)
        repu = uio & (ns_k == 1)

        # matching attribute risk
        p_codes, p_vals = enc_q.encode(cp, f"synthetic[{j}]")
        t_key, p_key = mt.joint_keys(tq_codes, p_codes, cards=enc_q.cards)
        s = mt.count_in_boxes(t_key, lo_q, hi_q, p_key, p_vals)
        pt_codes, pt_vals = enc_qt.encode(cp, f"synthetic[{j}]")
        t_key2, p_key2 = mt.joint_keys(tqt_codes, pt_codes, cards=enc_qt.cards)
        c_ok = mt.count_in_boxes(t_key2, lo_qt, hi_qt, p_key2, pt_vals)
        a = np.where(s > 0, c_ok / np.maximum(s, 1), 0.0)
        allc = (s > 0) & (c_ok == s)

        rec = {"disco": disco, "dis": dis, "in_synthetic": in_s, "dcap": ps, "repU": repu,
               "attribute_risk": a, "all_matches_correct": allc, "no_match": s == 0}
        for c in _RECORD_COLS:
            acc[c] += rec[c]
        n_sum += s
        sums[j].update(disco=int(disco.sum()), dis=int(dis.sum()), in_s=int(in_s.sum()), dorig=int(dorig.sum()),
                       disdio=int((disco & dorig).sum()), dcap=float(ps.sum()), repu=int(repu.sum()),
                       uio=int(uio.sum()), uiois=int((uio & in_s).sum()), a=float(a.sum()),
                       above=int((a > threshold).sum()), allc=int(allc.sum()), none=int((s == 0).sum()))
    m = len(copies)
    records = pd.DataFrame({c: acc[c] / m for c in _RECORD_COLS})
    records["mean_n_matches"] = n_sum / m
    records.insert(0, "position", original[_POS].to_numpy())
    if extra is not None:
        records["group"] = original[extra].to_numpy()
    return records, sums
