"""Identity disclosure risk on Dask: a shuffle on the exact-match key, then the in-memory matcher.

A released record can match target ``t`` only if every categorical
quasi-identifier (and every missingness flag of a continuous one) is equal
(:mod:`synthmi.evaluation._matching`). So the records of the original and
of every copy are sent to one of ``B`` buckets by a hash of that exact key;
all candidate matches of a target are then in its bucket, and the sorted
window matcher (:func:`~synthmi.evaluation._matching.count_in_boxes`) run
bucket by bucket gives every target's match count ``s_im`` exactly as on
the whole data. The row-aligned test "is the released version of record i
in its own box" needs record i's copy row in the same bucket, which holds
whenever it can be true (its key must equal the target's). Per record,

.. math:: I_i = \\frac{1}{M} \\sum_{m=1}^{M} \\frac{1[i \\in S_{im}]}{s_{im}}

is accumulated over copies in copy order, as in memory, so the per-record
values are bit-for-bit equal to :func:`synthmi.evaluation.reidentification_risk`;
counts and shares are exact, and sums of ``I_i`` agree up to floating-point
summation order (they are added per bucket).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import check_scalar, param_error
from ..evaluation import _matching as mt
from ..evaluation.risk import MatchTally, RiskResult, _rates
from ..evaluation.subgroups import RISK_LEVELS, RiskSubgroups
from ..engine import copies_of as _copies_of
from ..engine import map_partitions_with_offset, partition_offsets

_OWNER = "reidentification_risk"
ROWS_PER_BUCKET = 500_000


def _reference(ddf, qis: list[str], categorical: list[str]) -> pd.DataFrame:
    """A small frame with the original's dtypes and, for non-Categorical categorical QIs, its levels."""
    import dask

    meta = ddf._meta[qis]
    need = [c for c in categorical if not isinstance(meta[c].dtype, pd.CategoricalDtype)]
    levels: dict[str, list] = {}
    if need:
        parts = dask.compute(*[dask.delayed(lambda p: {c: set(pd.unique(p[c].dropna()).tolist()) for c in need})(p)
                               for p in ddf[need].to_delayed()])
        for c in need:
            levels[c] = sorted(set().union(*[pr[c] for pr in parts]), key=str)
    width = max([len(v) for v in levels.values()] + [1])
    cols = {}
    for c in qis:
        if c in levels:
            vals = levels[c] + [levels[c][0]] * (width - len(levels[c])) if levels[c] else [None] * width
            cols[c] = pd.Series(vals).astype(meta[c].dtype) if levels[c] else pd.Series(vals, dtype=meta[c].dtype)
        else:
            cols[c] = pd.Series(pd.array([None] * width, dtype=meta[c].dtype)) if isinstance(meta[c].dtype, pd.CategoricalDtype) \
                else pd.Series(np.zeros(width), dtype=meta[c].dtype)
    return pd.DataFrame(cols)


def _split_kinds(ddf, qis: list[str]) -> tuple[list[str], list[str]]:
    from ..engine import Frame
    from ..schema import Schema

    schema = Schema.infer(Frame(ddf[qis]).stand_in()[0])
    return schema.categorical(qis), schema.continuous(qis)


def _bucket_of(codes: np.ndarray, B: int) -> np.ndarray:
    if codes.shape[1] == 0 or B == 1:
        return np.zeros(codes.shape[0], dtype=np.int64)
    h = pd.util.hash_pandas_object(pd.DataFrame(codes), index=False).to_numpy()
    return (h % np.uint64(B)).astype(np.int64)


def _split(part: pd.DataFrame, offset: int, enc: mt.Encoder, name: str, B: int, key_width: int,
           extra: str | None = None) -> list:
    codes, vals = enc.encode(part, name)
    pos = offset + np.arange(len(part), dtype=np.int64)
    b = _bucket_of(codes[:, :key_width], B)
    ex = None if extra is None else part[extra].to_numpy()
    return [(pos[b == k], codes[b == k], vals[b == k], None if ex is None else ex[b == k]) for k in range(B)]


def _cat(pieces: list) -> tuple:
    pos = np.concatenate([p[0] for p in pieces])
    codes = np.concatenate([p[1] for p in pieces])
    vals = np.concatenate([p[2] for p in pieces])
    ex = None if pieces[0][3] is None else np.concatenate([p[3] for p in pieces])
    return pos, codes, vals, ex


