"""Re-identification risk subgroups: low / medium / high by matching neighbours.

The slides' informal definition (short-course slide "Risk subgroups
(informal definition)"; the risk-subgroup targeted synthesis it motivates)
made precise. For record ``i`` of the data, with the closeness rule of
:mod:`synthmi.evaluation._matching` (``t - h <= y <= t + h`` on every
continuous QI, exact equality on every categorical QI, a missing value
matching only a missing value):

.. math::

    a_i = \\#\\{j \\ne i : x_j^{cat} = x_i^{cat}\\}, \\qquad
    c_i = \\#\\{j \\ne i : x_j^{cat} = x_i^{cat},\\ x_j^{cont} \\text{ within tolerance of } x_i^{cont}\\},

    \\text{label}_i =
    \\begin{cases}
      \\text{low}    & c_i \\ge k_0, \\\\
      \\text{medium} & a_i \\ge k_0 > c_i, \\\\
      \\text{high}   & a_i < k_0.
    \\end{cases}

"Others" excludes the record itself; "close" means within tolerance on EVERY
continuous QI. Since ``c_i <= a_i`` the three cases are exhaustive and
disjoint. Tolerances are measured from record i's own values (with relative
tolerances closeness need not be symmetric).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._json import jsonable
from .._validate import check_dataframe, check_scalar
from ..results import Result
from ..engine import call, compute, frame_from_parts, frame_offsets, is_dask_frame, key_buckets, meta_of, n_key_buckets
from . import _matching as mt

__all__ = ["risk_subgroups", "RiskSubgroups", "RISK_LEVELS"]

_OWNER = "risk_subgroups"
RISK_LEVELS = ("low", "medium", "high")


@dataclass
class RiskSubgroups(Result):
    """Risk-subgroup labels.

    Attributes
    ----------
    labels : Series
        Ordered Categorical low < medium < high, aligned to the data's index.
    counts : Series
        Number of records per label (all three levels, zeros included).
    n_same_categorical : Series
        ``a_i``: other records with the same categorical QIs.
    n_close : Series
        ``c_i``: other records with the same categorical QIs and within the
        tolerance on every continuous QI.
    settings : dict
        Quasi-identifiers, k0, tolerances.
    """

    labels: pd.Series
    counts: pd.Series
    n_same_categorical: pd.Series
    n_close: pd.Series
    settings: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Per record: ``label``, ``n_same_categorical``, ``n_close``."""
        return pd.DataFrame(
            {"label": self.labels, "n_same_categorical": self.n_same_categorical, "n_close": self.n_close}
        )

    def report(self) -> str:
        st = self.settings
        n = int(self.counts.sum())
        lines = [
            "Risk subgroups",
            "=" * 40,
            f"quasi-identifiers: {', '.join(st['quasi_identifiers'])}",
            f"k0: {st['k0']}   tolerance: "
            + (", ".join(f"{c} {v}" for c, v in st["tolerance"].items()) or "none (no continuous QI)"),
            "-" * 40,
        ]
        for lev, cnt in self.counts.items():
            lines.append(f"{lev:<7} {cnt:>8d}  ({cnt / n:.1%})" if n else f"{lev:<7} {cnt:>8d}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    _summary_title = "Risk subgroups"

    def _summary_rows(self) -> pd.DataFrame:
        n = int(self.counts.sum())
        return pd.DataFrame({"records": self.counts.astype(int),
                             "share": self.counts / n if n else np.nan}).rename_axis("label")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``summary`` (the table of records and share per label), ``counts`` and ``settings``."""
        return {"summary": self.summary().to_dict(), "counts": {k: int(v) for k, v in self.counts.items()},
                "settings": jsonable(self.settings)}


def risk_subgroups(
    df: pd.DataFrame,
    quasi_identifiers: Sequence[str] | None,
    k0: int,
    tolerance: Any = None,
    spec: Any = None,
    n_buckets: int | None = None,
) -> RiskSubgroups:
    """Label each record low / medium / high re-identification risk.

    Parameters
    ----------
    df : DataFrame
        The data (not modified).
    quasi_identifiers : list of str
        Matching variables; kinds from dtypes as in
        :func:`~synthmi.evaluation.reidentification_risk`.
    k0 : int >= 1
        Number of other records that makes a record "not unique".
    tolerance : None, number or dict
        Closeness on continuous QIs, same format and default (0, exact) as
        :func:`~synthmi.evaluation.reidentification_risk`.
    spec : ReleaseSpec, dict or path, optional
        Kinds (instead of dtypes) and, when ``quasi_identifiers`` is None, the QIs.
    n_buckets : int, optional
        Key buckets the records are shuffled into (default one per 500,000
        records); results do not depend on it.

    Returns
    -------
    RiskSubgroups
        For a dask ``df``, ``labels`` is one persisted dask frame with
        ``position`` (global record position), ``risk_subgroup`` (codes 0, 1, 2
        = low, medium, high), ``n_same_categorical`` and ``n_close``;
        ``counts`` is exact.

    Notes
    -----
    low: ``c_i >= k0``; medium: ``a_i >= k0 > c_i``; high: ``a_i < k0``,
    where ``a_i`` counts OTHER records sharing record i's categorical QIs and
    ``c_i`` those of them within tolerance on every continuous QI (module
    docstring; short-course slides, "Risk subgroups"). Cost O(n log n) time, O(n)
    memory with at most one continuous QI. One code path for pandas and Dask
    (:mod:`synthmi.engine`): records are shuffled by a hash of their
    categorical key and counted bucket by bucket; a pandas frame is one
    partition.
    """
    from ..spec import as_spec, spec_frames, spec_quasi_identifiers

    lazy = is_dask_frame(df)
    if lazy:
        spec = None if spec is None else as_spec(spec)
    else:
        check_dataframe(df, "df")
        spec, df, _ = spec_frames(spec, df, [])
    qis = spec_quasi_identifiers(quasi_identifiers, spec, meta_of(df), _OWNER, "df")
    k0 = int(check_scalar(k0, "k0", _OWNER, kind="int", lower=1))
    categorical, continuous = mt.split_kinds(df, qis, spec)
    tol = mt.parse_tolerance(tolerance, categorical, continuous, _OWNER)
    enc = mt.Encoder(mt.reference(df, qis, categorical), categorical, continuous, "df")
    frame = df[qis]
    off = frame_offsets(frame)  # of the projection that is mapped (a read_parquet may merge files)
    B = n_key_buckets(int(off[-1]), n_buckets)
    # bucket by the categorical codes only: a_i and c_i both count within them
    buckets = key_buckets(frame, off, mt.split_by_key, B, enc, "df", B, len(categorical))
    parts = [call(lazy, _subgroup_bucket, buckets[k], enc.cards, len(categorical), [tol[c] for c in continuous], k0)
             for k in range(B)]
    meta = pd.DataFrame({"position": np.zeros(0, np.int64), "risk_subgroup": np.zeros(0, np.int64),
                         "n_same_categorical": np.zeros(0, np.int64), "n_close": np.zeros(0, np.int64)})
    table = frame_from_parts(parts, meta, lazy)
    (counts,) = compute(table["risk_subgroup"].value_counts())
    counts = pd.Series(counts.reindex(range(3), fill_value=0).to_numpy(),
                       index=pd.Index(RISK_LEVELS, name="risk_subgroup"), name="count")
    settings = {
        "quasi_identifiers": qis,
        "categorical": categorical,
        "continuous": continuous,
        "k0": k0,
        "tolerance": {c: tol[c].to_json() for c in continuous},
        "missing_rule": "a missing value matches only a missing value",
    }
    if lazy:  # the table stays distributed, with global record positions
        settings["engine"] = f"dask: shuffle on the categorical key into {B} buckets"
        return RiskSubgroups(labels=table, counts=counts, n_same_categorical=table[["position", "n_same_categorical"]],
                             n_close=table[["position", "n_close"]], settings=settings)
    table = table.sort_values("position", kind="stable")
    lab = table["risk_subgroup"].to_numpy()
    labels = pd.Series(
        pd.Categorical.from_codes(lab, categories=list(RISK_LEVELS), ordered=True), index=df.index, name="risk_subgroup"
    )
    return RiskSubgroups(
        labels=labels,
        counts=counts,
        n_same_categorical=pd.Series(table["n_same_categorical"].to_numpy(), index=df.index, name="n_same_categorical"),
        n_close=pd.Series(table["n_close"].to_numpy(), index=df.index, name="n_close"),
        settings=settings,
    )


def _subgroup_bucket(pieces: list, cards: list[int], n_cat: int, tols: list, k0: int) -> pd.DataFrame:
    """Labels of the records of one bucket (all records sharing their categorical QIs are in it)."""
    pos, codes, vals, _ = mt.join_pieces(pieces)
    if len(pos) == 0:
        return pd.DataFrame({"position": pos, "risk_subgroup": np.zeros(0, np.int64),
                             "n_same_categorical": np.zeros(0, np.int64), "n_close": np.zeros(0, np.int64)})
    (key,) = mt.joint_keys(codes, cards=cards)
    # Missingness flags of continuous QIs are in ``key``; "same categorical QIs"
    # must ignore them, so a_i uses the categorical columns only.
    (cat_key,) = mt.joint_keys(codes[:, :n_cat], cards=cards[:n_cat])
    same_cat = np.bincount(cat_key)[cat_key] - 1
    lo, hi = mt.box_bounds(vals, tols)
    close = mt.count_in_boxes(key, lo, hi, key, vals) - 1  # a record is always in its own box
    return pd.DataFrame({"position": pos, "risk_subgroup": np.where(close >= k0, 0, np.where(same_cat >= k0, 1, 2)),
                         "n_same_categorical": same_cat, "n_close": close})
