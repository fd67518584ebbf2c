"""Counting quasi-identifier matches without comparing all pairs (shared by
:mod:`synthmi.evaluation.risk` and :mod:`synthmi.evaluation.subgroups`).

A *target* ``t`` (one row of quasi-identifiers) matches a *point* ``y`` when

* every categorical quasi-identifier is equal, and
* every continuous quasi-identifier ``d`` lies in the closed box
  ``lo_d <= y_d <= hi_d`` with ``lo_d = t_d - h_d`` and ``hi_d = t_d + h_d``,
  where ``h_d = tol_d`` (absolute tolerance) or ``h_d = r_d * |t_d|``
  (relative tolerance). ``lo_d`` and ``hi_d`` are computed once in float64
  and compared directly, so the rule is exact and reproducible (no
  ``|y - t| <= h`` rounding differences).

Missing values: a missing value matches only a missing value, in categorical
and continuous quasi-identifiers alike. It is implemented by putting "level
missing" (categorical) and the missingness flag (continuous) into the
categorical key and setting the missing continuous value to 0 on both sides,
so that all records missing the same continuous variables sit at one point.

Algorithm: rows are reduced to one integer key over the categorical
quasi-identifiers and missingness flags. With no continuous quasi-identifier
the match count is a table lookup (``bincount``). With one, values are ranked
jointly with the box bounds, points are sorted by ``key * R + rank`` and two
``searchsorted`` calls give each target's count: O(n log n) time and O(n)
memory, however many records match. With several, tied points are merged
(counted once with their multiplicity) and tied boxes queried once; the
continuous variable whose sorted windows are narrowest is used as above, and
the distinct points in each window are checked exactly on the other
variables, in chunks of at most ``MAX_CANDIDATES`` candidate pairs:
O(n log n + C) time for C window candidates among distinct points and boxes,
memory O(n + MAX_CANDIDATES). C is not bounded by O(n log n) in general
(wide windows on every variable); on Adult with age and hours per week
(tolerance 2 each) it is about 1.4e6 per copy (9.5k distinct boxes, 16k
distinct points).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .._validate import param_error
from ..engine import bucket_of, distinct_values, meta_of
from ..schema import Schema
from ..errors import ColumnError

# Upper bound on candidate pairs materialised at once in the several-continuous
# case: 4M pairs ~ 100 MB of temporaries.
MAX_CANDIDATES = 4_000_000


@dataclass(frozen=True)
class Tolerance:
    """Half-width of the matching box for one continuous quasi-identifier."""

    value: float
    relative: bool = False

    def half_width(self, t: np.ndarray) -> np.ndarray:
        return self.value * np.abs(t) if self.relative else np.full_like(t, self.value)

    def to_json(self) -> str | float:
        return f"{self.value * 100:g}%" if self.relative else self.value


def split_kinds(df: Any, quasi_identifiers: list[str], spec: Any = None) -> tuple[list[str], list[str]]:
    """(categorical, continuous) quasi-identifiers: by the spec's kinds when given
    (for the columns it knows), else by the schema inferred from dtypes.

    ``df`` is a pandas or a Dask frame. Only the distinct values of numeric
    columns decide a kind (a numeric column with at most the values 0 and 1 is
    binary, :class:`~synthmi.schema.Schema`), so they are gathered through the
    engine (at most three per column) and the schema is inferred from a small
    stand-in with the same dtypes: the same kinds for either frame type.
    """
    if spec is not None and all(c in spec for c in quasi_identifiers):
        cat = [c for c in quasi_identifiers if spec[c].is_categorical]
        return cat, [c for c in quasi_identifiers if c not in cat]
    schema = Schema.infer(_kind_stand_in(df, quasi_identifiers))
    return schema.categorical(quasi_identifiers), schema.continuous(quasi_identifiers)


def _kind_stand_in(df: Any, columns: list[str]) -> pd.DataFrame:
    """A frame of at most three rows with ``df``'s dtypes whose numeric columns have the same
    kind as in ``df``: their own distinct values when there are at most two, else three non-0/1 ones."""
    meta = meta_of(df)[columns]
    num = [c for c in columns if pd.api.types.is_numeric_dtype(meta[c].dtype)
           and not isinstance(meta[c].dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(meta[c].dtype)]
    values = distinct_values(df, num, cap=2) if num else {}
    cols = {}
    for c in columns:
        if c in num:
            v = values[c]
            v = [2, 3, 4] if v is None else (sorted(v) or [np.nan])
            cols[c] = pd.Series(v + [v[0]] * (3 - len(v)), dtype=meta[c].dtype)
        elif pd.api.types.is_bool_dtype(meta[c].dtype) and not isinstance(meta[c].dtype, pd.CategoricalDtype):
            cols[c] = pd.Series([False, True, False], dtype=meta[c].dtype)
        else:
            cols[c] = pd.Series(pd.array([None] * 3, dtype=meta[c].dtype))
    return pd.DataFrame(cols)


def reference(df: Any, quasi_identifiers: list[str], categorical: list[str]) -> pd.DataFrame:
    """A small frame with ``df``'s dtypes whose categorical QIs carry every level of ``df``
    (the categories of a Categorical, else the observed values sorted by their text): the
    reference of an :class:`Encoder` shared by every partition and every frame."""
    meta = meta_of(df)[quasi_identifiers]
    need = [c for c in categorical if not isinstance(meta[c].dtype, pd.CategoricalDtype)]
    found = distinct_values(df, need, cap=None) if need else {}
    levels = {c: sorted(found[c], key=str) for c in need}
    width = max([len(v) for v in levels.values()] + [1])
    cols = {}
    for c in quasi_identifiers:
        if c in levels:
            lv = levels[c]
            cols[c] = pd.Series(lv + [lv[0]] * (width - len(lv))).astype(meta[c].dtype) if lv \
                else pd.Series(pd.array([None] * width, dtype=meta[c].dtype))
        elif isinstance(meta[c].dtype, pd.CategoricalDtype):
            cols[c] = pd.Series(pd.array([None] * width, dtype=meta[c].dtype))
        else:
            cols[c] = pd.Series(np.zeros(width), dtype=meta[c].dtype)
    return pd.DataFrame(cols)


def split_by_key(part: pd.DataFrame, offset: int, enc: "Encoder", name: str, n_buckets: int, key_width: int,
                 extra: str | None = None) -> list[tuple]:
    """One partition's rows per key bucket (:func:`synthmi.engine.key_buckets`): for each
    bucket, (global positions, codes, values, ``extra`` column or None). The key is the
    first ``key_width`` code columns."""
    codes, vals = enc.encode(part, name)
    pos = offset + np.arange(len(part), dtype=np.int64)
    b = bucket_of(codes[:, :key_width], n_buckets)
    ex = None if extra is None else part[extra].to_numpy()
    return [(pos[b == k], codes[b == k], vals[b == k], None if ex is None else ex[b == k]) for k in range(n_buckets)]


def join_pieces(pieces: list[tuple]) -> tuple:
    """One bucket from its pieces (:func:`split_by_key`), rows in global position order.

    The pieces come in partition order and keep their partition's row order, so
    concatenating them already orders the rows by global position.
    """
    if len(pieces) == 1:
        return pieces[0]
    ex = None if pieces[0][3] is None else np.concatenate([p[3] for p in pieces])
    return (np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]),
            np.concatenate([p[2] for p in pieces]), ex)


def parse_tolerance(
    tolerance: Any, categorical: list[str], continuous: list[str], owner: str
) -> dict[str, Tolerance]:
    """Normalise the user's tolerance into one :class:`Tolerance` per continuous QI.

    ``None`` -> exact matching (0) on every continuous QI; a number -> that
    absolute tolerance on every continuous QI; a mapping column -> spec where
    spec is a number (absolute), a string ``"2"`` (absolute) or ``"5%"``
    (relative, 5% of the target's absolute value), or a pair
    ``("absolute" | "relative", value)``. Columns not named get 0.
    """
    out = {c: Tolerance(0.0) for c in continuous}
    if tolerance is None:
        return out
    if isinstance(tolerance, Mapping):
        items = dict(tolerance)
    else:
        items = {c: tolerance for c in continuous}
    for col, spec in items.items():
        if col not in continuous:
            if col in categorical:
                raise param_error(
                    "tolerance", owner,
                    "given for continuous quasi-identifiers only (categorical ones match exactly)",
                    f"a tolerance for categorical column {col!r}",
                )
            raise param_error(
                "tolerance", owner, f"keyed by continuous quasi-identifiers {continuous}", f"column {col!r}"
            )
        out[col] = _parse_one(col, spec, owner)
    return out


def _parse_one(col: str, spec: Any, owner: str) -> Tolerance:
    relative = False
    value: Any = spec
    if isinstance(spec, tuple) and len(spec) == 2:
        kind, value = spec
        if kind not in ("absolute", "relative"):
            raise param_error("tolerance", owner, "('absolute' | 'relative', value)", spec)
        relative = kind == "relative"
    elif isinstance(spec, str):
        text = spec.strip()
        try:
            if text.endswith("%"):
                value, relative = float(text[:-1]) / 100.0, True
            else:
                value = float(text)
        except ValueError:
            raise param_error(
                "tolerance", owner, f"a number or a percentage like '5%' for column {col!r}", spec
            ) from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise param_error("tolerance", owner, f"a finite number for column {col!r}", spec)
    if value < 0:
        raise param_error("tolerance", owner, f">= 0 for column {col!r}", spec)
    return Tolerance(float(value), relative)


class Encoder:
    """Integer codes for categorical QIs and float values for continuous QIs,
    with levels fixed by a reference frame so that several frames share them.

    Categorical code: ``0..K-1`` for the reference's levels, ``K`` for
    missing, ``-1`` for a level the reference does not have (such a row can
    never match a reference row).
    """

    def __init__(self, reference: pd.DataFrame, categorical: list[str], continuous: list[str], name: str):
        self.categorical = categorical
        self.continuous = continuous
        self.levels: dict[str, pd.Index] = {}
        for c in categorical:
            s = reference[c]
            if isinstance(s.dtype, pd.CategoricalDtype):
                self.levels[c] = pd.Index(s.cat.categories)
            else:
                self.levels[c] = pd.Index(pd.unique(s.dropna()))
        self.cards = [len(self.levels[c]) + 1 for c in categorical] + [2] * len(continuous)
        self.name = name

    def _codes(self, s: pd.Series, levels: pd.Index) -> np.ndarray:
        k = len(levels)
        if isinstance(s.dtype, pd.CategoricalDtype) and s.cat.categories.equals(levels):
            codes = s.cat.codes.to_numpy().astype(np.int64)
            codes[codes < 0] = k
            return codes
        na = s.isna().to_numpy()
        # a fresh Index per call: the Dask paths encode partitions in threads that share this
        # encoder, and an Index's lazily built hash table is not thread-safe (pandas issue 21150:
        # a concurrent first get_indexer can see the index as non-unique and raise InvalidIndexError;
        # copy() would share the cache)
        levels = pd.Index(levels.to_numpy(), dtype=levels.dtype)
        codes = levels.get_indexer(np.asarray(s, dtype=object)).astype(np.int64)
        codes[na] = k
        return codes

    def encode(self, df: pd.DataFrame, df_name: str) -> tuple[np.ndarray, np.ndarray]:
        """(codes of shape (n, c + d), values of shape (n, d)); missing values -> 0."""
        n = len(df)
        codes = np.empty((n, len(self.cards)), dtype=np.int64)
        for j, c in enumerate(self.categorical):
            codes[:, j] = self._codes(df[c], self.levels[c])
        vals = np.empty((n, len(self.continuous)), dtype=np.float64)
        off = len(self.categorical)
        for j, c in enumerate(self.continuous):
            v = pd.to_numeric(df[c]).to_numpy(dtype=np.float64, na_value=np.nan)
            miss = np.isnan(v)
            if np.isinf(v).any():
                raise ColumnError(f"Column '{c}' of '{df_name}' has infinite values; matching needs finite ones.")
            codes[:, off + j] = miss
            vals[:, j] = np.where(miss, 0.0, v)
        return codes, vals


def joint_keys(*code_blocks: np.ndarray, cards: list[int]) -> list[np.ndarray]:
    """One dense int64 key per row, consistent across blocks; -1 if any code is -1."""
    sizes = [len(b) for b in code_blocks]
    stacked = np.concatenate(code_blocks, axis=0)
    bad = (stacked < 0).any(axis=1)
    if not cards:
        key = np.zeros(len(stacked), dtype=np.int64)
    elif float(np.prod([float(c) for c in cards])) < 2.0**62:
        key = np.zeros(len(stacked), dtype=np.int64)
        for j, c in enumerate(cards):
            key = key * c + stacked[:, j]
        _, key = np.unique(key, return_inverse=True)
    else:  # too many combinations for a mixed-radix integer: rank the rows themselves
        _, key = np.unique(stacked, axis=0, return_inverse=True)
    key = np.asarray(key, dtype=np.int64).reshape(-1)
    key[bad] = -1
    return list(np.split(key, np.cumsum(sizes)[:-1]))


def box_bounds(values: np.ndarray, tolerances: list[Tolerance]) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper box bounds per target and continuous QI (float64)."""
    lo = np.empty_like(values)
    hi = np.empty_like(values)
    for j, tol in enumerate(tolerances):
        h = tol.half_width(values[:, j])
        lo[:, j] = values[:, j] - h
        hi[:, j] = values[:, j] + h
    return lo, hi


def _window(t_key, lo, hi, p_key, pv):
    """Sorted order of points and, per target, the half-open window [a, b) of
    points with the same key and value in [lo, hi]."""
    n_p = len(pv)
    allv = np.concatenate([pv, lo, hi])
    uniq, inv = np.unique(allv, return_inverse=True)
    r = np.int64(len(uniq))
    inv = inv.astype(np.int64).reshape(-1)
    comp = p_key * r + inv[:n_p]
    order = np.argsort(comp, kind="stable")
    comp_sorted = comp[order]
    q_lo = t_key * r + inv[n_p : n_p + len(lo)]
    q_hi = t_key * r + inv[n_p + len(lo) :]
    # Sorted needles make searchsorted cache-friendly (about 5x faster here);
    # q_hi is nearly sorted in the same order.
    q_order = np.argsort(q_lo)
    a = np.empty(len(lo), dtype=np.int64)
    b = np.empty(len(lo), dtype=np.int64)
    a[q_order] = np.searchsorted(comp_sorted, q_lo[q_order], side="left")
    b[q_order] = np.searchsorted(comp_sorted, q_hi[q_order], side="right")
    return order, a, b


def count_in_boxes(
    t_key: np.ndarray, lo: np.ndarray, hi: np.ndarray, p_key: np.ndarray, p_val: np.ndarray
) -> np.ndarray:
    """Number of points (key, values) inside each target's box (same key).

    Keys must be dense non-negative ints shared by both sides (see
    :func:`joint_keys`); points with key -1 never match; targets have key >= 0.
    """
    keep = p_key >= 0
    if not keep.all():
        p_key, p_val = p_key[keep], p_val[keep]
    n_t, d = lo.shape
    if n_t == 0 or len(p_key) == 0:
        return np.zeros(n_t, dtype=np.int64)
    if d == 0:
        size = int(max(t_key.max(), p_key.max() if len(p_key) else -1)) + 1
        return np.bincount(p_key, minlength=size)[t_key].astype(np.int64)
    if d == 1:
        _, a, b = _window(t_key, lo[:, 0], hi[:, 0], p_key, p_val[:, 0])
        return (b - a).astype(np.int64)
    # Several continuous QIs: tied points and tied boxes are common (integer ages,
    # hours); checking each distinct point once, weighted by its multiplicity,
    # and each distinct box once cuts the window candidates by the tie factor.
    p_cols, b_cols = [p_key], [t_key]
    for j in range(d):
        _, inv = np.unique(np.concatenate([p_val[:, j], lo[:, j], hi[:, j]]), return_inverse=True)
        inv = inv.reshape(-1)
        p_cols.append(inv[: len(p_key)])
        b_cols += [inv[len(p_key) : len(p_key) + n_t], inv[len(p_key) + n_t :]]
    _, p_first, p_weight = np.unique(_dense_rows(p_cols), return_index=True, return_counts=True)
    _, b_first, t_inv = np.unique(_dense_rows(b_cols), return_index=True, return_inverse=True)
    counts = _count_several(
        t_key[b_first], lo[b_first], hi[b_first], p_key[p_first], p_val[p_first], p_weight
    )
    return counts[np.asarray(t_inv).reshape(-1)]


def _dense_rows(cols: list[np.ndarray]) -> np.ndarray:
    """Dense int64 id of each row of small non-negative integer columns
    (pairwise mixed radix, re-densified after each step so nothing overflows)."""
    key = np.asarray(cols[0], dtype=np.int64)
    for c in cols[1:]:
        c = np.asarray(c, dtype=np.int64)
        key = key * (int(c.max()) + 1) + c
        _, key = np.unique(key, return_inverse=True)
        key = key.reshape(-1).astype(np.int64)
    return key


def _count_several(t_key, lo, hi, p_key, p_val, p_weight) -> np.ndarray:
    """Weighted box counts for d >= 2 continuous QIs (distinct boxes and points)."""
    n_t, d = lo.shape
    windows = [_window(t_key, lo[:, j], hi[:, j], p_key, p_val[:, j]) for j in range(d)]
    widths = [int((b - a).sum()) for _, a, b in windows]
    jstar = int(np.argmin(widths))
    order, a, b = windows[jstar]
    others = [j for j in range(d) if j != jstar]
    sizes = (b - a).astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(sizes)])
    counts = np.zeros(n_t, dtype=np.int64)
    s = 0
    while s < n_t:
        e = int(np.searchsorted(cum, cum[s] + MAX_CANDIDATES, side="right")) - 1
        e = min(max(e, s + 1), n_t)
        sz = sizes[s:e]
        tot = int(sz.sum())
        if tot:
            local = np.repeat(np.arange(e - s), sz)
            pos = np.arange(tot) - np.repeat(cum[s:e] - cum[s], sz) + np.repeat(a[s:e], sz)
            cand = order[pos]
            ok = np.ones(tot, dtype=bool)
            for j in others:
                v = p_val[cand, j]
                ok &= (lo[s + local, j] <= v) & (v <= hi[s + local, j])
            counts[s:e] = np.bincount(local[ok], weights=p_weight[cand[ok]], minlength=e - s).round().astype(np.int64)
        s = e
    return counts


def in_own_box(t_key, lo, hi, p_key, p_val) -> np.ndarray:
    """Row-aligned check: does point i lie in target i's box?"""
    ok = (p_key == t_key) & (p_key >= 0)
    if lo.shape[1]:
        ok &= ((lo <= p_val) & (p_val <= hi)).all(axis=1)
    return ok