def _risk_bucket(orig_pieces: list, copy_pieces: list[list], cards: list[int], tols: list, index_name: Any):
    pos, t_codes, t_vals, _ = _cat(orig_pieces)
    order = np.argsort(pos, kind="stable")
    pos, t_codes, t_vals = pos[order], t_codes[order], t_vals[order]
    lo, hi = mt.box_bounds(t_vals, tols)
    n = len(pos)
    tally = MatchTally(n)  # the in-memory function's kernel, run on this bucket's records
    per_copy = []
    for pieces in copy_pieces:
        p_pos, p_codes, p_vals, _ = _cat(pieces)
        t_key, p_key = mt.joint_keys(t_codes, p_codes, cards=cards)
        s = mt.count_in_boxes(t_key, lo, hi, p_key, p_vals)
        # row-aligned check: the copy row of record i, if it is in this bucket
        o = np.argsort(p_pos, kind="stable")
        where = np.searchsorted(p_pos[o], pos)
        where_c = np.minimum(where, max(len(p_pos) - 1, 0))
        present = (where < len(p_pos)) & (p_pos[o][where_c] == pos) if len(p_pos) else np.zeros(n, dtype=bool)
        true_in = np.zeros(n, dtype=bool)
        if present.any():
            idx = o[where_c[present]]
            true_in[present] = mt.in_own_box(t_key[present], lo[present], hi[present], p_key[idx], p_vals[idx])
        _, unique = tally.add(s, true_in)
        # exact per-copy pieces: unique counts, and the histogram of s among true-in records
        hist_s, hist_c = np.unique(s[true_in], return_counts=True)
        per_copy.append({"nu": int(unique.sum()), "ntu": int((unique & true_in).sum()),
                         "hist": dict(zip(hist_s.tolist(), hist_c.tolist()))})
    records = pd.DataFrame({"position": pos, **tally.columns()})
    return records, per_copy


