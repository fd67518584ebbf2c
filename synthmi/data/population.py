"""A seeded generator of Adult-like populations of any size, for scale tests.

The records are drawn from a model fitted to UCI Adult, not copied from it:
Rubin's sequential regressions (:class:`~synthmi.models.rubin.RubinSynthesizer`,
fast sampler) are fitted to the complete records of Adult's ``sex``, ``race``,
``age``, ``education``, ``hours_per_week`` and ``income`` with no kept
columns (a fully synthetic joint model, in this order: logit for sex,
multinomial logit for race, cumulative logit for education, logit for
income, normal regression for age and log-normal for hours, each given the
columns before it). One
posterior draw of the parameters (chosen by the seed) defines the
population, and each record is drawn from it with record-keyed streams
(:mod:`synthmi._random`), so record ``i`` is the same whatever the chunk
size. Ages are rounded and kept in Adult's documented range 17-90, hours in
1-99.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from .._validate import check_random_state, check_scalar

POPULATION_COLUMNS = ["sex", "race", "education", "income", "age", "hours_per_week"]
_RANGES = {"age": (17.0, 90.0), "hours_per_week": (1.0, 99.0)}


@lru_cache(maxsize=1)
def _generator_model():
    from ..models.rubin import RubinSynthesizer
    from . import load_adult

    adult = load_adult()[POPULATION_COLUMNS].dropna().reset_index(drop=True)
    # hours last: a transformed column must not be a predictor (the in-memory sampler feeds later
    # conditionals its modelling-scale values)
    syn = RubinSynthesizer(transforms={"hours_per_week": "log"}, chains=2, draws=200, progressbar=False)
    return syn.fit(adult, quasi_identifiers=POPULATION_COLUMNS, keep=[])


def _chunk(n: int, offset: int, syn, plan) -> pd.DataFrame:
    # no kept columns: the template rows carry only the record positions; every value is drawn
    template = syn.data_.iloc[np.zeros(n, dtype=np.int64)].set_axis(pd.RangeIndex(offset, offset + n), axis=0)
    out = syn.sample_partition(template, offset, plan, [0])[0]
    for c, (lo, hi) in _RANGES.items():
        out[c] = out[c].clip(lo, hi)
    return out


def make_population(n: int, random_state: int | np.random.Generator | None = 0, chunksize: int = 1_000_000):
    """``n`` Adult-like records as a dask DataFrame (partitions of ``chunksize`` rows, index 0..n-1).

    Parameters
    ----------
    n : int >= 1
        Number of records.
    random_state : int, Generator or None
        Seed: the same seed gives the same records for any ``chunksize``.
    chunksize : int >= 1
        Records per partition.

    Returns
    -------
    dask.dataframe.DataFrame
        Columns ``sex``, ``race``, ``education``, ``income``, ``age``,
        ``hours_per_week`` with Adult's dtypes; call ``.compute()`` for a pandas frame.
    """
    import dask
    import dask.dataframe as dd

    n = check_scalar(n, "n", "make_population", kind="int", lower=1)
    chunksize = check_scalar(chunksize, "chunksize", "make_population", kind="int", lower=1)
    syn = _generator_model()
    plan = syn.sampling_plan(1, check_random_state(random_state))
    f = dask.delayed(_chunk, pure=True)
    starts = list(range(0, n, chunksize))
    parts = [f(min(chunksize, n - s), s, syn, plan) for s in starts]
    meta = syn.data_.iloc[:0]
    divisions = tuple(starts) + (n - 1,)
    return dd.from_delayed(parts, meta=meta, divisions=divisions, verify_meta=False)
