r"""DPSyn: differentially private synthetic data from noisy marginals.

The algorithm of Li, Zhang & Wang (DPSyn, NIST challenge write-up,
shared/seeds/000) as generalised in PrivSyn (Zhang, Wang, Li, Honorio, Backes,
He, Chen & Zhang 2021, USENIX Security):

1. **One-way marginals** of every column (on a public domain: categories of a
   Categorical dtype, a user-given domain, or buckets of user-given bounds for
   continuous columns) get discrete Gaussian noise. From them, and only them,
   rare values are *compressed*: values whose noisy count is below
   :math:`\theta = \max(4.5\sigma, \theta_{\min})` (seed 000, equation 1) are
   merged into one "other" value (or dropped when even their total is below
   :math:`\theta`), and ordered columns are cut into contiguous buckets of
   roughly equal noisy mass so that no column has more than ``max_levels``
   levels in the two-way marginals (seed 000, Section 2.2, "bucketize").
2. **Selection** of two-way marginals by a DP step (PrivSyn's DenseMarg): the
   independence score :math:`\mathrm{InDif}(a, b) = \sum_{x,y} |c_{ab}(x,y) -
   c_a(x)c_b(y)/n|` of every pair gets Gaussian noise (sensitivity 4 under
   add/remove-one), then a greedy search adds pairs while the expected noise of
   measuring them is below the dependence they would capture.
3. **Measurement** of the selected two-way marginals (optionally a few three-way
   ones) with discrete Gaussian noise, the budget split across them in proportion
   to :math:`c_i^{2/3}` (:math:`c_i` = cells; PrivSyn Section 4.2, which minimises
   the total expected L1 noise).
4. **Consistency** (post-processing): all marginals are made to agree on their
   total and on every shared sub-marginal by inverse-variance weighted
   averaging, and made non-negative by PrivSyn's norm-cut, iterated.
5. **Synthesis** (post-processing): PrivSyn's gradually-update method (GUM):
   records start independent and are moved between cells of each marginal in
   turn until their marginals match the noisy ones; merged values and buckets are
   then split back using the fine one-way marginals, and continuous values are
   drawn uniformly within their bucket.

Every access to the data is one of two accounted mechanisms (noisy marginal,
noisy InDif scores) of the private ``_Curator``; the Renyi-DP budget is split
between steps as fractions of one unit-sensitivity Gaussian that alone would
spend all of :math:`(\varepsilon, \delta)`: a Gaussian with sensitivity
:math:`\Delta` and noise :math:`\sigma` has RDP :math:`\lambda\Delta^2/(2\sigma^2)`
(seed 000, Theorem 2), so RDP curves compose additively and a step with fraction
:math:`f` and :math:`k` queries of sensitivity :math:`\Delta` uses
:math:`\sigma = \sigma_1 \Delta \sqrt{k/f}`. The composed spend then equals the
requested budget exactly (seed 000, Theorems 3-5).

Noise sampling: marginal counts get discrete Gaussian noise from
:func:`~synthmi.privacy.discrete.sample_discrete_gaussian`. With the default
``exact_noise=False`` that is CKS 2020's rejection scheme run in double precision
(geometric draws by floating-point inverse CDF, float acceptance coin): the output
is integer-valued and its law is the discrete Gaussian up to float rounding of
``exp(-1/t)`` and the acceptance probability (relative ~1e-16); it is *not*
rounded continuous noise. ``exact_noise=True`` uses CKS Algorithms 1-3 in exact
rational arithmetic, which removes that caveat at pure-Python speed. The InDif
scores are real-valued and get continuous Gaussian noise either way.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from .._validate import (
    Interval,
    NotFittedError,
    Options,
    check_delta,
    check_random_state,
    param_error,
)
from ..models.base import Synthesizer
from .accountant import PrivacyAccountant, dpsyn_sigma, rdp_to_dp_improved
from .discrete import sample_discrete_gaussian

__all__ = ["DPSynSynthesizer", "unit_sigma"]

_OWNER = "DPSynSynthesizer"
# Sensitivity of one InDif score under add/remove-one (PrivSyn, Section 4.3): the joint
# table moves by 1 in L1 and the product table c_a c_b / n by less than 3.
_INDIF_SENSITIVITY = 4.0


def unit_sigma(epsilon: float, delta: float, conversion: str = "improved") -> float:
    r"""Noise of one sensitivity-1 Gaussian query that spends all of :math:`(\varepsilon, \delta)`.

    ``"simple"`` is DPSyn's calibration (:func:`~synthmi.privacy.accountant.dpsyn_sigma`
    with one marginal); ``"improved"`` solves
    :math:`\varepsilon = \varepsilon_{\mathrm{improved}}(\mathrm{rdp}(\lambda) =
    \lambda/(2\sigma^2), \delta)` (Canonne, Kamath & Steinke 2020, Proposition 12)
    for :math:`\sigma`, a smaller noise for the same guarantee.
    """
    if conversion == "simple":
        return dpsyn_sigma(epsilon, delta, 1)

    def gap(log_sigma: float) -> float:
        s = math.exp(log_sigma)
        return rdp_to_dp_improved(1.0 / (2.0 * s * s), delta)[0] - epsilon

    s_simple = math.log(dpsyn_sigma(epsilon, delta, 1))
    return math.exp(brentq(gap, s_simple - 5.0, s_simple + 0.5, xtol=1e-12))


# --------------------------------------------------------------------------- columns
@dataclass
class _Column:
    """Public description of one column: its fine domain and how to map values to codes."""

    name: str
    kind: str  # "discrete" | "continuous"
    dtype: Any
    levels: list | None  # discrete: the levels (without the missing level)
    edges: np.ndarray | None  # continuous: bucket edges, len = n_buckets + 1
    integer: bool  # continuous: integer dtype, draw integers within buckets
    ordered: bool
    has_missing_level: bool

    @property
    def size(self) -> int:
        base = len(self.levels) if self.kind == "discrete" else len(self.edges) - 1
        return base + int(self.has_missing_level)

    def encode(self, s: pd.Series) -> np.ndarray:
        n_base = self.size - int(self.has_missing_level)
        if self.kind == "discrete":
            codes = pd.Categorical(np.asarray(s, dtype=object) if not isinstance(s.dtype, pd.CategoricalDtype) else s,
                                   categories=self.levels).codes.astype(np.int64)
            isna = s.isna().to_numpy()
            bad = (codes < 0) & ~isna
            if bad.any():
                # How many values fall outside is a data-dependent count no mechanism
                # accounts for, so the message names the column only.
                raise ValueError(
                    f"Column '{self.name}' has values outside its declared domain "
                    f"of {len(self.levels)} levels."
                )
        else:
            x = s.to_numpy(dtype=float)
            isna = np.isnan(x)
            # Values outside the public bounds are clipped into the end buckets
            # (a per-record transform, so it needs no budget).
            codes = np.clip(np.searchsorted(self.edges, x, side="right") - 1, 0, n_base - 1).astype(np.int64)
        if isna.any():
            if not self.has_missing_level:
                raise ValueError(f"Column '{self.name}' has {int(isna.sum())} missing values but its dtype allows none.")
            codes = np.where(isna, n_base, codes)
        return codes

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        n_base = self.size - int(self.has_missing_level)
        miss = codes >= n_base
        if self.kind == "discrete":
            safe = np.where(miss, 0, codes)
            if isinstance(self.dtype, pd.CategoricalDtype):
                if list(self.dtype.categories) == list(self.levels):
                    cat = pd.Categorical.from_codes(np.where(miss, -1, codes), dtype=self.dtype)
                else:
                    # A user-given domain may order or name levels differently from the dtype.
                    lv = np.array(self.levels, dtype=object)[safe]
                    lv[miss] = None
                    cat = pd.Categorical(lv, dtype=self.dtype)
                return pd.Series(cat, name=self.name)
            vals = np.array(self.levels, dtype=object)[safe]
            out = pd.Series(vals, name=self.name, dtype=object)
            out[miss] = np.nan
            if pd.api.types.is_bool_dtype(self.dtype) or pd.api.types.is_integer_dtype(self.dtype) or pd.api.types.is_float_dtype(self.dtype):
                return out.astype(self.dtype)
            return out
        safe = np.where(miss, 0, codes)
        lo, hi = self.edges[safe], self.edges[safe + 1]
        if self.integer:
            # Buckets of an integer column are the integers in [lo, hi).
            lo_i, hi_i = np.ceil(lo), np.ceil(hi)
            hi_i = np.maximum(hi_i, lo_i + 1)
            vals = np.floor(lo_i + rng.random(codes.size) * (hi_i - lo_i))
        else:
            vals = lo + rng.random(codes.size) * (hi - lo)
        vals = vals.astype(float)
        vals[miss] = np.nan
        # An integer dtype has no missing level, so its values are never NaN here.
        return pd.Series(vals, name=self.name).astype(self.dtype)


def _check_levels_fit_dtype(c: str, levels: list, dt: Any) -> None:
    """Declared levels must survive a cast to the column's dtype (public check, no data).

    Otherwise synthetic values could not be returned in the original dtype: e.g. an
    integer column declared with levels ``["a", "b"]`` or ``[0, 0.5]``.
    """
    if isinstance(dt, pd.CategoricalDtype) or dt == object:
        return
    lv = pd.Series(levels, dtype=object)
    try:
        cast = lv.astype(dt)
        ok = bool((cast.astype(object) == lv).all())
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise param_error(f"domain['{c}']", _OWNER, f"levels representable in the column's dtype {dt}", levels)


def _describe_columns(
    df: pd.DataFrame,
    bounds: Mapping[str, Any],
    domain: Mapping[str, Any],
    ordinal: Sequence[str] | None,
    bins: int,
) -> list[_Column]:
    """Public column descriptions from dtypes and user input; never from data values."""
    cols = []
    for c in df.columns:
        s = df[c]
        dt = s.dtype
        is_int = pd.api.types.is_integer_dtype(dt) and not pd.api.types.is_bool_dtype(dt)
        # Integer and bool dtypes cannot hold NaN; every other dtype gets a public "missing" level.
        can_miss = not (is_int or pd.api.types.is_bool_dtype(dt))
        if c in domain:
            d = domain[c]
            if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
                if d < 1:
                    raise param_error(f"domain['{c}']", _OWNER, "a positive integer or a list of levels", d)
                levels, default_ordered = list(range(int(d))), True
            else:
                levels = list(d)
                if not levels:
                    raise param_error(f"domain['{c}']", _OWNER, "a positive integer or a non-empty list of levels", d)
                # Numeric levels listed in increasing order are taken as ordered (ages, hours, ...).
                numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in levels)
                default_ordered = bool(numeric and all(a < b for a, b in zip(levels, levels[1:])))
            _check_levels_fit_dtype(c, levels, dt)
            if isinstance(dt, pd.CategoricalDtype):
                default_ordered = bool(dt.ordered)
            kind = "discrete"
        elif isinstance(dt, pd.CategoricalDtype):
            # A Categorical's categories are part of its dtype: public schema, not data.
            levels, default_ordered, kind = list(dt.categories), bool(dt.ordered), "discrete"
        elif pd.api.types.is_bool_dtype(dt):
            levels, default_ordered, kind = [False, True], False, "discrete"
        elif pd.api.types.is_numeric_dtype(dt):
            if c not in bounds:
                raise ValueError(
                    f"Column '{c}' is numeric with no public bounds: DPSynSynthesizer cannot read its range "
                    f"from the data without spending privacy budget. Pass bounds={{'{c}': (lower, upper)}} "
                    f"or domain={{'{c}': size_or_levels}}."
                )
            b = bounds[c]
            try:
                lo, hi = (float(b[0]), float(b[1]))
            except (TypeError, IndexError, ValueError):
                raise param_error(f"bounds['{c}']", _OWNER, "a pair (lower, upper) of numbers", b) from None
            if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
                raise param_error(f"bounds['{c}']", _OWNER, "finite with lower < upper", b)
            if is_int:
                # Integer buckets: distinct integer edges covering lower..upper.
                edges = np.unique(np.round(np.linspace(math.ceil(lo), math.floor(hi) + 1, bins + 1)))
            else:
                edges = np.linspace(lo, hi, bins + 1)
            cols.append(_Column(c, "continuous", dt, None, edges.astype(float), is_int, True, can_miss))
            continue
        else:
            raise ValueError(
                f"Column '{c}' has dtype {dt}; its levels would have to be read from the data. "
                f"Make it a pandas Categorical or pass domain={{'{c}': [levels]}}."
            )
        ordered = default_ordered if ordinal is None else (c in ordinal)
        cols.append(_Column(c, kind, dt, levels, None, False, ordered, can_miss))
    return cols


# --------------------------------------------------------------------------- curator
class _Curator:
    """Holds the encoded private data; its two methods are the only ways to read it.

    Each method records its spend in the accountant *before* computing anything,
    so a release that would exceed the budget never happens.
    """

    def __init__(
        self, codes: np.ndarray, accountant: PrivacyAccountant, rng: np.random.Generator, exact_noise: bool = False
    ) -> None:
        self.__codes = codes
        self.accountant = accountant
        self.rng = rng
        self.exact_noise = exact_noise

    def _true_counts(self, attrs: tuple[int, ...], maps: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        idx = [maps[k][self.__codes[:, a]] for k, a in enumerate(attrs)]
        flat = np.ravel_multi_index(idx, shape) if len(attrs) > 1 else idx[0]
        return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)

    def _true_indif(self, pairs: Sequence[tuple[int, int]], maps: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
        out = np.empty(len(pairs))
        for k, (a, b) in enumerate(pairs):
            joint = self._true_counts((a, b), (maps[a], maps[b]), (sizes[a], sizes[b])).astype(float)
            n = joint.sum()
            prod = np.outer(joint.sum(1), joint.sum(0)) / max(n, 1.0)
            out[k] = np.abs(joint - prod).sum()
        return out

    def noisy_marginal(
        self, attrs: tuple[int, ...], maps: Sequence[np.ndarray], shape: tuple[int, ...], sigma: float, label: str
    ) -> np.ndarray:
        """Counts of one marginal plus discrete Gaussian noise (l2 sensitivity 1)."""
        self.accountant.add_gaussian(sigma, sensitivity=1.0, count=1, label=label)
        counts = self._true_counts(attrs, maps, shape)
        noise = sample_discrete_gaussian(
            sigma * sigma, size=counts.size, rng=self.rng, exact=self.exact_noise
        ).reshape(shape)
        return counts.astype(np.int64) + noise

    def noisy_indif(
        self, pairs: Sequence[tuple[int, int]], maps: Sequence[np.ndarray], sizes: Sequence[int], sigma: float
    ) -> np.ndarray:
        """InDif scores of the pairs plus Gaussian noise (each score has sensitivity 4).

        InDif is real-valued (not a count), so it gets continuous Gaussian noise.
        """
        self.accountant.add_gaussian(sigma, sensitivity=_INDIF_SENSITIVITY, count=len(pairs), label="select: InDif")
        scores = self._true_indif(pairs, maps, sizes)
        return scores + self.rng.normal(0.0, sigma, size=len(pairs))


# --------------------------------------------------------------------------- compression
def _compress(col: _Column, noisy: np.ndarray, theta: float, target_mass: float, max_levels: int) -> tuple[np.ndarray, np.ndarray]:
    """Map fine codes to coarse groups from the noisy one-way counts (post-processing).

    Returns ``(group, weight)``: ``group[v]`` is the coarse level of fine value ``v``;
    ``weight[v]`` its share used to split the group back (0 for dropped values).
    """
    size = col.size
    c = np.clip(noisy.astype(float), 0.0, None)
    group = np.full(size, -1, dtype=np.int64)
    weight = c.copy()
    n_base = size - int(col.has_missing_level)
    base = np.arange(n_base)
    if col.ordered:
        # Contiguous buckets of noisy mass >= target (seed 000, "bucketize"); the
        # rare-value threshold keeps every bucket above the noise.
        # A column that already fits in max_levels is only cut where values are rare.
        tgt = theta if n_base <= max_levels else max(theta, target_mass)
        g, acc = 0, 0.0
        for v in base:
            group[v] = g
            acc += c[v]
            if acc >= tgt and v != base[-1]:
                g, acc = g + 1, 0.0
        n_groups = g + 1
        if g > 0 and acc < tgt:
            # The last partial bucket joins the one before.
            group[group == g] = g - 1
            n_groups = g
    else:
        kept = [v for v in base if c[v] >= theta]
        rare = [v for v in base if c[v] < theta]
        kept.sort(key=lambda v: -c[v])
        # Too many levels: the smallest kept ones join the rare values.
        while len(kept) + (1 if rare else 0) > max_levels and len(kept) > 1:
            rare.append(kept.pop())
        for k, v in enumerate(kept):
            group[v] = k
        n_groups = len(kept)
        if rare:
            if c[rare].sum() >= theta or not kept:
                for v in rare:
                    group[v] = n_groups
                n_groups += 1
            else:
                # Their total is below theta too: DPSyn assigns them 0 (seed 000, Section 2.1).
                largest = kept[0]
                for v in rare:
                    group[v] = group[largest]
                    weight[v] = 0.0
    if col.has_missing_level:
        m = size - 1
        if c[m] >= theta:
            group[m] = n_groups
            n_groups += 1
        else:
            group[m] = int(np.argmax(np.bincount(group[:m], weights=c[:m], minlength=n_groups)))
            weight[m] = 0.0
    return group, weight


# --------------------------------------------------------------------------- consistency
def _norm_cut(t: np.ndarray, total: float) -> np.ndarray:
    """Non-negative table with the given total (PrivSyn's norm-cut).

    Negative cells are set to 0; the mass this adds is then taken from the
    smallest positive cells, which are zeroed in increasing order.
    """
    t = np.clip(t, 0.0, None)
    excess = t.sum() - total
    if excess <= 0:
        if t.sum() > 0:
            return t * (total / t.sum()) if excess < 0 else t
        return np.full_like(t, total / t.size)
    flat = t.ravel().copy()
    order = np.argsort(flat, kind="stable")
    cs = np.cumsum(flat[order])
    k = int(np.searchsorted(cs, excess, side="right"))
    flat[order[:k]] = 0.0
    if k < flat.size:
        flat[order[k]] -= excess - (cs[k - 1] if k > 0 else 0.0)
    return flat.reshape(t.shape)


@dataclass
class _Marginal:
    attrs: tuple[int, ...]
    table: np.ndarray  # coarse-domain counts (float)
    var: np.ndarray  # per-cell noise variance, same shape


def _make_consistent(margs: list[_Marginal], n_rounds: int = 5) -> float:
    """Agreement on the total and on every shared sub-marginal, then non-negativity (in place).

    For every attribute set shared by two or more marginals (all intersections of
    their attribute sets, smallest first), each marginal's projection onto it is
    replaced by the inverse-variance weighted mean of all of them; each marginal
    absorbs its change spread evenly over the cells it sums (PrivSyn, Section 5.1):

    .. math::

        \\bar p_S = \\frac{\\sum_m p_{m,S} / v_{m,S}}{\\sum_m 1/v_{m,S}}, \\qquad
        T_m(x) \\leftarrow T_m(x) + \\frac{\\bar p_S(x_S) - p_{m,S}(x_S)}{|T_m| / |S|},

    with :math:`v_{m,S}` the noise variance of the projected cell. Processing
    smaller sets first keeps the agreement already reached on their subsets.
    Returns the common total.
    """
    sets = {m.attrs for m in margs}
    shared: set[tuple[int, ...]] = set()
    for x in sets:
        for y in sets:
            if x != y:
                inter = tuple(sorted(set(x) & set(y)))
                if inter:
                    shared.add(inter)
    shared_sorted = sorted(shared, key=lambda t: (len(t), t))
    total = 0.0
    for r in range(n_rounds):
        tot = np.array([m.table.sum() for m in margs])
        tv = np.array([m.var.sum() for m in margs])
        total = float(np.sum(tot / tv) / np.sum(1.0 / tv))
        for m in margs:
            m.table = m.table + (total - m.table.sum()) / m.table.size
        for S in shared_sorted:
            users = [m for m in margs if set(S) <= set(m.attrs)]
            if len(users) < 2:
                continue
            projs, vars_ = [], []
            for m in users:
                ax = tuple(i for i, b in enumerate(m.attrs) if b not in S)
                projs.append(m.table.sum(axis=ax) if ax else m.table)
                vars_.append(m.var.sum(axis=ax) if ax else m.var)
            w = 1.0 / np.array(vars_)
            avg = (np.array(projs) * w).sum(0) / w.sum(0)
            for m, p in zip(users, projs):
                shape = [m.table.shape[i] if b in S else 1 for i, b in enumerate(m.attrs)]
                per = m.table.size // p.size
                m.table = m.table + ((avg - p) / per).reshape(shape)
        for m in margs:
            m.table = _norm_cut(m.table, max(total, 1.0))
    return max(total, 1.0)


# --------------------------------------------------------------------------- GUM
def _gum(
    margs: list[_Marginal],
    sizes: np.ndarray,
    n: int,
    rng: np.random.Generator,
    n_iter: int,
    rate: float,
    decay: float,
    duplicate: float,
) -> np.ndarray:
    """PrivSyn's gradually-update method on the coarse domain.

    Records start with independent values drawn from the one-way marginals; each
    marginal in turn moves a share ``rate`` of the surplus records of over-full
    cells into under-full cells, either by copying a whole record of the target
    cell (probability ``duplicate``, keeps the other columns' joint structure) or
    by rewriting only the marginal's columns.
    """
    d = len(sizes)
    rec = np.empty((n, d), dtype=np.int64)
    one = {m.attrs[0]: m.table for m in margs if len(m.attrs) == 1}
    for a in range(d):
        p = one[a] / one[a].sum()
        rec[:, a] = rng.choice(sizes[a], size=n, p=p)
    multi = [m for m in margs if len(m.attrs) > 1]
    # One-way marginals of columns in some larger marginal are implied by it (they are
    # consistent); updating them separately would only scramble the joint structure.
    covered = {a for m in multi for a in m.attrs}
    multi += [m for m in margs if len(m.attrs) == 1 and m.attrs[0] not in covered]
    targets = [m.table.ravel() / m.table.sum() * n for m in multi]
    alpha = rate
    for it in range(n_iter):
        for m, tgt in zip(multi, targets):
            shape = m.table.shape
            attrs = list(m.attrs)
            idx = np.ravel_multi_index(rec[:, attrs].T, shape) if len(attrs) > 1 else rec[:, attrs[0]]
            cur = np.bincount(idx, minlength=tgt.size).astype(float)
            diff = cur - tgt
            over = np.clip(diff, 0.0, None) * alpha
            n_move = np.floor(over + rng.random(tgt.size)).astype(np.int64)
            n_move = np.minimum(n_move, cur.astype(np.int64))
            total_move = int(n_move.sum())
            if total_move == 0:
                continue
            deficit = np.clip(-diff, 0.0, None)
            if deficit.sum() <= 0:
                continue
            # The records to move: a uniformly random n_move[c] of each over-full cell.
            # Sorting idx + U (U uniform on [0, 1)) groups records by cell in random order.
            order = np.argsort(idx + rng.random(n))
            sidx = idx[order]
            start = np.concatenate(([0], np.cumsum(np.bincount(idx, minlength=tgt.size))))
            rank = np.arange(n) - start[sidx]
            movers = order[rank < n_move[sidx]]
            dest = rng.choice(tgt.size, size=movers.size, p=deficit / deficit.sum())
            dup = (rng.random(movers.size) < duplicate) & (cur[dest] > 0)
            if dup.any():
                dd = dest[dup]
                pick = start[dd] + np.floor(rng.random(dd.size) * cur[dd]).astype(np.int64)
                rec[movers[dup]] = rec[order[pick]]
            rw = ~dup
            if rw.any():
                vals = np.unravel_index(dest[rw], shape)
                for k, a in enumerate(attrs):
                    rec[movers[rw], a] = vals[k]
        alpha = max(alpha * decay, 0.01)
    return rec


# --------------------------------------------------------------------------- synthesizer
class DPSynSynthesizer(Synthesizer):
    r"""Differentially private synthesizer from noisy one- and two-way marginals (DPSyn / PrivSyn).

    :math:`(\varepsilon, \delta)`-DP end to end under add/remove-one neighbours: the
    data are read only through accounted Gaussian mechanisms (see the module
    docstring), everything after them is post-processing.

    Parameters
    ----------
    epsilon, delta : float
        The privacy budget; ``epsilon > 0``, ``0 < delta < 1``.
    theta_min : float
        Floor of the rare-value threshold :math:`\theta = \max(4.5\sigma_1, \theta_{\min})`.
        DPSyn used 800 for the 660,000-record census; the default 20 suits
        small n: a value seen by fewer than ~20 people cannot carry any two-way
        structure through the noise, while 4.5 sigma dominates at moderate budgets.
    bins : int
        Equal-width buckets of each continuous column over its public bounds.
    max_levels : int or None
        Most levels a column keeps in the two-way marginals (ordered columns are
        cut into contiguous buckets of noisy mass ~ n / max_levels). ``None``:
        chosen from the noise, :math:`\lfloor\sqrt{\hat n / (4\sigma_2)}\rfloor`
        clipped to [4, 32], so that a typical two-way cell holds ~4 noise sds.
    budget_split : tuple of three floats
        Fractions of the RDP budget for one-way marginals, selection and two-way
        marginals. PrivSyn uses 0.1 / 0.1 / 0.8; the default 0.3 / 0.05 / 0.65 gives the
        fine one-way marginals more weight because merged values and buckets are split
        back with them (on the public discretized Adult at eps = 1: two-way TVD 0.038
        against 0.046 with PrivSyn's split).
    one_way_split : {"cells", "equal"}
        Budget across the one-way marginals: proportional to cells^(2/3) (minimum
        total L1 noise, as for the two-way ones) or equal.
    three_way : int
        Number of three-way marginals to measure as well (default 0): the
        triples whose three pairs were all selected, ranked by the sum of their noisy
        InDif scores (post-processing, no extra budget for the choice), with at most
        ``max_cells_three_way`` cells. They share the two-way budget. On the
        discretized Adult, 10 triples lower the three-way TVD at eps = 8 from 0.065 to
        0.062 and leave eps = 1 unchanged, so they are off by default.
    max_cells_three_way : int
        Largest three-way marginal (in coarse cells) that may be measured.
    n_iter, update_rate, update_decay, duplicate : GUM settings
        Sweeps over the marginals (20), initial share of surplus records moved (1.0),
        its per-sweep decay (0.85), and the probability a moved record copies a whole
        record of its target cell instead of rewriting only the marginal's columns
        (0.25). Defaults were chosen on the public discretized Adult benchmark.
    conversion : {"improved", "simple"}
        RDP to (epsilon, delta) conversion used to calibrate the noise.
        ``"simple"`` reproduces DPSyn's formula.
    n_records : int or None
        Records per synthetic copy (default: the noisy estimate of n).
    random_state : int, Generator or None
        Seed of the noise drawn in ``fit``.
    exact_noise : bool
        ``False`` (default): the marginals' discrete Gaussian noise is drawn by the
        vectorised double-precision sampler (see
        :mod:`synthmi.privacy.discrete`: the exact discrete law up to float rounding
        of its parameters, ~1e-16 relative). ``True``: CKS 2020 Algorithms 1-3 in
        rational arithmetic (no floating point in the noise law; pure Python, about
        0.1 ms per cell, for small releases).
    """

    method = "dpsyn"
    # fully synthetic copies: Raghunathan, Reiter & Rubin (2003) combining rule
    combining_rule = "full"
    fully_synthetic = True
    differentially_private = True
    _parameter_constraints = {
        "epsilon": [Interval("real", 0.0, None, closed="neither")],
        "delta": [Interval("real", 0.0, 1.0, closed="neither")],
        "theta_min": [Interval("real", 0.0, None)],
        "bins": [Interval("int", 1, None)],
        "max_levels": [None, Interval("int", 2, None)],
        "budget_split": ["array-like"],
        "one_way_split": [Options("cells", "equal")],
        "n_iter": [Interval("int", 0, None)],
        "update_rate": [Interval("real", 0.0, 1.0, closed="right")],
        "update_decay": [Interval("real", 0.0, 1.0, closed="right")],
        "duplicate": [Interval("real", 0.0, 1.0)],
        "three_way": [Interval("int", 0, None)],
        "max_cells_three_way": [Interval("int", 1, None)],
        "conversion": [Options("improved", "simple")],
        "n_records": [None, Interval("int", 1, None)],
        "random_state": [None, "random_state"],
        "exact_noise": ["boolean"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        theta_min: float = 20.0,
        bins: int = 32,
        max_levels: int | None = None,
        budget_split: tuple[float, float, float] = (0.3, 0.05, 0.65),
        one_way_split: str = "cells",
        n_iter: int = 20,
        update_rate: float = 1.0,
        update_decay: float = 0.85,
        duplicate: float = 0.25,
        three_way: int = 0,
        max_cells_three_way: int = 2000,
        conversion: str = "improved",
        n_records: int | None = None,
        random_state: int | np.random.Generator | None = None,
        exact_noise: bool = False,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.theta_min = theta_min
        self.bins = bins
        self.max_levels = max_levels
        self.budget_split = budget_split
        self.one_way_split = one_way_split
        self.n_iter = n_iter
        self.update_rate = update_rate
        self.update_decay = update_decay
        self.duplicate = duplicate
        self.three_way = three_way
        self.max_cells_three_way = max_cells_three_way
        self.conversion = conversion
        self.n_records = n_records
        self.random_state = random_state
        self.exact_noise = exact_noise

    # ------------------------------------------------------------------ params
    def _check_params(self) -> None:
        check_delta(self.delta, _OWNER)
        bs = self.budget_split
        try:
            parts = [float(x) for x in bs]
        except TypeError:
            raise param_error("budget_split", _OWNER, "three fractions summing to 1", bs) from None
        if len(parts) != 3 or any(not (x > 0) for x in parts) or abs(sum(parts) - 1.0) > 1e-9:
            raise param_error("budget_split", _OWNER, "three positive fractions summing to 1", bs)

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        df: pd.DataFrame,
        spec: Any = None,
        bounds: Mapping[str, Any] | None = None,
        domain: Mapping[str, Any] | None = None,
        ordinal: Sequence[str] | None = None,
        *,
        quasi_identifiers: Sequence[str] | None = None,
        keep: Sequence[str] | None = None,
    ) -> "DPSynSynthesizer":
        """Measure the noisy marginals of ``df`` and make them consistent.

        Parameters
        ----------
        df : DataFrame
            The confidential data (never modified, not kept).
        spec : ReleaseSpec, dict or path, optional
            Release spec: its released columns (every role but ``excluded``) are all
            synthesized; its DECLARED bounds and levels are used as ``bounds`` and
            ``domain`` (inferred ones never are), ordinal kinds as ``ordinal``.
            Explicit ``bounds`` / ``domain`` / ``ordinal`` win over the spec.
        quasi_identifiers, keep : list of str, optional
            Shortcut for the released columns (default: every column of ``df``).
        bounds : dict, optional
            Column -> (lower, upper): public bounds of each numeric column that is
            not in ``domain``. Required for such columns; values outside are clipped.
        domain : dict, optional
            Column -> domain size ``d`` (integer codes 0..d-1) or list of levels, for
            discrete columns whose dtype does not carry its levels.
        ordinal : list of str, optional
            Discrete columns whose levels are ordered (bucketed contiguously); when
            given it replaces the default, which is: ordered Categoricals, integer-size
            domains and domains listed as increasing numbers. Continuous columns are
            always ordered.
        """
        return super().fit(df, spec, keep=keep, quasi_identifiers=quasi_identifiers,
                           bounds=bounds, domain=domain, ordinal=ordinal)

    def _fit_release(self, df: pd.DataFrame, spec: Any, bounds=None, domain=None, ordinal=None) -> None:
        df = df[spec.released]
        # declared-public values of the spec only (ReleaseSpec.public_domain's rule)
        declared_bounds = {c: spec[c].bounds for c in spec.released if spec[c].declared and spec[c].bounds}
        declared_levels = {c: list(spec[c].levels) for c in spec.released if spec[c].declared and spec[c].levels}
        bounds = {**declared_bounds, **dict(bounds or {})}
        domain = {**declared_levels, **dict(domain or {})}
        if ordinal is None and (declared_bounds or declared_levels):
            ordinal = [c for c in spec.released if spec.kind(c) in ("ordinal", "integer", "continuous")]
        for name, d in (("bounds", bounds), ("domain", domain)):
            unknown = [c for c in d if c not in df.columns]
            if unknown:
                raise ValueError(f"The '{name}' parameter of {_OWNER} names columns not in 'df': {unknown}.")
        if ordinal is not None:
            ordinal = list(ordinal)
            unknown = [c for c in ordinal if c not in df.columns]
            if unknown:
                raise ValueError(f"The 'ordinal' parameter of {_OWNER} names columns not in 'df': {unknown}.")
        columns = _describe_columns(df, bounds, domain, ordinal, int(self.bins))
        fine_codes = np.column_stack([c.encode(df[c.name]) for c in columns])
        rng = check_random_state(self.random_state)
        eps, delta = float(self.epsilon), float(self.delta)
        accountant = PrivacyAccountant(epsilon=eps, delta=delta)
        curator = _Curator(fine_codes, accountant, rng, exact_noise=bool(self.exact_noise))
        del fine_codes
        self._fit_from_curator(curator, columns)
        self.accountant_ = accountant
        self.columns_ = [c.name for c in columns]
        self.dtypes_ = df.dtypes.copy()

    def _fit_from_curator(self, curator: _Curator, columns: list[_Column]) -> None:
        d = len(columns)
        f1, f2, f3 = (float(x) for x in self.budget_split)
        if d == 1:
            f1, f2, f3 = 1.0, 0.0, 0.0
        # A hair under the budget so that float rounding never trips the accountant's check.
        s1 = unit_sigma(float(self.epsilon), float(self.delta), self.conversion) / math.sqrt(1.0 - 1e-9)
        self.sigma_unit_ = s1
        fine_sizes = [c.size for c in columns]
        ident = [np.arange(s, dtype=np.int64) for s in fine_sizes]

        # 1. one-way marginals on the fine domain; like the two-way ones, the budget
        #    share of each is proportional to cells^(2/3) (minimum total L1 noise).
        fs = np.array(fine_sizes, dtype=float)
        share1 = fs ** (2.0 / 3.0) / np.sum(fs ** (2.0 / 3.0)) if self.one_way_split == "cells" else np.full(d, 1.0 / d)
        sigma1s = s1 / np.sqrt(f1 * share1)
        one_way = [
            curator.noisy_marginal((a,), (ident[a],), (fine_sizes[a],), float(sigma1s[a]), f"one-way: {columns[a].name}")
            for a in range(d)
        ]
        tot = np.array([o.sum() for o in one_way], dtype=float)
        tvar = fs * sigma1s**2
        n_hat = float(max(np.sum(tot / tvar) / np.sum(1.0 / tvar), 1.0))

        # 2. compression (post-processing of the one-way marginals)
        thetas = np.maximum(4.5 * sigma1s, float(self.theta_min))
        if self.max_levels is None:
            pairs_guess = max(d, 1)
            sigma2_guess = s1 * math.sqrt(pairs_guess / f3) if f3 > 0 else float(sigma1s.max())
            max_levels = int(np.clip(math.floor(math.sqrt(n_hat / (4.0 * sigma2_guess))), 4, 32))
        else:
            max_levels = int(self.max_levels)
        groups, weights = [], []
        for a, col in enumerate(columns):
            g, w = _compress(col, one_way[a], float(thetas[a]), n_hat / max_levels, max_levels)
            groups.append(g)
            weights.append(w)
        sizes = np.array([int(g.max()) + 1 for g in groups], dtype=np.int64)

        margs: list[_Marginal] = []
        for a in range(d):
            coarse = np.bincount(groups[a], weights=np.where(weights[a] > 0, one_way[a], 0.0), minlength=sizes[a])
            nfine = np.bincount(groups[a], weights=(weights[a] > 0).astype(float), minlength=sizes[a])
            margs.append(_Marginal((a,), coarse.astype(float), np.maximum(nfine, 1.0) * sigma1s[a] ** 2))

        selected: list[tuple[int, int]] = []
        self.selected_three_way_ = []
        if d > 1:
            # 3. DP selection of two-way marginals (PrivSyn's DenseMarg)
            pairs = list(combinations(range(d), 2))
            sigma_sel = s1 * _INDIF_SENSITIVITY * math.sqrt(len(pairs) / f2)
            scores = curator.noisy_indif(pairs, groups, sizes, sigma_sel)
            selected = self._select(pairs, scores, sizes, s1, f3)
            triples = self._triples(selected, pairs, scores, sizes, int(self.three_way), int(self.max_cells_three_way))
            # 4. measure them, budget share proportional to cells^(2/3)
            measured = list(selected) + list(triples)
            c = np.array([np.prod([sizes[a] for a in t]) for t in measured], dtype=float)
            share = c ** (2.0 / 3.0) / np.sum(c ** (2.0 / 3.0))
            for t, w in zip(measured, share):
                sig = s1 / math.sqrt(f3 * w)
                tab = curator.noisy_marginal(
                    t, tuple(groups[a] for a in t), tuple(int(sizes[a]) for a in t), sig,
                    f"{'two' if len(t) == 2 else 'three'}-way: " + " x ".join(columns[a].name for a in t),
                )
                margs.append(_Marginal(t, tab.astype(float), np.full(tab.shape, sig**2)))
            self.selected_three_way_ = [tuple(columns[a].name for a in t) for t in triples]
            self.selection_scores_ = pd.Series(scores, index=[f"{columns[a].name} x {columns[b].name}" for a, b in pairs])

        # 5. consistency (post-processing)
        total = _make_consistent(margs)
        self.n_estimate_ = total
        self.theta_ = pd.Series(thetas, index=[c.name for c in columns])
        self.sigma_one_way_ = pd.Series(sigma1s, index=[c.name for c in columns])
        self.max_levels_ = max_levels
        self.selected_ = [(columns[a].name, columns[b].name) for a, b in selected]
        self._columns = columns
        self._groups = groups
        self._weights = [np.clip(w, 0.0, None) for w in weights]
        self._coarse_sizes = sizes
        self.marginals_ = margs

    @staticmethod
    def _triples(selected, pairs, scores, sizes, k: int, max_cells: int) -> list[tuple[int, int, int]]:
        """Up to ``k`` three-way marginals whose three pairs were all selected, by the sum of
        their noisy InDif scores (post-processing of released scores: no extra budget)."""
        if k <= 0:
            return []
        sel = set(selected)
        score = dict(zip(pairs, scores))
        attrs = sorted({a for p in selected for a in p})
        cands = []
        for i, a in enumerate(attrs):
            for j, b in enumerate(attrs[i + 1 :], start=i + 1):
                for c in attrs[j + 1 :]:
                    if {(a, b), (a, c), (b, c)} <= sel and sizes[a] * sizes[b] * sizes[c] <= max_cells:
                        cands.append((score[(a, b)] + score[(a, c)] + score[(b, c)], (a, b, c)))
        cands.sort(key=lambda x: -x[0])
        return sorted(t for _, t in cands[:k])

    @staticmethod
    def _select(pairs, scores, sizes, s1: float, f3: float) -> list[tuple[int, int]]:
        """Greedy DenseMarg: add the pair that most lowers expected error.

        Error of a selection S = expected L1 noise of measuring S with the optimal
        split, :math:`\\sqrt{2/\\pi}\\,\\sigma_1 (\\sum_{i\\in S} c_i^{2/3})^{3/2} / \\sqrt{f_3}`,
        plus the noisy InDif of every pair left out (PrivSyn, Section 4.3).
        """
        c = np.array([sizes[a] * sizes[b] for a, b in pairs], dtype=float) ** (2.0 / 3.0)
        k = math.sqrt(2.0 / math.pi) * s1 / math.sqrt(f3)
        chosen: list[int] = []
        acc = 0.0
        remaining = set(range(len(pairs)))
        noise_now = 0.0
        while remaining:
            best, best_gain = None, 0.0
            for p in remaining:
                noise_new = k * (acc + c[p]) ** 1.5
                gain = scores[p] - (noise_new - noise_now)
                if gain > best_gain:
                    best, best_gain = p, gain
            if best is None:
                break
            chosen.append(best)
            remaining.discard(best)
            acc += c[best]
            noise_now = k * acc**1.5
        if not chosen:
            chosen = [int(np.argmax(scores))]
        return [pairs[p] for p in sorted(chosen)]

    # ------------------------------------------------------------------ sample
    def _check_fitted(self) -> None:
        if not hasattr(self, "marginals_"):
            raise NotFittedError(
                f"This {_OWNER} instance is not fitted yet. Call 'fit' with appropriate arguments before using 'sample'."
            )

    def _draw_copies(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        """``m`` independent GUM runs; pure post-processing of the noisy marginals."""
        n = int(self.n_records) if self.n_records is not None else int(round(self.n_estimate_))
        copies = []
        for _ in range(m):
            marg = [_Marginal(x.attrs, x.table.copy(), x.var) for x in self.marginals_]
            rec = _gum(marg, self._coarse_sizes, n, rng, int(self.n_iter), float(self.update_rate),
                       float(self.update_decay), float(self.duplicate))
            copies.append(self._decode(rec, rng))
        return copies

    def _diagnostics(self) -> dict[str, Any]:
        return {
            "epsilon_spent": self.spent()[0],
            "delta": float(self.delta),
            "n_two_way": len(self.selected_),
            "theta": self.theta_.to_dict(),
        }

    def _decode(self, rec: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        out = {}
        for a, col in enumerate(self._columns):
            g, w = self._groups[a], self._weights[a]
            fine = np.empty(rec.shape[0], dtype=np.int64)
            for grp in range(int(self._coarse_sizes[a])):
                rows = np.flatnonzero(rec[:, a] == grp)
                if rows.size == 0:
                    continue
                members = np.flatnonzero(g == grp)
                p = w[members]
                if p.sum() <= 0:
                    p = np.ones(members.size)
                fine[rows] = rng.choice(members, size=rows.size, p=p / p.sum())
            out[col.name] = col.decode(fine, rng)
        frame = pd.DataFrame(out)
        for c in frame.columns:
            if frame[c].dtype != self.dtypes_[c]:
                # fit checked that every declared level casts to the column's dtype,
                # so a failure here is a bug and must surface, not return a wrong dtype.
                frame[c] = frame[c].astype(self.dtypes_[c])
        return frame[self.columns_]

    def summary(self) -> str:
        """Budget, noise, compression and the measured marginals (no data values)."""
        self._check_fitted()
        eps, delta = self.spent()
        sizes = dict(zip(self.columns_, (int(x) for x in self._coarse_sizes)))
        lines = [
            f"DPSynSynthesizer: epsilon = {eps:.6g} of {self.epsilon:g}, delta = {delta:g} "
            f"({self.conversion} RDP conversion)",
            f"  unit sigma {self.sigma_unit_:.4g}; {len(self.accountant_.ledger)} accounted releases",
            f"  noisy record count {self.n_estimate_:.1f}",
            "  levels in the joint marginals: " + ", ".join(f"{c}={k}" for c, k in sizes.items()),
            f"  two-way marginals measured: {len(self.selected_)}; three-way: {len(self.selected_three_way_)}",
        ]
        return "\n".join(lines)

    def spent(self, conversion: str | None = None) -> tuple[float, float]:
        """Total (epsilon, delta) recorded by the accountant during ``fit``."""
        self._check_fitted()
        return self.accountant_.spent(delta=float(self.delta), method="rdp", conversion=conversion or self.conversion)