def reidentification_risk(original, synthetic: Any, quasi_identifiers: Sequence[str], tolerance: Any = None,
                          threshold: float = 0.5, by: str | None = None, n_buckets: int | None = None) -> RiskResult:
    """:func:`synthmi.evaluation.reidentification_risk` on dask DataFrames (see the module docstring).

    Row ``i`` (global position) of every copy is the released version of original
    row ``i``. Returns a :class:`~synthmi.evaluation.risk.RiskResult` whose
    ``records`` (and ``individual``) are dask objects with a ``position``
    column (global record position) instead of the original index; summaries,
    ``per_copy`` and ``by_group`` are small pandas/dict objects.
    """
    import dask
    import dask.dataframe as dd

    if isinstance(quasi_identifiers, str):
        quasi_identifiers = [quasi_identifiers]
    qis = list(quasi_identifiers)
    cols = list(original.columns)
    bad = [c for c in qis if c not in cols]
    if bad:
        raise ValueError(f"The 'quasi_identifiers' parameter names columns not in 'original': {bad}. Available columns: {cols}.")
    if not qis:
        raise param_error("quasi_identifiers", _OWNER, "a non-empty list of columns", qis)
    if by is not None and (not isinstance(by, str) or by not in cols):
        raise param_error("by", _OWNER, "a column name of 'original' (on Dask)", by)
    threshold = float(check_scalar(threshold, "threshold", _OWNER, lower=0.0, upper=1.0))
    copies = _copies_of(synthetic)
    for j, c in enumerate(copies):
        missing = [col for col in cols if col not in c.columns]
        extra = [col for col in c.columns if col not in cols]
        if missing or extra:
            raise ValueError(f"Columns of 'synthetic[{j}]' do not match the original: missing {missing}, unexpected {extra}.")
        for q in qis:
            if str(c._meta[q].dtype) != str(original._meta[q].dtype) or (
                    isinstance(original._meta[q].dtype, pd.CategoricalDtype)
                    and list(c._meta[q].cat.categories) != list(original._meta[q].cat.categories)):
                raise ValueError(f"Column '{q}' of 'synthetic[{j}]' has dtype {c._meta[q].dtype}, the original's is "
                                 f"{original._meta[q].dtype}; records are compared on it.")
    categorical, continuous = _split_kinds(original, qis)
    tol = mt.parse_tolerance(tolerance, categorical, continuous, _OWNER)
    ref = _reference(original, qis, categorical)
    enc = mt.Encoder(ref, categorical, continuous, "original")
    # offsets of the frames that are mapped: dask's read_parquet merges files into fewer partitions when
    # only some columns are read, so the whole frame's offsets do not fit its column projection
    o_frame = original[qis + ([by] if by and by not in qis else [])]
    o_off = partition_offsets(o_frame)
    n = int(o_off[-1])
    offs = []
    c_frames = [c[qis] for c in copies]
    for j, c in enumerate(c_frames):
        off = partition_offsets(c)
        if int(off[-1]) != n:
            raise ValueError(f"'synthetic[{j}]' has {int(off[-1])} rows but 'original' has {n}; re-identification risk "
                             "by matching needs partially synthetic copies, row-aligned with the original.")
        offs.append(off)
    B = int(n_buckets) if n_buckets else max(1, -(-n // ROWS_PER_BUCKET))
    kw = len(enc.cards)  # the exact key: categorical codes and missingness flags
    o_split = map_partitions_with_offset(o_frame, o_off, _split, enc, "original", B, kw, by)
    c_split = [map_partitions_with_offset(c, off, _split, enc, f"synthetic[{j}]", B, kw)
               for j, (c, off) in enumerate(zip(c_frames, offs))]
    tols = [tol[c] for c in continuous]
    f = dask.delayed(_risk_bucket, pure=True, nout=2)
    results = []
    labels = []
    for k in range(B):
        op = [s[k] for s in o_split]
        results.append(f(op, [[s[k] for s in cs] for cs in c_split], enc.cards, tols, None))
        if by:
            labels.append(dask.delayed(lambda pieces: _cat(pieces)[3][np.argsort(_cat(pieces)[0], kind="stable")])(op))
    rec_parts = [r[0] for r in results]
    meta = pd.DataFrame({"position": np.zeros(0, np.int64), "risk": np.zeros(0), "mean_n_matches": np.zeros(0),
                         "true_unique_copies": np.zeros(0, np.int64), "false_unique_copies": np.zeros(0, np.int64),
                         "no_match_copies": np.zeros(0, np.int64)})
    if by:
        rec_parts = [dask.delayed(lambda r, g: r.assign(group=g))(r, g) for r, g in zip(rec_parts, labels)]
        meta = meta.assign(group=pd.Series([], dtype=original._meta[by].dtype))
    records = dd.from_delayed(rec_parts, meta=meta, verify_meta=False).persist()
    per_bucket_copy = dask.compute(*[r[1] for r in results])
    m_copies = len(copies)

    # summaries from exact per-bucket pieces
    def summarise(rec: pd.DataFrame | None, agg: dict) -> dict:
        nn = agg["n"]
        risk_sum = agg["risk_sum"]
        nu = agg["nu"]
        ntu = agg["ntu"]
        return {
            "n_records": int(nn),
            "expected_matches": float(risk_sum),
            "true_match_rate": ntu / (nn * m_copies) if nn else np.nan,
            "false_match_rate": (nu - ntu) / nu if nu > 0 else np.nan,
            "share_above_threshold": agg["above"] / nn if nn else np.nan,
            "mean_risk": float(risk_sum) / nn if nn else np.nan,
            "max_risk": agg["max"] if nn else np.nan,
            "unique_match_share": nu / (nn * m_copies) if nn else np.nan,
            "no_match_share": agg["none"] / (nn * m_copies) if nn else np.nan,
        }

    def aggs(rec):
        return {
            "n": len(rec), "risk_sum": rec["risk"].sum(), "nu": (rec["true_unique_copies"] + rec["false_unique_copies"]).sum(),
            "ntu": rec["true_unique_copies"].sum(), "above": (rec["risk"] > threshold).sum(), "max": rec["risk"].max(),
            "none": rec["no_match_copies"].sum(),
        }

    (tot,) = dask.compute(aggs(records))
    tot = {k: (float(v) if k in ("risk_sum", "max") else int(v)) for k, v in tot.items()}
    figures = summarise(None, tot)
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
        em = float(sum(c_ / s_ for s_, c_ in sorted(hist.items())))
        per_copy.append({"expected_matches": em, "true_match_rate": ntu / n,
                         "false_match_rate": (nu - ntu) / nu if nu else np.nan, "n_unique_matches": nu})
    by_group = None
    if by:
        g = records.groupby("group", observed=True, dropna=False)
        parts = dask.compute(
            g["risk"].sum(), g["risk"].count(), g["risk"].max(),
            g["true_unique_copies"].sum(), g["false_unique_copies"].sum(), g["no_match_copies"].sum(),
            records.assign(above=records["risk"] > threshold).groupby("group", observed=True, dropna=False)["above"].sum(),
        )
        rs, cnt, mx, tu, fu, none, above = parts
        dt = original._meta[by].dtype
        levels = list(dt.categories) if isinstance(dt, pd.CategoricalDtype) else sorted([x for x in cnt.index if not pd.isna(x)])
        rows = {}
        for lev in levels + ([np.nan] if any(pd.isna(x) for x in cnt.index) else []):
            key = [x for x in cnt.index if (pd.isna(x) and pd.isna(lev)) or x == lev]
            if not key:
                continue
            key = key[0]
            agg = {"n": int(cnt[key]), "risk_sum": float(rs[key]), "nu": int(tu[key] + fu[key]), "ntu": int(tu[key]),
                   "above": int(above[key]), "max": float(mx[key]), "none": int(none[key])}
            rows["<missing>" if pd.isna(lev) else lev] = summarise(None, agg)
        by_group = pd.DataFrame.from_dict(rows, orient="index")
        by_group.index.name = by
    settings = {
        "quasi_identifiers": qis, "categorical": categorical, "continuous": continuous,
        "tolerance": {c: tol[c].to_json() for c in continuous}, "threshold": threshold, "by": by,
        "missing_rule": "a missing value matches only a missing value",
        "engine": f"dask: shuffle on the exact-match key into {B} buckets",
    }
    return RiskResult(
        individual=records[["position", "risk"]],
        figures=figures,
        by_group=by_group,
        per_copy=pd.DataFrame(per_copy, index=pd.RangeIndex(1, m_copies + 1, name="copy")),
        records=records,
        settings=settings,
    )


# --------------------------------------------------------------------------- subgroups
def _subgroup_bucket(pieces: list, cards: list[int], n_cat: int, tols: list, k0: int) -> pd.DataFrame:
    pos, codes, vals, _ = _cat(pieces)
    order = np.argsort(pos, kind="stable")
    pos, codes, vals = pos[order], codes[order], vals[order]
    if len(pos) == 0:
        return pd.DataFrame({"position": pos, "risk_subgroup": np.zeros(0, np.int64),
                             "n_same_categorical": np.zeros(0, np.int64), "n_close": np.zeros(0, np.int64)})
    (key,) = mt.joint_keys(codes, cards=cards)
    (cat_key,) = mt.joint_keys(codes[:, :n_cat], cards=cards[:n_cat])
    same_cat = np.bincount(cat_key)[cat_key] - 1
    lo, hi = mt.box_bounds(vals, tols)
    close = mt.count_in_boxes(key, lo, hi, key, vals) - 1
    return pd.DataFrame({"position": pos, "risk_subgroup": np.where(close >= k0, 0, np.where(same_cat >= k0, 1, 2)),
                         "n_same_categorical": same_cat, "n_close": close})


def risk_subgroups(ddf, quasi_identifiers: Sequence[str], k0: int, tolerance: Any = None,
                   n_buckets: int | None = None) -> RiskSubgroups:
    """:func:`synthmi.evaluation.risk_subgroups` on a dask DataFrame (shuffle on the categorical key).

    ``labels``, ``n_same_categorical`` and ``n_close`` are returned as one dask
    DataFrame (``RiskSubgroups.labels``, with a ``position`` column); ``counts`` is exact.
    """
    import dask
    import dask.dataframe as dd

    if isinstance(quasi_identifiers, str):
        quasi_identifiers = [quasi_identifiers]
    qis = list(quasi_identifiers)
    bad = [c for c in qis if c not in ddf.columns]
    if bad or not qis:
        raise param_error("quasi_identifiers", "risk_subgroups", f"a non-empty list of columns of 'df' {list(ddf.columns)}", qis)
    k0 = int(check_scalar(k0, "k0", "risk_subgroups", kind="int", lower=1))
    categorical, continuous = _split_kinds(ddf, qis)
    tol = mt.parse_tolerance(tolerance, categorical, continuous, "risk_subgroups")
    enc = mt.Encoder(_reference(ddf, qis, categorical), categorical, continuous, "df")
    frame = ddf[qis]
    off = partition_offsets(frame)  # of the projection that is mapped (see reidentification_risk)
    n = int(off[-1])
    B = int(n_buckets) if n_buckets else max(1, -(-n // ROWS_PER_BUCKET))
    # bucket by the categorical codes only: a_i and c_i both count within them
    splits = map_partitions_with_offset(frame, off, _split, enc, "df", B, len(categorical))
    f = dask.delayed(_subgroup_bucket, pure=True)
    parts = [f([s[k] for s in splits], enc.cards, len(categorical), [tol[c] for c in continuous], k0) for k in range(B)]
    meta = pd.DataFrame({"position": np.zeros(0, np.int64), "risk_subgroup": np.zeros(0, np.int64),
                         "n_same_categorical": np.zeros(0, np.int64), "n_close": np.zeros(0, np.int64)})
    table = dd.from_delayed(parts, meta=meta, verify_meta=False).persist()
    counts = table["risk_subgroup"].value_counts().compute().reindex(range(3), fill_value=0).to_numpy()
    return RiskSubgroups(
        labels=table,
        counts=pd.Series(counts, index=pd.Index(RISK_LEVELS, name="risk_subgroup"), name="count"),
        n_same_categorical=table[["position", "n_same_categorical"]],
        n_close=table[["position", "n_close"]],
        settings={
            "quasi_identifiers": qis, "categorical": categorical, "continuous": continuous, "k0": k0,
            "tolerance": {c: tol[c].to_json() for c in continuous},
            "missing_rule": "a missing value matches only a missing value",
            "engine": f"dask: shuffle on the categorical key into {B} buckets",
        },
    )
