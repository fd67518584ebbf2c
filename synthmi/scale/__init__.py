"""Synthesis, disclosure risk and utility on Dask DataFrames (census-sized data on a cluster).

Every path here reads a ``dask.dataframe.DataFrame`` partition by partition and
gathers only small summaries on the client (sufficient statistics, gradients
and Hessians, contingency tables, per-record risk stays partitioned):

* synthesis is no longer here: ``RubinSynthesizer.fit(ddf, ...)`` /
  ``DAMISynthesizer.fit(ddf, ...)`` fit by reduction through :mod:`synthmi.engine`
  and ``sample`` draws copies per partition (:mod:`synthmi.models.rubin`);
* :func:`risk.reidentification_risk` and :func:`risk.risk_subgroups`:
  identity risk by a shuffle on the hash of the exact-match key;
* :func:`attribute.attribute_disclosure`: DiSCO, DCAP, TCAP, repU and the
  matching attribute risk by the same shuffle;
* :func:`utility.utility_tables`, :func:`utility.pmse`: tables by groupby,
  logit pMSE by distributed Newton, CART pMSE on a stated subsample;
* :func:`dpsyn.fit_dpsyn`: DPSyn's marginal measurements by reduction.

Results equal the in-memory ones (exactly for counts, tables, risk and
copies across partitionings; to rounding for fitted parameters). Models with
no partition-wise fit (copula Gibbs, CART, NUTS) refuse a Dask input.
"""
from ..engine import is_dask_frame

__all__ = ["is_dask_frame"]
