"""The engine under models and measures: one interface to a pandas or a Dask frame
(:class:`Frame`: reductions by sufficient statistics, maps over partitions with
record offsets; :class:`Remote`: objects kept where the partitions are), and the
Dask plumbing beneath it: type checks, record offsets and reductions whose
result does not depend on how the rows are partitioned. Layer 0: imports NumPy
and pandas, and Dask only inside functions; nothing from synthmi.

Why a *canonical* sum. Floating-point addition is not associative, so
``sum(partition sums)`` changes in the last bits with the partitioning, and
so would a posterior fitted from it and every copy drawn from that
posterior. :func:`canonical_sum` instead fixes the order of every addition
by global record position: records are cut into blocks of ``BLOCK``
consecutive positions, blocks into super-blocks of ``SUPER`` blocks; a
block's statistic is computed from exactly its rows, a super-block's is the
left-to-right sum of its blocks, and the total the left-to-right sum of the
super-blocks. A partition computes what lies wholly inside it and returns
the rest (block statistics of partial super-blocks, and the raw rows of
its at most two partial blocks, < 2 ``BLOCK`` rows); the client completes
the same tree. The result is bit-for-bit the same for 1, 4 or 16
partitions, and the client receives O(P (SUPER + BLOCK)) numbers for P
partitions, never the data.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from .errors import ColumnError, InputError, InputTypeError

BLOCK = 1024
SUPER = 64


def is_dask_frame(obj: Any) -> bool:
    """True for a ``dask.dataframe.DataFrame`` (without importing dask when it is absent)."""
    mod = type(obj).__module__
    if not (mod.startswith("dask") or "dask_expr" in mod):
        return False
    import dask.dataframe as dd

    return isinstance(obj, dd.DataFrame)


def refuse_dask(what: str, why: str, instead: str) -> None:
    """The one error raised by paths that do not run on Dask."""
    raise InputTypeError(f"{what} does not accept a dask DataFrame: {why}. {instead}")


def partition_offsets(ddf) -> np.ndarray:
    """Global position of the first record of each partition, plus the total (length P + 1)."""
    import dask

    lengths = dask.compute(*[dask.delayed(len)(p) for p in ddf.to_delayed()])
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))])


def map_partitions_with_offset(ddf, offsets: np.ndarray, fn: Callable, *args) -> list:
    """Delayed ``fn(partition, offset, *args)`` for every partition, in order.

    ``offsets`` must be :func:`partition_offsets` of this very frame: a column projection of a
    ``read_parquet`` frame can have fewer partitions than the whole frame (dask merges files when
    fewer columns are read), and other offsets would give records wrong positions.
    """
    import dask

    parts = ddf.to_delayed()
    if len(parts) != len(offsets) - 1:
        raise InputError(f"{len(offsets) - 1} partition offsets given for a frame of {len(parts)} partitions; "
                         "compute them with partition_offsets() on the frame that is mapped.")
    f = dask.delayed(fn, pure=True)
    return [f(p, int(o), *args) for p, o in zip(parts, offsets[:-1])]


def _add(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b))


def _fold(stats: list[tuple]) -> tuple:
    out = stats[0]
    for s in stats[1:]:
        out = _add(out, s)
    return out


def _partition_blocks(part: pd.DataFrame, offset: int, fn: Callable[[pd.DataFrame], tuple], block: int, sup: int):
    """What one partition contributes to the canonical tree (see the module docstring)."""
    n = len(part)
    start, end = offset, offset + n
    supers: dict[int, tuple] = {}
    blocks: dict[int, tuple] = {}
    frags: list[tuple[int, int, pd.DataFrame]] = []
    b0 = -(-start // block)  # first block wholly inside
    b1 = end // block  # one past the last block wholly inside
    if b1 <= b0:  # no whole block: one fragment, or two either side of a block boundary
        if n:
            cut = (start // block + 1) * block
            if end <= cut:
                frags.append((start // block, start, part))
            else:
                frags.append((start // block, start, part.iloc[: cut - start]))
                frags.append((cut // block, cut, part.iloc[cut - start:]))
        return supers, blocks, frags
    if start < b0 * block:
        frags.append((start // block, start, part.iloc[: b0 * block - start]))
    if end > b1 * block:
        frags.append((b1, b1 * block, part.iloc[b1 * block - start:]))
    b = b0
    while b < b1:
        s = b // sup
        if b % sup == 0 and (s + 1) * sup <= b1:
            lo = b * block - start
            stats = [fn(part.iloc[lo + k * block: lo + (k + 1) * block]) for k in range(sup)]
            supers[s] = _fold(stats)
            b += sup
        else:
            lo = b * block - start
            blocks[b] = fn(part.iloc[lo: lo + block])
            b += 1
    return supers, blocks, frags


def canonical_sum(ddf, offsets: np.ndarray, fn: Callable[[pd.DataFrame], tuple],
                  block: int = BLOCK, sup: int = SUPER) -> tuple:
    """Sum of ``fn`` over the rows of ``ddf``, in an order fixed by record position.

    ``fn`` maps a pandas frame of consecutive rows to a tuple of NumPy arrays
    (or floats) that add. The result is identical for every partitioning of
    the same rows.
    """
    import dask

    parts = dask.compute(*map_partitions_with_offset(ddf, offsets, _partition_blocks, fn, block, sup))
    n_total = int(offsets[-1])
    supers: dict[int, tuple] = {}
    blocks: dict[int, tuple] = {}
    frags: dict[int, list] = defaultdict(list)
    for s_, b_, f_ in parts:
        supers.update(s_)
        blocks.update(b_)
        for bid, st, fr in f_:
            frags[bid].append((st, fr))
    for bid, lst in frags.items():
        lst.sort(key=lambda t: t[0])
        blocks[bid] = fn(pd.concat([f for _, f in lst]) if len(lst) > 1 else lst[0][1])
    n_blocks = -(-n_total // block)
    n_supers = -(-n_blocks // sup)
    totals = []
    for s in range(n_supers):
        if s in supers:
            totals.append(supers[s])
        else:
            totals.append(_fold([blocks[b] for b in range(s * sup, min((s + 1) * sup, n_blocks))]))
    return _fold(totals)


def compute_many(objs: Sequence) -> list:
    import dask

    return list(dask.compute(*objs))


def copies_of(synthetic: Any) -> list:
    """The copies given to a Dask evaluation function, as a list of dask DataFrames.

    ``synthetic`` is a dask DataFrame, a list of them, or a release whose ``copies`` are dask
    DataFrames (:class:`synthmi.synthetic.PartitionedSyntheticData`, recognised by its
    ``is_partitioned`` flag: this layer imports nothing above it).
    """
    if getattr(synthetic, "is_partitioned", False):
        return list(synthetic.copies)
    if is_dask_frame(synthetic):
        return [synthetic]
    if isinstance(synthetic, (list, tuple)) and synthetic and all(is_dask_frame(c) for c in synthetic):
        return list(synthetic)
    raise InputTypeError(
        "The 'synthetic' parameter must be a partitioned release (fitted on a dask DataFrame), a dask DataFrame or "
        f"a list of dask DataFrames when 'original' is a dask DataFrame. Got {type(synthetic).__name__} instead.", parameter='synthetic'
    )


# =====================================================================================
# The frame interface the models are written against once (issue 27, helper H1).
#
# ``Frame.from_any(df)`` wraps a pandas or a Dask frame; a model asks it for
#
# * ``columns``, ``meta`` (an empty frame with the dtypes), ``n_rows``;
# * ``reduce(fn)``: the sum of ``fn`` over the rows (sufficient statistics). pandas: ``fn(df)``,
#   one block; Dask: :func:`canonical_sum`, identical for every partitioning;
# * ``map_partitions(fn, *args)``: ``[fn(part, offset, *args)]`` computed, ``offset`` the global
#   position of the partition's first record (pandas: one part at 0);
# * ``lazy_partitions`` / ``from_partitions``: the same left where the data are (Dask workers),
#   the second assembled as a frame (lazy on Dask);
# * ``Remote``: objects made from partitions and kept where they were made, whose methods are
#   called in a fixed order with results added on the client.
#
# Models import nothing from dask: only this section does.
# =====================================================================================
class Frame:
    """A pandas or Dask DataFrame seen through the operations models and measures need."""

    def __init__(self, data: Any):
        if not (isinstance(data, pd.DataFrame) or is_dask_frame(data)):
            raise InputTypeError(f"The 'df' parameter must be a pandas or dask DataFrame. Got {type(data).__name__} instead.", parameter='df')
        self.data = data
        self.is_dask = not isinstance(data, pd.DataFrame)
        self._offsets: np.ndarray | None = None

    @classmethod
    def from_any(cls, df: Any) -> "Frame":
        return df if isinstance(df, Frame) else cls(df)

    @property
    def columns(self) -> list:
        return list(self.data.columns)

    @property
    def meta(self) -> pd.DataFrame:
        """An empty frame with the columns and dtypes."""
        return self.data._meta if self.is_dask else self.data.iloc[:0]

    @property
    def offsets(self) -> np.ndarray:
        """Global position of each partition's first record, plus the total (:func:`partition_offsets`)."""
        if self._offsets is None:
            self._offsets = partition_offsets(self.data) if self.is_dask else np.array([0, len(self.data)], dtype=np.int64)
        return self._offsets

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    def select(self, columns: Sequence[str]) -> "Frame":
        """The frame of these columns (its own offsets: a Dask projection may merge partitions)."""
        return Frame(self.data[list(columns)])

    def categories_known(self, column: str) -> bool:
        return not self.is_dask or bool(self.data[column].cat.known)

    def stand_in(self, cap: int = 64) -> tuple[pd.DataFrame, list[str]]:
        """A small pandas frame with this frame's columns and dtypes from which a column's kind can be
        inferred (``Schema.infer``), and the numeric columns with more than ``cap`` distinct values.

        Categorical columns keep their (known) categories; a numeric column holds its distinct values
        (found in one pass over the partitions), or ``cap + 1`` stand-ins of its own kind when it has
        more. Text columns and categories not known without reading every partition are refused.
        """
        meta = self.meta
        obj = [c for c in meta.columns if not isinstance(meta[c].dtype, pd.CategoricalDtype)
               and not pd.api.types.is_numeric_dtype(meta[c].dtype) and not pd.api.types.is_bool_dtype(meta[c].dtype)]
        if obj:
            raise ColumnError(
                f"Columns {obj} of the dask DataFrame are strings; their levels would be read from every partition. "
                "Make them categorical with known categories first (ddf = ddf.categorize(columns=[...])) or "
                "read the Parquet file with categorical columns."
            )
        unknown = [c for c in meta.columns if isinstance(meta[c].dtype, pd.CategoricalDtype) and not self.categories_known(c)]
        if unknown:
            raise ColumnError(f"Columns {unknown} of the dask DataFrame are categorical with unknown categories; "
                             "call ddf.categorize() first.")
        num = [c for c in meta.columns if pd.api.types.is_numeric_dtype(meta[c].dtype)
               and not isinstance(meta[c].dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(meta[c].dtype)]
        merged: dict[str, Any] = {c: set() for c in num}
        for pr in self.map_partitions(_numeric_uniques, num, cap):
            for c in num:
                if merged[c] is None or pr[c] is None:
                    merged[c] = None
                else:
                    merged[c] |= pr[c]
                    if len(merged[c]) > cap:
                        merged[c] = None
        cols = {}
        for c in meta.columns:
            if c in num:
                # more than cap distinct values: stand-ins that are as many and of the column's own kind
                # (non-integers in an integer column raised "Trying to coerce float values to integers")
                vals = (sorted(merged[c]) if merged[c] is not None
                        else list(range(cap + 1)) if pd.api.types.is_integer_dtype(meta[c].dtype)
                        else [k + 0.5 for k in range(cap + 1)])
                cols[c] = pd.Series(vals, dtype=meta[c].dtype)
            else:
                cols[c] = meta[c]
        width = max([len(s) for s in cols.values()] + [0])
        tiny = pd.DataFrame({c: s.reindex(range(width)) if len(s) < width else s.reset_index(drop=True)
                             for c, s in cols.items()})
        for c in meta.columns:  # reindexing an integer column to a longer length makes it float
            if c in num and merged[c] is not None and len(cols[c]) < width:
                tiny[c] = pd.Series(list(cols[c]) + [cols[c].iloc[0]] * (width - len(cols[c])), dtype=meta[c].dtype)
            elif c not in num:
                tiny[c] = pd.Series(pd.array([None] * width, dtype=meta[c].dtype)) if width else meta[c]
        return tiny, [c for c in num if merged[c] is None]

    def reduce(self, fn: Callable[[pd.DataFrame], tuple]) -> tuple:
        """``fn`` summed over the rows: ``fn`` maps consecutive rows to a tuple of arrays that add."""
        return canonical_sum(self.data, self.offsets, fn) if self.is_dask else tuple(fn(self.data))

    def lazy_partitions(self, fn: Callable, *args, with_index: bool = False) -> list:
        """``fn(part, offset, *args)`` per partition, left where the partition is (Dask: delayed);
        ``with_index``: ``fn(part, offset, k, *args)``, ``k`` the partition's number."""
        if self.is_dask:
            if not with_index:
                return map_partitions_with_offset(self.data, self.offsets, fn, *args)
            import dask

            f = dask.delayed(fn, pure=True)
            parts = self.data.to_delayed()
            if len(parts) != len(self.offsets) - 1:
                raise InputError("The frame's partitions changed after its offsets were computed.")
            return [f(p, int(o), k, *args) for k, (p, o) in enumerate(zip(parts, self.offsets[:-1]))]
        return [fn(self.data, 0, 0, *args) if with_index else fn(self.data, 0, *args)]

    def map_partitions(self, fn: Callable, *args, with_index: bool = False) -> list:
        """``[fn(part, offset, *args)]`` for every partition in order, computed (``with_index``: as
        :meth:`lazy_partitions`)."""
        parts = self.lazy_partitions(fn, *args, with_index=with_index)
        return compute_many(parts) if self.is_dask else parts

    def from_partitions(self, fn: Callable, meta: pd.DataFrame, *args) -> Any:
        """The frame whose partition k is ``fn(part_k, offset_k, *args)`` (Dask: lazy, same divisions)."""
        if not self.is_dask:
            return fn(self.data, 0, *args)
        import dask.dataframe as dd

        return dd.from_delayed(self.lazy_partitions(fn, *args), meta=meta, verify_meta=False)


def _numeric_uniques(part: pd.DataFrame, offset: int, cols: list[str], cap: int) -> dict[str, Any]:
    out = {}
    for c in cols:
        u = pd.unique(part[c].dropna())
        out[c] = None if len(u) > cap else set(np.asarray(u).tolist())
    return out


class Remote:
    """Objects built from partition pieces and kept where they were built (Dask: persisted on the workers).

    :meth:`merge_many` builds them from :meth:`Frame.lazy_partitions` results (dicts keyed by object);
    ``call(name, *args)`` returns ``[obj.name(*args) for obj]`` (or the attribute ``obj.name``) in key
    order, one round trip on Dask; ``fetch()`` brings the objects here.
    """

    def __init__(self, handles: list, is_dask: bool):
        self.handles, self.is_dask = handles, is_dask

    @classmethod
    def merge_many(cls, frame: Frame, pieces: list, groups: list[list], merge: Callable,
                   args_of: Callable) -> list["Remote"]:
        """One :class:`Remote` per group of keys, all built in one pass over the pieces
        (``pieces = frame.lazy_partitions(...)``; object ``k`` is ``merge([p[k] for p in pieces], *args_of(k))``)."""
        if not frame.is_dask:
            return [cls([merge([p[k] for p in pieces], *args_of(k)) for k in keys], False) for keys in groups]
        import dask

        f = dask.delayed(merge, pure=True)
        built = [[f([p[k] for p in pieces], *args_of(k)) for k in keys] for keys in groups]
        flat = dask.persist(*[h for hs in built for h in hs])  # every group in one pass over the data
        out, i = [], 0
        for hs in built:
            out.append(cls(list(flat[i: i + len(hs)]), True))
            i += len(hs)
        return out

    def call(self, name: str, *args) -> list:
        if not self.is_dask:
            return [_call_method(h, name, *args) for h in self.handles]
        import dask

        f = dask.delayed(_call_method, pure=True)
        return list(dask.compute(*[f(h, name, *args) for h in self.handles]))

    def fetch(self) -> list:
        return compute_many(self.handles) if self.is_dask else list(self.handles)


def _call_method(obj: Any, name: str, *args) -> Any:
    attr = getattr(obj, name)
    return attr(*args) if callable(attr) else attr  # a plain attribute (e.g. a size) when not callable


# =====================================================================================
# Shuffle by key, and running one piece of logic on a pandas or a Dask frame (H2, issue 27)
#
# A measure is written once against the functions below; a pandas frame is the
# one-partition case (offset 0, no Dask import), a Dask frame runs partition by
# partition with lazily evaluated (``dask.delayed``) pieces that ``compute`` gathers.
# Identity risk, risk subgroups and attribute disclosure compare a record only with
# records sharing its exact-match key, so they send every record to one of ``B``
# buckets by a hash of that key (:func:`key_buckets`) and run their in-memory kernel
# bucket by bucket (:func:`call`); every candidate match of a record is in its bucket.
# =====================================================================================

#: Expected records of the original per key bucket (buckets are held in memory one at a time).
ROWS_PER_BUCKET = 500_000


def is_lazy(obj: Any) -> bool:
    """True for a Dask collection or delayed value (without importing dask)."""
    return hasattr(obj, "__dask_graph__") and callable(getattr(obj, "__dask_graph__"))


def frame_offsets(frame) -> np.ndarray:
    """:func:`partition_offsets` of a Dask frame; ``[0, len(frame)]`` for a pandas one (one partition)."""
    if is_dask_frame(frame):
        return partition_offsets(frame)
    return np.array([0, len(frame)], dtype=np.int64)


def map_frame(frame, offsets: np.ndarray, fn: Callable, *args) -> list:
    """``fn(partition, offset, *args)`` per partition, in order: delayed on Dask, evaluated on pandas."""
    if is_dask_frame(frame):
        return map_partitions_with_offset(frame, offsets, fn, *args)
    return [fn(frame, 0, *args)]


def map_parts(frame, fn: Callable, *args) -> list:
    """``fn(partition, *args)`` per partition, in order (no record offsets needed, so no
    pass over the data to count rows): delayed on Dask, evaluated on pandas."""
    if not is_dask_frame(frame):
        return [fn(frame, *args)]
    import dask

    f = dask.delayed(fn, pure=True)
    return [f(p, *args) for p in frame.to_delayed()]


def call(lazy: bool, fn: Callable, *args, nout: int | None = None):
    """``fn(*args)``, as a delayed task when ``lazy`` (a Dask input), else at once."""
    if not lazy:
        return fn(*args)
    import dask

    return dask.delayed(fn, pure=True, nout=nout)(*args)


def compute(*objs) -> tuple:
    """The values of ``objs``: ``dask.compute`` when any is lazy, else ``objs`` unchanged."""
    if not any(is_lazy(o) or (isinstance(o, (list, tuple)) and any(is_lazy(x) for x in o)) for o in objs):
        return tuple(objs)
    import dask

    return tuple(dask.compute(*objs))


def persist(objs: list) -> list:
    """Keep lazy pieces computed where they are (on the workers); pandas/NumPy pieces unchanged."""
    if not any(is_lazy(o) for o in objs):
        return list(objs)
    import dask

    return list(dask.persist(*objs))


def meta_of(frame) -> pd.DataFrame:
    """An empty pandas frame with the columns and dtypes of ``frame``."""
    return frame._meta if is_dask_frame(frame) else frame.iloc[:0]


def frame_from_parts(parts: list, meta: pd.DataFrame, lazy: bool):
    """One frame of the pieces: a persisted Dask frame when ``lazy``, else a pandas concat."""
    if not lazy:
        return pd.concat(parts, ignore_index=True) if len(parts) != 1 else parts[0].reset_index(drop=True)
    import dask.dataframe as dd

    return dd.from_delayed(parts, meta=meta, verify_meta=False).persist()


def concat_rows(frames: list):
    """The rows of ``frames`` one after another (all pandas or all Dask)."""
    if is_dask_frame(frames[0]):
        import dask.dataframe as dd

        return dd.concat(frames, interleave_partitions=False)
    return pd.concat(frames, ignore_index=True)


def value_counts(frame, column: str) -> pd.Series:
    """Exact counts of every value (missing included) of one column."""
    counts = frame[column].value_counts(dropna=False)
    return counts.compute() if is_dask_frame(frame) else counts


def distinct_values(frame, columns: list[str], cap: int | None) -> dict[str, set | None]:
    """The distinct non-missing values of each column, or None when there are more than ``cap`` (None: no cap)."""
    cap = np.inf if cap is None else cap
    def part_values(part: pd.DataFrame, offset: int) -> dict:
        out = {}
        for c in columns:
            u = pd.unique(part[c].dropna())
            out[c] = None if len(u) > cap else set(np.asarray(u).tolist())
        return out

    parts = compute(*map_frame(frame[columns], frame_offsets(frame[columns]), part_values))
    merged: dict[str, set | None] = {c: set() for c in columns}
    for pr in parts:
        for c in columns:
            merged[c] = None if merged[c] is None or pr[c] is None else merged[c] | pr[c]
            if merged[c] is not None and len(merged[c]) > cap:
                merged[c] = None
    return merged


def n_key_buckets(n_rows: int, n_buckets: int | None) -> int:
    """The number of key buckets: as given, else one per :data:`ROWS_PER_BUCKET` records."""
    return int(n_buckets) if n_buckets else max(1, -(-int(n_rows) // ROWS_PER_BUCKET))


def bucket_of(codes: np.ndarray, n_buckets: int) -> np.ndarray:
    """Bucket of each row of an (n, k) integer key: a hash of the key modulo ``n_buckets``.

    The hash depends on the key's values only, so equal keys meet in one bucket
    whichever partition or frame (original or copy) they come from.
    """
    if codes.shape[1] == 0 or n_buckets == 1:
        return np.zeros(codes.shape[0], dtype=np.int64)
    h = pd.util.hash_pandas_object(pd.DataFrame(codes), index=False).to_numpy()
    return (h % np.uint64(n_buckets)).astype(np.int64)


def key_buckets(frame, offsets: np.ndarray, split: Callable, n_buckets: int, *args) -> list[list]:
    """Shuffle by key: for each of the ``n_buckets`` buckets, the list of its pieces (one per partition).

    ``split(partition, offset, *args)`` returns ``n_buckets`` pieces of the
    partition (its rows whose key hashes to each bucket, see :func:`bucket_of`,
    with their global positions ``offset + row``). On Dask the pieces stay
    delayed and a bucket is assembled by the task that consumes it; a pandas
    frame gives one piece per bucket.
    """
    splits = map_frame(frame, offsets, split, *args)
    if is_dask_frame(frame):
        return [[s[k] for s in splits] for k in range(n_buckets)]
    return [[splits[0][k]] for k in range(n_buckets)]
