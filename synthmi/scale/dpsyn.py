"""DPSyn's marginal measurements on a Dask DataFrame.

:class:`~synthmi.privacy.dpsyn.DPSynSynthesizer` reads the private data only
through its curator's true marginal counts (then adds discrete Gaussian noise,
accounted before the read). Here the curator's count is a sum over
partitions of per-partition ``bincount`` s of the public fine codes; integer
addition is exact, so every marginal before noise equals the in-memory one
and, with the same seed, the whole DP release is the same. Column domains
come from dtypes and the user's public bounds/domain only, as in memory (no
data values are read to describe columns).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validate import check_random_state
from ..privacy.accountant import PrivacyAccountant
from ..privacy.dpsyn import _Curator, _describe_columns
from ._frames import is_dask_frame


def _encode_partition(part: pd.DataFrame, columns) -> np.ndarray:
    if len(part) == 0:
        return np.empty((0, len(columns)), dtype=np.int64)
    return np.column_stack([c.encode(part[c.name]) for c in columns])


def _partition_counts(codes: np.ndarray, attrs, maps, shape) -> np.ndarray:
    idx = [maps[k][codes[:, a]] for k, a in enumerate(attrs)]
    flat = np.ravel_multi_index(idx, shape) if len(attrs) > 1 else idx[0]
    return np.bincount(flat, minlength=int(np.prod(shape)))


class DaskCurator(_Curator):
    """The DPSyn curator over encoded partitions held by Dask (persisted on the workers)."""

    def __init__(self, parts: list, n_columns: int, accountant, rng, exact_noise: bool = False):
        super().__init__(np.empty((0, n_columns), dtype=np.int64), accountant, rng, exact_noise)
        self._parts = parts

    def _true_counts(self, attrs, maps, shape):
        import dask

        f = dask.delayed(_partition_counts, pure=True)
        counts = dask.compute(*[f(p, tuple(attrs), [np.asarray(mp) for mp in maps], tuple(shape)) for p in self._parts])
        total = counts[0].astype(np.int64)
        for c in counts[1:]:
            total = total + c
        return total.reshape(shape)


def fit_dpsyn(synth, ddf, bounds: Mapping[str, Any] | None = None, domain: Mapping[str, Any] | None = None,
              ordinal: Sequence[str] | None = None):
    """:meth:`DPSynSynthesizer.fit` on a dask DataFrame (same release for the same seed)."""
    import dask

    from ..privacy.dpsyn import _OWNER

    if not is_dask_frame(ddf):
        raise TypeError(f"The 'df' parameter must be a dask DataFrame here. Got {type(ddf).__name__} instead.")
    synth._check_params()
    bounds = dict(bounds or {})
    domain = dict(domain or {})
    meta = ddf._meta
    for name, d in (("bounds", bounds), ("domain", domain)):
        unknown = [c for c in d if c not in meta.columns]
        if unknown:
            raise ValueError(f"The '{name}' parameter of {_OWNER} names columns not in 'df': {unknown}.")
    if ordinal is not None:
        ordinal = list(ordinal)
        unknown = [c for c in ordinal if c not in meta.columns]
        if unknown:
            raise ValueError(f"The 'ordinal' parameter of {_OWNER} names columns not in 'df': {unknown}.")
    # column descriptions from dtypes and public input only: the empty meta frame suffices
    columns = _describe_columns(meta, bounds, domain, ordinal, int(synth.bins))
    f = dask.delayed(_encode_partition, pure=True)
    parts = list(dask.persist(*[f(p, columns) for p in ddf.to_delayed()]))
    rng = check_random_state(synth.random_state)
    accountant = PrivacyAccountant(epsilon=float(synth.epsilon), delta=float(synth.delta))
    curator = DaskCurator(parts, len(columns), accountant, rng, exact_noise=bool(synth.exact_noise))
    synth._fit_from_curator(curator, columns)
    synth.accountant_ = accountant
    synth.columns_ = [c.name for c in columns]
    synth.dtypes_ = meta.dtypes.copy()
    return synth
