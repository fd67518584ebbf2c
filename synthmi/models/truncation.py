r"""Support of a continuous variable: bounds, the grid it lives on, and exact truncated-normal draws.

A synthetic value must be one the variable can take. Two facts describe that
for a continuous quasi-identifier:

* its **bounds** :math:`[l, u]`: declared public bounds (e.g. age 17-90 from
  the survey design), or by default the observed minimum and maximum. The
  default is itself a disclosure of the confidential minimum and maximum; the
  synthesizers record which bounds were used and where they came from in the
  release metadata (``structure["support"]``) so that the report can list it;
* its **grid** :math:`\{o + kh\}`: whole years, half-years, cents. Detected
  from the observed values (:func:`detect_grid`) unless given.

A normal predictive :math:`N(\mu, \sigma^2)` is then drawn *truncated*, not
clipped (clipping would pile probability on the bounds): with a grid the
latent value is drawn on :math:`[l_h - h/2, u_h + h/2]` (:math:`l_h`,
:math:`u_h` the first and last grid points inside the bounds) and snapped to
the nearest grid point, which is the rounded-latent ("coarsened normal")
model

.. math:: P(X = o + kh) = \int_{o + (k - 1/2)h}^{o + (k + 1/2)h}
    \frac{\phi((t - \mu)/\sigma)/\sigma}{\Phi((u_h + h/2 - \mu)/\sigma)
    - \Phi((l_h - h/2 - \mu)/\sigma)}\, dt ,

whose support is exactly the grid points inside the bounds.

Truncated-normal draws use the inverse CDF on the lower tail (an interval
right of the mean is mirrored), :math:`x = \Phi^{-1}(\Phi(a) + U(\Phi(b) -
\Phi(a)))`, in log space (``log_ndtr`` / ``ndtri_exp``) where
:math:`\Phi(b)` underflows, so they are exact to floating-point accuracy
arbitrarily far in the tails (Devroye 1986, Non-Uniform Random Variate
Generation, Section 2.1: inversion).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri, ndtri_exp

__all__ = ["Support", "detect_grid", "truncated_normal", "log_truncation_mass"]


# bounds further out than this many standard deviations are treated as infinite: Phi(-8.9) = 2.8e-19 < 2^-61
_FAR = 8.9


def _scipy_scalar(name: str, nargs: int = 1):
    """A scalar double function of :mod:`scipy.special.cython_special` callable from compiled code
    (the very routines behind scipy's ``ndtr`` / ``ndtri`` ufuncs)."""
    import ctypes

    from numba.extending import get_cython_function_address

    addr = get_cython_function_address("scipy.special.cython_special", name)
    return ctypes.CFUNCTYPE(ctypes.c_double, *([ctypes.c_double] * nargs))(addr)


@cache
def _kernel():
    """The compiled body of :func:`truncated_normal`, built on first use: importing numba costs
    about 0.2 s of CPU, which a command line that fails validation should not pay (issue 30)."""
    import numba

    c_ndtr = _scipy_scalar("__pyx_fuse_1ndtr")
    c_log_ndtr = _scipy_scalar("__pyx_fuse_1log_ndtr")
    c_ndtri = _scipy_scalar("ndtri")
    c_ndtri_exp = _scipy_scalar("ndtri_exp")
    far = _FAR

    # not cached on disk: numba cannot cache code that calls through ctypes pointers (compiles in ~0.3 s)
    @numba.njit(cache=False)
    def kernel(mu, sd, lo, hi, u, out):  # pragma: no cover - compiled
        """One element at a time (flat arrays of equal length); the same operations as the
        vectorised NumPy form it replaced, without its temporaries."""
        for i in range(mu.size):
            a = (lo[i] - mu[i]) / sd[i]
            b = (hi[i] - mu[i]) / sd[i]
            # work on the lower tail, where Phi keeps full relative precision
            flip = a > 0
            if flip:
                a2, b2 = -b, -a
            else:
                a2, b2 = a, b
            # A bound more than _FAR standard deviations out cuts off less than 2^-61 of the mass, below
            # the 2^-53 granularity of the uniforms: it is treated as infinite (Phi = 0 or 1). The lower
            # one only when the interval holds at least half of the mass (b2 >= 0), so that the relative
            # error stays below 2^-60.
            pa = c_ndtr(a2) if (a2 > -far or b2 < 0) else 0.0
            pb = c_ndtr(b2) if b2 < far else 1.0
            if pb > 1e-300:
                x = c_ndtri(pa + u[i] * (pb - pa))
            else:  # both bounds beyond the double range of Phi: invert in log space
                la = c_log_ndtr(a2)
                lb = c_log_ndtr(b2)
                ratio = math.exp(la - lb)
                if not math.isfinite(ratio):
                    ratio = 0.0
                x = c_ndtri_exp(min(lb + math.log(ratio + u[i] * (1.0 - ratio)), 0.0))
            # rounding at the last ulp can step outside [a2, b2]; bring those back (a no-op otherwise)
            x = min(max(x, a2), b2)
            if flip:
                x = -x
            out[i] = mu[i] + sd[i] * x

    return kernel


def truncated_normal(mu: Any, sd: Any, lo: Any, hi: Any, rng: np.random.Generator,
                     compiled: bool | None = None) -> np.ndarray:
    r"""Vectorised exact draws from :math:`N(\mu, sd^2)` truncated to ``[lo, hi]``.

    Parameters
    ----------
    mu, sd, lo, hi : array-like, broadcastable
        Means, standard deviations (> 0) and bounds (``lo < hi``; infinite
        bounds allowed).
    rng : numpy Generator
        One uniform per draw is used.
    compiled : bool, optional
        Use the compiled kernel whatever the size (the same bits as the NumPy form):
        for a sampler calling this thousands of times per fit, where the NumPy form's
        temporaries cost more than the one compilation (the copula's Gibbs sampler:
        issue 28). Default: by size (``_NUMPY_MAX``).
    """
    mu = np.asarray(mu, dtype=float)
    shape = np.broadcast_shapes(mu.shape, np.shape(sd), np.shape(lo), np.shape(hi))
    # writable too: numba types a read-only (broadcast) array apart, and every mix of read-only
    # and writable arguments was compiled anew (this kernel cannot be cached on disk)
    flat = [np.require(np.broadcast_to(np.asarray(v, dtype=float), shape).ravel(), float, ["C", "W"])
            for v in (mu, sd, lo, hi)]
    u = rng.random(shape)
    if not compiled and u.size <= _NUMPY_MAX:
        # below this size the NumPy form costs less than compiling the kernel (~0.7 CPU-s, paid by
        # every process: it cannot be cached on disk) and gives the same bits (tests/models/test_support.py)
        return _truncated_normal_numpy(*flat, u.ravel()).reshape(shape)
    out = np.empty(shape)
    _kernel()(*flat, u.ravel(), out.reshape(-1))
    return out


#: largest number of draws made by :func:`_truncated_normal_numpy` instead of the compiled kernel:
#: measured 0.03 CPU-s per 200,000 draws (against 0.015 s compiled plus 0.65 s to compile once), so a
#: DA-MI of Adult (30 calls of 48,842 draws) saves about half a CPU-second (issue 29 item 6)
_NUMPY_MAX = 1_000_000


def _truncated_normal_numpy(mu, sd, lo, hi, u) -> np.ndarray:
    """:func:`_kernel`'s operations vectorised (flat float arrays of equal length), the same
    scipy.special routines, hence the same draws bit for bit."""
    a = (lo - mu) / sd
    b = (hi - mu) / sd
    flip = a > 0
    a2, b2 = np.where(flip, -b, a), np.where(flip, -a, b)
    with np.errstate(all="ignore"):
        pa = np.where((a2 > -_FAR) | (b2 < 0), ndtr(a2), 0.0)
        pb = np.where(b2 < _FAR, ndtr(b2), 1.0)
        x = ndtri(pa + u * (pb - pa))
        tiny = ~(pb > 1e-300)
        if tiny.any():  # both bounds beyond the double range of Phi: invert in log space
            la, lb = log_ndtr(a2[tiny]), log_ndtr(b2[tiny])
            ratio = np.exp(la - lb)
            ratio = np.where(np.isfinite(ratio), ratio, 0.0)
            x[tiny] = ndtri_exp(np.minimum(lb + np.log(ratio + u[tiny] * (1.0 - ratio)), 0.0))
    x = np.minimum(np.maximum(x, a2), b2)
    return mu + sd * np.where(flip, -x, x)


def log_truncation_mass(mu: Any, sd: Any, lo: float, hi: float) -> np.ndarray:
    r""":math:`\log(\Phi((hi - \mu)/sd) - \Phi((lo - \mu)/sd))`, stable in both tails."""
    mu = np.asarray(mu, dtype=float)
    a = (lo - mu) / sd
    b = (hi - mu) / sd
    flip = a > 0
    a2 = np.where(flip, -b, a)
    b2 = np.where(flip, -a, b)
    la = log_ndtr(a2)
    lb = log_ndtr(b2)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.minimum(la - lb, 0.0)
        # log(1 - e^d), accurate on both sides of -log 2 (Maechler 2012)
        l1m = np.where(d > -0.6931471805599453, np.log(-np.expm1(d)), np.log1p(-np.exp(d)))
    return lb + l1m


def detect_grid(x: Any, max_points: int = 1_000_000) -> tuple[float, float] | None:
    """``(origin, step)`` of the grid the values lie on, or ``None``.

    The step is the largest ``h = d / k`` (``d`` the smallest gap between
    distinct values, ``k = 1..12``) such that every value is within a
    relative ``1e-6`` of a multiple of ``h`` from the smallest value; values
    with float noise (``0.1 + 0.2``) still count as on the grid. A variable
    with fewer than 3 distinct values, or whose grid over the observed range
    would have more than ``max_points`` points, is treated as not on one; so is
    one with more than ``max_points + 1`` distinct finite values (whose grid
    would have more points), which a partitioned fit can tell from the distinct
    values of its partitions, capped (:func:`distinct_capped`).
    """
    v = np.unique(np.asarray(x, dtype=float))
    v = v[np.isfinite(v)]
    if v.size > max_points + 1:
        return None
    if v.size:
        # values equal up to float noise (0.1 + 0.2 vs 0.3) are one value
        v = v[np.concatenate([[True], np.diff(v) > 1e-9 * max(1.0, float(np.abs(v).max()))])]
    if v.size < 3:
        return None
    gaps = np.diff(v)
    d = float(gaps.min())
    span = float(v[-1] - v[0])
    if d <= 0 or span <= 0:
        return None
    for k in range(1, 13):
        h = d / k
        if span / h > max_points:
            return None
        q = (v - v[0]) / h
        # tolerance: 1e-6 of a step, plus the float noise of the values themselves
        tol = 1e-6 + 1e-9 * float(np.abs(v).max()) / h
        if np.all(np.abs(q - np.rint(q)) <= tol):
            if np.allclose(v, np.rint(v)) and abs(h - round(h)) <= 1e-9:
                h = float(round(h))  # a whole-number grid: exact integer step and origin
                return (float(np.rint(v[0]) % h), h)
            # the smallest gap carries the float noise of the values' magnitude (566.3 - 566.2 =
            # 0.09999999999990905, 12 significant digits 0.0999999999999: copies off the data's 0.1
            # grid, disclosure's exact keys then matching nothing); the whole span over its number
            # of steps has that noise divided by the steps, and a step that is a short decimal
            # within 1e-9 of itself is that decimal
            h = span / float(np.rint(span / h))
            for dec in range(7):
                scaled = h * 10.0 ** dec
                if abs(scaled - round(scaled)) <= 1e-9 * scaled and round(scaled) >= 1:
                    return (round(float(v[0]), dec + 6), round(scaled) / 10.0 ** dec)
            return (float(f"{v[0]:.12g}"), float(f"{h:.12g}"))
    return None


def distinct_capped(x: Any, cap: int = 1_000_001) -> np.ndarray | None:
    """The sorted distinct finite values of ``x``, or ``None`` when there are more than ``cap``.

    The union of the results on the parts of a column (None if any is None or the
    union is over ``cap``) is the result on the whole column: what :func:`detect_grid`
    needs of a partitioned column (its default ``cap`` is ``max_points + 1``).
    """
    v = np.unique(np.asarray(x, dtype=float))
    v = v[np.isfinite(v)]
    return None if v.size > cap else v


@dataclass(frozen=True)
class Support:
    """Bounds and grid of one continuous variable, and where they come from.

    Attributes
    ----------
    lower, upper : float
        Bounds (``-inf`` / ``inf`` when unbounded).
    source : str
        ``"declared"`` (given by the user / release spec) or ``"observed"``
        (the confidential minimum and maximum: a disclosure, listed in the report).
    grid : (origin, step) or None
    """

    lower: float
    upper: float
    source: str = "observed"
    grid: tuple[float, float] | None = None

    @property
    def grid_lower(self) -> float:
        if self.grid is None or not np.isfinite(self.lower):
            return self.lower
        o, h = self.grid
        return o + h * np.ceil((self.lower - o) / h - 1e-9)

    @property
    def grid_upper(self) -> float:
        if self.grid is None or not np.isfinite(self.upper):
            return self.upper
        o, h = self.grid
        return o + h * np.floor((self.upper - o) / h + 1e-9)

    def latent_bounds(self) -> tuple[float, float]:
        """Bounds of the latent normal draw (half a step beyond the outer grid points)."""
        if self.grid is None:
            return self.lower, self.upper
        h = self.grid[1]
        return self.grid_lower - h / 2, self.grid_upper + h / 2

    def snap(self, x: np.ndarray) -> np.ndarray:
        """Latent values -> grid points inside the bounds (identity without a grid)."""
        x = np.asarray(x, dtype=float)
        if self.grid is None:
            return np.minimum(np.maximum(x, self.lower), self.upper)
        o, h = self.grid
        k = np.floor((x - o) / h + 0.5)
        # a latent exactly on the outer edge (measure zero) maps to the outer grid point; rounding to
        # 10 decimals removes the float noise of o + h k (16.3 + 0.1 * 11 = 17.400000000000002)
        return np.round(np.minimum(np.maximum(o + h * k, self.grid_lower), self.grid_upper), 10)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lower": None if not np.isfinite(self.lower) else float(self.lower),
            "upper": None if not np.isfinite(self.upper) else float(self.upper),
            "source": self.source,
            "grid_step": None if self.grid is None else float(self.grid[1]),
            "grid_origin": None if self.grid is None else float(self.grid[0]),
        }
