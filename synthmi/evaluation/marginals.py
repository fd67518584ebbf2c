"""Marginal fidelity: total variation distance between low-order marginals.

The standard utility measure of marginal-based differentially private synthesis
(McKenna, Miklau & Sheldon 2021, "Winning the NIST Contest", MST; McKenna et al.
2022, AIM): for every set of ``k`` columns, compare the empirical joint
distribution of those columns in the original and in the synthetic data by
total variation distance, and average over all such sets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..results import Result
from .._validate import check_columns_exist, check_copies, check_dataframe, check_scalar, param_error
from ..errors import ColumnError, InputError, ParameterError

__all__ = ["marginal_tvd", "MarginalTVDResult", "total_variation"]


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    r"""Total variation distance between two distributions on the same cells.

    .. math:: \mathrm{TV}(p, q) = \tfrac12 \sum_x |p(x) - q(x)|

    (Levin, Peres & Wilmer 2009, Proposition 4.2). ``p`` and ``q`` may be counts;
    each is normalised to sum to one first.
    """
    p = np.asarray(p, dtype=float).ravel()
    q = np.asarray(q, dtype=float).ravel()
    if p.shape != q.shape:
        raise InputError(f"total_variation needs two arrays of the same size. Got {p.size} and {q.size} cells.")
    sp, sq = p.sum(), q.sum()
    if sp <= 0 or sq <= 0 or (p < 0).any() or (q < 0).any():
        raise InputError("total_variation needs non-negative arrays with a positive total.")
    return 0.5 * float(np.abs(p / sp - q / sq).sum())


@dataclass
class MarginalTVDResult(Result):
    """Per-marginal total variation distances and their means.

    Attributes
    ----------
    by_marginal : DataFrame
        One row per (marginal, copy): ``columns`` (tuple), ``ways``, ``cells``,
        ``copy``, ``tvd``.
    """

    by_marginal: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def mean(self) -> dict[int, float]:
        """Mean TVD per order ``k`` (averaged over marginals and copies)."""
        return {int(k): float(g["tvd"].mean()) for k, g in self.by_marginal.groupby("ways")}

    @property
    def n_marginals(self) -> dict[int, int]:
        return {int(k): int(g["columns"].nunique()) for k, g in self.by_marginal.groupby("ways")}

    def to_frame(self) -> pd.DataFrame:
        """Mean TVD per marginal (averaged over copies)."""
        return (
            self.by_marginal.groupby(["ways", "columns", "cells"], sort=False)["tvd"].mean().reset_index()
        )

    _summary_title = "Marginal total variation distance (original vs synthetic)"

    def _summary_rows(self) -> pd.DataFrame:
        """One row per order k: mean and max TVD, number of marginals and of copies."""
        g = self.by_marginal.groupby("ways")
        out = pd.DataFrame({"mean_tvd": g["tvd"].mean(), "max_tvd": g["tvd"].max(),
                            "marginals": g["columns"].nunique(), "copies": g["copy"].nunique()})
        out.index = pd.Index([f"{int(k)}-way" for k in out.index], name="order")
        return out

    def _dict_extra(self) -> dict[str, Any]:
        return {"params": self.params}

    def __repr__(self) -> str:
        return "MarginalTVDResult(" + ", ".join(f"{k}-way={v:.4f}" for k, v in self.mean.items()) + ")"


def _encode(
    original: pd.DataFrame, copies: list[pd.DataFrame], columns: list[str], domain: Mapping[str, Any], bins: int
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Integer codes 0..d-1 for every column of the original and the copies, and d."""
    sizes = np.empty(len(columns), dtype=np.int64)
    orig_codes = np.empty((len(original), len(columns)), dtype=np.int64)
    copy_codes = [np.empty((len(c), len(columns)), dtype=np.int64) for c in copies]
    for j, c in enumerate(columns):
        o = original[c]
        if c in domain:
            d = domain[c]
            levels = list(range(int(d))) if isinstance(d, (int, np.integer)) else list(d)
            enc = lambda s, levels=levels: pd.Categorical(s, categories=levels).codes.astype(np.int64)  # noqa: E731
            size = len(levels)
        elif isinstance(o.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(o) or pd.api.types.is_bool_dtype(o):
            if isinstance(o.dtype, pd.CategoricalDtype):
                levels = list(o.cat.categories)
            else:
                levels = sorted(set(o.dropna().unique().tolist()).union(*[set(s[c].dropna().unique().tolist()) for s in copies]), key=str)
            enc = lambda s, levels=levels: pd.Categorical(np.asarray(s, dtype=object), categories=levels).codes.astype(np.int64)  # noqa: E731
            size = len(levels)
        else:
            # Continuous: equal-width bins over the original's observed range
            # (evaluation is not private; synthetic values outside fall in the end bins).
            x = o.to_numpy(dtype=float)
            lo, hi = np.nanmin(x), np.nanmax(x)
            edges = np.linspace(lo, hi, bins + 1)[1:-1] if hi > lo else np.array([])

            def enc(s, edges=edges):
                v = np.asarray(s, dtype=float)
                out = np.searchsorted(edges, v, side="right").astype(np.int64)
                out[np.isnan(v)] = -1
                return out

            size = len(edges) + 1
        # Missing values form one extra cell of their own.
        oc = enc(o)
        cc = [enc(s[c]) for s in copies]
        has_missing = (oc < 0).any() or any((x < 0).any() for x in cc)
        if has_missing:
            oc = np.where(oc < 0, size, oc)
            cc = [np.where(x < 0, size, x) for x in cc]
            size += 1
        sizes[j] = size
        orig_codes[:, j] = oc
        for k, x in enumerate(cc):
            copy_codes[k][:, j] = x
    return orig_codes, copy_codes, sizes


def marginal_tvd(
    original: pd.DataFrame,
    synthetic: Any,
    ways: int | Sequence[int] = (2, 3),
    max_cells: int | None = None,
    bins: int = 10,
    domain: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    spec: Any = None,
) -> MarginalTVDResult:
    r"""Mean total variation distance over all ``k``-way marginals.

    For each set :math:`S` of ``k`` columns (with at most ``max_cells`` cells),

    .. math::

        \mathrm{TV}_S = \tfrac12 \sum_{x \in \Omega_S} \big|\hat p_S(x) - \hat q_S(x)\big|,
        \qquad \overline{\mathrm{TV}}_k = \binom{d}{k}^{-1} \sum_{|S| = k} \mathrm{TV}_S,

    where :math:`\hat p_S`, :math:`\hat q_S` are the empirical marginals of the
    original and synthetic data (McKenna, Miklau & Sheldon 2021; McKenna et al.
    2022, Section 6: the workload error of MST and AIM on Adult).

    Parameters
    ----------
    original : DataFrame
    synthetic : DataFrame, list of DataFrames or SyntheticData
        Every copy is compared with the original; results keep one row per copy.
    ways : int or sequence of int
        Marginal orders to evaluate (default both 2 and 3).
    max_cells : int, optional
        Only marginals with at most this many cells enter (the benchmark uses
        10,000 for two-way marginals of the discretized Adult). Applied to every order.
    bins : int
        Number of equal-width bins (over the original's range) for continuous
        columns; categorical columns use their categories.
    domain : dict, optional
        Column -> domain size ``d`` (integer codes ``0..d-1``) or list of levels;
        such columns are treated as discrete even when numeric.
    columns : list of str, optional
        Columns to use (default: the spec's released ones, else all of the original's).
    spec : ReleaseSpec, dict or path, optional
        Kinds (categorical kinds use their levels even when numeric) and columns.

    Returns
    -------
    MarginalTVDResult
    """
    from ..spec import spec_frames

    owner = "marginal_tvd"
    check_dataframe(original, "original")
    copies = check_copies(synthetic, "synthetic")
    spec, original, copies = spec_frames(spec, original, copies)
    if columns is None and spec is not None:
        columns = [c for c in spec.released if c in original.columns]
    cols = list(original.columns) if columns is None else check_columns_exist(original, columns, "columns", "original")
    for j, c in enumerate(copies):
        missing = [x for x in cols if x not in c.columns]
        if missing:
            raise ColumnError(f"Columns of 'synthetic[{j}]' do not match the original: missing {missing}.")
    ks = [ways] if isinstance(ways, (int, np.integer)) else list(ways)
    if not ks:
        raise param_error("ways", owner, "a positive integer or a non-empty list of them", ways)
    for k in ks:
        check_scalar(k, "ways", owner, kind="int", lower=1, upper=len(cols))
    if max_cells is not None:
        check_scalar(max_cells, "max_cells", owner, kind="int", lower=1)
    bins = check_scalar(bins, "bins", owner, kind="int", lower=1)
    domain = dict(domain or {})
    unknown = [c for c in domain if c not in original.columns]
    if unknown:
        raise ParameterError(f"The 'domain' parameter of {owner} names columns not in 'original': {unknown}.", parameter='domain', data='original')

    orig_codes, copy_codes, sizes = _encode(original, copies, cols, domain, bins)
    rows = []
    for k in ks:
        for idx in combinations(range(len(cols)), int(k)):
            shape = tuple(int(sizes[i]) for i in idx)
            cells = int(np.prod(shape))
            if max_cells is not None and cells > max_cells:
                continue
            p = np.bincount(np.ravel_multi_index(orig_codes[:, idx].T, shape), minlength=cells)
            for j, cc in enumerate(copy_codes):
                q = np.bincount(np.ravel_multi_index(cc[:, idx].T, shape), minlength=cells)
                rows.append((tuple(cols[i] for i in idx), int(k), cells, j, total_variation(p, q)))
    if not rows:
        raise InputError(
            f"No marginal of order {ks} has at most max_cells={max_cells} cells; nothing to compare."
        )
    frame = pd.DataFrame(rows, columns=["columns", "ways", "cells", "copy", "tvd"])
    return MarginalTVDResult(frame, {"ways": ks, "max_cells": max_cells, "bins": bins, "domain": domain})
