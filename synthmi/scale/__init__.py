"""Synthesis on Dask DataFrames (census-sized data on a cluster).

Every path here reads a ``dask.dataframe.DataFrame`` partition by partition and
gathers only small summaries on the client (sufficient statistics, gradients
and Hessians, contingency tables, per-record risk stays partitioned):

* :func:`synthesis.fit` / :func:`synthesis.sample` (also reached through
  ``RubinSynthesizer.fit(ddf, ...)`` / ``DAMISynthesizer.fit(ddf, ...)``):
  fast posteriors by reduction, copies drawn per partition with record-keyed
  random streams and written as Parquet.

The measures (identity risk, risk subgroups, attribute disclosure, utility
tables, pMSE) and DPSyn's curator take a Dask frame themselves
(:mod:`synthmi.evaluation`, :mod:`synthmi.privacy.dpsyn`, through
:mod:`synthmi.engine`).

Results equal the in-memory ones (exactly for counts, tables, risk and
copies across partitionings; to rounding for fitted parameters). Models with
no partition-wise fit (copula Gibbs, CART, NUTS) refuse a Dask input.
"""
from ..engine import is_dask_frame

__all__ = ["is_dask_frame"]
