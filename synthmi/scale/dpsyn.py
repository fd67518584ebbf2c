"""DPSyn's marginal measurements on a Dask DataFrame.

:class:`~synthmi.privacy.dpsyn.DPSynSynthesizer` reads the private data only
through its curator's true marginal counts (then adds discrete Gaussian noise,
accounted before the read). Given a dask DataFrame, ``DPSynSynthesizer.fit``
describes the columns from the declared public domain alone (never the frame's
dtypes) exactly as in memory, conforms each partition to it, and uses :class:`DaskCurator`, whose count is a sum
over partitions of per-partition ``bincount`` s of the fine codes. Integer
addition is exact, so every marginal before noise equals the in-memory one
and, with the same seed, the whole DP release is the same.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..privacy.dpsyn import _Curator


def _encode_partition(part: pd.DataFrame, columns, out_of_domain: str = "error") -> np.ndarray:
    if len(part) == 0:
        return np.empty((0, len(columns)), dtype=np.int64)
    return np.column_stack([c.encode(part[c.name], out_of_domain) for c in columns])


def _partition_counts(codes: np.ndarray, attrs, maps, shape) -> np.ndarray:
    idx = [maps[k][codes[:, a]] for k, a in enumerate(attrs)]
    flat = np.ravel_multi_index(idx, shape) if len(attrs) > 1 else idx[0]
    return np.bincount(flat, minlength=int(np.prod(shape)))


def _computed(f, *args):
    """``f(*args)``, where a failure other than the declared-domain check (which names the
    column only) is re-raised without its text: a Dask reader that meets a value its
    inferred dtype cannot hold quotes that private value in its error (issue 25)."""
    from ..domain import DomainError

    try:
        return f(*args)
    except DomainError:
        raise
    except Exception as exc:
        raise ValueError(
            f"Reading a partition of the Dask frame failed ({type(exc).__name__}); its message is withheld on a "
            "differentially private path because it may quote a value of the data. A reader that infers dtypes from "
            "the first block fails when a later block holds other values: read every column as text "
            "(dd.read_csv(..., dtype=str)) and let the declared domain convert them."
        ) from None


class DaskCurator(_Curator):
    """The DPSyn curator over encoded partitions held by Dask (persisted on the workers)."""

    def __init__(self, parts: list, n_columns: int, accountant, rng, exact_noise: bool = False):
        super().__init__(np.empty((0, n_columns), dtype=np.int64), accountant, rng, exact_noise)
        self._parts = parts

    def _true_counts(self, attrs, maps, shape):
        import dask

        f = dask.delayed(_partition_counts, pure=True)
        counts = _computed(dask.compute, *[f(p, tuple(attrs), [np.asarray(mp) for mp in maps], tuple(shape))
                                           for p in self._parts])
        total = counts[0].astype(np.int64)
        for c in counts[1:]:
            total = total + c
        return total.reshape(shape)


def dask_curator(ddf, columns, out_of_domain: str, accountant, rng, exact_noise: bool) -> DaskCurator:
    """Encode every partition (kept on the workers) and wrap them in a :class:`DaskCurator`."""
    import dask

    f = dask.delayed(_encode_partition, pure=True)
    parts = list(_computed(dask.persist, *[f(p, columns, out_of_domain) for p in ddf.to_delayed()]))
    return DaskCurator(parts, len(columns), accountant, rng, exact_noise=exact_noise)
