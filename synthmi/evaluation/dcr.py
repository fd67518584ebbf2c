r"""Distance to closest record (DCR) against a holdout baseline, for releases of any row count.

A fully synthetic release has no row alignment with the original, so the
record-level identity risk of :func:`~synthmi.evaluation.reidentification_risk`
does not apply. DCR asks instead whether synthetic records sit closer to the
records they were made from than new records from the same population would:
for each synthetic record :math:`s` its distance to the closest original record,

.. math::

    \mathrm{DCR}(s) = \min_{i} d(s, x_i), \qquad
    d(a, b) = \frac{1}{p} \sum_{c=1}^{p} \delta_c(a_c, b_c),

with Gower's distance (Gower 1971): :math:`\delta_c = |a_c - b_c| / R_c` for a
numeric column (:math:`R_c` its range in the original; capped at 1),
:math:`1[a_c \ne b_c]` for a categorical one, 0 when both are missing and 1 when
one is. The baseline is the same distance for *holdout* records -- real records
of the population that were not used to make the release (Platzer & Reutterer
2021, "Holdout-based fidelity and privacy assessment of mixed-type synthetic
data"; the "DCR" of SDMetrics and synthcity). If the release copies or
closely perturbs training records, its DCRs are smaller than the holdout's:

* ``share_exact``: share of synthetic records equal to an original record on
  every column (:math:`\mathrm{DCR} = 0`), beside the holdout's share;
* ``share_below_holdout_q05``: share of synthetic records whose DCR is below the
  holdout's 5% quantile :math:`q` -- about 0.05 when the release is no closer to the
  original than the population is, larger when it is. Coarse columns give many
  baseline distances of exactly :math:`q` (often :math:`q = 0`: more than 5% of
  new records have an exact twin), and a strict comparison would then give 0 for
  every release. Ties at :math:`q` are split at random, so that exactly 5% of the
  baseline counts as below; the share is the expected value of that split,

  .. math::

      s = P_{syn}(D < q) + P_{syn}(D = q)\,
          \frac{0.05 - P_{base}(D < q)}{P_{base}(D = q)},

  whose expectation is 0.05 for a release drawn like the baseline (the randomised
  quantile comparison). When :math:`q = 0` it can reach at most
  :math:`0.05 / P_{base}(D = 0)` (``share_below_holdout_q05_max``; a release of
  verbatim training records scores exactly that): compare the exact-copy shares as well;
* the medians of both DCR distributions.

Without a holdout, the baseline is each sampled original record's distance to its
closest *other* original record (leave-one-out). That is a weaker baseline: an
original record is its population's draw too, but duplicates in the original count
as distance 0. Say which baseline was used when reporting (``baseline``).

Records are sampled (``sample``, default 2,000 of each side) so the nearest
neighbour search over the full original stays linear in its size; the result
holds aggregates only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._json import jsonable
from .._validate import check_columns_exist, check_copies, check_dataframe, check_random_state, check_scalar
from ..results import Result

__all__ = ["DCRResult", "distance_to_closest_record", "gower_nearest"]

_OWNER = "distance_to_closest_record"


@dataclass
class DCRResult(Result):
    """DCR of synthetic records and of the baseline records (aggregates only).

    Attributes
    ----------
    figures : dict
        The headline figures (``median_dcr_synthetic``, ``share_exact_synthetic``,
        ``share_below_holdout_q05``, ...); :meth:`summary` shows them as a table.
    dcr_synthetic, dcr_baseline : ndarray
        The per-record distances (record-level: left out of :meth:`to_dict`).
    """

    figures: dict[str, Any]
    dcr_synthetic: np.ndarray = field(repr=False)
    dcr_baseline: np.ndarray = field(repr=False)

    _summary_title = "Distance to closest record (Gower)"

    def _summary_rows(self) -> dict[str, Any]:
        return self.figures

    def to_dict(self) -> dict[str, Any]:
        """The summary table (``"summary"``, as every result's) and the figures at the top level
        as before, JSON-safe (no per-record distance)."""
        return jsonable({"summary": self.summary().to_dict(), **self.figures})

    def report(self) -> str:
        s = self.figures
        return (
            f"Distance to closest record (Gower, {s['columns']} columns; baseline: {s['baseline']})\n"
            f"  synthetic: median {s['median_dcr_synthetic']:.4f}, exact copies {s['share_exact_synthetic']:.2%}\n"
            f"  baseline:  median {s['median_dcr_baseline']:.4f}, exact copies {s['share_exact_baseline']:.2%}\n"
            f"  synthetic records closer than the baseline's 5% quantile: {s['share_below_holdout_q05']:.2%} "
            f"(about 5% if the release is no closer to the original than new records are)"
            + (f"\n  (the quantile is 0: {s['share_baseline_at_q05']:.2%} of the baseline records have an exact twin; ties "
               f"split at random, so the share is at most {s['share_below_holdout_q05_max']:.2%} here; compare the exact copies)"
               if s.get("share_below_holdout_q05_max", 1.0) < 1.0 else "")
        )


def _encode(frames: list[pd.DataFrame], columns: Sequence[str], reference: pd.DataFrame):
    """Numeric columns as floats scaled by the reference range; others as shared integer codes."""
    num, cat = [], []
    for c in columns:
        s = reference[c]
        if pd.api.types.is_numeric_dtype(s) and not isinstance(s.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(s):
            num.append(c)
        else:
            cat.append(c)
    out = []
    ranges = {}
    for c in num:
        v = reference[c].to_numpy(dtype=float)
        r = np.nanmax(v) - np.nanmin(v) if np.isfinite(v).any() else 1.0
        ranges[c] = r if r > 0 else 1.0
    levels = {c: pd.Index(pd.unique(pd.concat([f[c].astype(object) for f in frames], ignore_index=True).dropna()))
              for c in cat}
    for f in frames:
        X = np.column_stack([f[c].to_numpy(dtype=float) / ranges[c] for c in num]) if num else np.empty((len(f), 0))
        C = (np.column_stack([levels[c].get_indexer(f[c].astype(object)) for c in cat]).astype(np.int64)
             if cat else np.empty((len(f), 0), dtype=np.int64))
        # get_indexer gives -1 for missing: a level of its own, equal to itself.
        # Numeric columns stay float64: in float32, 500000.01 / 1e6 and 500000.00 / 1e6 are the
        # same number, so records that differ were counted as exact copies (DCR = 0).
        out.append((X.astype(np.float64), C))
    return out, num, cat


def gower_nearest(query: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray],
                  exclude_self: bool = False, chunk: int = 128) -> np.ndarray:
    """Gower distance from each query row to its closest reference row (chunked, exact).

    ``query`` and ``ref`` are ``(scaled numeric, categorical codes)`` pairs from the
    same encoding. With ``exclude_self`` the query rows are the first rows of ``ref``
    (row i of the query is not compared with row i of the reference).
    """
    Xq, Cq = query
    Xr, Cr = ref
    p = Xq.shape[1] + Cq.shape[1]
    out = np.empty(Xq.shape[0])
    nan_ref = np.isnan(Xr).any(axis=0)
    for a in range(0, Xq.shape[0], chunk):
        b = min(a + chunk, Xq.shape[0])
        d = np.zeros((b - a, Xr.shape[0]), dtype=np.float32)
        for j in range(Xq.shape[1]):
            q, r = Xq[a:b, j][:, None], Xr[None, :, j]
            diff = np.abs(q - r)
            if nan_ref[j] or np.isnan(q).any():
                nan_q, nan_r = np.isnan(q), np.isnan(r)
                # both missing: 0; one missing: 1; else the range-scaled difference, capped at 1
                diff = np.where(nan_q & nan_r, 0.0, np.where(nan_q | nan_r, 1.0, np.minimum(diff, 1.0)))
            else:
                np.minimum(diff, 1.0, out=diff)  # no missing value on either side (the common case)
            # a float32 sum keeps the chunk small; a non-zero difference (>= 1e-38) stays non-zero
            d += diff.astype(np.float32)
        for j in range(Cq.shape[1]):
            d += Cq[a:b, j][:, None] != Cr[None, :, j]
        if exclude_self:
            d[np.arange(b - a), np.arange(a, b)] = np.inf
        out[a:b] = d.min(axis=1) / p
    return out


def distance_to_closest_record(
    original: pd.DataFrame,
    synthetic: Any,
    columns: Sequence[str] | None = None,
    holdout: pd.DataFrame | None = None,
    sample: int = 2000,
    random_state: Any = 0,
) -> DCRResult:
    """DCR of (a sample of) the synthetic records against a holdout or leave-one-out baseline.

    Parameters
    ----------
    original : DataFrame
        The records the release was made from.
    synthetic : DataFrame, list of DataFrames or SyntheticData
        The copies (pooled); any row count.
    columns : list of str, optional
        Columns compared (default: the copies' columns).
    holdout : DataFrame, optional
        Real records of the same population *not* used for the release; the
        baseline. Without it the baseline is leave-one-out within the original.
    sample : int
        Records sampled from the pooled copies and from the baseline (each).
    random_state : int, Generator or None
        Seed of the sampling (the result is a review aggregate, not a release).
    """
    check_dataframe(original, "original")
    copies = check_copies(synthetic, "synthetic")
    cols = list(copies[0].columns) if columns is None else list(columns)
    check_columns_exist(original, cols, "columns", "original")
    for j, c in enumerate(copies):
        check_columns_exist(c, cols, "columns", f"synthetic[{j}]")
    if holdout is not None:
        check_dataframe(holdout, "holdout")
        check_columns_exist(holdout, cols, "columns", "holdout")
    sample = int(check_scalar(sample, "sample", _OWNER, kind="int", lower=10))
    rng = check_random_state(random_state)
    pooled = pd.concat([c[cols] for c in copies], ignore_index=True)
    syn = pooled.iloc[rng.choice(len(pooled), size=min(sample, len(pooled)), replace=False)]
    frames = [original[cols], syn]
    if holdout is not None:
        base = holdout[cols].iloc[rng.choice(len(holdout), size=min(sample, len(holdout)), replace=False)]
        frames.append(base)
        baseline = "holdout records not used for the release"
    else:
        idx = rng.choice(len(original), size=min(sample, len(original)), replace=False)
        baseline = "leave-one-out within the original (no holdout given)"
    enc, num, cat = _encode(frames, cols, original[cols])
    ref = enc[0]
    d_syn = gower_nearest(enc[1], ref)
    if holdout is not None:
        d_base = gower_nearest(enc[2], ref)
    else:
        # the sampled original rows first, then the reference without them compared row-wise
        order = np.r_[idx, np.setdiff1d(np.arange(len(original)), idx)]
        ref_ordered = (ref[0][order], ref[1][order])
        d_base = gower_nearest((ref[0][idx], ref[1][idx]), ref_ordered, exclude_self=True)
    q05 = float(np.quantile(d_base, 0.05))
    below, at = float(np.mean(d_base < q05)), float(np.mean(d_base == q05))
    # ties at the quantile split at random so that 5% of the baseline counts as below (module docstring)
    tie_weight = float(np.clip((0.05 - below) / at, 0.0, 1.0)) if at > 0 else 0.0
    figures = {
        "columns": len(cols),
        "numeric_columns": num,
        "categorical_columns": cat,
        "baseline": baseline,
        "n_synthetic_sampled": int(len(d_syn)),
        "n_baseline_sampled": int(len(d_base)),
        "median_dcr_synthetic": float(np.median(d_syn)),
        "median_dcr_baseline": float(np.median(d_base)),
        "share_exact_synthetic": float(np.mean(d_syn == 0)),
        "share_exact_baseline": float(np.mean(d_base == 0)),
        "share_below_holdout_q05": float(np.mean(d_syn < q05) + tie_weight * np.mean(d_syn == q05)),
        # the largest value a release could score: 1 unless q = 0, where nothing is below the quantile
        "share_below_holdout_q05_max": 1.0 if q05 > 0 else tie_weight,
        "share_baseline_at_q05": at,
    }
    return DCRResult(figures, d_syn, d_base)
