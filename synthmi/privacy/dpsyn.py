r"""DPSyn: differentially private synthetic data from noisy marginals.

The algorithm of Li, Zhang & Wang (DPSyn, their write-up of the NIST
differential privacy synthetic data challenge) as generalised in PrivSyn (Zhang, Wang, Li, Honorio, Backes,
He, Chen & Zhang 2021, USENIX Security):

1. **One-way marginals** of every column (on its declared public domain: the
   declared levels, or buckets of user-given bounds for
   continuous columns) get discrete Gaussian noise. From them, and only them,
   rare values are *compressed*: values whose noisy count is below
   :math:`\theta = \max(4.5\sigma, \theta_{\min})` (DPSyn write-up, equation 1) are
   merged into one "other" value (or dropped when even their total is below
   :math:`\theta`), and ordered columns are cut into contiguous buckets of
   roughly equal noisy mass so that no column has more than ``max_levels``
   levels in the two-way marginals (DPSyn write-up, Section 2.2, "bucketize").
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
   drawn uniformly within their (fine) cell.

Numeric columns with more than 16 fine cells (a continuous column's ``bins``
equal-width cells, an integer column's values) are measured as a *hierarchy* of
nested histograms (8, 64, ... nodes, then the cells; Hay, Rastogi, Miklau & Suciu
2010; a declared point mass is its own node at every level) instead of one flat
histogram, at the same RDP cost, combined by least squares and turned top-down into
non-negative cell masses (:func:`_tree_weights`; tails grown node by node outward from
the placed mass):
the buckets then follow the data's noisy quantiles, the within-bucket shape comes
from the finer levels, and an empty tail up to the declared bound stays empty.
The release states each numeric column's range and checks its mean against the
direct noisy estimate (``continuous_``, in ``summary()`` and the metadata's
diagnostics): post-processing of the noisy counts only.

Every access to the data is one of two accounted mechanisms (noisy marginal,
noisy InDif scores) of the private ``_Curator``; the Renyi-DP budget is split
between steps as fractions of one unit-sensitivity Gaussian that alone would
spend all of :math:`(\varepsilon, \delta)`: a Gaussian with sensitivity
:math:`\Delta` and noise :math:`\sigma` has RDP :math:`\lambda\Delta^2/(2\sigma^2)`
(DPSyn write-up, Theorem 2), so RDP curves compose additively and a step with fraction
:math:`f` and :math:`k` queries of sensitivity :math:`\Delta` uses
:math:`\sigma = \sigma_1 \Delta \sqrt{k/f}`. The composed spend then equals the
requested budget exactly (DPSyn write-up, Theorems 3-5).

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
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from .._json import plain
from ..domain import ColumnDomain, DomainError, PublicDomain, as_public_domain
from ..engine import call, compute, is_lazy, map_parts, persist
from .._validate import (
    Interval,
    NotFittedError,
    Options,
    check_delta,
    check_option,
    param_error,
)
from ..models.base import Synthesizer
from ..spec import as_spec
from ..provenance import original_fingerprint
from .accountant import PrivacyAccountant, dpsyn_sigma, rdp_to_dp_improved
from .discrete import sample_discrete_gaussian
from .noise_source import SecretSeedMixin, noise_generator, noise_provenance, sampling_generator, user_seed_given
from ..errors import InputError, ParameterError

__all__ = ["DPSynSynthesizer", "resolve_domain", "unit_sigma"]

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
    """Public description of one column: its fine cells and how to map values to codes.

    A discrete column has one fine cell per declared level. A numeric column's
    fine cells come from its declared bounds and point masses
    (:func:`_numeric_cells`): each is either a point (a single value, e.g. 0 of an
    income, or every value of a short integer range) or an interval. Both get one
    more cell for "missing" when the column may hold missing values.
    """

    name: str
    kind: str  # "discrete" | "continuous"
    dtype: Any  # the dtype of the released column (declared, never read from data)
    levels: list | None  # discrete: the declared levels (without the missing level)
    cell_lo: np.ndarray | None  # numeric: lower end of each fine cell (the value itself for a point)
    cell_hi: np.ndarray | None  # numeric: upper end (exclusive for intervals; = lo for points)
    cell_point: np.ndarray | None  # numeric: whether each fine cell is a point
    integer: bool  # numeric: integer kind, decode onto the integers
    ordered: bool
    has_missing_level: bool
    domain: ColumnDomain | None = None
    points: np.ndarray | None = None  # numeric: the point values (sorted)

    @property
    def size(self) -> int:
        base = len(self.levels) if self.kind == "discrete" else len(self.cell_lo)
        return base + int(self.has_missing_level)

    def encode(self, s: pd.Series, out_of_domain: str = "error") -> np.ndarray:
        """Fine codes of the values; values outside the declared domain raise an error
        naming the column only (how many fall outside is an unaccounted count)."""
        n_base = self.size - int(self.has_missing_level)
        isna = s.isna().to_numpy()
        if isna.any() and not self.has_missing_level:
            # No count in the message: how many are missing is a data-dependent figure.
            raise DomainError(
                f"Column '{self.name}' has missing values, but its declared domain allows none."
            )
        conformed = self.domain.conform(s, out_of_domain=out_of_domain)
        if self.kind == "discrete":
            codes = conformed.cat.codes.to_numpy().astype(np.int64)
        else:
            x = conformed.to_numpy(dtype=float)
            codes = _numeric_codes(x, self.cell_lo, self.cell_hi, self.cell_point)
        return np.where(isna, n_base, codes)

    def decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        n_base = self.size - int(self.has_missing_level)
        miss = codes >= n_base
        safe = np.where(miss, 0, codes)
        if self.kind == "discrete":
            if isinstance(self.dtype, pd.CategoricalDtype):
                cat = pd.Categorical.from_codes(np.where(miss, -1, codes), dtype=self.dtype)
                return pd.Series(cat, name=self.name)
            vals = np.array(self.levels, dtype=object)[safe]
            out = pd.Series(vals, name=self.name, dtype=object)
            out[miss] = np.nan
            if pd.api.types.is_bool_dtype(self.dtype) or pd.api.types.is_integer_dtype(self.dtype) or pd.api.types.is_float_dtype(self.dtype):
                return out.astype(self.dtype)
            return out
        lo, hi, point = self.cell_lo[safe], self.cell_hi[safe], self.cell_point[safe]
        u = rng.random(codes.size)
        if self.integer:
            # An integer interval cell holds the integers lo..hi-1 other than the
            # declared points inside it; each is equally likely (the documented
            # within-bin shape: uniform on the cell's own values).
            vals = _uniform_integers(lo, hi, u, self.points)
        else:
            # A continuous interval: uniform on [lo, hi) (documented within-bin shape).
            vals = lo + u * (hi - lo)
        vals = np.where(point, lo, vals).astype(float)
        vals[miss] = np.nan
        return pd.Series(vals, name=self.name).astype(self.dtype)


def _numeric_cells(cd: ColumnDomain, bins: int, integer_levels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fine cells of a numeric column from its *declared* bounds and point masses.

    * integer kind with at most ``integer_levels`` values: one point cell per value
      (the column is decoded exactly onto its integers);
    * integer kind otherwise: ``bins`` intervals of consecutive integers
      ``[lo, hi)`` plus one point cell per declared point mass;
    * continuous kind: ``bins`` equal-width intervals over the bounds (the last one
      closed at the upper bound) plus one point cell per declared point mass.

    Cells are in increasing order of position (a point comes just before the
    interval that contains it), so contiguous bucketing keeps neighbours together.
    Returns ``(lo, hi, is_point)``.
    """
    lo_b, hi_b = cd.bounds
    points = np.array(cd.point_masses, dtype=float)
    if cd.kind == "integer":
        n_vals = int(hi_b - lo_b) + 1
        if n_vals <= integer_levels:
            v = np.arange(lo_b, hi_b + 1, dtype=float)
            return v, v.copy(), np.ones(v.size, dtype=bool)
        edges = np.unique(np.round(np.linspace(lo_b, hi_b + 1, bins + 1)))
    else:
        edges = np.linspace(lo_b, hi_b, bins + 1)
    cells = []
    for a, b in zip(edges[:-1], edges[1:]):
        for p in points[(points >= a) & ((points < b) | ((b == edges[-1]) & (points <= b)))]:
            cells.append((p, p, True))
        inside = points[(points >= a) & (points < b)] if cd.kind == "integer" else points[:0]
        if cd.kind == "integer" and b - a - inside.size <= 0:
            continue  # every integer of this interval is a point mass
        cells.append((a, b, False))
    arr = np.array(cells, dtype=object)
    return arr[:, 0].astype(float), arr[:, 1].astype(float), arr[:, 2].astype(bool)


