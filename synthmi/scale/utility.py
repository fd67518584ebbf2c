"""Utility measures on Dask: tables by reduction, logit pMSE by distributed Newton, CART on a subsample.

* :func:`utility_tables`: synthpop's ``utility.tables`` as in
  :func:`synthmi.evaluation.utility_tables`. Cell counts of every one- and
  two-way table are per-partition ``bincount`` s added over partitions
  (integers, so exact); continuous variables are cut at quantiles of the
  pooled original and synthetic values computed from their exact value
  counts with NumPy's linear-interpolation rule, so bins, counts, pMSE and
  S_pMSE equal the in-memory table values. (The value-count table of a
  continuous column is as large as its number of distinct values; it is the
  one object gathered on the client.)
* :func:`pmse` with ``method="logit"``: the propensity logit of
  :func:`synthmi.evaluation.pmse` (same design: standardised numerics,
  dummies, two-way interactions, aliased columns dropped by a pivoted QR of
  :math:`X^\\top X`) fitted by Newton-Raphson / IRLS with step halving, each
  step's gradient :math:`X^\\top (y - \\mu)`, information
  :math:`X^\\top W X` and log-likelihood summed over partitions in a fixed
  order (:func:`~._frames.canonical_sum`); then
  :math:`\\mathrm{pMSE} = N^{-1} \\sum_i (\\hat p_i - c)^2` as one more sum.
* ``method="cart"``: a tree needs every record at every split, so the CART
  pMSE is computed in memory on a record-keyed Bernoulli subsample of the
  original and of each copy (``cart_rows`` records expected; the fraction
  and the realised sizes are in the result's ``note``).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import linalg
from scipy.special import expit

from .._random import PositionalRNG, entropy_from
from .._validate import check_option, check_random_state, check_scalar
from ..evaluation.pmse import PMSEResult, _binned, _non_aliased_gram
from ..evaluation.pmse import pmse as _pmse_memory
from ..engine import canonical_sum, copies_of, map_partitions_with_offset, partition_offsets


def _variables(original, variables) -> list[str]:
    cols = list(original.columns)
    if variables is None:
        return cols
    variables = [variables] if isinstance(variables, str) else list(variables)
    bad = [v for v in variables if v not in cols]
    if bad:
        raise ValueError(f"The 'variables' parameter names columns not in 'original': {bad}. Available columns: {cols}.")
    return variables


def _is_numeric(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)


def _value_counts(ddf, v: str) -> pd.Series:
    """Exact counts of every value (NaN included) of one column."""
    return ddf[v].value_counts(dropna=False).compute()


def quantile_from_counts(values: np.ndarray, counts: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """``np.nanquantile(x, qs)`` (linear method) of the array with these distinct values and counts.

    Reproduces NumPy's arithmetic: virtual index :math:`h = Nq + (1 - q) - 1`,
    neighbours :math:`x_{\\lfloor h \\rfloor}, x_{\\lfloor h \\rfloor + 1}` from the
    cumulative counts, and NumPy's two-sided ``_lerp``.
    """
    order = np.argsort(values, kind="stable")
    values = np.asarray(values, dtype=float)[order]
    counts = np.asarray(counts, dtype=np.int64)[order]
    N = int(counts.sum())
    cum = np.cumsum(counts)
    qs = np.asarray(qs, dtype=float)
    virtual = N * qs + (1 + qs * (1 - 1 - 1)) - 1  # numpy's _compute_virtual_index, alpha = beta = 1
    prev = np.floor(virtual).astype(np.int64)
    gamma = virtual - prev
    prev = np.clip(prev, 0, N - 1)
    nxt = np.clip(prev + 1, 0, N - 1)
    a = values[np.searchsorted(cum, prev, side="right")]
    b = values[np.searchsorted(cum, nxt, side="right")]
    diff = b - a
    out = a + diff * gamma
    hi = gamma >= 0.5
    out[hi] = (b - diff * (1 - gamma))[hi]
    return out


def _cell_codes(s: pd.Series, edges: np.ndarray | None, cats: list | None) -> np.ndarray:
    if edges is not None:
        return _binned(s, edges)
    vals = s.astype(object).where(s.notna(), "__NA__")
    return pd.Categorical(vals, categories=cats).codes.astype(np.int64)


def _partition_tables(part: pd.DataFrame, offset: int, variables, edges, cats, sizes, ways) -> dict:
    codes = {v: _cell_codes(part[v], edges[v], cats[v]) for v in variables}
    out = {}
    for w in ways:
        for combo in combinations(variables, w):
            flat = np.zeros(len(part), dtype=np.int64)
            size = 1
            for v in combo:
                flat = flat * sizes[v] + codes[v]
                size *= sizes[v]
            out[combo] = np.bincount(flat, minlength=size)
    return out


def _sum_tables(ddf, variables, edges, cats, sizes, ways) -> dict:
    import dask

    off = partition_offsets(ddf[variables])  # of the projection that is mapped (a read_parquet may merge files)
    parts = dask.compute(*map_partitions_with_offset(ddf[variables], off, _partition_tables, variables, edges, cats, sizes, ways))
    total = {}
    for pr in parts:
        for k, v in pr.items():
            total[k] = total[k] + v if k in total else v.copy()
    return total


def table_pmse_counts(n1: np.ndarray, n2: np.ndarray) -> tuple[float, float, int]:
    """:func:`synthmi.evaluation.pmse.table_pmse` from cell counts (cells in code order)."""
    keep = (n1 + n2) > 0
    n1 = n1[keep].astype(float)
    n2 = n2[keep].astype(float)
    N = n1.sum() + n2.sum()
    c = n2.sum() / N
    tot = n1 + n2
    p = n2 / tot
    value = float(np.sum(tot * (p - c) ** 2) / N)
    df = int(keep.sum()) - 1
    return value, df * (1 - c) ** 2 * c / N, df


def utility_tables(original, synthetic: Any, variables: Sequence[str] | None = None, ways: Sequence[int] = (1, 2),
                   n_bins: int = 5) -> pd.DataFrame:
    """:func:`synthmi.evaluation.utility_tables` on dask DataFrames (same output, exact)."""
    copies = copies_of(synthetic)
    variables = _variables(original, variables)
    n_bins = check_scalar(n_bins, "n_bins", "utility_tables", kind="int", lower=2)
    for w in ways:
        if w not in (1, 2, 3):
            raise ValueError(f"The 'ways' parameter of utility_tables takes 1, 2 or 3. Got {w!r} instead.")
    o_counts = {v: _value_counts(original, v) for v in variables}
    per_copy = []
    for syn in copies:
        edges, cats, sizes = {}, {}, {}
        for v in variables:
            vc = o_counts[v].add(_value_counts(syn, v), fill_value=0)
            vc = vc[vc > 0]  # a Categorical's value_counts lists unobserved levels too
            dt = original._meta[v].dtype
            if _is_numeric(dt):
                obs = vc[vc.index.notna()]
                if len(obs) > n_bins:
                    qs = quantile_from_counts(obs.index.to_numpy(dtype=float), obs.to_numpy(), np.linspace(0, 1, n_bins + 1)[1:-1])
                    edges[v] = np.unique(qs)
                    cats[v] = None
                    sizes[v] = len(edges[v]) + 2
                    continue
            edges[v] = None
            vals = pd.Series(vc.index, dtype=object)
            vals = vals.where(vals.notna(), "__NA__")
            if isinstance(dt, pd.CategoricalDtype):
                # in memory the column is re-coded from its observed values' string order
                vals = pd.Series(vals.astype(object))
            cats[v] = list(pd.Categorical(vals).categories)
            sizes[v] = len(cats[v])
        o_tab = _sum_tables(original, variables, edges, cats, sizes, ways)
        s_tab = _sum_tables(syn, variables, edges, cats, sizes, ways)
        per_copy.append((o_tab, s_tab))
    rows = []
    for w in ways:
        for combo in combinations(variables, w):
            vals, nulls, dfs = [], [], []
            for o_tab, s_tab in per_copy:
                val, e0, df = table_pmse_counts(o_tab[combo], s_tab[combo])
                vals.append(val)
                nulls.append(e0)
                dfs.append(df)
            s_vals = np.array(vals) / np.where(np.array(nulls) > 0, nulls, np.nan)
            row = {"variables": ":".join(combo), "way": w, "df": float(np.mean(dfs)), "pmse": float(np.mean(vals)),
                   "s_pmse": float(np.nanmean(s_vals)) if np.isfinite(s_vals).any() else np.nan}
            for j, sv in enumerate(s_vals, start=1):
                row[f"s_pmse_copy_{j}"] = float(sv)
            rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["way", "s_pmse"], ascending=[True, False]).reset_index(drop=True)


# --------------------------------------------------------------------------- logit pMSE
def _stacked(original, syn, variables):
    import dask.dataframe as dd

    o = original[variables]
    s = syn[variables]
    for v in variables:
        if isinstance(o._meta[v].dtype, pd.CategoricalDtype):
            cats = list(o._meta[v].cat.categories)
            s = s.assign(**{v: s[v].astype(pd.CategoricalDtype(cats))})
    return dd.concat([o.assign(__y=0.0), s.assign(__y=1.0)], interleave_partitions=False)


class _Design:
    """The propensity design of :func:`synthmi.evaluation.pmse._design`, with encodings fixed globally."""

    def __init__(self, variables, kinds, mu, sd, has_na, levels, maxorder):
        self.variables, self.kinds, self.mu, self.sd = variables, kinds, mu, sd
        self.has_na, self.levels, self.maxorder = has_na, levels, maxorder
        self.keep = None

    def main(self, part: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
        cols, names = [], []
        for v in self.variables:
            s = part[v]
            if self.kinds[v] == "numeric":
                x = s.to_numpy(dtype=float)
                miss = np.isnan(x)
                cols.append(np.where(miss, 0.0, (x - self.mu[v]) / self.sd[v]))
                names.append(v)
                if self.has_na[v]:
                    cols.append(miss.astype(float))
                    names.append(f"{v}_NA")
            else:
                vals = s.astype(object).where(s.notna(), "__NA__")
                codes = pd.Categorical(vals, categories=self.levels[v]).codes
                for k, lev in enumerate(self.levels[v][1:], start=1):
                    cols.append((codes == k).astype(float))
                    names.append(f"{v}[{lev}]")
        n = len(part)
        return (np.column_stack(cols) if cols else np.empty((n, 0))), names

    def matrix(self, part: pd.DataFrame) -> np.ndarray:
        main, names = self.main(part)
        blocks = [np.ones((len(part), 1)), main]
        if self.maxorder >= 1:
            owner = [nm.split("[")[0].removesuffix("_NA") for nm in names]
            for a, b in combinations(range(len(names)), 2):
                if owner[a] != owner[b]:
                    blocks.append((main[:, a] * main[:, b])[:, None])
        X = np.hstack(blocks)
        return X if self.keep is None else X[:, self.keep]


def _logit_pmse_one(original, syn, variables, maxorder, max_iter=50, tol=1e-10) -> tuple[float, float, int]:
    st = _stacked(original, syn, variables)
    off = partition_offsets(st)
    N = int(off[-1])
    meta = st._meta
    kinds = {v: "numeric" if _is_numeric(meta[v].dtype) else "categorical" for v in variables}
    num = [v for v in variables if kinds[v] == "numeric"]
    mu, sd, has_na, levels = {}, {}, {}, {}
    if num:
        def f1(p):
            x = p[num].to_numpy(dtype=float)
            return (np.nansum(x, axis=0), (~np.isnan(x)).sum(axis=0).astype(float))
        sx, cnt = canonical_sum(st, off, f1)
        m_ = sx / np.maximum(cnt, 1)

        def f2(p):
            x = p[num].to_numpy(dtype=float)
            return (np.nansum((x - m_) ** 2, axis=0),)
        (ss,) = canonical_sum(st, off, f2)
        for k, v in enumerate(num):
            mu[v] = float(m_[k]) if cnt[k] else 0.0
            s_ = float(np.sqrt(ss[k] / cnt[k])) if cnt[k] else 1.0
            sd[v] = s_ if s_ > 0 else 1.0
            has_na[v] = cnt[k] < N
    for v in variables:
        if kinds[v] == "categorical":
            vc = st[v].value_counts(dropna=False).compute()
            vc = vc[vc > 0]
            vals = pd.Series(vc.index, dtype=object)
            levels[v] = list(pd.Categorical(vals.where(vals.notna(), "__NA__")).categories)
    design = _Design(variables, kinds, mu, sd, has_na, levels, maxorder)
    (G,) = canonical_sum(st, off, lambda p: ((lambda X: X.T @ X)(design.matrix(p)),))
    design.keep = _non_aliased_gram(G)
    k = len(design.keep)
    (ysum,) = canonical_sum(st, off, lambda p: (np.array(p["__y"].to_numpy().sum()),))
    c = float(ysum) / N

    def at(beta):
        def f(p):
            X = design.matrix(p)
            y = p["__y"].to_numpy()
            eta = X @ beta
            mu_ = expit(eta)
            w = np.maximum(mu_ * (1 - mu_), 1e-12)
            return (np.array(np.sum(y * eta - np.logaddexp(0.0, eta))), X.T @ (y - mu_), (X * w[:, None]).T @ X)
        ll, g, H = canonical_sum(st, off, f)
        return float(ll), g, H

    # Newton / IRLS with step halving, as synthmi.evaluation.pmse._logit_fit
    beta = np.zeros(k)
    beta[0] = np.log(c / (1 - c))
    ll, g, H = at(beta)
    for _ in range(max_iter):
        try:
            step = linalg.solve(H, g, assume_a="pos")
        except linalg.LinAlgError:
            step = linalg.lstsq(H, g)[0]
        t = 1.0
        for _ in range(30):
            new_ll, new_g, new_H = at(beta + t * step)
            if new_ll >= ll - 1e-12:
                break
            t /= 2
        beta = beta + t * step
        converged = abs(new_ll - ll) < tol * (abs(ll) + 1)
        ll, g, H = new_ll, new_g, new_H
        if converged:
            break
    (sq,) = canonical_sum(st, off, lambda p: (np.array(np.sum((expit(design.matrix(p) @ beta) - c) ** 2)),))
    return float(sq) / N, (k - 1) * (1 - c) ** 2 * c / N, k


@dataclass(repr=False)
class ScalePMSEResult(PMSEResult):
    """:class:`~synthmi.evaluation.pmse.PMSEResult` with a note on how it was computed at scale."""

    note: str = ""

    def _summary_notes(self) -> list[str]:
        return super()._summary_notes() + ([f"note: {self.note}"] if self.note else [])


def _subsample(part: pd.DataFrame, offset: int, entropy, frac: float) -> pd.DataFrame:
    u = PositionalRNG(entropy, tag=(0,), offset=offset).random(len(part))
    return part[u < frac]


def pmse(original, synthetic: Any, method: str = "logit", variables: Sequence[str] | None = None, maxorder: int = 1,
         n_perm: int = 50, min_samples_leaf: int = 5, cp: float = 0.0, random_state: Any = 0,
         cart_rows: int = 100_000) -> ScalePMSEResult:
    """:func:`synthmi.evaluation.pmse` on dask DataFrames (see the module docstring).

    ``cart_rows``: expected size of the CART subsample of the original and of
    each copy (records kept independently with probability ``cart_rows / n``,
    keyed by record position and ``random_state``).
    """
    import dask

    method = check_option(method, "method", "pmse", ("logit", "cart"))
    maxorder = check_scalar(maxorder, "maxorder", "pmse", kind="int", lower=0, upper=1)
    cart_rows = check_scalar(cart_rows, "cart_rows", "pmse", kind="int", lower=10)
    copies = copies_of(synthetic)
    variables = _variables(original, variables)
    if method == "logit":
        res = [_logit_pmse_one(original, s, variables, maxorder) for s in copies]
        pm_a = np.array([r[0] for r in res])
        e0 = np.array([r[1] for r in res])
        with np.errstate(divide="ignore", invalid="ignore"):
            s_vals = np.where(e0 > 0, pm_a / np.where(e0 > 0, e0, 1.0), np.nan)
        return ScalePMSEResult(pmse=pm_a, expected_null=e0, s_pmse=s_vals, method="logit",
                               k=np.array([r[2] for r in res]), variables=variables,
                               note="logit propensity model fitted on all records by distributed Newton")
    rng = check_random_state(random_state)
    entropy = entropy_from(rng)
    off = partition_offsets(original[variables])  # of the projection that is mapped
    n = int(off[-1])
    frac = min(1.0, cart_rows / n)
    o_sub = dask.compute(*map_partitions_with_offset(original[variables], off, _subsample, entropy, frac))
    o_sub = pd.concat(o_sub)
    s_subs = []
    for s in copies:
        so = partition_offsets(s[variables])
        s_subs.append(pd.concat(dask.compute(*map_partitions_with_offset(s[variables], so, _subsample, entropy, frac))))
    r = _pmse_memory(o_sub, s_subs, method="cart", variables=variables, maxorder=maxorder, n_perm=n_perm,
                 min_samples_leaf=min_samples_leaf, cp=cp, random_state=rng)
    note = (f"CART pMSE on a subsample: each record kept with probability {frac:.6g} (keyed by record position and "
            f"random_state), {len(o_sub)} of {n} original records and {', '.join(str(len(x)) for x in s_subs)} "
            "records of the copies; a tree needs every record at every split, so it is not fitted on all records")
    return ScalePMSEResult(pmse=r.pmse, expected_null=r.expected_null, s_pmse=r.s_pmse, method="cart", k=None,
                           variables=variables, note=note)
