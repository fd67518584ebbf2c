"""Attribute disclosure (DiSCO, DCAP, TCAP, repU, matching attribute risk) on Dask, by the key shuffle.

Every measure of :func:`synthmi.evaluation.attribute_disclosure` compares a
person only with records that share the person's categorical
quasi-identifiers (and missingness of the continuous ones): the key tables
use exact keys (finer), the matching measure the identity-risk rule. So the
original and every copy are sent to ``B`` buckets by a hash of that key and
the in-memory function runs on each bucket, once per copy, giving every
record's per-copy values exactly; they are averaged over copies in copy order
as in memory. Copy summaries are sums over buckets (exact for the shares,
summation order for DCAP and the expected correct attributions).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validate import param_error
from ..evaluation import _matching as mt
from ..evaluation.attribute_disclosure import (
    _RECORD_COLS,
    KEY_MEASURES,
    MATCHING_MEASURES,
    AttributeDisclosureResult,
)
from ..evaluation.attribute_disclosure import attribute_disclosure as _memory
from .risk import ROWS_PER_BUCKET, _bucket_of, _copies_of, _reference, _split_kinds
from ..engine import map_partitions_with_offset, partition_offsets

_COUNT_KEYS = ("DiSCO", "DiS", "iS", "Dorig", "DiSDiO", "repU", "UiO", "UiOiS", "all_matches_correct_share",
               "no_match_share")


def _split_frames(part: pd.DataFrame, offset: int, enc: mt.Encoder, name: str, B: int) -> list[pd.DataFrame]:
    codes, _ = enc.encode(part, name)
    b = _bucket_of(codes, B)
    part = part.assign(__pos=offset + np.arange(len(part), dtype=np.int64))
    return [part[b == k] for k in range(B)]


def _uis_count(cp: pd.DataFrame, qis: list[str], meta: pd.DataFrame) -> int:
    """Copy records whose exact key is unique in the copy (the numerator of UiS), as in memory."""
    if len(cp) == 0:
        return 0
    cols = []
    for c in qis:
        s = cp[c].astype(object)
        if pd.api.types.is_numeric_dtype(meta[c]) and not isinstance(meta[c].dtype, pd.CategoricalDtype):
            s = pd.to_numeric(s)
        cols.append(pd.factorize(s, use_na_sentinel=False)[0])
    key = mt._dense_rows(cols)
    return int((np.bincount(key)[key] == 1).sum())


def _attr_bucket(o_pieces, c_pieces, qis, target, tolerance, target_tolerance, threshold, kinds, meta):
    orig = pd.concat(o_pieces).sort_values("__pos", kind="stable")
    copies = [pd.concat(p) for p in c_pieces]
    m = len(copies)
    sums = [{k: 0.0 for k in (*_COUNT_KEYS, "DCAP", "expected_correct_attributions", "above", "UiS_count", "n_s")}
            for _ in range(m)]
    for j, cp in enumerate(copies):
        sums[j]["UiS_count"] = _uis_count(cp, qis, meta)
        sums[j]["n_s"] = len(cp)
    if len(orig) == 0:
        return None, sums
    got = (mt.split_kinds(orig, qis), mt.split_kinds(orig, [target]))
    if got != kinds:
        raise ValueError(
            "A bucket of the key shuffle infers other column kinds than the whole data (a continuous column "
            f"holding only 0/1 values there): {kinds} vs {got}. Give such columns a non-0/1 coding.")
    n_b = len(orig)
    acc = {c: np.zeros(n_b) for c in _RECORD_COLS}
    n_sum = np.zeros(n_b)
    o = orig.drop(columns="__pos")
    for j, cp in enumerate(copies):
        if len(cp) == 0:  # nothing to look up: every record has no match and no key in the copy
            acc["no_match"] += 1.0
            sums[j]["no_match_share"] += n_b
            r0 = _memory(o, o.iloc[:1], qis, target, tolerance, target_tolerance, threshold)  # for Dorig / UiO
            sums[j]["Dorig"] += round(r0.per_copy["Dorig"].iloc[0] * n_b)
            sums[j]["UiO"] += round(r0.per_copy["UiO"].iloc[0] * n_b)
            continue
        r = _memory(o, cp.drop(columns="__pos"), qis, target, tolerance, target_tolerance, threshold)
        for c in _RECORD_COLS:
            acc[c] += r.records[c].to_numpy()
        n_sum += r.records["mean_n_matches"].to_numpy()
        pc = r.per_copy.iloc[0]
        for k in _COUNT_KEYS:
            sums[j][k] += round(pc[k] * n_b)
        sums[j]["DCAP"] += float(r.records["dcap"].sum())
        sums[j]["expected_correct_attributions"] += float(r.records["attribute_risk"].sum())
        sums[j]["above"] += int((r.records["attribute_risk"] > threshold).sum())
    rec = pd.DataFrame({c: acc[c] / m for c in _RECORD_COLS})
    rec["mean_n_matches"] = n_sum / m
    rec.insert(0, "position", orig["__pos"].to_numpy())
    return rec, sums


def attribute_disclosure(original, synthetic: Any, quasi_identifiers: Sequence[str], target: str, tolerance: Any = None,
                         target_tolerance: float | None = None, threshold: float = 0.5,
                         n_buckets: int | None = None) -> AttributeDisclosureResult:
    """:func:`synthmi.evaluation.attribute_disclosure` on dask DataFrames (see the module docstring).

    ``records`` is a pandas frame with a ``position`` column (global record
    position) in position order; ``by`` is not offered here (group the records).
    """
    import dask

    if isinstance(quasi_identifiers, str):
        quasi_identifiers = [quasi_identifiers]
    qis = list(quasi_identifiers)
    cols = list(original.columns)
    bad = [c for c in [*qis, target] if c not in cols]
    if bad or not qis:
        raise param_error("quasi_identifiers", "attribute_disclosure", f"non-empty, with the target, columns of 'original' {cols}", bad or qis)
    if target in qis:
        raise param_error("target", "attribute_disclosure", "a column that is not a quasi-identifier", target)
    copies = _copies_of(synthetic)
    kinds = (_split_kinds(original, qis), _split_kinds(original, [target]))
    categorical, continuous = kinds[0]
    enc = mt.Encoder(_reference(original, qis, categorical), categorical, continuous, "original")
    use = [*qis, target]
    off = partition_offsets(original[use])  # of the projection that is mapped (a read_parquet may merge files)
    n = int(off[-1])
    B = int(n_buckets) if n_buckets else max(1, -(-n // ROWS_PER_BUCKET))
    o_split = map_partitions_with_offset(original[use], off, _split_frames, enc, "original", B)
    c_split = [map_partitions_with_offset(c[use], partition_offsets(c[use]), _split_frames, enc, f"synthetic[{j}]", B)
               for j, c in enumerate(copies)]
    f = dask.delayed(_attr_bucket, pure=True, nout=2)
    meta = original._meta
    out = dask.compute(*[f([s[k] for s in o_split], [[s[k] for s in cs] for cs in c_split], qis, target, tolerance,
                           target_tolerance, threshold, kinds, meta) for k in range(B)])
    recs = [r for r, _ in out if r is not None]
    records = pd.concat(recs).sort_values("position", kind="stable").reset_index(drop=True)
    m = len(copies)
    per_copy = []
    for j in range(m):
        t = {k: sum(b[j][k] for _, b in out) for k in out[0][1][j]}
        dis = t["DiS"] / n
        row = {k: t[k] / n for k in _COUNT_KEYS}
        row["DCAP"] = t["DCAP"] / n
        row["TCAP"] = (t["DiSCO"] / n) / dis if dis > 0 else np.nan
        row["UiS"] = t["UiS_count"] / t["n_s"] if t["n_s"] else np.nan
        row["expected_correct_attributions"] = t["expected_correct_attributions"]
        row["attribute_risk_mean"] = t["expected_correct_attributions"] / n
        row["share_above_threshold"] = t["above"] / n
        per_copy.append(row)
    pc = pd.DataFrame(per_copy, index=pd.RangeIndex(1, m + 1, name="copy"))
    figures: dict[str, Any] = {"n_records": n, "n_copies": m, "threshold": float(threshold)}
    for k in (*KEY_MEASURES, *MATCHING_MEASURES):
        col = pc[k].to_numpy(dtype=float) if k in pc else np.array([np.nan])
        figures[k] = float(np.nanmean(col)) if np.isfinite(col).any() else np.nan
    figures["share_above_threshold"] = float((records["attribute_risk"] > threshold).mean())
    figures["expected_correct_attributions"] = float(records["attribute_risk"].sum())
    settings = {"quasi_identifiers": qis, "target": target, "categorical": categorical, "continuous": continuous,
                "threshold": float(threshold), "engine": f"dask: shuffle on the exact-match key into {B} buckets"}
    return AttributeDisclosureResult(figures=figures, per_copy=pc, records=records, by_group=None, settings=settings)