def _numeric_codes(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Fine cell of each value (values are already checked to lie in the bounds)."""
    codes = np.zeros(x.size, dtype=np.int64)
    ok = ~np.isnan(x)
    ivl = np.flatnonzero(~point)
    if ivl.size:
        # the interval whose [lo, hi) holds x; the last interval also holds its upper end
        k = np.clip(np.searchsorted(lo[ivl], x[ok], side="right") - 1, 0, ivl.size - 1)
        codes[ok] = ivl[k]
    for j in np.flatnonzero(point):
        codes[ok & (x == lo[j])] = j
    return codes


def _uniform_integers(lo: np.ndarray, hi: np.ndarray, u: np.ndarray, points: np.ndarray | None) -> np.ndarray:
    """Uniform integers in ``[lo, hi)`` skipping the declared ``points`` inside."""
    pts = np.sort(points) if points is not None and points.size else np.empty(0)
    lo_i = np.ceil(lo)
    n_pts = (np.searchsorted(pts, hi, side="left") - np.searchsorted(pts, lo_i, side="left")) if pts.size else 0
    width = np.maximum(np.ceil(hi) - lo_i - n_pts, 1.0)
    v = lo_i + np.floor(u * width)
    # Shift past every point at or below the running value (points are sorted).
    for p in pts:
        v = np.where((p >= lo_i) & (p < hi) & (v >= p), v + 1, v)
    return v


def _integral_bounds(b: Any) -> bool:
    """Whether a legacy ``bounds`` pair is written in whole numbers of an integer type."""
    try:
        return len(b) == 2 and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in b)
    except TypeError:
        return False


def resolve_domain(
    df: pd.DataFrame,
    domain: Any = None,
    bounds: Mapping[str, Any] | None = None,
    ordinal: Sequence[str] | None = None,
    owner: str = _OWNER,
) -> PublicDomain:
    """The declared public domain of every column of ``df`` (never read from the data).

    ``domain`` is a :class:`~synthmi.domain.PublicDomain`, a path to its JSON, its
    dict form, or the older mapping ``{column: size or [levels]}``; ``bounds``
    (older form) declares numeric columns ``{column: (lower, upper)}`` -- integer
    kind when both bounds are written as integers (``(0, 100)``), continuous
    otherwise (``(0.0, 100.0)``). Only the column *names* of ``df`` are read: its
    dtypes are what a reader made of the values (a missing value turns ``int64``
    into ``float64``, a ``bool`` column into ``object``), so they decide nothing
    (issue 25). A column without a declaration is refused with one error naming it
    and how to declare it.
    """
    bounds = dict(bounds or {})
    if domain is None or isinstance(domain, (PublicDomain, str, Path)) or (
        isinstance(domain, Mapping) and isinstance(domain.get("columns"), Mapping)
    ):
        declared = as_public_domain(domain) or PublicDomain()
        legacy: Mapping[str, Any] = {}
    elif isinstance(domain, Mapping):
        declared, legacy = PublicDomain(), domain
    else:
        raise param_error("domain", owner, "a PublicDomain, a domain JSON path, or a mapping", type(domain).__name__)
    # A domain file may declare more columns than the data has (a superset is fine);
    # the older per-column arguments must name columns of df.
    for name, d in (("bounds", bounds), ("domain", legacy)):
        unknown = [c for c in d if c not in df.columns]
        if unknown:
            raise InputError(f"The '{name}' parameter of {owner} names columns not in 'df': {unknown}.", data='df')
    integer = [c for c, b in bounds.items() if _integral_bounds(b)]
    try:
        extra = PublicDomain.from_legacy(legacy, bounds, ordinal if legacy else None, integer=integer)
    except DomainError as e:
        raise InputError(str(e)) from None
    declared = declared.merged(extra) if len(extra) else declared
    declared.require(df.columns, flag="--domain", parameter="domain")
    return declared


def _describe_columns(
    df: pd.DataFrame,
    domain: PublicDomain,
    ordinal: Sequence[str] | None,
    bins: int,
    integer_levels: int = 100,
) -> list[_Column]:
    """Public column descriptions from the declared domain alone.

    Only the column names of ``df`` are read. Kind, released dtype
    (:meth:`~synthmi.domain.ColumnDomain.dtype`), levels, cells and whether a column has a "missing"
    cell (its declared ``missing``) are functions of the declaration, so the fine
    domain -- hence every budget share and threshold -- is the same on neighbouring
    data sets whatever dtypes a reader gave them (issue 25).
    """
    cols = []
    for c in df.columns:
        cd = domain[c]
        can_miss = bool(cd.missing)
        if cd.is_discrete:
            levels = list(cd.levels)
            ordered = (c in ordinal) if ordinal is not None else cd.kind == "ordinal"
            cols.append(_Column(c, "discrete", cd.dtype(ordered), levels, None, None, None, False,
                                ordered, can_miss, cd))
            continue
        lo, hi, point = _numeric_cells(cd, bins, integer_levels)
        cols.append(_Column(c, "continuous", cd.dtype(), None, lo, hi, point, cd.kind == "integer",
                            True, can_miss, cd, np.array(cd.point_masses, dtype=float)))
    return cols




def _to_json_levels(d: Mapping[str, list]) -> dict[str, list]:
    return {c: [plain(v) for v in lv] for c, lv in d.items()}


def _declared_spec(spec: Any, domain: PublicDomain, columns: Sequence[_Column]) -> Any:
    """``spec`` with every released column's kind, levels, bounds and point masses
    taken from the declared ``domain`` (and marked declared).

    Roles, masks, analyses and the rest come from the user's spec or the column
    lists (public inputs); nothing comes from the data's dtypes or categories. A column
    not released is kept only when the spec declares it (an inferred kind is a data fact).
    """
    from ..spec import ColumnSpec, ReleaseSpec

    described = {c.name: c for c in columns}
    cols = {}
    for name, v in spec.columns.items():
        if name not in described:
            # not released: kept only when declared. An undeclared kind is what `synthmi spec`
            # inferred from the private values (binary with 2 levels seen, nominal with 3), so
            # publishing it would show whether one record holds a third level (review of issue 25).
            if v.declared:
                cols[name] = v
            continue
        cols[name] = ColumnSpec.from_domain(name, domain[name], v.role, ordered=described[name].ordered)
    return ReleaseSpec(cols, spec.masks, spec.models, spec.visit_sequence, list(spec.analyses), spec.source,
                       spec.na_values)


# --------------------------------------------------------------------------- curator
def _encode_partition(part: pd.DataFrame, columns: Sequence["_Column"], out_of_domain: str = "error") -> np.ndarray:
    """Fine codes (n, d) of one partition's records (a pandas frame is one partition)."""
    if len(part) == 0:
        return np.empty((0, len(columns)), dtype=np.int64)
    return np.column_stack([c.encode(part[c.name], out_of_domain) for c in columns])


def _partition_counts(codes: np.ndarray, attrs, maps, shape) -> np.ndarray:
    """The flat counts of one marginal over one partition's fine codes."""
    idx = [maps[k][codes[:, a]] for k, a in enumerate(attrs)]
    flat = np.ravel_multi_index(idx, shape) if len(attrs) > 1 else idx[0]
    return np.bincount(flat, minlength=int(np.prod(shape)))


def _withheld(f, *args):
    """``f(*args)``, where a failure other than the declared-domain check (which names the
    column only) is re-raised without its text: a reader that meets a value its inferred
    dtype cannot hold quotes that private value in its error (issue 25)."""
    try:
        return f(*args)
    except DomainError:
        raise
    except Exception as exc:
        raise InputError(
            f"Reading the data failed ({type(exc).__name__}); its message is withheld on a differentially private "
            "path because it may quote a value of the data. A Dask reader that infers dtypes from the first block "
            "fails when a later block holds other values: read every column as text (dd.read_csv(..., dtype=str)) "
            "and let the declared domain convert them."
        ) from None


class _Curator:
    """Holds the encoded private data; its two methods are the only ways to read it.

    The data is a list of fine-code arrays, one per partition (:mod:`synthmi.engine`):
    one array for a pandas frame, arrays persisted on the workers for a Dask frame
    (:meth:`of_frame`). A marginal's true counts are the sum of per-partition
    ``bincount`` s; integer addition is exact, so every count, and with the same seed
    the whole release, is the same for either frame type and any partitioning.

    Each method records its spend in the accountant *before* computing anything,
    so a release that would exceed the budget never happens.
    """

    def __init__(
        self, codes: np.ndarray | list, accountant: PrivacyAccountant, rng: np.random.Generator,
        exact_noise: bool = False
    ) -> None:
        # an (n, d) array of fine codes, or the per-partition arrays of :meth:`of_frame`
        self.__codes = [codes] if isinstance(codes, np.ndarray) else list(codes)
        self.accountant = accountant
        self.rng = rng
        self.exact_noise = exact_noise

    @classmethod
    def of_frame(cls, frame: Any, columns: Sequence["_Column"], out_of_domain: str, accountant: PrivacyAccountant,
                 rng: np.random.Generator, exact_noise: bool = False) -> "_Curator":
        """The curator of a pandas or Dask frame: every partition encoded (and kept where it is)."""
        parts = _withheld(lambda: persist(map_parts(frame, _encode_partition, list(columns), out_of_domain)))
        return cls(parts, accountant, rng, exact_noise)

    def _true_counts(self, attrs: tuple[int, ...], maps: Sequence[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        lazy = any(is_lazy(p) for p in self.__codes)
        maps = [np.asarray(mp) for mp in maps]
        counts = _withheld(compute, *[call(lazy, _partition_counts, p, tuple(attrs), maps, tuple(shape))
                                      for p in self.__codes])
        total = counts[0].astype(np.int64)
        for c in counts[1:]:
            total = total + c
        return total.reshape(shape)

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

    def noisy_hierarchy(
        self, attr: int, size: int, maps: Sequence[np.ndarray], shapes: Sequence[int], sigma: float, label: str
    ) -> list[np.ndarray]:
        r"""Counts of one column at several nested resolutions, each plus discrete Gaussian noise.

        ``maps[l]`` sends each fine code to its node at level ``l`` (a partition of the
        fine cells). A record adds 1 to exactly one node of each of the :math:`L` levels,
        so the vector of all levels has l2 sensitivity :math:`\sqrt{L}`; it is accounted
        as one Gaussian release with that sensitivity and noise ``sigma`` per count, whose
        RDP :math:`\lambda L / (2\sigma^2)` equals that of :math:`L` unit-sensitivity
        releases (Hay, Rastogi, Miklau & Suciu 2010 measure such a hierarchy with
        Laplace noise; here the noise is the same exact discrete Gaussian as every
        marginal). One read of the fine counts serves every level.
        """
        self.accountant.add_gaussian(sigma, sensitivity=math.sqrt(len(maps)), count=1, label=label)
        fine = self._true_counts((attr,), (np.arange(size, dtype=np.int64),), (size,))
        out = []
        for mp, k in zip(maps, shapes):
            counts = np.bincount(mp, weights=fine, minlength=int(k)).round().astype(np.int64)
            out.append(counts + sample_discrete_gaussian(sigma * sigma, size=int(k), rng=self.rng, exact=self.exact_noise))
        return out

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
def _pool_rare(noisy: np.ndarray, other: int, theta: float, n_levels: int) -> tuple[np.ndarray, list[int]]:
    r"""Pool the declared levels whose noisy count is below ``theta`` into level ``other``
    (post-processing of the noisy one-way counts).

    Returns the new counts and the pooled level indices. The pooled count is the sum of
    the raw noisy counts,

    .. math:: \tilde c_o' = \tilde c_o + \sum_{v \in P} \tilde c_v ,

    unbiased for :math:`c_o + \sum_{v\in P} c_v` (each noise has mean 0) with variance
    :math:`(1 + |P|)\sigma^2` for a given set :math:`P`. Clipping each :math:`\tilde c_v`
    at 0 before summing would add :math:`\sigma/\sqrt{2\pi}` per empty pooled level.
    :math:`P` is chosen from the same noisy counts, so a level whose true count is near
    the threshold joins :math:`P` when its noise is low: averaged over that choice the
    pooled count is biased by :math:`E[e_v 1\{c_v + e_v < \theta\}] =
    -\sigma\,\phi((\theta - c_v)/\sigma)` per level (Gaussian noise), at most
    :math:`-\sigma/\sqrt{2\pi}` (at :math:`c_v = \theta`) and negligible for the levels
    pooling is meant for (:math:`c_v \ll \theta = 4.5\sigma`: below :math:`2\times
    10^{-5}\sigma` for an empty level). The missing cell (index ``n_levels`` when
    present) is never pooled.
    """
    counts = np.asarray(noisy).astype(np.int64).copy()
    pooled = [v for v in range(n_levels) if v != other and counts[v] < theta]
    counts[other] += int(counts[pooled].sum())
    counts[pooled] = 0
    return counts, pooled


def _compress(
    col: _Column, noisy: np.ndarray, theta: float, target_mass: float, max_levels: int, keep: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    r"""Map fine codes to coarse groups from the noisy one-way counts (post-processing).

    Returns ``(group, weight)``: ``group[v]`` is the coarse level of fine value ``v``;
    ``weight[v]`` its share used to split the group back (0 for dropped values).
    An unordered column keeps a level as its own group when its noisy count is at
    least ``keep`` (default ``theta``; the synthesizer passes
    :math:`\min(\theta, 3\sigma_1)` so a level clearly above the noise is never dropped)
    (a "missing" cell still faces ``theta``).
    """
    keep = theta if keep is None else keep
    size = col.size
    c = np.clip(noisy.astype(float), 0.0, None)
    group = np.full(size, -1, dtype=np.int64)
    weight = c.copy()
    n_base = size - int(col.has_missing_level)
    base = np.arange(n_base)
    if col.ordered:
        # Contiguous buckets of noisy mass >= target (DPSyn write-up, "bucketize"); the
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
        kept = [v for v in base if c[v] >= keep]
        rare = [v for v in base if c[v] < keep]
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
                # Their total is below theta too: DPSyn assigns them 0 (DPSyn write-up, Section 2.1).
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


# ------------------------------------------------------------------ numeric hierarchy
# A numeric column with more fine cells than this is measured as a hierarchy of nested
# partitions (each node splits into _TREE_BRANCH contiguous children) instead of one flat
# histogram; see _tree_maps / _tree_estimate / _tree_weights.
_TREE_MIN_CELLS = 16
# ... and at most this many (the least-squares step inverts a cells x cells matrix).
_TREE_MAX_CELLS = 2048
_TREE_BRANCH = 8
# A top-level node of the hierarchy (or a run of its unresolved siblings) gets mass only
# when its estimate is at least this many standard errors above 0: an empty node passes
# with probability 0.0013, so empty tails stay empty (issue 25). At 2 sds, 1 in 6 fits on
# a 2,000-row survey put ~3% of incomes near the declared bound (mean x 1.7).
_TREE_Z = 3.0
# ... and from the placed mass outward, node by node, a top-level node next to placed mass
# is kept when its own estimate is at least this many standard errors above 0 (the first
# that is not ends the tail; _tree_weights). Only a neighbour of placed mass is tested, so
# an empty stretch up to the declared bound gets mass only if every node on the way passes.
# Measured on 1,000-row samples (Adult / fair / randhie, eps 1, seeds 0-4, median of the
# largest share of people outside the release range): none 0.216 / 0.072 / 0.163,
# 2 sd 0.216 / 0.072 / 0.163, 1.5 sd 0.131 / 0.072 / 0.163, 1 sd 0.131 / 0.004 / 0.131, and
# 1 sd with declared point masses as their own nodes 0.102 / 0.004 / 0.041 (the flat
# histogram before the hierarchy: 0.164 / 0.047 / 0.094). The cost: a thin spread beside a
# heavy point mass (Adult's non-zero capital losses, 4.7% of people over ~10 nodes) is no
# longer carried by the point's node and vanishes at 1,000 rows (its truncation is flagged).
_TREE_GROW_Z = 1.0
# A declared level of an unordered column whose noisy one-way count is at least this many
# noise sds is always kept (issue 25: levels held by 7-19% of people were suppressed).
_KEEP_Z = 3.0
# The one-way budget is shared in proportion to min(cells, cap)^(2/3): the cells^(2/3) rule
# minimises the total L1 noise over the FINE cells, which starved binary columns beside a
# 512-cell income; what synthesis uses are the coarse levels (at most ~32).
_ONE_WAY_CELL_CAP = 16
# A moment of the release is flagged when it differs from its direct noisy estimate by more
# than this many of that estimate's standard errors.
_FLAG_Z = 3.0


# The fields of each numeric column's entry in ``continuous_`` (always all of them).
_CONTINUOUS_KEYS = ("range", "declared", "mean", "noisy_mean", "noisy_mean_se", "mean_flag", "share_outside_range",
                    "share_outside_range_raw", "share_outside_se", "truncation_flag", "share_empty_inside",
                    "share_empty_inside_se")
# A flag says "no" only when the test could have seen a material effect; otherwise it says
# "not detectable" (issue 25 follow-up: "truncated: no" at se 10.4% while 5% of people were
# cut). Truncation: "no" needs the share's se <= _MATERIAL_SE_SHARE (a 7.5% share then sits
# 3 se out and is flagged with probability ~1/2, a 10% share with ~0.85). Mean: "no" needs
# _FLAG_Z x se <= _MATERIAL_MEAN_SD x the release's sd (a move of a quarter sd is flagged).
_MATERIAL_SE_SHARE = 0.025
_MATERIAL_MEAN_SD = 0.25


def continuous_lines(report: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per numeric column of a fitted DPSyn's ``continuous_`` report (post-processing
    of noisy counts). The words are fixed; only the values (ranges, means, shares, the
    ``YES`` / ``no`` / ``not detectable`` flags, ``n/a`` when the release holds no value of
    the column) depend on the noise, so the line's shape is the same on neighbouring data
    sets. Shares are printed clamped to [0%, 100%] (the unbiased estimate can be negative;
    its raw value is kept in ``share_outside_range_raw``).
    """
    def num(v, fmt: str, scale: float = 1.0, unit: str = "") -> str:
        return "n/a" if v is None else f"{scale * v:{fmt}}{unit}"

    def share(v) -> str:
        return "n/a" if v is None else f"{100.0 * min(max(v, 0.0), 1.0):.1f}%"

    def flag(v) -> str:
        return "n/a" if v is None else ("YES" if v is True else "no" if v is False else str(v))

    def span(r) -> str:
        return "none" if r is None else f"[{r[0]:.6g}, {r[1]:.6g}]"

    out = []
    for c, e in report.items():
        out.append(
            f"{c}: release range {span(e.get('range'))} of declared {span(e.get('declared'))}, "
            f"release mean {num(e.get('mean'), '.4g')}; "
            f"noisy mean {num(e.get('noisy_mean'), '.4g')} (se {num(e.get('noisy_mean_se'), '.2g')}), "
            f"mean moved beyond the noise: {flag(e.get('mean_flag'))}; "
            f"share outside the range {share(e.get('share_outside_range'))} "
            f"(se {num(e.get('share_outside_se'), '.1f', 100.0, '%')}), truncated: {flag(e.get('truncation_flag'))}; "
            f"share in empty cells inside the range {share(e.get('share_empty_inside'))} "
            f"(se {num(e.get('share_empty_inside_se'), '.1f', 100.0, '%')})"
        )
    return out


def _tree_maps(n_base: int, has_missing: bool, point: np.ndarray | None = None) -> tuple[list[np.ndarray], list[int]]:
    r"""Nested partitions of the fine cells ``0..n_base-1`` (plus the missing cell, its own
    node at every level, last): with :math:`m` interval cells, level ``l`` has :math:`b^l`
    contiguous nodes of interval cells (``b`` = ``_TREE_BRANCH``), the :math:`j`-th
    interval cell in node :math:`\lfloor j\, b^l / m \rfloor`, for :math:`b^l \le m/2`,
    then the cells themselves. A node's cells all lie in one node of the level above
    because :math:`b^{l+1}` is a multiple of :math:`b^l`. A declared point mass
    (``point[i]``, e.g. income 0) is its own node at every level: measured :math:`L` times,
    its least-squares count has the noise of one flat count, and a common value is not
    lumped with an empty stretch of the range. Nodes are numbered in value order (a node
    at the position of its first cell), so that neighbouring nodes hold neighbouring
    values. Public: a function of the declared cells only."""
    point = np.zeros(n_base, dtype=bool) if point is None else np.asarray(point[:n_base], dtype=bool)
    m = int((~point).sum())
    counts = []
    k = _TREE_BRANCH
    while k <= m / 2:
        counts.append(k)
        k *= _TREE_BRANCH
    maps, shapes = [], []
    pos = np.arange(n_base, dtype=np.int64)
    j = np.cumsum(~point) - 1  # rank of each interval cell among the interval cells
    for k in counts + [None]:
        if k is None:  # the finest level: the cells themselves
            mp = pos.copy()
        else:
            key = np.where(point, -1 - pos, (j * k) // max(m, 1))
            _, first, inv = np.unique(key, return_index=True, return_inverse=True)
            order = np.argsort(np.argsort(first))  # node ids by the position of the node's first cell
            mp = order[inv].astype(np.int64)
        size = int(mp.max()) + 1 if n_base else 0
        if has_missing:
            mp = np.append(mp, size)
        maps.append(mp)
        shapes.append(size + int(has_missing))
    return maps, shapes


def _tree_estimate(noisy: Sequence[np.ndarray], maps: Sequence[np.ndarray], size: int, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Least-squares fine counts from the noisy levels (post-processing).

    With :math:`A_l` the 0/1 matrix summing fine cells into level-``l`` nodes and
    :math:`y_l = A_l c + e_l`, :math:`e_l \sim N(0, \sigma^2 I)` (the discrete Gaussian
    has variance below :math:`\sigma^2`, Canonne, Kamath & Steinke 2020, Corollary 9):

    .. math::

        \hat c = \Big(\sum_l A_l^	op A_l\Big)^{-1} \sum_l A_l^	op y_l, \qquad
        \mathrm{Cov}(\hat c) = \sigma^2 \Big(\sum_l A_l^	op A_l\Big)^{-1},

    the unbiased minimum-variance combination of all levels (Hay, Rastogi, Miklau &
    Suciu 2010, "Boosting the accuracy of differentially private histograms through
    consistency", Theorem 3, for the same estimator on a complete tree). The finest
    level is the cells themselves, so the system is non-singular.
    """
    gram = np.zeros((size, size))
    rhs = np.zeros(size)
    for y, mp in zip(noisy, maps):
        a = np.zeros((int(mp.max()) + 1, size))
        a[mp, np.arange(size)] = 1.0
        gram += a.T @ a
        rhs += a.T @ np.asarray(y, dtype=float)
    inv = np.linalg.inv(gram)
    return inv @ rhs, sigma * sigma * inv


def _runs(mask: np.ndarray) -> list[np.ndarray]:
    """Maximal runs of consecutive True positions of ``mask``."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)


def _tree_weights(est: np.ndarray, cov: np.ndarray, maps: Sequence[np.ndarray], z: float = _TREE_Z,
                  grow_z: float | None = None, has_missing: bool = False) -> np.ndarray:
    r"""Non-negative fine-cell masses, top-down through the hierarchy (post-processing).

    The estimated total :math:`\max(\sum_i \hat c_i, 0)` goes to the top level's nodes
    (which span the declared range, so this is where empty tails are decided). With :math:`\hat c_v` the least-squares
    estimate of child :math:`v` and :math:`\mathrm{se}` its standard error (from
    ``cov``), a child *resolves* when :math:`\hat c_v \ge z\,\mathrm{se}(\hat c_v)`;
    a run of consecutive unresolved children is grown from its resolved neighbour(s)
    (the data are ordered, so an unresolved tail lies next to resolved mass): the longest
    stretch of it whose summed estimate :math:`\hat R` has :math:`\hat R \ge
    z\,\mathrm{se}(\hat R)` gets :math:`\hat R`, shared among its members in proportion
    to their positive estimates (equally if none is positive). The parent's mass is
    split in proportion to these amounts; unresolved mass that is not itself clear of
    the noise gets nothing (it stays with its resolved siblings). With ``grow_z``, the
    tails are then extended outward from the placed mass one node at a time: the next
    node gets its estimate when :math:`\hat c_v \ge \mathrm{grow\_z}\,\mathrm{se}(\hat c_v)`,
    and the first node that fails ends the tail (a node next to people is likely to hold
    people; an empty node passes with probability :math:`P(N(0,1) > \mathrm{grow\_z})`, and
    a stretch of :math:`r` empty nodes up to the declared bound with that probability to
    the power :math:`r`). With ``has_missing`` the last node (the missing cell) neighbours
    no value: it is judged alone. When nothing resolves the split follows the
    positive estimates (equally if none). So a top node clearly above its noise always
    keeps mass, and an empty tail (incomes above the last real one) gets mass only with
    probability about :math:`P(N(0,1) > z)` per test, not the :math:`1/2` of clipping
    each noisy count at 0 (issue 25).

    Below the top level a node's mass goes to its :math:`k` children in shares shrunk
    from their positive estimates towards :math:`1/k` by the positive-part James-Stein
    factor :math:`\lambda = \max(0, 1 - (k-1)\overline{\mathrm{se}^2} /
    \sum_v (\hat c_v - \bar c)^2)` (Efron & Morris 1973): children whose spread is
    mostly noise share their parent's range about evenly instead of one noisy cell
    taking it all (issue 25: 205 of 1,583 records at age 61).
    """
    size = est.size
    mass = np.array([max(float(est.sum()), 0.0)])
    parent_of_cell = np.zeros(size, dtype=np.int64)
    cols = np.arange(size)
    for depth, mp in enumerate(maps):
        k = int(mp.max()) + 1
        node_est = np.bincount(mp, weights=est, minlength=k)
        agg = np.zeros((k, size))
        agg[mp, cols] = 1.0
        node_cov = agg @ cov @ agg.T
        node_se = np.sqrt(np.clip(np.diag(node_cov), 0.0, None))
        parent = np.zeros(k, dtype=np.int64)
        parent[mp] = parent_of_cell
        resolved = node_est >= z * node_se
        pos = np.clip(node_est, 0.0, None)
        share = np.zeros(k)
        for p in np.unique(parent):
            kids = np.flatnonzero(parent == p)
            if depth > 0:
                # Below the top level: positive-part James-Stein shrinkage of the children's
                # shares towards equal shares within the (already placed) parent, so a leaf
                # whose estimate is high by noise alone does not take the parent's mass.
                e = node_est[kids]
                dev = float(np.sum((e - e.mean()) ** 2))
                lam = max(0.0, 1.0 - (kids.size - 1) * float(np.mean(node_se[kids] ** 2)) / dev) if dev > 0 else 0.0
                ps = pos[kids] / pos[kids].sum() if pos[kids].sum() > 0 else np.full(kids.size, 1.0 / kids.size)
                share[kids] = (1.0 - lam) / kids.size + lam * ps
                continue
            w = np.where(resolved[kids], node_est[kids], 0.0)
            # the missing cell's node (last) neighbours no value: it is judged alone
            o = kids.size - int(has_missing)
            res = resolved[kids[:o]]
            if res.any():
                for run in _runs(~res):
                    # grow the run from the resolved side(s): the longest stretch whose
                    # summed estimate clears z standard errors gets that estimate
                    cands = []
                    if run[0] > 0:
                        cands += [run[: k + 1] for k in range(run.size)]
                    if run[-1] < o - 1:
                        cands += [run[k:] for k in range(run.size)]
                    best = None
                    for cand in cands:
                        r_hat = float(node_est[kids[cand]].sum())
                        r_se = math.sqrt(max(float(node_cov[np.ix_(kids[cand], kids[cand])].sum()), 0.0))
                        if r_hat > 0 and r_hat >= z * r_se and (best is None or cand.size > best[0].size):
                            best = (cand, r_hat)
                    if best is not None:
                        pr = pos[kids[best[0]]]
                        pr = pr if pr.sum() > 0 else np.ones(best[0].size)
                        w[best[0]] = best[1] * pr / pr.sum()
                if grow_z is not None:
                    # Outward from the placed mass, node by node: the next node is kept when
                    # its own estimate clears grow_z standard errors; the first that does
                    # not ends the tail. Only a node next to placed mass can pass, so an
                    # empty stretch up to the declared bound needs every node on the way
                    # to pass (probability P(N(0,1) > grow_z) per node).
                    for step in (1, -1):
                        edge = np.flatnonzero(w[:o] > 0)
                        if edge.size == 0:
                            break
                        j = (edge[-1] if step == 1 else edge[0]) + step
                        while 0 <= j < o and w[j] <= 0 and node_est[kids[j]] >= grow_z * node_se[kids[j]]:
                            w[j] = node_est[kids[j]]
                            j += step
            if w.sum() <= 0:
                w = pos[kids] if pos[kids].sum() > 0 else np.ones(kids.size)
            share[kids] = w / w.sum()
        mass = mass[parent] * share
        parent_of_cell = mp
    return mass


# Within an ordered bucket, cells whose noisy count is below this many noise sds get no
# share when the bucket is split back (see _split_weights).
_SPLIT_Z = 2.0


def _split_weights(col: _Column, group: np.ndarray, weight: np.ndarray, floor: float) -> np.ndarray:
    r"""Weights that split an ordered bucket back into its fine cells (post-processing).

    The clipped noisy count of an empty cell is positive half the time (mean
    :math:`\sigma/\sqrt{2\pi}`), so a bucket spanning a long empty tail (incomes above
    the last real value) would spread a good share of its records over that tail
    and inflate the mean (issue 18). Cells below ``floor`` (:math:`2\sigma`: an empty cell
    passes with probability 0.023) get weight 0 unless that would leave the whole
    bucket without weight, in which case the clipped counts are kept.
    """
    w = weight.copy()
    n_base = col.size - int(col.has_missing_level)
    base = np.arange(n_base)
    w2 = w.copy()
    w2[base] = np.where(w[base] < floor, 0.0, w[base])
    mass = np.bincount(group[base], weights=w2[base], minlength=int(group.max()) + 1)
    restore = base[mass[group[base]] <= 0]
    w2[restore] = w[restore]
    return w2


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
class DPSynSynthesizer(SecretSeedMixin, Synthesizer):
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
        Equal-width fine cells of each continuous column (and of an integer column
        with more than ``integer_levels`` values) over its public bounds (default 256).
        More than 16 cells are measured as a hierarchy (see the module docstring), so a
        fine grid costs no extra budget: its levels share the column's one-way budget
        (:math:`L` levels at :math:`\sigma_1\sqrt{L}` each; 3 levels at 256 cells).
    max_levels : int or None
        Most levels a column keeps in the two-way marginals (ordered columns are
        cut into contiguous buckets of noisy mass ~ n / max_levels). ``None``:
        chosen from the noise, :math:`\lfloor\sqrt{\hat n / (4\sigma_2)}\rfloor`
        clipped to [4, 32], so that a typical two-way cell holds ~4 noise sds.
    budget_split : tuple of three floats
        Fractions of the RDP budget for one-way marginals, selection and two-way
        marginals. PrivSyn uses 0.1 / 0.1 / 0.8; the default 0.45 / 0.05 / 0.5 is tuned
        for files of 1,000-50,000 records (issue 25). Trade-off: the one-way share sets
        which levels survive (a level is kept when its noisy count clears
        :math:`\min(\theta, 3\sigma_1)`) and how far numeric tails and buckets
        are resolved; the two-way share sets how much joint structure survives. At
        1,000 records and eps = 1, two-way cells are mostly noise anyway, while the
        one-way counts decide whether common levels vanish: raising the one-way share
        from 0.3 to 0.45 (with the equal split below) cut the levels held by >= 5% that
        vanish from 3.5 / 4.5 / 1 to 1 / 0.5 / 1 per copy on 1,000-row samples of raw Adult /
        statsmodels fair / randhie (benchmarks/dpsyn_faithful.py). On the full discretized Adult
        (48,842 records) it does not hurt: two-way / three-way TVD 0.0362 / 0.0836 at eps = 1
        and 0.0471 / 0.0968 at eps = 0.5 (seeds 0-2), against 0.0374 / 0.0858 and
        0.0491 / 0.1006 with the previous 0.3 / 0.05 / 0.65 and cells split
        (benchmarks/results/dpsyn.json; AIM: 0.0406 / 0.0899 at eps = 1).
    one_way_split : {"equal", "cells"}
        Budget across the one-way marginals: equal (default), or proportional to
        :math:`\min(\text{cells}, 16)^{2/3}` (minimum total L1 noise over the cells
        synthesis uses; the uncapped cells^(2/3) rule gave a binary column half the
        budget of a 512-cell income and with it a noise sd that suppressed levels held
        by 10-20% of a 2,000-row file).
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
        Seed of the noise drawn in ``fit``. Default ``None``: fresh operating-system
        randomness, never stored. A seed makes the release reproducible and hence
        not private against anyone who learns it (a warning says so); it is never
        shown (``repr``), pickled or recorded -- the release says only that a user
        seed was given.
    theta_scale : float
        The rare-value threshold is :math:`\theta = \max(\text{theta\_scale}\,\sigma_1,
        \theta_{\min})` (DPSyn's 4.5 by default). Lowering it keeps rarer declared levels
        at a stated accuracy cost: a level kept at the threshold has a noisy count whose
        noise sd is :math:`1/\text{theta\_scale}` of the count (22% at 4.5, 67% at 1.5),
        and a level nobody holds passes the threshold with probability
        :math:`P(N(0, 1) > \text{theta\_scale})` per column (3.4e-6 at 4.5, 0.067 at 1.5).
        Set ``theta_min`` low too for it to take effect at small sigma. A declared level
        of an unordered column is kept whenever its noisy count clears
        :math:`\min(\theta, 3\sigma_1)` (issue 25): a level clearly above the noise is
        never suppressed; an empty level passes with probability 0.0013.
    rare : {"suppress", "pool"}
        What happens to declared levels whose noisy one-way count is below the
        threshold. ``"suppress"`` (DPSyn): they cannot appear in the copies;
        ``suppressed_levels_`` lists them and the release records them. ``"pool"``: in
        columns that declare an ``other`` level their records are measured and
        synthesized as that level (``pooled_levels_``); columns without one suppress.
        The same threshold applies to a column's "missing" cell: when its noisy
        count falls below it the copies hold no missing values in that column, and
        ``suppressed_missing_`` lists the column (either way).
    integer_levels : int
        An integer column whose declared range has at most this many values gets
        one fine cell per value (decoded exactly); wider ranges get ``bins``
        intervals of consecutive integers plus their declared point masses.
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
        "integer_levels": [Interval("int", 1, None)],
        "theta_scale": [Interval("real", 0.0, None)],
        "rare": [Options("suppress", "pool")],
    }
    # the seed of a DP release is never recorded (see noise_source)
    _publishes_seed = False

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-9,
        theta_min: float = 20.0,
        bins: int = 256,
        max_levels: int | None = None,
        budget_split: tuple[float, float, float] = (0.45, 0.05, 0.5),
        one_way_split: str = "equal",
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
        integer_levels: int = 100,
        theta_scale: float = 4.5,
        rare: str = "suppress",
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
        self.integer_levels = integer_levels
        self.theta_scale = theta_scale
        self.rare = rare

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
        domain: Any = None,
        ordinal: Sequence[str] | None = None,
        out_of_domain: str = "error",
        *,
        quasi_identifiers: Sequence[str] | None = None,
        keep: Sequence[str] | None = None,
    ) -> "DPSynSynthesizer":
        """Measure the noisy marginals of ``df`` and make them consistent.

        Levels and bounds come only from the declared public ``domain`` (and the
        older ``bounds``), never from the data: a level held by one record must
        not appear or vanish with that record (issue 11). The frame is first
        conformed to that domain; the released dtypes
        (:meth:`~synthmi.domain.ColumnDomain.dtype`: Categorical over the declared
        levels, ``int64`` for an integer kind declared complete, else ``float64``),
        kinds, missing cells, thresholds and ``spec_`` follow the declaration alone,
        never the input's dtypes or categories (issue 25).

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
            Older form: column -> (lower, upper), declaring a numeric column
            (integer kind when both bounds are written as integers, ``(0, 100)``;
            continuous otherwise, ``(0.0, 100.0)``). The input's dtypes decide nothing.
        domain : PublicDomain, str, Path or dict
            The declared public domain of every column (see :mod:`synthmi.domain`):
            a :class:`~synthmi.domain.PublicDomain`, a path to its JSON file, its
            dict form, or the older mapping column -> size ``d`` (codes 0..d-1) or
            list of levels. A column without a declaration (other than a ``bool``
            column, binary by default) is refused with an error naming it.
        ordinal : list of str, optional
            Discrete columns whose levels are ordered (bucketed contiguously); when
            given it replaces the declared kinds (``ordinal`` vs ``categorical``).
            Numeric columns are always ordered.
        out_of_domain : {"error", "other"}
            A value outside its column's declared domain raises an error naming the
            column only (default), or with ``"other"`` is mapped to the column's
            declared ``other`` level.
        """
        from ..engine import is_dask_frame

        if is_dask_frame(df):
            # A dask DataFrame: columns are described from its (empty) meta frame and the
            # curator sums marginal counts over partitions (_Curator.of_frame): same release.
            # Sampling is post-processing of the noisy marginals, in memory as usual.
            self._validate_params()
            self.dask_ = None
            resolved = self._resolve_spec(df._meta, spec, quasi_identifiers, keep, None)
            self.spec_ = resolved
            self._fit_release(df, resolved, bounds, domain, ordinal, out_of_domain)
            self.fingerprint_ = original_fingerprint(df._meta[self.spec_.released], private_count=True)
            return self
        return super().fit(df, spec, keep=keep, quasi_identifiers=quasi_identifiers,
                           bounds=bounds, domain=domain, ordinal=ordinal, out_of_domain=out_of_domain)

    def _resolve_spec(self, df, spec, quasi_identifiers, keep, schema):
        """Roles of the columns from public inputs only: the column names, the
        ``quasi_identifiers`` / ``keep`` lists or the user's spec.

        The generic path would take kinds and levels from the dtypes (a CSV reader's
        guess from the values, issue 25) and check them against the data; here the
        kinds, levels and bounds come from the declared domain in :meth:`_fit_release`,
        which also replaces this spec by the declared one.
        """
        if spec is None:
            names = pd.DataFrame({c: pd.Series([], dtype=object) for c in df.columns})
            return super()._resolve_spec(names, None, quasi_identifiers, keep, schema)
        if schema is not None:
            raise InputError(f"Give column kinds in the spec, not also with 'schema=' ({_OWNER}.fit).")
        resolved = as_spec(spec)
        if quasi_identifiers is not None or keep is not None:
            resolved = resolved.with_roles(quasi_identifiers, keep)
        resolved.check_data(df, "df", dtypes=False)  # the columns only: the domain checks the values
        return resolved

    def _fit_release(self, df: pd.DataFrame, spec: Any, bounds=None, domain=None, ordinal=None,
                     out_of_domain: str = "error") -> None:
        from ..engine import is_dask_frame

        ddf = df[spec.released] if is_dask_frame(df) else None
        df = ddf._meta if ddf is not None else df[spec.released]
        check_option(out_of_domain, "out_of_domain", _OWNER, ["error", "other"])
        # recorded with the release so evaluation maps the original the same public way
        self.out_of_domain_ = out_of_domain
        # the values the spec DECLARES public (ReleaseSpec.public_domain), under any
        # explicitly given domain; inferred levels and bounds never reach this code
        declared = spec.public_domain()
        if len(declared):
            if domain is None:
                domain = declared
            elif isinstance(domain, (PublicDomain, str, Path)) or (
                isinstance(domain, Mapping) and isinstance(domain.get("columns"), Mapping)
            ):
                domain = declared.merged(as_public_domain(domain))
        if ordinal is not None:
            ordinal = list(ordinal)
            unknown = [c for c in ordinal if c not in df.columns]
            if unknown:
                raise ParameterError(f"The 'ordinal' parameter of {_OWNER} names columns not in 'df': {unknown}.", parameter='ordinal', data='df')
        public = resolve_domain(df, domain, bounds, ordinal).select(df.columns)
        # One DP fit path (issue 25): first the frame is conformed to the declared domain
        # (declared levels, kinds and missing-ness; a value outside is an error naming the
        # column only, or the declared 'other' level); everything after reads only the
        # declaration and the conformed codes, never the input's dtypes or categories.
        if ddf is None:
            df = public.conform(df, out_of_domain=out_of_domain)
        columns = _describe_columns(df, public, ordinal, int(self.bins), int(self.integer_levels))
        # The noise generator lives only inside this call (OS entropy by default).
        rng = noise_generator(self.random_state, _OWNER)
        self.user_seed_given_ = user_seed_given(self.random_state)
        eps, delta = float(self.epsilon), float(self.delta)
        accountant = PrivacyAccountant(epsilon=eps, delta=delta)
        # one curator for either frame type: the conformed pandas frame is one partition; a Dask
        # frame's partitions are encoded (and conformed by the declared domain) where they are
        curator = _Curator.of_frame(df if ddf is None else ddf, columns, out_of_domain, accountant, rng,
                                    exact_noise=bool(self.exact_noise))
        self._fit_from_curator(curator, columns)
        del curator, rng
        self.accountant_ = accountant
        self.columns_ = [c.name for c in columns]
        # Released dtypes: declared levels, never categories the input happened to carry.
        self.dtypes_ = pd.Series({c.name: c.dtype for c in columns}, dtype=object)
        self.domain_ = public.select(self.columns_)
        # The spec the model keeps, pickles, saves and publishes: the declared one.
        self.spec_ = _declared_spec(spec, self.domain_, columns)

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
        #    share of each is proportional to cells^(2/3) (minimum total L1 noise), the
        #    cells capped at _ONE_WAY_CELL_CAP (synthesis uses at most ~32 coarse levels).
        fs = np.array(fine_sizes, dtype=float)
        fe = np.minimum(fs, _ONE_WAY_CELL_CAP)
        share1 = fe ** (2.0 / 3.0) / np.sum(fe ** (2.0 / 3.0)) if self.one_way_split == "cells" else np.full(d, 1.0 / d)
        sigma1s = s1 / np.sqrt(f1 * share1)
        # Numeric columns with many fine cells: a hierarchy of nested histograms (the same
        # RDP as one histogram at sigma1: L levels at sigma1 * sqrt(L) each), combined by
        # least squares; its nodes give buckets that adapt to the data and a within-bucket
        # shape from the finer levels (issue 25).
        one_way: list[np.ndarray] = []
        tree: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for a, col in enumerate(columns):
            n_base = col.size - int(col.has_missing_level)
            if col.kind == "continuous" and _TREE_MIN_CELLS < n_base <= _TREE_MAX_CELLS:
                # declared point masses (not every value of an integer column) are atoms
                declared = np.asarray(col.cell_point[:n_base], dtype=bool) & np.isin(
                    col.cell_lo[:n_base], col.points if col.points is not None else [])
                maps, shapes = _tree_maps(n_base, col.has_missing_level, declared)
                sig = float(sigma1s[a]) * math.sqrt(len(maps))
                levels = curator.noisy_hierarchy(a, col.size, maps, shapes, sig, f"one-way: {col.name}")
                est, cov = _tree_estimate(levels, maps, col.size, sig)
                tree[a] = (est, cov)
                one_way.append(_tree_weights(est, cov, maps, grow_z=_TREE_GROW_Z, has_missing=col.has_missing_level))
            else:
                one_way.append(curator.noisy_marginal((a,), (ident[a],), (fine_sizes[a],), float(sigma1s[a]),
                                                      f"one-way: {col.name}"))
        tot = np.array([tree[a][0].sum() if a in tree else o.sum() for a, o in enumerate(one_way)], dtype=float)
        tvar = np.array([tree[a][1].sum() if a in tree else fs[a] * sigma1s[a] ** 2 for a in range(d)])
        n_hat = float(max(np.sum(tot / tvar) / np.sum(1.0 / tvar), 1.0))

        # 2. compression (post-processing of the one-way marginals)
        thetas = np.maximum(float(self.theta_scale) * sigma1s, float(self.theta_min))
        if self.max_levels is None:
            pairs_guess = max(d, 1)
            sigma2_guess = s1 * math.sqrt(pairs_guess / f3) if f3 > 0 else float(sigma1s.max())
            max_levels = int(np.clip(math.floor(math.sqrt(n_hat / (4.0 * sigma2_guess))), 4, 32))
        else:
            max_levels = int(self.max_levels)
        groups, weights = [], []
        # How many independent noisy fine counts each fine cell's count sums (its noise
        # variance is this many sigma1^2): 1, except a declared 'other' level that pooled levels join.
        n_noisy = [np.ones(col.size) for col in columns]
        self.pooled_levels_ = {}
        for a, col in enumerate(columns):
            pooled: list[int] = []
            if self.rare == "pool" and col.kind == "discrete" and col.domain is not None and col.domain.other is not None:
                o = col.levels.index(col.domain.other)
                one_way[a], pooled = _pool_rare(one_way[a], o, float(thetas[a]), len(col.levels))
                n_noisy[a][o] += len(pooled)
                if pooled:
                    self.pooled_levels_[col.name] = {"into": col.domain.other, "levels": [col.levels[v] for v in pooled]}
            keep = min(float(thetas[a]), _KEEP_Z * float(sigma1s[a]))
            g, w = _compress(col, one_way[a], float(thetas[a]), n_hat / max_levels, max_levels, keep=keep)
            if col.ordered and a not in tree:
                # (a hierarchy's weights are already thresholded node by node: _tree_weights)
                w = _split_weights(col, g, w, _SPLIT_Z * float(sigma1s[a]))
            if pooled:
                g[pooled] = g[o]
                w[pooled] = 0.0
                g = np.unique(g, return_inverse=True)[1].astype(np.int64)  # no empty groups
            groups.append(g)
            weights.append(w)
        sizes = np.array([int(g.max()) + 1 for g in groups], dtype=np.int64)
        self.suppressed_levels_ = {}
        # Columns whose "missing" cell fell below the threshold: the copies hold no missing
        # values there. Decided from noisy counts only, so reporting it is post-processing.
        self.suppressed_missing_ = [
            col.name for a, col in enumerate(columns)
            if col.has_missing_level and weights[a][col.size - 1] <= 0
        ]
        for a, col in enumerate(columns):
            if col.kind != "discrete":
                continue
            g, w = groups[a], np.clip(weights[a], 0.0, None)
            group_mass = np.bincount(g, weights=w, minlength=int(sizes[a]))
            pooled_here = set(self.pooled_levels_.get(col.name, {}).get("levels", []))
            gone = [
                col.levels[v] for v in range(len(col.levels))
                if w[v] <= 0 and group_mass[g[v]] > 0 and col.levels[v] not in pooled_here
            ]
            if gone:
                # Declared levels whose noisy count fell below the threshold (or below 0):
                # they cannot appear in any copy. Recording them is post-processing.
                self.suppressed_levels_[col.name] = gone

        margs: list[_Marginal] = []
        for a in range(d):
            if a in tree:
                # A bucket's count is the least-squares estimate of its cells' total
                # (unbiased), its variance g' Cov g; the missing cell counts only when it
                # is its own group (as below).
                est, cov = tree[a]
                incl = np.ones(columns[a].size)
                if columns[a].has_missing_level:
                    m = columns[a].size - 1
                    if np.sum(groups[a] == groups[a][m]) > 1:
                        incl[m] = 0.0
                agg = np.zeros((int(sizes[a]), columns[a].size))
                agg[groups[a], np.arange(columns[a].size)] = incl
                var = np.clip(np.einsum("ij,jk,ik->i", agg, cov, agg), 1e-12, None)
                margs.append(_Marginal((a,), agg @ est, var))
                continue
            if columns[a].ordered:
                # A bucket's count is the sum of its cells' raw noisy counts (unbiased: the
                # noise of empty cells cancels instead of adding its positive part), plus the
                # missing cell only when it is its own group (else DPSyn gives it mass 0).
                raw = one_way[a].astype(float).copy()
                if columns[a].has_missing_level:
                    m = columns[a].size - 1
                    if np.sum(groups[a] == groups[a][m]) > 1:
                        raw[m] = 0.0
                coarse = np.bincount(groups[a], weights=raw, minlength=sizes[a])
            else:
                coarse = np.bincount(groups[a], weights=np.where(weights[a] > 0, one_way[a], 0.0), minlength=sizes[a])
            nfine = np.bincount(groups[a], weights=(weights[a] > 0) * n_noisy[a], minlength=sizes[a])
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
        self.continuous_ = self._continuous_report(columns, groups, self._weights, margs[:d], tree, one_way, sigma1s)

    @staticmethod
    def _continuous_report(columns, groups, weights, one_way_margs, tree, one_way, sigma1s) -> dict[str, dict[str, Any]]:
        r"""Range and mean of each numeric column in the release, checked against the noise
        (post-processing of the noisy counts only; never a read of the data).

        With :math:`\hat c_i` the noisy fine counts (the least-squares ones for a
        hierarchy), :math:`C` their covariance, :math:`m_i` the mid-point of cell
        :math:`i` (its value for a point cell) and :math:`\hat N = \sum_i \hat c_i`:

        * the release draws cell :math:`i` with mass :math:`q_i` (its bucket's consistent
          count split by the within-bucket weights), so its range is the span of the
          cells with :math:`q_i > 0` and its mean :math:`\bar m_q = \sum_i m_i q_i / \sum_i q_i`;
        * the direct estimate of the mean is :math:`\hat\mu = \sum_i m_i \hat c_i / \hat N`,
          with delta-method standard error :math:`\sqrt{g^\top C g}`,
          :math:`g_i = (m_i - \hat\mu)/\hat N`; ``mean_flag`` is set when
          :math:`|\bar m_q - \hat\mu| > 3\,\mathrm{se}` (``_FLAG_Z``): the release moved the mean
          by more than the noise explains;
        * the share of people outside the release's range :math:`[a, b]` (the span of the
          cells with :math:`q_i > 0`) is estimated by
          :math:`\hat s = \sum_{i \in O} \hat c_i / \hat N`, :math:`O` the cells lying wholly
          below :math:`a` or above :math:`b`, with standard error
          :math:`\sqrt{v^\top C v}/\hat N` (:math:`v` the indicator of :math:`O`); when the
          release range is the whole declared range, :math:`O` is empty and :math:`\hat s = 0`
          by construction. The noisy share in cells the release left empty *inside*
          :math:`[a, b]` is reported apart (``share_empty_inside``, same formula);
        * each flag is ``"YES"`` when the effect exceeds ``_FLAG_Z`` = 3 of its standard
          errors, ``"no"`` only when the test had the power to see a material effect, and
          ``"not detectable"`` otherwise: truncation is ``"no"`` when
          :math:`\mathrm{se}(\hat s) \le 2.5\%` (``_MATERIAL_SE_SHARE``), the mean when
          :math:`3\,\mathrm{se} \le 0.25\, \mathrm{sd}_q` (``_MATERIAL_MEAN_SD``;
          :math:`\mathrm{sd}_q` the release's sd). At n ~ 1,000 and eps = 1 a declared range
          far wider than the data (``popul`` in [0, 8000] on anes96) gives se ~ 10% for the
          share above the kept range: a thin tail cut by the hierarchy (``_TREE_GROW_Z``) is
          then reported as ``"not detectable"``, not ``"no"``.

        The printed shares are clamped to [0, 1]; ``share_outside_range_raw`` keeps the
        unbiased (possibly negative) estimate.
        """
        out: dict[str, dict[str, Any]] = {}
        for a, col in enumerate(columns):
            if col.kind != "continuous":
                continue
            n_base = col.size - int(col.has_missing_level)
            if a in tree:
                est, cov = tree[a][0][:n_base], tree[a][1][:n_base, :n_base]
            else:
                est = np.asarray(one_way[a], dtype=float)[:n_base]
                cov = np.diag(np.full(n_base, float(sigma1s[a]) ** 2))
            lo, hi, pt = col.cell_lo, col.cell_hi, col.cell_point
            top = hi - 1.0 if col.integer else hi
            mid = np.where(pt, lo, (lo + top) / 2.0)
            g, w = groups[a], weights[a]
            table = np.clip(one_way_margs[a].table, 0.0, None)
            q = np.zeros(col.size)
            for grp in range(table.size):
                members = np.flatnonzero(g == grp)
                p = w[members] if w[members].sum() > 0 else np.ones(members.size)
                q[members] = table[grp] * p / p.sum()
            q = q[:n_base]
            # Every column gets the same keys whatever the noise did (None where a value
            # does not exist): which keys a release holds must not depend on the noise.
            entry: dict[str, Any] = dict.fromkeys(_CONTINUOUS_KEYS)
            n_hat = float(est.sum())
            val_top = np.where(pt, lo, top)[:n_base]
            entry["declared"] = [float(lo[:n_base].min()), float(val_top.max())]
            if q.sum() > 0:
                held = np.flatnonzero(q > 0)
                entry["range"] = [float(lo[held].min()), float(val_top[held].max())]
                entry["mean"] = float(mid @ q / q.sum())
            if n_hat > 0 and entry["mean"] is not None:
                mu = float(mid @ est / n_hat)
                grad = (mid - mu) / n_hat
                se = math.sqrt(max(float(grad @ cov @ grad), 0.0))
                r_lo, r_hi = entry["range"]
                # outside: cells lying wholly below / above the release range (not every q = 0 cell)
                outside = (val_top[:n_base] < r_lo) | (lo[:n_base] > r_hi)
                out_cells = outside.astype(float)
                empty_cells = (~outside & (q <= 0)).astype(float)
                share = float(out_cells @ est / n_hat)
                share_se = math.sqrt(max(float(out_cells @ cov @ out_cells), 0.0)) / n_hat
                empty = float(empty_cells @ est / n_hat)
                empty_se = math.sqrt(max(float(empty_cells @ cov @ empty_cells), 0.0)) / n_hat
                sd_q = math.sqrt(max(float((mid - entry["mean"]) ** 2 @ q / q.sum()), 0.0))
                moved = abs(entry["mean"] - mu) > _FLAG_Z * se
                trunc = share > _FLAG_Z * share_se
                entry.update(
                    noisy_mean=mu, noisy_mean_se=se,
                    mean_flag="YES" if moved else "no" if _FLAG_Z * se <= _MATERIAL_MEAN_SD * sd_q else "not detectable",
                    share_outside_range=min(max(share, 0.0), 1.0), share_outside_range_raw=share,
                    share_outside_se=share_se,
                    truncation_flag="YES" if trunc else "no" if share_se <= _MATERIAL_SE_SHARE else "not detectable",
                    share_empty_inside=min(max(empty, 0.0), 1.0), share_empty_inside_se=empty_se,
                )
            out[col.name] = entry
        return out

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

    def _sampling_rng(self, random_state: Any) -> np.random.Generator:
        """The record-sampling stream: separate from the noise stream of ``fit`` (an
        int seed is spawned into its own stream) and not recorded either."""
        return sampling_generator(random_state, _OWNER)

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

    def _published_params(self) -> dict[str, Any]:
        return self.public_params()

    def _structure(self, m: int) -> dict[str, Any]:
        return {"rule": "full", "privacy": self.privacy_statement(), "domain": self.domain_.to_dict(),
                "out_of_domain": self.out_of_domain_}

    def _diagnostics(self) -> dict[str, Any]:
        return {
            # 6 significant digits: the spend equals the request to ~1e-9 by design, and
            # its last float digits depend on which (noisily selected) marginals were measured.
            "epsilon_spent": float(f"{self.spent()[0]:.6g}"),
            "delta": float(self.delta),
            "n_two_way": len(self.selected_),
            "theta": self.theta_.to_dict(),
            # declared levels below the noise threshold (post-processing of noisy counts)
            "suppressed_levels": _to_json_levels(self.suppressed_levels_),
            "suppressed_missing": list(self.suppressed_missing_),
            "pooled_levels": {c: {"into": plain(v["into"]), "levels": [plain(x) for x in v["levels"]]}
                              for c, v in self.pooled_levels_.items()},
            # range and mean of each numeric column in the release, against the noisy
            # estimates (post-processing of noisy counts; see _continuous_report)
            "continuous": {c: {k: (float(f"{v:.6g}") if isinstance(v, float) else
                                   [float(f"{x:.6g}") for x in v] if isinstance(v, list) else v)
                               for k, v in e.items()}
                           for c, e in getattr(self, "continuous_", {}).items()},
        }

    def public_params(self) -> dict[str, Any]:
        """The tuning parameters a release may publish: everything but ``random_state``."""
        return {k: v for k, v in self.get_params().items() if k != "random_state"}

    def privacy_statement(self) -> dict[str, Any]:
        """The guarantee of the fitted release, as published in its metadata (no data values)."""
        self._check_fitted()
        eps, delta = self.spent()
        return {
            "guarantee": f"({eps:.6g}, {delta:g})-differential privacy",
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "epsilon_spent": float(f"{eps:.6g}"),
            "neighbours": "add/remove one record (the record count is private; only a noisy estimate is used)",
            "composition": "Renyi DP of discrete Gaussian mechanisms",
            "conversion": {
                "improved": "RDP to (epsilon, delta): Canonne, Kamath & Steinke (2020), Proposition 12",
                "simple": "RDP to (epsilon, delta): Mironov (2017), Proposition 3",
            }[self.conversion],
            "noise": noise_provenance(bool(getattr(self, "user_seed_given_", False))),
            "public_inputs": "declared domain (levels, bounds, point masses), tuning parameters",
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
        lines += [f"  {line}" for line in continuous_lines(getattr(self, "continuous_", {}))]
        return "\n".join(lines)

    def spent(self, conversion: str | None = None) -> tuple[float, float]:
        """Total (epsilon, delta) recorded by the accountant during ``fit``."""
        self._check_fitted()
        return self.accountant_.spent(delta=float(self.delta), method="rdp", conversion=conversion or self.conversion)
