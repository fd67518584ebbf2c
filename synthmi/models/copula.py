r"""Bayesian Gaussian copula for mixed data with missing values (Hoff 2007).

The model
---------
Each record i has a latent vector :math:`z_i \in \mathbb{R}^q`, normal given the
levels of its categorical columns, and each observed variable is a function of
its own block of latent columns.

* **Ranked block A** (continuous and ordinal columns, one latent column each):
  :math:`z_{iA} \sim N(0, \Sigma_{AA})`, :math:`\Sigma_{AA} \sim
  \mathcal{IW}(\nu_0, I)`, and :math:`y_{ij} = g_j(z_{ij})` with :math:`g_j`
  non-decreasing and otherwise unknown. The data enter through Hoff's (2007,
  Sec. 2.2) *extended rank likelihood*

  .. math::

      \Pr\{ z \in D(y) \}, \qquad D(y) = \{ z : y_{ij} < y_{kj} \Rightarrow
      z_{ij} < z_{kj} \},

  which depends on :math:`\Sigma_{AA}` only through its correlation matrix.
  With :math:`\nu_0 = q_A + 1` (default) each of these correlations is
  marginally uniform on (-1, 1) (Barnard, McCulloch & Meng 2000).
* **Probit blocks** (binary columns: one latent column; nominal columns with L
  observed levels: L - 1), taken binary first, then nominal, each in data
  order; block b regresses on the ranked latents and on the *level indicators*
  :math:`h_{<b}` of the blocks before it:

  .. math::

      z_{iS_b} = c_b + B_b z_{iA} + D_b h_{i,<b} + e_{ib}, \qquad e_{ib} \sim N(0, \Omega_b),
      \quad \Omega_b = I + J,

  the covariance of the differences :math:`u_k - u_0` of independent N(0, 1)
  utilities of the levels, with the level :math:`y = 0` if :math:`\max_k
  z_{ik} < 0`, else :math:`1 + \arg\max_k z_{ik}` (McCulloch & Rossi 1994). A
  binary column is the case L = 2: a probit with free threshold, which for two
  levels carries the same information as the rank likelihood. Priors: the
  rows of :math:`[c_b; B_b; D_b]` are independent :math:`N(0, \tau^2 \Omega_b)`
  with :math:`\tau = 5` for the intercept and 2.5 for the coefficient of a
  *standardised* ranked latent or of a level indicator (weakly informative on
  the probit scale; a flat prior would leave the posterior improper whenever
  the other variables separate a level, which small subgroups and rare levels
  make common). Only levels seen in the data are modelled: a declared category
  that never occurs is never generated.

  Why iid utilities: with the error covariance of a nominal variable free
  (the textbook multinomial probit) and only record-level predictors, that
  covariance is identified by the normal functional form alone (Keane 1992),
  and its Gibbs sampler did not mix (split-R-hat 2.9 on NHANES
  marital_status). Fixing :math:`\Omega_b` is the usual identification; the
  latent correlations *between* a nominal variable and the ranked block stay
  free (through :math:`B_b`), and so do all its associations with earlier
  categorical columns (through :math:`D_b`, one coefficient per pair of levels).

  Why level indicators and not the earlier blocks' latents: a later block that
  regresses on an earlier probit latent brings back, through that latent, an
  error covariance identified only by the normal form (a latent is known only
  up to its level's region). The chain then crawled: split R-hat 2.2 on the
  mixed Adult set and 2.7 on the agency file, where holding those coefficients
  at zero gave 1.06 and 1.24 (benchmarks/copula_nominal_diagnosis.py). With
  indicators each block is a multinomial-probit regression given the ranked
  latents and the earlier levels, so its latents and coefficients integrate
  out of every later block. The model is a joint one in the order of the
  blocks, like a sequential regression (visit) order.

Reference level: a nominal block's level 0 (the utility :math:`u_0` the others
are differenced against, and the level its indicators leave out in later
blocks' designs) is its first observed level in category order (default,
``reference="first"``), or its most frequent observed level, ties broken by
category order (``reference="frequent"``). The block's own part of the
model does not depend on this choice: relabelling the reference to level r
maps the differences by :math:`z' = M z` with :math:`M \Omega_b M^\top =
\Omega_b` (differences of iid utilities stay differences of iid utilities), so
its error law, the prior :math:`N(0, \tau^2 \Omega_b)` of every row of its
coefficients and the level rule are the same. The prior of a *later* block's
intercept and indicator coefficients is not: with independent :math:`N(0,
\tau_c^2)` and :math:`N(0, \tau^2)` priors on the intercept and on the
coefficient of each non-reference indicator (a treatment-contrast prior), the
reference level's effect is carried by the intercept (sd 5) and each other
level's by its own coefficient (sd 2.5 around it). Changing an earlier block's
reference therefore changes that weakly informative prior, not the
likelihood; with the frequent level as reference a rare level's effect is
shrunk towards the most common level instead of every common level being
measured against a rare one. Only the last probit block's reference is a pure
reparametrisation. The posterior predictive of the data is the same within
Monte Carlo error in the tests (level shares and two-way tables,
tests/models/test_copula.py) except in the cells of a rare level, where the prior
shows. The frequent reference did not make the chains mix faster on the agency
file, where race's first level has 3 of 400 records
(``benchmarks/results/copula_reference.json``, 3 seeds: max R-hat a little
lower on every seed, but the smallest bulk ESS per CPU-second 0.97 / 2.73 /
2.52 against 1.50 / 2.71 / 2.38: the slowest quantity moves from race's
correlations to the rare level's latent against age), so the default stays.

Given the levels the latent row is normal with mean :math:`(0, c_b + D_b
h_{i,<b})` (:meth:`CopulaGibbs.offsets`) and covariance :math:`\Sigma_{AA}`,
:math:`\Sigma_{S_b A} = B_b \Sigma_{AA}`, :math:`\Sigma_{S_b S_{b'}} = B_b
\Sigma_{AA} B_{b'}^\top + 1\{b = b'\} \Omega_b` (:meth:`CopulaGibbs.implied`);
its correlation matrix C and the coefficients :math:`c_b, D_b` are the
parameters reported and diagnosed.

A missing entry leaves its latent unconstrained, so the sampler imputes it from
its conditional given the observed data and the parameters; a missing level of
a probit block is drawn with its latents, weighted by what it makes of the later
blocks (whose designs hold its indicators). This is valid under MAR because
the observed-data likelihood is the integral of the model over the missing
values.

The sampler
-----------
One iteration:

1. every ranked latent column from its full conditional given the others
   (normal with the joint's conditional mean and variance, truncated to the
   set the data allow; Hoff 2007, Sec. 3; records at even levels of a ranked
   variable are independent given those at odd levels, so each ranked column
   is two vectorised blocks), plus rank-preserving group moves (Liu & Sabatti
   2000): a shift and a rescaling of every ranked column (opt-in, not yet
   shown faster on the files of benchmarks/copula_files.py: a rescaling of one
   side of the column about a random knot, :meth:`CopulaGibbs._knot_move`, and
   a partially collapsed move of the column's associations,
   :meth:`CopulaGibbs._collapsed_ranked_move`); then every missing
   level of a probit block with its latents, exactly, and (for a block with a
   partially collapsed move) with the later blocks' latents integrated out and
   redrawn (:meth:`CopulaGibbs._collapsed_level_move`: held, a near-deterministic
   later column pinned the imputed level; Adult's slowest quantity, bulk ESS 44,
   went to 225 at the same 1,000 iterations, benchmarks/copula_nominal_mixing.py);
2. :math:`\Sigma_{AA}` by independence Metropolis from its inverse-Wishart full
   conditional (the coefficients' prior depends on the ranked scales
   :math:`\Sigma_{jj}^{1/2}`, so its ratio is the acceptance probability), and
   every block's :math:`(c_b, B_b, D_b)` from its matrix-normal full conditional
   (data augmentation);
3. for every probit block a *partially collapsed* move (van Dyk & Park 2008)
   of its coefficients with its latents integrated out (closed form for a
   binary block; for a nominal block the one-dimensional integral of
   :func:`mnp_log_likelihood`), then its latents redrawn exactly from their
   conditional (:func:`mnp_draw_latents`). The move is a Newton-proposal
   Metropolis-Hastings step, or for a nominal block whose Newton proposals are
   rarely accepted in burn-in (a skewed posterior: a level almost implied by an
   earlier column) a Hamiltonian move tuned in burn-in. Data augmentation alone
   mixes slowly when the latents carry much more information than the levels
   (rare levels, large n); the collapsed move removes that coupling.

Several chains are run (``chains``); diagnostics are ArviZ's rank-normalised
split R-hat and bulk / tail ESS of every correlation, every block intercept
and level-indicator coefficient and a summary of every column's imputed cells.

PyMC specification
------------------
:func:`copula_pymc_model` writes the same posterior in PyMC for every column
kind (small n); the agreement test compares its NUTS posterior of the
correlations with the Gibbs one.

From latent to data values
--------------------------
A latent value (imputed or synthetic) of a ranked variable is mapped to the
level whose slot it falls in: the cut between levels l and l+1 is the midpoint
between the largest current latent at level l and the smallest at level l+1
(observed records only). Imputed values therefore lie in the observed support,
as in Hoff's ``sbgcop``; unlike ``sbgcop`` (which maps through the empirical
quantiles of the *observed* values) the slot rule uses where the observed
records sit on the latent scale, so it stays consistent when the observed
values are a MAR-selected subset. A probit block's level follows its rule.

References
----------
Hoffman, M. D. and Gelman, A. (2014). The No-U-Turn sampler: adaptively setting
path lengths in Hamiltonian Monte Carlo. JMLR 15, 1593-1623.
Neal, R. M. (2011). MCMC using Hamiltonian dynamics. In Handbook of Markov Chain
Monte Carlo, ch. 5. Chapman & Hall/CRC.
Cowles, M. K. (1996). Accelerating Monte Carlo Markov chain convergence for
cumulative-link generalized linear models. Statistics and Computing 6, 101-111.
Hoff, P. D. (2007). Extending the rank likelihood for semiparametric copula
estimation. Annals of Applied Statistics 1(1), 265-283.
Barnard, J., McCulloch, R. and Meng, X.-L. (2000). Modeling covariance matrices
in terms of standard deviations and correlations. Statistica Sinica 10, 1281-1311.
McCulloch, R. and Rossi, P. E. (1994). An exact likelihood analysis of the
multinomial probit model. Journal of Econometrics 64, 207-240.
Keane, M. P. (1992). A note on identification in the multinomial probit model.
Journal of Business & Economic Statistics 10(2), 193-200.
Liu, Q. and Pierce, D. A. (1994). A note on Gauss-Hermite quadrature. Biometrika
81(3), 624-629.
Liu, J. S. and Sabatti, C. (2000). Generalised Gibbs sampler and multigrid
Monte Carlo for Bayesian computation. Biometrika 87(2), 353-369.
van Dyk, D. A. and Park, T. (2008). Partially collapsed Gibbs samplers: theory
and methods. JASA 103(482), 790-796.
"""
from __future__ import annotations

import functools
import math
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numba
import numpy as np
import pandas as pd
from scipy.special import log_ndtr, ndtr, ndtri
from scipy.linalg import get_lapack_funcs, solve_triangular

from .._validate import (
    NotFittedError,
    check_columns_exist,
    check_dataframe,
    check_no_missing,
    check_not_degenerate,
    check_random_state,
    Interval,
    Options,
    check_scalar,
    param_error,
)
from ..schema import Schema
from .base import ParamsMixin
from .truncation import truncated_normal
from ..errors import ColumnError, ComputationError, InputError

__all__ = ["GaussianCopulaImputer", "GaussianCopula", "copula_pymc_model", "truncated_normal", "log_interval_probability"]


# --------------------------------------------------------------------------- numerics
# one truncated-normal sampler for the package (inverse CDF on the lower tail, log space beyond
# ~37 sd): synthmi.models.truncation.truncated_normal; re-exported here for the copula's callers


def log_interval_probability(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r""":math:`\log(\Phi(b) - \Phi(a))` for standardised bounds ``a <= b``, stable in both tails."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    flip = a > 0
    a2 = np.where(flip, -b, a)
    b2 = np.where(flip, -a, b)
    la = log_ndtr(a2)
    lb = log_ndtr(b2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        d = np.exp(la - lb)
        out = lb + np.log1p(-np.where(np.isfinite(d), np.minimum(d, 1.0), 0.0))
    return np.where(b2 > a2, out, -np.inf)


def level_log_probabilities(mean: np.ndarray, sd: float, edges: np.ndarray) -> np.ndarray:
    r"""(n, L) :math:`\log[\Phi((e_{l+1} - m_i)/sd) - \Phi((e_l - m_i)/sd)]` for sorted ``edges`` (L + 1).

    Fast path: one ``ndtr`` per edge, differences taken on the lower tail
    (upper tail for intervals right of the mean); entries that underflow to 0
    are recomputed in log space by :func:`log_interval_probability`.
    """
    t = (edges[None, :] - np.asarray(mean, dtype=float)[:, None]) / sd
    cdf = ndtr(t)
    sf = ndtr(-t)
    lo_t = t[:, :-1]
    p = np.where(lo_t > 0, sf[:, :-1] - sf[:, 1:], cdf[:, 1:] - cdf[:, :-1])
    with np.errstate(divide="ignore"):
        out = np.log(p)
    bad = ~(p > 0)
    if bad.any():
        rows, cols = np.nonzero(bad)
        out[rows, cols] = log_interval_probability(t[rows, cols], t[rows, cols + 1])
    return out


_TRTRS = get_lapack_funcs(("trtrs",), (np.eye(1),))[0]


def _tri_solve(a: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """``scipy.linalg.solve_triangular(a, b, lower=lower)`` for a float64 square ``a`` and vector ``b``,
    without its argument checks: the same LAPACK call on the same layout (same bits), ~6 instead of
    ~40 us; the leapfrog steps of :meth:`CopulaGibbs._hmc_block_move` make two a step, thousands a
    fit (issue 28). Non-finite entries give non-finite results (the caller tests them) instead of
    scipy's ``check_finite`` error."""
    if a.flags.f_contiguous:
        x, info = _TRTRS(a, b, lower=lower)
    else:  # scipy solves the transposed system: trtrs expects Fortran order
        x, info = _TRTRS(a.T, b, lower=not lower, trans=1)
    if info > 0:
        raise np.linalg.LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    return x


def _truncated_normal_flat(mu: np.ndarray, sd: float, lo: np.ndarray, hi: np.ndarray,
                           rng: np.random.Generator) -> np.ndarray:
    """:func:`truncated_normal` (compiled) for C-contiguous float arrays ``mu``, ``lo``, ``hi`` of one
    shape and a scalar ``sd``: the same uniforms (``rng.random(shape)``) through the same kernel, hence
    the same draws bit for bit, without the broadcasting and copies of the general entry point
    (the ranked columns make 14 calls an iteration on fair; 1-4 % of an iteration on fair and
    randhie, measured; issue 28, cost per iteration)."""
    from .truncation import _kernel

    u = rng.random(mu.shape)
    out = np.empty(mu.shape)
    _kernel()(mu.reshape(-1), np.full(mu.size, float(sd)), lo.reshape(-1), hi.reshape(-1), u.reshape(-1),
              out.reshape(-1))
    return out


def _gumbel_argmax(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of unnormalised log-probabilities."""
    g = -np.log(-np.log(rng.random(logits.shape)))
    return np.argmax(logits + g, axis=1)


# --------------------------------------------------------------------------- multinomial probit with iid utilities
#: base rule of the adaptive Gauss-Hermite quadrature in :func:`mnp_log_likelihood` and the Newton
#: steps that place it: 12 nodes, 2 steps. Against a 100-node adaptive reference on 20,000 records
#: with d = 5 and eta ~ N(-1, 1.5^2) (levels often very unlikely) the largest error of a record's
#: log-likelihood was 8.5e-6 (mean 2.3e-7), where the plain 20-node rule used before erred by up to
#: 1.1e-2; with eta ~ N(0, 0.7^2) 9.6e-6. Curvature scaling matters: the same nodes shifted only
#: (scale 1) erred by up to 7e-3
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(12)
_GH_LOGW = np.log(_GH_WEIGHTS / np.sqrt(2.0 * np.pi))
_MNP_NEWTON = 2
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def mnp_log_likelihood(eta: np.ndarray, level: np.ndarray, grad: bool = False, hess: bool = False):
    r"""Per-record :math:`\log \Pr(y_i = l_i \mid \eta_i)` of a multinomial probit with iid utilities.

    Utilities :math:`u_{ij} = \eta_{ij} + \varepsilon_{ij}`, :math:`\varepsilon_{ij}
    \sim N(0, 1)` iid, :math:`\eta_{i0} = 0` (reference), :math:`y_i = \arg\max_j
    u_{ij}`; ``eta`` holds :math:`\eta_{i1..d}`. Conditioning on the chosen
    utility reduces the d-dimensional orthant probability to one dimension:

    .. math::

        \Pr(y = l \mid \eta) = \int \phi(s) \prod_{j \ne l} \Phi(s + \eta_l - \eta_j)\, ds,

    evaluated by adaptive Gauss-Hermite quadrature (Liu & Pierce 1994): a
    12-point rule centred and scaled by two Newton steps towards the mode of the
    (log-concave) integrand, whose mass moves far from 0 when the level is
    unlikely (a fixed 20-point rule erred by up to 0.01 in the log there).
    The normal CDFs and Mills ratios at the nodes come from one exponential and a
    tabulated erfcx each (:func:`_phi_mills`: the values of ``erfc`` within a few
    ulps, 2.1-2.7x less time for the kernel; issue 28).
    Missing levels (-1) contribute 0. With
    ``grad`` also returns :math:`\partial \log \Pr / \partial \eta_{i1..d}` (n, d):
    :math:`-E_r[\phi/\Phi(s + \eta_l - \eta_j)]` for :math:`j \ne l` and minus their
    sum for j = l, where :math:`E_r` averages over the quadrature nodes with
    weights proportional to the integrand. With ``hess`` also the Hessian (n, d, d):
    in :math:`\delta_j = \eta_l - \eta_j`,

    .. math::

        \frac{\partial^2 \log \Pr}{\partial \delta_j \partial \delta_{j'}} =
        E_r[m_j m_{j'}]\ (j \ne j'), \quad E_r[-x_j m_j]\ (j = j'), \quad
        \text{minus } E_r[m_j] E_r[m_{j'}],

    with :math:`x_j = s + \delta_j`, :math:`m_j = \phi(x_j)/\Phi(x_j)` (from
    :math:`m' = -m(x + m)`), mapped to :math:`\eta` by the chain rule. The
    log-likelihood is concave in :math:`\eta` (a log-concave density integrated
    over a convex set, Prekopa 1973), so minus this is an information matrix.
    """
    eta = np.ascontiguousarray(eta, dtype=float)
    level = np.ascontiguousarray(level, dtype=np.int64)
    ll, g, h = _mnp_kernel(eta, level, _GH_NODES, _GH_LOGW, 2 if hess else int(bool(grad)))
    if hess:
        return ll, g, h
    return (ll, g) if grad else ll


def _erfcx_table(pieces: int = 100, degree: int = 6) -> np.ndarray:
    r"""Coefficients (pieces, degree + 1; constant first) of the piecewise polynomial of
    :func:`_erfcx_scalar`: :math:`\mathrm{erfcx}(t) = e^{t^2}\mathrm{erfc}(t)` as a function of
    :math:`y = 4/(4 + t) \in (0, 1]` (t >= 0), each piece :math:`y \in [i/100, (i+1)/100]` a
    degree-6 least-squares Chebyshev fit at 28 Chebyshev points of ``scipy.special.erfcx``, written
    in the monomials of the piece's local variable :math:`u \in [-1, 1]`. The map y is S. G.
    Johnson's (Faddeeva package, ``erfcx_y100``, the routine scipy's ``erfcx`` evaluates), whose
    function of y is smooth on all of [0, 1]. Largest relative error against ``erfcx`` on
    400,001 points of t in [0, 27]: 1.8e-15 (8 ulps; tested < 4e-15 in
    tests/models/test_copula_trajectory.py)."""
    from scipy.special import erfcx

    k = np.arange(4 * degree + 4)
    u = np.cos(np.pi * (k + 0.5) / k.size)
    out = np.zeros((pieces, degree + 1))
    for i in range(pieces):
        y = (i + 0.5 + 0.5 * u) / pieces
        cheb = np.polynomial.chebyshev.chebfit(u, erfcx(4.0 / y - 4.0), degree)
        c = np.polynomial.chebyshev.cheb2poly(cheb)
        out[i, :c.size] = c
    return out


#: the table of :func:`_erfcx_scalar` (built once at import, ~10 ms; frozen into the compiled kernels)
_ERFCX = np.ascontiguousarray(_erfcx_table().ravel())
#: :math:`2^k`, k = -1022..0, for :func:`_exp_neg` (a table, not a libm ``ldexp`` call: the loop vectorises)
_POW2 = np.ldexp(1.0, np.arange(-1022, 1))
#: Taylor coefficients of :math:`e^r` to degree 13 (truncation error below 4e-18 on |r| <= log(2)/2)
_EXP_TAYLOR = np.array([1.0 / math.factorial(k) for k in range(14)])


@numba.njit(inline="always", fastmath={"contract"})
def _exp_neg(a: float) -> float:  # pragma: no cover - compiled
    r""":math:`e^a` for :math:`-707 \le a \le 0` (below, :math:`e^{-707} \approx 9 \cdot 10^{-308}`:
    the callers cut or neglect values that small): :math:`a = k \log 2 + r` (Cody-Waite: the high part
    of log 2 has 21 trailing zero bits, so :math:`k \log 2_{hi}` is exact), :math:`e^r` by its Taylor
    polynomial of degree 13, times :math:`2^k` from a table. Within 2 ulps of ``np.exp`` on [-707, 0]
    (tested); written out, without a libm call, so that a loop of them vectorises (AVX-512 here: ~4 ns
    a normal CDF and Mills ratio against ~8.5 ns with ``math.exp``)."""
    a = a if (a > -707.0 or a != a) else -707.0  # NaN stays NaN (a NaN likelihood must stay NaN)
    kf = (a * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0  # round to nearest
    r = (a - kf * 0.6931471803691238) - kf * 1.9082149292705877e-10
    q = _EXP_TAYLOR[13]
    for k in range(12, -1, -1):
        q = q * r + _EXP_TAYLOR[k]
    i = int(kf) + 1022
    i = 0 if i < 0 else (1022 if i > 1022 else i)
    return q * _POW2[i]


@numba.njit(inline="always", fastmath={"contract"})
def _erfcx_scalar(t: float) -> float:  # pragma: no cover - compiled
    r""":math:`\mathrm{erfcx}(t) = e^{t^2}\mathrm{erfc}(t)` for t >= 0 from the 100-piece table of
    :func:`_erfcx_table` (Horner in the piece's local variable, fused multiply-adds): no libm call,
    ~2.4 ns against ~22 ns for ``math.erfc`` (issue 28, cost per iteration)."""
    y = 4.0 / (4.0 + t)
    v = y * 100.0
    i = int(v)
    i = 0 if i < 0 else (99 if i > 99 else i)
    u = 2.0 * (v - i) - 1.0
    b = i * 7
    r = _ERFCX[b + 6]
    r = r * u + _ERFCX[b + 5]
    r = r * u + _ERFCX[b + 4]
    r = r * u + _ERFCX[b + 3]
    r = r * u + _ERFCX[b + 2]
    r = r * u + _ERFCX[b + 1]
    return r * u + _ERFCX[b]


@numba.njit(inline="always", fastmath={"contract"})
def _phi_gauss(x: float) -> tuple:  # pragma: no cover - compiled
    r""":math:`(\Phi(x), g)` with :math:`g = e^{-x^2/2}` (so :math:`\phi(x) = g/\sqrt{2\pi}`), the terms
    :func:`_phi_mills` and :func:`_phi_pdf_batch` share: :math:`t = |x|/\sqrt 2`, :math:`g = e^{-t^2}`,
    :math:`\Phi = g\,\mathrm{erfcx}(t)/2` left of 0 and one minus that right of it."""
    t = abs(x) * 0.7071067811865476
    g = _exp_neg(-t * t)
    h = 0.5 * g * _erfcx_scalar(t)
    # a select, not a branch (the sign of x is a coin flip across a record's factors)
    return (h if x <= 0.0 else 1.0 - h), g


@numba.njit(inline="always", fastmath={"contract"})
def _phi_mills(x: float) -> tuple:  # pragma: no cover - compiled
    r""":math:`(\Phi(x), \phi(x)/\Phi(x))` for x > -37 from one exponential (:func:`_exp_neg`) and
    :func:`_erfcx_scalar`.

    With :math:`t = |x|/\sqrt 2`, :math:`g = e^{-t^2}` and :math:`e = \mathrm{erfcx}(t)`: left of
    0, :math:`\Phi(x) = g e / 2` and :math:`\phi(x)/\Phi(x) = g / (\sqrt{2\pi}\,\Phi) =
    \sqrt{2/\pi}/e` (the rounding of g cancels: relative error ~1e-15 down to x = -37, where g is
    still normal); right of 0, :math:`\Phi(x) = 1 - g e / 2` and :math:`\phi/\Phi = g /
    (\sqrt{2\pi}\,\Phi)`. The values are those of ``0.5 * math.erfc(-x / sqrt 2)`` and of
    ``exp(-x^2/2) / sqrt(2 pi) / Phi`` within a few ulps for |x| < 5 (3e-15 relative, measured);
    beyond, the rounding of :math:`t^2` in the exponent gives up to 6e-14 relative at x = -35 (an
    absolute 6e-14 in :math:`\log\Phi`; the 12-node rule itself errs by up to 8.5e-6 there). Why:
    the normal CDFs of the multinomial-probit quadrature (:func:`_mnp_kernel`: 12 nodes x d
    competitors a record, twice an iteration) were ~70 % of its time through ``math.erfc``
    (~17-22 ns each, measured, against ~4 ns for this in a vectorised loop, :func:`_phi_mills_batch`)."""
    # left of 0 the ratio g / h is sqrt(2/pi) / erfcx(t) whatever the rounding of g (the same g above and below)
    p, g = _phi_gauss(x)
    return p, g * 0.3989422804014327 / p


@numba.njit(cache=True, fastmath={"contract"}, error_model="numpy")
def _phi_mills_batch(x, p, m, count):  # pragma: no cover - compiled
    r""":func:`_phi_mills` of ``x[:count]`` into ``p`` and ``m``, with :math:`\Phi` set to 0 at and
    below x = -37 (the cut of :func:`_mnp_kernel`'s fast path; the Mills ratio there is not used).
    A loop of its own, with NumPy's error model (a division by zero gives inf, not an exception
    check), so that LLVM vectorises it."""
    for i in range(count):
        pp, mm = _phi_mills(x[i])
        p[i] = pp if x[i] > -37.0 else 0.0
        m[i] = mm


@numba.njit(cache=True, fastmath={"contract"}, error_model="numpy")
def _exp_shift_batch(a, amax, count):  # pragma: no cover - compiled
    r"""``a[:count] = exp(a[:count] - amax)`` (all arguments <= 0) by :func:`_exp_neg`, in a loop LLVM
    vectorises: the quadrature's node weights relative to the largest (a weight below
    :math:`e^{-707}` comes out as :math:`e^{-707}` instead of smaller, 1e-307 of the total)."""
    for k in range(count):
        a[k] = _exp_neg(a[k] - amax)


@numba.njit(cache=True)
def _log_ndtr_scalar(x: float) -> float:  # pragma: no cover - compiled
    r""":math:`\log\Phi(x)`: ``log1p(-erfc)`` above 0, ``log(erfc)`` down to x = -37 (full relative
    precision in both); below, the
    asymptotic series :math:`-x^2/2 - \log(-x) - \log\sqrt{2\pi} + \log(1 - x^{-2} + 3x^{-4} - 15x^{-6})`
    (Abramowitz & Stegun 26.2.12), whose relative error there is below :math:`105 x^{-8} < 10^{-10}`."""
    if x > 0.0:  # upper half: log1p of the (small) upper tail keeps its relative precision
        return math.log1p(-0.5 * math.erfc(x * 0.7071067811865476))
    if x > -37.0:
        return math.log(0.5 * math.erfc(-x * 0.7071067811865476))
    x2 = x * x
    return -0.5 * x2 - math.log(-x) - 0.9189385332046727 + math.log1p(-1.0 / x2 + 3.0 / (x2 * x2) - 15.0 / (x2 * x2 * x2))


@numba.njit(cache=True)
def _ndtr_mills(x: float) -> tuple:  # pragma: no cover - compiled
    r""":math:`(\Phi(x), \phi(x)/\Phi(x))` (:func:`_phi_mills`); below x = -37 :math:`\Phi` is returned as 0 and the
    Mills ratio from the asymptotic series :math:`-x / (1 - x^{-2} + 3x^{-4} - 15x^{-6})`
    (Abramowitz & Stegun 26.2.12)."""
    if x > -37.0:
        return _phi_mills(x)
    x2 = x * x
    return 0.0, -x / (1.0 - 1.0 / x2 + 3.0 / (x2 * x2) - 15.0 / (x2 * x2 * x2))


@numba.njit(cache=True)
def _mnp_kernel(eta, level, nodes, logw, want):  # pragma: no cover - compiled
    """Compiled body of :func:`mnp_log_likelihood` (one pass per record; the NumPy version
    materialised (n, nodes, levels) arrays and spent 80 % of an NHANES iteration there).
    ``want``: 0 log-likelihood, 1 and its gradient, 2 and its Hessian.

    Adaptive Gauss-Hermite (Liu & Pierce 1994): the base rule (``nodes``, ``logw``: probabilists'
    nodes, log weights summing to one) is moved to :math:`\\hat s` and scaled by :math:`\\sigma`,
    the point and curvature reached by ``_MNP_NEWTON`` Newton steps from s = 0 on the (concave)
    log integrand; :math:`\\int f = \\sigma \\sum_k w_k f(\\hat s + \\sigma x_k) / \\phi(x_k)`.
    Any such (deterministic) centre and scale is a valid rule; near the mode few nodes suffice.
    The log of a node's product of normal CDFs is taken once per node (per factor only when the
    product underflows). Each factor's :math:`\\Phi` and Mills ratio come together from one
    exponential and a tabulated erfcx (:func:`_phi_mills`, within a few ulps of ``math.erfc``'s for
    |x| < 5), a record's K d factors in one vectorised loop (:func:`_phi_mills_batch`), instead of an
    ``erfc`` and, for the gradient, an ``exp`` each (issue 28, cost per iteration: the kernel 2.1-2.7x
    faster)."""
    n, d = eta.shape
    K = nodes.size
    L = d + 1
    ll = np.zeros(n)
    g = np.zeros((n, d))
    h = np.zeros((n, d, d)) if want >= 2 else np.zeros((0, d, d))
    # the d competitors of the chosen level, compactly: delta_j = eta_l - eta_j and the level j (a
    # branch-free inner loop; the same terms in the same order as over all L levels skipping l)
    dl = np.zeros(d)
    cj = np.zeros(d, dtype=np.int64)
    a = np.zeros(K)
    sk = np.zeros(K)
    pf = np.zeros((K, d))  # Phi at the node (fast path) or log Phi (underflow path)
    fast = np.zeros(K, dtype=np.bool_)
    mk = np.zeros((K, d))
    xb = np.zeros(K * d)
    pn = np.zeros(d)
    mn = np.zeros(d)
    pflat = pf.reshape(K * d)
    mflat = mk.reshape(K * d)
    G = np.zeros(d)
    M = np.zeros((d, d))
    Hf = np.zeros((L, L))
    base = np.zeros(K)
    for k in range(K):
        # log w_k - log phi(x_k)
        base[k] = logw[k] + 0.5 * nodes[k] * nodes[k] + 0.9189385332046727
    for i in range(n):
        lv = level[i]
        if lv < 0:
            continue
        el = 0.0 if lv == 0 else eta[i, lv - 1]
        c = 0
        for j in range(L):
            if j != lv:
                dl[c] = el - (0.0 if j == 0 else eta[i, j - 1])
                cj[c] = j
                c += 1
        # centre and scale: Newton on log f(s) = log phi(s) + sum_j log Phi(s + dl_j) from s = 0;
        # gradient -s + sum_j m_j, minus the second derivative 1 + sum_j m_j (x_j + m_j)
        s = 0.0
        hs = 1.0
        for _ in range(_MNP_NEWTON):
            gs = -s
            hs = 1.0
            for j in range(d):
                xb[j] = s + dl[j]
            _phi_mills_batch(xb, pn, mn, d)
            for j in range(d):
                x = xb[j]
                m = mn[j] if x > -37.0 else _ndtr_mills(x)[1]
                gs += m
                hs += m * (x + m)
            s += gs / hs
        sig = 1.0 / math.sqrt(hs)
        lsig = math.log(sig)
        amax = -np.inf
        # every node's factors at once: Phi (0 below x = -37) and, for the gradient, the Mills ratio,
        # in one vectorised loop (pf, mk as flat views)
        for k in range(K):
            sv = s + sig * nodes[k]
            sk[k] = sv
            for j in range(d):
                xb[k * d + j] = sv + dl[j]
        _phi_mills_batch(xb, pflat, mflat, K * d)
        for k in range(K):
            sv = sk[k]
            acc = base[k] + lsig - 0.5 * sv * sv - 0.9189385332046727
            prod = 1.0
            for j in range(d):
                prod *= pf[k, j]
            if prod > 1e-280:
                fast[k] = True
                acc += math.log(prod)
            else:  # a factor far in its lower tail: sum the logs, each from the stable log Phi
                fast[k] = False
                for j in range(d):
                    v = _log_ndtr_scalar(sv + dl[j])
                    pf[k, j] = v
                    acc += v
            a[k] = acc
            if acc > amax:
                amax = acc
        _exp_shift_batch(a, amax, K)
        tot = 0.0
        for k in range(K):
            tot += a[k]
        ll[i] = amax + math.log(tot)
        if want == 0:
            continue
        # G_j = d log P / d delta_j, delta_j = eta_l - eta_j: E_r[m_kj], m = phi / Phi (Mills ratio)
        sg = 0.0
        for j in range(d):
            gj = 0.0
            for k in range(K):
                if not fast[k]:  # the node's Mills ratios from log Phi (fast nodes: set with Phi)
                    x = sk[k] + dl[j]
                    mk[k, j] = math.exp(-0.5 * x * x - 0.9189385332046727 - pf[k, j])
                gj += a[k] * mk[k, j]
            G[j] = gj / tot
            sg += G[j]
        # d / d eta_t = sum_j G_j (1[t = l] - 1[t = j])
        for j in range(d):
            if cj[j] > 0:
                g[i, cj[j] - 1] = -G[j]
        if lv > 0:
            g[i, lv - 1] = sg
        if want < 2:
            continue
        # d2 log P / d delta_j d delta_j' = E_r[m_j m_j'] (j != j'), E_r[-x_j m_j] (j = j'), minus G_j G_j'
        for j in range(d):
            for jj in range(d):
                M[j, jj] = 0.0
        for k in range(K):
            rk = a[k] / tot
            for j in range(d):
                x = sk[k] + dl[j]
                M[j, j] -= rk * x * mk[k, j]
                for jj in range(j + 1, d):
                    M[j, jj] += rk * mk[k, j] * mk[k, jj]
        for j in range(d):
            for jj in range(j + 1, d):
                M[jj, j] = M[j, jj]
        for j in range(d):
            for jj in range(d):
                M[j, jj] -= G[j] * G[jj]
        # H_eta = D^T M D with D_{j t} = 1[t = l] - 1[t = j] (rows j != l)
        for t in range(L):
            for u in range(L):
                Hf[t, u] = 0.0
        for j in range(d):
            tj = cj[j]
            for jj in range(d):
                tjj = cj[jj]
                v = M[j, jj]
                Hf[lv, lv] += v
                Hf[lv, tjj] -= v
                Hf[tj, lv] -= v
                Hf[tj, tjj] += v
        for t in range(d):
            for u in range(d):
                h[i, t, u] = Hf[t + 1, u + 1]
    return ll, g, h


@functools.cache
def _mnp_rejection_round():
    r"""One round of :func:`mnp_draw_latents`' rejection sampler, compiled (built on first use, like
    :func:`synthmi.models.truncation._kernel`, whose scipy routines it calls: not cacheable on disk).

    ``step(c, el, others, u1, nz, lu, cand, ok)``: :math:`D \sim N(0, 2)` truncated to ``D < c``
    by inversion on the uniforms ``u1`` (the operations of :func:`truncated_normal` with mu = 0,
    sd = sqrt 2, lo = -inf, written out: no allocation, a third of the compile time),
    :math:`u = \eta_l + V`, :math:`V = -D/2 + \sqrt{1/2}\, n`, accepted when ``lu`` (log uniform)
    :math:`< \sum_j \log\Phi(u - \eta_j)` over the other competitors (``others``, -inf where
    excluded: log Phi(inf) = 0). The NumPy round it replaced gives the same candidates and decisions
    (tests/models/test_copula_trajectory.py)."""
    from .truncation import _FAR, _scipy_scalar

    c_ndtr = _scipy_scalar("__pyx_fuse_1ndtr")
    c_log_ndtr = _scipy_scalar("__pyx_fuse_1log_ndtr")
    c_ndtri = _scipy_scalar("ndtri")
    c_ndtri_exp = _scipy_scalar("ndtri_exp")
    sqrt2 = float(np.sqrt(2.0))
    sqrt_half = float(np.sqrt(0.5))
    far = _FAR

    @numba.njit(cache=False)
    def step(c, el, others, u1, nz, lu, cand, ok):  # pragma: no cover - compiled
        for i in range(c.size):
            # truncation's kernel for mu = 0, sd = sqrt 2, lo = -inf, hi = c: a = -inf (no flip, Phi(a) = 0)
            b = c[i] / sqrt2
            pb = c_ndtr(b) if b < far else 1.0
            if pb > 1e-300:
                x = c_ndtri(u1[i] * pb)
            else:  # the bound beyond the double range of Phi: invert in log space
                x = c_ndtri_exp(min(c_log_ndtr(b) + math.log(u1[i]), 0.0))
            dd = sqrt2 * min(x, b)
            x = el[i] + (-0.5 * dd + sqrt_half * nz[i])
            acc = 0.0
            for j in range(others.shape[1]):
                acc += c_log_ndtr(x - others[i, j])
            cand[i] = x
            ok[i] = lu[i] < acc

    # compiled here, for the argument types of mnp_draw_latents (a caller about to fork chains
    # builds it once for all of them)
    step(np.zeros(1), np.zeros(1), np.zeros((1, 2)), np.full(1, 0.5), np.zeros(1), np.zeros(1), np.empty(1),
         np.empty(1, dtype=np.bool_))
    return step


@functools.cache
def _mnp_rejection_loop():
    r"""The rounds of :func:`mnp_draw_latents`' rejection sampler in one compiled call (built on first
    use, like :func:`_mnp_rejection_round`, whose ``step`` each round calls).

    ``loop(c, el, others, rng, ul, rounds)``: ``pending`` = every record; each round draws, for the
    k pending records, ``rng.random(k)`` (the truncated D), ``rng.standard_normal(k)`` (V) and
    ``log(rng.random(k))`` (the acceptance), in that order, runs ``step`` on the pending records'
    bounds, means and competitors, writes the accepted candidates into ``ul`` and keeps the rejected,
    in order; returns the records still pending after ``rounds`` rounds. Numba's ``Generator`` draws
    NumPy's streams, so these are the draws of the Python loop it replaced (one ``random``,
    ``standard_normal``, ``random`` per round; that loop's ~12 NumPy calls a round, some 17 rounds a
    call on NHANES, cost more than the round itself; the logarithm is libm's instead of NumPy's, which
    differ in the last bit for 0.3 % of uniforms, a difference that can change a decision only when the
    log acceptance ratio falls within that bit: the chains' digests are unchanged)."""
    step = _mnp_rejection_round()

    @numba.njit(cache=False)
    def loop(c, el, others, rng, ul, rounds):  # pragma: no cover - compiled
        L = others.shape[1]
        pending = np.arange(c.size)
        for _ in range(rounds):
            k = pending.size
            if k == 0:
                break
            u1 = rng.random(k)
            nz = rng.standard_normal(k)
            lu = np.log(rng.random(k))
            cp = np.empty(k)
            ep = np.empty(k)
            op = np.empty((k, L))
            for t in range(k):
                i = pending[t]
                cp[t] = c[i]
                ep[t] = el[i]
                for j in range(L):
                    op[t, j] = others[i, j]
            cand = np.empty(k)
            ok = np.empty(k, dtype=np.bool_)
            step(cp, ep, op, u1, nz, lu, cand, ok)
            keep = 0
            for t in range(k):
                if ok[t]:
                    ul[pending[t]] = cand[t]
                else:
                    pending[keep] = pending[t]
                    keep += 1
            pending = pending[:keep].copy()
        return pending

    # compiled here (see _mnp_rejection_round), for the default generator's type
    loop(np.zeros(1), np.zeros(1), np.full((1, 2), -np.inf), np.random.default_rng(0), np.empty(1), 1)
    return loop


def mnp_draw_latents(eta: np.ndarray, level: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""Exact draw of the latent differences :math:`z = u_{1..d} - u_0` given the levels.

    For an observed level l the chosen utility has density :math:`\propto
    \phi(u - \eta_l) \prod_{j \ne l} \Phi(u - \eta_j)`. It is drawn by
    rejection from the envelope :math:`\phi(u - \eta_l)\Phi(u - \eta_{j^*})`
    (:math:`j^*` the strongest competitor), an extended skew normal drawn
    exactly as :math:`u = \eta_l + V`, :math:`V \mid D \sim N(-D/2, 1/2)`,
    :math:`D \sim N(0, 2)` truncated to :math:`D < \eta_l - \eta_{j^*}`; it is
    accepted with probability :math:`\prod_{j \ne l, j^*} \Phi(u - \eta_j)`.
    The other utilities are then :math:`N(\eta_j, 1)` truncated above at
    :math:`u_l`. A missing level leaves all utilities free.
    """
    n, d = eta.shape
    full = np.concatenate([np.zeros((n, 1)), eta], axis=1)
    u = full + rng.standard_normal(full.shape)
    obs = np.flatnonzero(level >= 0)
    if obs.size:
        f = full[obs]
        lv = level[obs]
        idx = np.arange(obs.size)
        el = f[idx, lv]
        comp = f.copy()
        comp[idx, lv] = -np.inf
        jstar = np.argmax(comp, axis=1)
        c = el - f[idx, jstar]
        others = comp.copy()
        others[idx, jstar] = -np.inf
        ul = np.empty(obs.size)
        # up to 200 rounds, compiled with the generator (numba draws NumPy's streams: the same uniforms
        # and normals, in the same order, as the Python loop it replaced; issue 28)
        pending = _mnp_rejection_loop()(c, el, others, rng, ul, 200)
        if pending.size:
            # records whose level is very unlikely under eta: inverse CDF of the log-density on a
            # fine grid around the competitors (4001 points over +-12 sd; only these few records)
            grid = np.linspace(-12.0, 12.0, 4001)
            centre = np.maximum(el[pending], f[pending][np.arange(pending.size), jstar[pending]])
            u_grid = centre[:, None] + grid[None, :]
            logf = (-0.5 * (u_grid - el[pending][:, None]) ** 2
                    + log_ndtr(u_grid[:, :, None] - comp[pending][:, None, :]).sum(axis=2))
            w = np.exp(logf - logf.max(axis=1, keepdims=True))
            cdf = np.cumsum(w, axis=1)
            cdf /= cdf[:, -1:]
            r = rng.random(pending.size)
            k = np.array([np.searchsorted(cdf[i], r[i]) for i in range(pending.size)])
            ul[pending] = u_grid[np.arange(pending.size), np.minimum(k, grid.size - 1)]
        # the other utilities below the chosen one (N(eta_j, 1) truncated above at u_l)
        hi = np.repeat(ul, f.shape[1]).reshape(f.shape)
        uo = _truncated_normal_flat(f, 1.0, np.full(f.shape, -np.inf), hi, rng)
        uo[idx, lv] = ul
        u[obs] = uo
    return u[:, 1:] - u[:, :1]


# --------------------------------------------------------------------------- encoding
@dataclass
class _Margin:
    """How one data column maps to latent columns."""

    name: str
    kind: str  # continuous / binary / ordinal / nominal
    cols: list[int]  # latent columns
    support: np.ndarray  # continuous: sorted observed values; categorical: schema codes of observed levels
    level: np.ndarray  # per-record level index 0..L-1, -1 if missing
    categories: tuple | None = None

    @property
    def ranked(self) -> bool:
        """Continuous and ordinal columns enter through the rank likelihood; binary and nominal ones as probit blocks."""
        return self.kind in ("continuous", "ordinal")

    @property
    def n_levels(self) -> int:
        return len(self.support)


def _encode(df: pd.DataFrame, schema: Schema, reference: str = "first") -> list[_Margin]:
    """Per column, its latent columns, support and per-record level index (-1 = missing).

    A nominal column's level 0 is its probit block's reference level (the utility the others are
    differenced against): with ``reference="first"`` (default) the first observed level in category
    order; with ``"frequent"`` the most frequent observed level (ties: the first in category order),
    then the others in category order. Reading the counts is fine here: the copula is not a
    differentially private method (no DP method imports this module).
    """
    margins: list[_Margin] = []
    j = 0
    for c in df.columns:
        v = schema[c]
        s = df[c]
        if v.kind == "continuous":
            x = s.to_numpy(dtype=float)
            obs = ~np.isnan(x)
            support = np.unique(x[obs])
            level = np.full(len(x), -1, dtype=np.int64)
            level[obs] = np.searchsorted(support, x[obs])
            margins.append(_Margin(c, "continuous", [j], support, level))
            j += 1
            continue
        if v.n_levels < 2:
            raise ColumnError(
                f"Column '{c}' is {v.kind} with {v.n_levels} level; a categorical variable needs at "
                "least 2 levels to be modelled."
            )
        codes = schema.codes(s)
        seen = np.unique(codes[codes >= 0])
        if len(seen) < 2:
            raise ColumnError(
                f"Column '{c}' ({v.kind}) has {len(seen)} observed level; it needs at least 2 to be modelled."
            )
        if v.kind == "nominal" and reference == "frequent":
            counts = np.bincount(np.searchsorted(seen, codes[codes >= 0]), minlength=len(seen))
            top = int(np.argmax(counts))  # first maximum: ties broken by category order
            seen = np.concatenate([seen[top:top + 1], np.delete(seen, top)])
        level = np.full(len(codes), -1, dtype=np.int64)
        pos = np.full(int(seen.max()) + 1, -1, dtype=np.int64)
        pos[seen] = np.arange(len(seen))
        level[codes >= 0] = pos[codes[codes >= 0]]
        if v.kind == "nominal":
            cols = list(range(j, j + len(seen) - 1))
        else:
            cols = [j]
        margins.append(_Margin(c, v.kind, cols, seen, level, v.categories))
        j += len(cols)
    return margins


def _latent_names(margins: list[_Margin]) -> list[str]:
    out = []
    for mg in margins:
        if mg.kind == "nominal":
            out += [f"{mg.name}[{mg.categories[mg.support[k + 1]]}]" for k in range(len(mg.cols))]
        else:
            out.append(mg.name)
    return out


# --------------------------------------------------------------------------- state and sampler
@dataclass
class CopulaState:
    """One state of the chain.

    ``z`` (n, q) latents; ``mu`` (q,) and ``sigma`` (q, q) the implied mean and
    covariance of a latent row; ``sigma_a`` the covariance of the ranked block
    and ``coef`` per nominal block the (1 + |W_b|, d_b) intercept-and-slope
    matrix of its regression on the earlier latent columns.
    """

    z: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    sigma_a: np.ndarray | None = None
    coef: list | None = None

    def copy(self) -> "CopulaState":
        return CopulaState(
            self.z.copy(), self.mu.copy(), self.sigma.copy(),
            None if self.sigma_a is None else self.sigma_a.copy(),
            None if self.coef is None else [c.copy() for c in self.coef],
        )

    @property
    def correlation(self) -> np.ndarray:
        d = np.sqrt(np.diag(self.sigma))
        return self.sigma / np.outer(d, d)


class _RankIndex:
    """Records of one ranked variable grouped by level, for per-level max / min."""

    def __init__(self, level: np.ndarray, n_levels: int):
        obs = np.flatnonzero(level >= 0)
        order = obs[np.argsort(level[obs], kind="stable")]
        self.order = order
        lev_sorted = level[order]
        self.starts = np.searchsorted(lev_sorted, np.arange(n_levels))
        self.n_levels = n_levels
        self.level = level
        self.missing = np.flatnonzero(level < 0)
        parity = level[obs] % 2
        self.blocks = [obs[parity == 0], obs[parity == 1]]
        self.block_levels = [level[b] for b in self.blocks]

    def extremes(self, zc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = zc[self.order]
        return np.maximum.reduceat(v, self.starts), np.minimum.reduceat(v, self.starts)

    def cuts(self, zc: np.ndarray) -> np.ndarray:
        """Cut points between adjacent levels: midpoints of the gaps (L - 1 values)."""
        zmax, zmin = self.extremes(zc)
        return 0.5 * (zmax[:-1] + zmin[1:])


def _nominal_level(v: np.ndarray) -> np.ndarray:
    """Level of each row of a nominal block's latents (0 = reference)."""
    return np.where(v.max(axis=1) < 0, 0, np.argmax(v, axis=1) + 1)


def _inverse_wishart(df: float, scale: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r"""One draw of :math:`\mathcal{IW}(df, \text{scale})` by the Bartlett decomposition.

    :math:`\Sigma^{-1} \sim \mathcal{W}(df, \text{scale}^{-1})` is :math:`L A A^\top L^\top`
    with :math:`L L^\top = \text{scale}^{-1}`, A lower triangular,
    :math:`A_{ii}^2 \sim \chi^2_{df - i}` (i = 0, 1, ...) and standard normal
    entries below the diagonal (Bartlett 1933); the law of
    ``scipy.stats.invwishart`` without its per-call overhead.
    """
    p = scale.shape[0]
    L = np.linalg.cholesky(np.linalg.inv(scale))
    A = np.tril(rng.standard_normal((p, p)), -1)
    A[np.diag_indices(p)] = np.sqrt(rng.chisquare(df - np.arange(p)))
    LA = L @ A
    return np.linalg.inv(LA @ LA.T)


#: prior sd of a probit block's intercept and of its coefficient on a standardised latent
#: (rows of [c_b; B_b] ~ N(0, tau^2 Omega_b)): weakly informative on the probit scale, and
#: it keeps the posterior proper when a level is separated by the other variables (small n)
PRIOR_SD_INTERCEPT = 5.0
PRIOR_SD_SLOPE = 2.5
#: prior precision of a coefficient held at zero (CopulaGibbs.fix_zero_coefficients)
ZERO_COEF_PRECISION = 1e10
#: Hamiltonian moves of nominal blocks: target acceptance of the step-size adaptation, trajectory
#: length in whitened units, most leapfrog steps per move
_HMC_TARGET = 0.75
_HMC_LENGTH = 1.5
_HMC_MAX_LEAPFROG = 20
#: a nominal block whose Newton-proposal move is accepted less often than this in burn-in
#: switches to Hamiltonian moves (CopulaGibbs.start_adaptation)
_NEWTON_MIN_ACCEPTANCE = 0.25


def nominal_error_covariance(d: int) -> np.ndarray:
    r""":math:`\Omega = I_d + J_d`: covariance of the differences :math:`u_k - u_0` of iid N(0, 1) utilities."""
    return np.eye(d) + np.ones((d, d))


class CopulaGibbs:
    """Gibbs sampler for the copula given per-record levels (-1 = missing).

    Built once per data set (the level index is precomputed); ``step`` runs one
    iteration in place on a :class:`CopulaState`.
    """

    #: nominal blocks' Newton moves after burn-in use per-record curvatures frozen at its end
    #: (False: the exact information at every move, the variant benchmarks/copula_samplers.py compares)
    freeze_newton_curvature = True
    #: a collapsed block's missing levels drawn with the later blocks' latents integrated out
    #: (:meth:`_collapsed_level_move`; False: given them, :meth:`level_log_weights`)
    collapse_missing_levels = True
    #: ranked columns' partially collapsed moves (:meth:`_collapsed_ranked_move`): exact, but opt-in: on
    #: randhie (issue 28, benchmarks/copula_files.py, risk-dami frame, 2 x 600 iterations) min bulk ESS
    #: 34 in 51.5 CPU s with them against 68 in 29.2 s without (acceptance 0.16-0.27 of a random walk in
    #: up to 9 dimensions; benchmarks/results/copula_ranked_moves.json)
    collapse_ranked = False
    #: ranked columns' rescaling about a random knot (:meth:`_knot_move`) after the shift and scaling:
    #: exact, but opt-in: no gain measured (2 x 1,000 iterations: randhie min bulk / tail ESS 120 / 191
    #: with it against 150 / 255 without, fair 20 / 40 against 43 / 63; copula_ranked_moves.json)
    knot_moves = False
    #: (a per-record variant, each ranked column moved by independence MH with the probit latents
    #: integrated out, was tried for issue 28 too and not kept: fair 2.4 x the CPU for a slowest bulk ESS
    #: of 51 instead of 43, anes96 2.8 x for 162 instead of 114; commit 88cf7f0,
    #: benchmarks/results/copula_nominal_mixing.json "after+ranked")

    def __init__(self, margins: list[_Margin], q: int, prior_df: float | None = None):
        self.margins = margins
        self.q = q
        self.n = len(margins[0].level)
        self.ranked_cols = np.array([mg.cols[0] for mg in margins if mg.ranked], dtype=np.int64)
        q_a = self.ranked_cols.size
        self.prior_df = float(q_a + 1) if prior_df is None else float(prior_df)
        self.rank = {mg.name: _RankIndex(mg.level, mg.n_levels) for mg in margins if mg.ranked}
        # probit blocks: binary columns first, then nominal ones (data order within each); block b
        # regresses on the ranked latents and on the level indicators of blocks < b
        self.block_margins = [mg for mg in margins if mg.kind == "binary"] + [mg for mg in margins if mg.kind == "nominal"]
        A = self.ranked_cols
        self.blocks: list[tuple[np.ndarray, np.ndarray]] = [(np.asarray(mg.cols, dtype=np.int64), A)
                                                             for mg in self.block_margins]
        # the full design [1, z_A, H_0, H_1, ...] (H_b: indicators of levels 1..L_b-1 of block b);
        # block b's design is its first n_design[b] columns, block b's indicators start at ind_start[b]
        self.ind_start = []
        start = 1 + q_a
        for mg in self.block_margins:
            self.ind_start.append(start)
            start += mg.n_levels - 1
        self.n_full = start
        self.n_design = [self.ind_start[b] for b in range(len(self.block_margins))]
        self.block_levels = [mg.level for mg in self.block_margins]
        self.block_missing = [np.flatnonzero(mg.level < 0) for mg in self.block_margins]
        self.omegas = [nominal_error_covariance(S.size) for S, _ in self.blocks]
        self.omega_chol = [np.linalg.cholesky(om) for om in self.omegas]
        self.omega_inv = [np.linalg.inv(om) for om in self.omegas]
        self.nominal_cols = np.array([c for S, _ in self.blocks for c in S], dtype=np.int64)
        # partially collapsed moves (ESS per second compared in benchmarks/copula_samplers.py)
        self.collapse_binary = True
        self.collapse_nominal = True
        # per ranked column [accepted, proposed] partially collapsed moves (collapse_ranked)
        self.ranked_counts = np.zeros((q_a, 2), dtype=np.int64)
        # per block: [accepted, proposed] partially collapsed moves
        self.collapsed_counts = np.zeros((len(self.blocks), 2), dtype=np.int64)
        # per block: positions (in its design without the intercept) of coefficients held at zero
        self.zero_coef: dict[int, np.ndarray] = {}
        # Hamiltonian moves of nominal blocks: per block step size and whitening (Cholesky factor of
        # the collapsed posterior's information), tuned in burn-in only (start_adaptation)
        self.hmc_eps = np.full(len(self.blocks), 0.5)
        self.hmc_chol: list[np.ndarray | None] = [None] * len(self.blocks)
        self._adapt: dict | None = None
        self.nominal_move = ["newton"] * len(self.blocks)
        # Newton moves of nominal blocks after burn-in: per-record curvatures (n, d, d) frozen at the
        # end of burn-in (None: the exact observed information at each move)
        self.newton_curvature: list[np.ndarray | None] = [None] * len(self.blocks)

    def fix_zero_coefficients(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        r"""Hold at zero the coefficients linking each pair of columns.

        For a pair (a, b) the probit block that comes later regresses on the other
        column (its ranked latent, or the indicators of its levels); those
        coefficients get prior precision :data:`ZERO_COEF_PRECISION` (prior sd
        :math:`10^{-5}` on the probit scale: zero for every practical purpose), i.e.
        the conditional independence of the later block and the other column given
        the remaining regressors. Used for a column's missing-value indicator
        and its values (MAR: missingness does not depend on the missing value) and
        for a skip pattern (a value that does not exist where the condition holds
        has no association with the condition to estimate); without it that
        coefficient is identified only through the imputed cells and the chain crawls.
        A pair of two ranked columns (one covariance block) cannot be constrained
        and is skipped; returns the pairs constrained.
        """
        by_name = {mg.name: mg for mg in self.margins}
        block_of = {mg.name: b for b, mg in enumerate(self.block_margins)}
        done = []
        for a, c in pairs:
            for later, other in ((a, c), (c, a)):
                b = block_of.get(later)
                if b is None or other not in by_name:
                    continue
                if by_name[other].ranked:
                    pos = np.flatnonzero(self.ranked_cols == by_name[other].cols[0])
                elif block_of[other] < b:
                    bb = block_of[other]
                    pos = np.arange(self.ind_start[bb], self.ind_start[bb] + self.block_margins[bb].n_levels - 1) - 1
                else:
                    continue
                self.zero_coef[b] = np.union1d(self.zero_coef.get(b, np.empty(0, dtype=np.int64)), pos)
                done.append((a, c))
                break
        return done

    # -- initial state -----------------------------------------------------------
    def initial_state(self) -> CopulaState:
        n, q = self.n, self.q
        z = np.zeros((n, q))
        for mg in self.margins:
            if mg.ranked:
                ri = self.rank[mg.name]
                obs = np.flatnonzero(mg.level >= 0)
                # normal scores of mid-ranks: a valid point of D(y) (ties share a value)
                counts = np.diff(np.append(ri.starts, len(ri.order)))
                mid = np.cumsum(counts) - 0.5 * counts
                scores = ndtri((mid + 0.5) / (len(obs) + 1.0))
                z[obs, mg.cols[0]] = scores[mg.level[obs]]
            else:
                # observed level k > 0: component k at 0.5, the others at -0.5; missing: reference level
                lv = mg.level
                for k, c in enumerate(mg.cols):
                    z[:, c] = np.where(lv == k + 1, 0.5, -0.5)
        st = CopulaState(
            z=z, mu=np.zeros(q), sigma=np.eye(q), sigma_a=np.eye(self.ranked_cols.size),
            coef=[np.zeros((self.n_design[b], S.size)) for b, (S, _) in enumerate(self.blocks)],
        )
        self.implied(st)
        return st

    def implied(self, st: CopulaState) -> None:
        r"""Set ``st.mu``, ``st.sigma``: the latent mean and covariance given the levels.

        With :math:`z_{S_b} = c_b + B_b z_A + D_b h_{<b} + e_b`, :math:`e_b \sim
        N(0, \Omega_b)` independent: :math:`\Sigma_{S_b A} = B_b \Sigma_{AA}`,
        :math:`\Sigma_{S_b S_{b'}} = B_b \Sigma_{AA} B_{b'}^\top + 1\{b = b'\}\Omega_b`;
        ``mu`` holds :math:`(0, c_b)` and a record's mean adds :math:`D_b h_{i,<b}`
        (:meth:`offsets`).
        """
        q = self.q
        sigma = np.zeros((q, q))
        mu = np.zeros(q)
        A = self.ranked_cols
        if A.size:
            sigma[np.ix_(A, A)] = st.sigma_a
        if self.blocks:
            S_all = self.nominal_cols
            B_all = np.vstack([coef[1:1 + A.size].T for coef in st.coef])  # (sum d_b, |A|)
            err = np.zeros((S_all.size, S_all.size))
            k = 0
            for (S, _), coef, om in zip(self.blocks, st.coef, self.omegas):
                err[k:k + S.size, k:k + S.size] = om
                mu[S] = coef[0]
                k += S.size
            if A.size:
                bs = B_all @ st.sigma_a
                sigma[np.ix_(S_all, A)] = bs
                sigma[np.ix_(A, S_all)] = bs.T
                sigma[np.ix_(S_all, S_all)] = bs @ B_all.T + err
            else:
                sigma[np.ix_(S_all, S_all)] = err
        st.sigma = sigma
        st.mu = mu

    # -- designs, offsets, levels -------------------------------------------------------
    def block_level(self, st: CopulaState, b: int, z: np.ndarray | None = None) -> np.ndarray:
        """Completed levels of block b: observed, else the level of the latents."""
        lv = self.block_levels[b]
        miss = self.block_missing[b]
        if not miss.size:
            return lv
        z = st.z if z is None else z
        out = lv.copy()
        out[miss] = _nominal_level(z[np.ix_(miss, self.blocks[b][0])])
        return out

    def design(self, st: CopulaState, z: np.ndarray | None = None, levels: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """The full design [1, z_A, H_0, H_1, ...] of the current latents and completed levels."""
        z = st.z if z is None else z
        F = np.zeros((self.n, self.n_full))
        F[:, 0] = 1.0
        A = self.ranked_cols
        if A.size:
            F[:, 1:1 + A.size] = z[:, A]
        for b in range(len(self.blocks)):
            self.set_indicators(F, b, self.block_level(st, b, z) if levels is None else levels[b])
        return F

    def set_indicators(self, F: np.ndarray, b: int, level: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Write block b's level indicators (levels 1..L-1; 0 is the reference) into the design."""
        L = self.block_margins[b].n_levels
        s = self.ind_start[b]
        if rows is None:
            H = np.zeros((F.shape[0], L - 1))
            ok = level > 0
            H[np.flatnonzero(ok), level[ok] - 1] = 1.0
            F[:, s:s + L - 1] = H
        else:
            H = np.zeros((rows.size, L - 1))
            ok = level > 0
            H[np.flatnonzero(ok), level[ok] - 1] = 1.0
            F[rows, s:s + L - 1] = H

    def simulate(self, st: CopulaState, n: int, rng: np.random.Generator) -> tuple[np.ndarray, list[np.ndarray]]:
        """n new records from the model at state ``st``: latents (n, q) and per probit block its levels
        (ranked latents from :math:`N(0, \\Sigma_{AA})`, then each block from its regression in turn)."""
        A = self.ranked_cols
        z = np.zeros((n, self.q))
        if A.size:
            z[:, A] = rng.multivariate_normal(np.zeros(A.size), st.sigma_a, size=n, method="cholesky")
        F = np.zeros((n, self.n_full))
        F[:, 0] = 1.0
        F[:, 1:1 + A.size] = z[:, A]
        levels = []
        for b, (S, _) in enumerate(self.blocks):
            eta = F[:, :self.n_design[b]] @ st.coef[b]
            z[:, S] = eta + rng.standard_normal((n, S.size)) @ self.omega_chol[b].T
            lv = _nominal_level(z[:, S])
            self.set_indicators(F, b, lv)
            levels.append(lv)
        return z, levels

    def offsets(self, st: CopulaState, F: np.ndarray) -> np.ndarray:
        r"""(n, q) record means of the latents given the levels: 0 on the ranked block,
        :math:`c_b + D_b h_{i,<b}` on block b."""
        M = np.zeros((self.n, self.q))
        a1 = 1 + self.ranked_cols.size
        for b, (S, _) in enumerate(self.blocks):
            coef = st.coef[b]
            M[:, S] = coef[0] + F[:, a1:self.n_design[b]] @ coef[a1:]
        return M

    def level_log_weights(self, st: CopulaState, F: np.ndarray, z: np.ndarray, b: int, rows: np.ndarray) -> np.ndarray:
        r"""(len(rows), L) :math:`\sum_{b' > b} \log N(z_{iS_{b'}}; x_{ib'}(l)^\top\theta_{b'}, \Omega_{b'})`:
        what each level l of block b would make of the later blocks' latents (their designs
        hold block b's indicators), up to a constant per row."""
        L = self.block_margins[b].n_levels
        s = self.ind_start[b]
        out = np.zeros((rows.size, L))
        for bb in range(b + 1, len(self.blocks)):
            S2 = self.blocks[bb][0]
            coef = st.coef[bb]
            X = F[rows, :self.n_design[bb]].copy()
            X[:, s:s + L - 1] = 0.0
            r0 = z[np.ix_(rows, S2)] - X @ coef  # residual with block b at its reference level
            D = coef[s:s + L - 1]  # (L - 1, d2)
            for l in range(L):
                r = r0 if l == 0 else r0 - D[l - 1]
                w = solve_triangular(self.omega_chol[bb], r.T, lower=True)
                out[:, l] -= 0.5 * np.sum(w * w, axis=0)
        return out

    def level_log_probabilities(self, b: int, eta: np.ndarray) -> np.ndarray:
        r"""(n, L) :math:`\log \Pr(y = l \mid \eta)` of block b (closed form for a binary block)."""
        L = self.block_margins[b].n_levels
        if L == 2:
            x = eta[:, 0] / np.sqrt(2.0)
            return np.column_stack([log_ndtr(-x), log_ndtr(x)])
        return np.column_stack([mnp_log_likelihood(eta, np.full(eta.shape[0], l, dtype=np.int64)) for l in range(L)])

    # -- one iteration -----------------------------------------------------------
    def step(self, st: CopulaState, rng: np.random.Generator) -> None:
        self.update_latents(st, rng)
        self.update_parameters(st, rng)
        if self.collapse_ranked:
            self.collapsed_ranked_moves(st, rng)
        self.end_iteration()

    def update_latents(self, st: CopulaState, rng: np.random.Generator) -> None:
        r"""Ranked latents one column at a time, then the probit blocks exactly given them.

        Given the levels the latents are jointly normal (mean :meth:`offsets`,
        covariance ``st.sigma``), so a ranked column's full conditional is the
        usual normal one, truncated to D(y). A probit block with a partially
        collapsed move has its latents redrawn there (:meth:`update_parameters`),
        so here only its missing levels are drawn, with their latents; a block
        without one is drawn whole. A probit block's latents appear only
        in their own regression (later blocks use its levels), so given the ranked
        latents they are :math:`N(\eta_i, \Omega_b)` restricted to the observed
        level's region, drawn exactly (:func:`mnp_draw_latents`). A missing level
        is drawn first, jointly with its latents: :math:`\Pr(l) \propto \Pr(y = l
        \mid \eta_i) \prod_{b' > b} N(z_{iS_{b'}}; x_{ib'}(l)^\top\theta_{b'},
        \Omega_{b'})`; for a block with a collapsed move (the default) the later
        blocks' latents are integrated out of that draw and redrawn after it,
        :math:`\Pr(l) \propto \Pr(y = l \mid \eta_i) \prod_{b' > b} \Pr(y_{ib'}
        \mid x_{ib'}(l)^\top\theta_{b'})` (:meth:`_collapsed_level_move`).
        """
        z, mu = st.z, st.mu
        P = np.linalg.inv(st.sigma)
        F = self.design(st)
        E = z - self.offsets(st, F)
        for mg in self.margins:
            if not mg.ranked:
                continue
            j = mg.cols[0]
            pjj = P[j, j]
            sd = 1.0 / np.sqrt(pjj)
            pj = P[:, j] / pjj
            ri = self.rank[mg.name]
            # E @ pj once for the column: the parity blocks and the missing records are disjoint sets of
            # rows, and each block's update changes only its own rows of E (one product instead of three
            # on gathered copies of E's rows)
            Epj = E @ pj
            for block, lev in zip(ri.blocks, ri.block_levels):
                if block.size == 0:
                    continue
                cm = z[block, j] - Epj[block]
                zmax, zmin = ri.extremes(z[:, j])
                lo = np.where(lev > 0, zmax[np.maximum(lev - 1, 0)], -np.inf)
                hi = np.where(lev < mg.n_levels - 1, zmin[np.minimum(lev + 1, mg.n_levels - 1)], np.inf)
                z[block, j] = _truncated_normal_flat(cm, sd, lo, hi, rng)
                E[block, j] = z[block, j] - mu[j]
            miss = ri.missing
            if miss.size:
                cm = z[miss, j] - Epj[miss]
                z[miss, j] = cm + sd * rng.standard_normal(miss.size)
                E[miss, j] = z[miss, j] - mu[j]
            self._group_moves(z, E, mu, P, j, rng)
        A = self.ranked_cols
        if A.size:
            F[:, 1:1 + A.size] = z[:, A]
        for b, (S, _) in enumerate(self.blocks):
            miss = self.block_missing[b]
            if self._collapsed(b):
                # the block's move redraws every latent given its new regression (update_parameters);
                # here only the missing levels, jointly with their latents
                if not miss.size:
                    continue
                eta = F[miss, :self.n_design[b]] @ st.coef[b]
                if self.collapse_missing_levels:
                    self._collapsed_level_move(st, F, z, b, miss, eta, rng)
                    continue
                logp = self.level_log_probabilities(b, eta) + self.level_log_weights(st, F, z, b, miss)
                new = _gumbel_argmax(logp, rng)
                self.set_indicators(F, b, new, miss)
                z[np.ix_(miss, S)] = self._draw_block_latents(eta, new, rng)
                continue
            eta = F[:, :self.n_design[b]] @ st.coef[b]
            lv = self.block_level(st, b)
            if miss.size:
                lv = lv.copy()
                logp = self.level_log_probabilities(b, eta[miss]) + self.level_log_weights(st, F, z, b, miss)
                lv[miss] = _gumbel_argmax(logp, rng)
                self.set_indicators(F, b, lv[miss], miss)
            z[:, S] = self._draw_block_latents(eta, lv, rng)

    def later_level_log_likelihoods(self, st: CopulaState, F: np.ndarray, z: np.ndarray, b: int,
                                    rows: np.ndarray) -> np.ndarray:
        r"""(len(rows), L) :math:`\sum_{b' > b} \log \Pr(y_{ib'} \mid \eta_{ib'}(l))`: what each level l
        of block b makes of the later blocks' (completed) *levels*, their latents integrated out
        (:meth:`level_log_probabilities`; :meth:`level_log_weights` is the same with the latents kept)."""
        L = self.block_margins[b].n_levels
        s = self.ind_start[b]
        out = np.zeros((rows.size, L))
        for bb in range(b + 1, len(self.blocks)):
            coef = st.coef[bb]
            lv = self.block_level(st, bb, z)[rows]
            X = F[rows, :self.n_design[bb]].copy()
            X[:, s:s + L - 1] = 0.0
            eta0 = X @ coef  # block b at its reference level
            D = coef[s:s + L - 1]
            binary = self.block_margins[bb].n_levels == 2
            for l in range(L):
                eta = eta0 if l == 0 else eta0 + D[l - 1]
                if binary:
                    out[:, l] += self.level_log_probabilities(bb, eta)[np.arange(rows.size), lv]
                else:
                    # only each row's own level: the kernel computes a record's log-probability on its
                    # own, so these are the bits of level_log_probabilities' column lv, without the
                    # L - 1 other levels' quadratures (issue 28, cost per iteration)
                    out[:, l] += mnp_log_likelihood(eta, lv)
        return out

    def _collapsed_level_move(self, st: CopulaState, F: np.ndarray, z: np.ndarray, b: int, rows: np.ndarray,
                              eta: np.ndarray, rng: np.random.Generator) -> None:
        r"""The missing levels of block b jointly with the latents of block b and of every later block.

        For a record i with block b missing, draw from the joint conditional of
        :math:`(y_{ib}, z_{iS_b}, z_{iS_{b'}}: b' > b)` given the ranked latents, every
        other level (a later block's missing level at its current imputed value) and
        the coefficients:

        .. math::

            \Pr(y_{ib} = l) \propto \Pr(y_{ib} = l \mid \eta_{ib}) \prod_{b' > b}
            \Pr\{y_{ib'} \mid x_{ib'}(l)^\top \theta_{b'}\},

        then :math:`z_{iS_b}` and every later :math:`z_{iS_{b'}}` exactly from
        :math:`N(x^\top\theta, \Omega)` on their level's region
        (:meth:`_draw_block_latents`): a block Gibbs step, since given the ranked
        latents a probit block's latents enter only their own regression (later
        blocks use its levels). Why:
        with the later latents held (:meth:`level_log_weights`) a near-deterministic
        later column pins the imputed level: once drawn, the later block's latents
        sit deep in the region the level implies (Adult: relationship's latents
        6-7 sd from where another marital status puts them, coefficients +7), so
        the imputed level and the later block's coefficients move together by
        small steps. Integrated out, only the levels enter (the collapsing of
        van Dyk & Park 2008, here in a Gibbs block: nothing is trimmed).
        """
        S = self.blocks[b][0]
        later = [self.block_level(st, bb, z)[rows] for bb in range(b + 1, len(self.blocks))]
        logp = self.level_log_probabilities(b, eta) + self.later_level_log_likelihoods(st, F, z, b, rows)
        new = _gumbel_argmax(logp, rng)
        self.set_indicators(F, b, new, rows)
        z[np.ix_(rows, S)] = self._draw_block_latents(eta, new, rng)
        for k, bb in enumerate(range(b + 1, len(self.blocks))):
            S2 = self.blocks[bb][0]
            z[np.ix_(rows, S2)] = self._draw_block_latents(F[rows, :self.n_design[bb]] @ st.coef[bb], later[k], rng)

    def _collapsed(self, b: int) -> bool:
        """Whether block b has a partially collapsed move (which redraws its latents)."""
        return self.collapse_binary if self.blocks[b][0].size == 1 else self.collapse_nominal

    @staticmethod
    def _draw_block_latents(eta: np.ndarray, level: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A block's latents given its (complete) levels: N(eta, Omega) on the level's region."""
        if eta.shape[1] == 1:
            lo = np.where(level == 1, 0.0, -np.inf)
            hi = np.where(level == 1, np.inf, 0.0)
            return _truncated_normal_flat(np.ascontiguousarray(eta[:, 0]), np.sqrt(2.0), lo, hi, rng)[:, None]
        return mnp_draw_latents(eta, level, rng)

    def update_parameters(self, st: CopulaState, rng: np.random.Generator) -> None:
        r"""Draw :math:`\Sigma_{AA}` and the probit-block regressions given the latents.

        * :math:`\Sigma_{AA}`: proposal :math:`\mathcal{IW}(\nu_0 + n, I + z_A^\top z_A)`
          (its full conditional under the inverse-Wishart prior alone), accepted with
          probability :math:`\min\{1, \pi(B \mid \Sigma'_{AA}) / \pi(B \mid \Sigma_{AA})\}`:
          the raw coefficient of ranked latent j has prior sd :math:`\tau / d_j`,
          :math:`d_j = \Sigma_{jj}^{1/2}` (:meth:`prior_precision`).
        * block b: :math:`\theta_b = [c_b; B_b; D_b] \mid z \sim MN((X^\top X +
          \Lambda)^{-1} X^\top Y, (X^\top X + \Lambda)^{-1}, \Omega_b)` with :math:`X =
          [1, z_A, h_{<b}]`, :math:`Y = z_{S_b}`, :math:`\Lambda` the prior precisions
          (conjugate; known error covariance); then the partially collapsed move.
        """
        z = st.z
        A = self.ranked_cols
        if A.size:
            zA = z[:, A]
            scale = np.eye(A.size) + zA.T @ zA
            prop = _inverse_wishart(self.prior_df + self.n, scale, rng)
            if self.blocks:
                log_r = self._coef_log_prior(st, prop) - self._coef_log_prior(st, st.sigma_a)
                if np.log(rng.random()) < log_r:
                    st.sigma_a = prop
            else:
                st.sigma_a = prop
        if self.blocks:
            F = self.design(st)
        for b, ((S, _), L_om) in enumerate(zip(self.blocks, self.omega_chol)):
            X = F[:, :self.n_design[b]]
            XtX = X.T @ X + np.diag(self.prior_precision(st, b))
            R = np.linalg.cholesky(XtX)
            mean = np.linalg.solve(XtX, X.T @ z[:, S])
            noise = solve_triangular(R.T, rng.standard_normal((X.shape[1], S.size)), lower=False)
            st.coef[b] = mean + noise @ L_om.T
            if S.size == 1 and self.collapse_binary:
                self._collapsed_binary_move(st, b, X, rng)
            elif S.size > 1 and self.collapse_nominal:
                if self.nominal_move[b] == "hmc":
                    self._hmc_block_move(st, b, X, rng)
                else:
                    self._newton_block_move(st, b, X, rng)
        self.implied(st)

    def prior_precision(self, st: CopulaState, b: int, sigma_a: np.ndarray | None = None) -> np.ndarray:
        r"""Prior precisions :math:`\lambda_k` of the rows of block b's :math:`[c_b; B_b; D_b]`.

        Row k has prior :math:`N(0, \Omega_b / \lambda_k)`: :math:`\lambda = \tau_c^{-2}`
        for the intercept, :math:`d_k^2 / \tau^2` for the raw coefficient of a ranked
        latent with scale :math:`d_k = \Sigma_{kk}^{1/2}` (i.e. sd :math:`\tau` on the
        standardised latent; the rank likelihood leaves :math:`d_k` free) and
        :math:`\tau^{-2}` for an earlier block's level indicator.
        """
        sa = st.sigma_a if sigma_a is None else sigma_a
        a = self.ranked_cols.size
        lam = np.full(self.n_design[b], PRIOR_SD_SLOPE**-2)
        lam[0] = PRIOR_SD_INTERCEPT**-2
        if a:
            lam[1:1 + a] = np.diag(sa) / PRIOR_SD_SLOPE**2
        fixed = self.zero_coef.get(b)
        if fixed is not None:
            lam[1 + fixed] = ZERO_COEF_PRECISION
        return lam

    def _coef_log_prior(self, st: CopulaState, sigma_a: np.ndarray) -> float:
        """log prior density of every block's coefficients at the ranked scales of ``sigma_a`` (up to a constant)."""
        out = 0.0
        for b, (S, _) in enumerate(self.blocks):
            lam = self.prior_precision(st, b, sigma_a)
            coef = st.coef[b]
            q = np.einsum("kd,de,ke->k", coef, self.omega_inv[b], coef)
            out += 0.5 * S.size * float(np.sum(np.log(lam))) - 0.5 * float(lam @ q)
        return out

    def _collapsed_binary_move(self, st: CopulaState, b: int, X: np.ndarray, rng: np.random.Generator) -> None:
        r"""Partially collapsed move of a binary block: its regression, then its latent exactly.

        Block b is :math:`z_{ib} = \eta_i + e_i`, :math:`\eta_i = x_i^\top\theta`,
        :math:`e_i \sim N(0, \omega)` (:math:`\omega = 2`), :math:`y_i = 1\{z_{ib} > 0\}`
        (a missing y at its current imputed level). Later blocks use only the level,
        so :math:`z_{ib}` integrates out to the probit likelihood
        :math:`\ell_i(\eta_i) = \log \Phi(s_i \eta_i / \sqrt{\omega})`, :math:`s_i = \pm 1`
        for y = 1 / 0. :math:`\theta` moves by Metropolis-Hastings with the Newton
        proposal :math:`N(\theta + H^{-1}g, H^{-1})` (g, H gradient and minus the
        Hessian of the log posterior, both exact), then :math:`z_{ib} \sim N(\eta_i,
        \omega)` truncated to the side of 0 given by y: a partially collapsed Gibbs
        step (van Dyk & Park 2008), free of the latent-parameter coupling of data
        augmentation.
        """
        S, _ = self.blocks[b]
        j = S[0]
        z = st.z
        level = self.block_level(st, b)
        s = 2.0 * level - 1.0
        om = 2.0
        rt = 1.0 / np.sqrt(om)
        lam = self.prior_precision(st, b) / om  # prior N(0, om / lam) on each coefficient

        def terms(theta):
            x = s * (X @ theta) * rt
            lphi = log_ndtr(x)
            mills = np.exp(-0.5 * x * x - _LOG_SQRT_2PI - lphi)
            d1 = s * rt * mills
            d2 = rt * rt * mills * (x + mills)  # minus the second derivative
            g = X.T @ d1 - lam * theta
            H = (X * d2[:, None]).T @ X + np.diag(lam)
            return float(lphi.sum()) - 0.5 * float(lam @ (theta * theta)), g, H

        theta = st.coef[b][:, 0]
        try:
            l0, g0, H0 = terms(theta)
            C0 = np.linalg.cholesky(H0)
            m0 = theta + np.linalg.solve(H0, g0)
            prop = m0 + solve_triangular(C0.T, rng.standard_normal(m0.size), lower=False)
            with np.errstate(invalid="ignore", over="ignore"):
                l1, g1, H1 = terms(prop)
            if not (np.isfinite(l1) and np.all(np.isfinite(H1))):
                raise np.linalg.LinAlgError
            C1 = np.linalg.cholesky(H1)
            m1 = prop + np.linalg.solve(H1, g1)
        except np.linalg.LinAlgError:
            return
        lq_fwd = -0.5 * float(np.sum((C0.T @ (prop - m0)) ** 2)) + float(np.sum(np.log(np.diag(C0))))
        lq_rev = -0.5 * float(np.sum((C1.T @ (theta - m1)) ** 2)) + float(np.sum(np.log(np.diag(C1))))
        self.collapsed_counts[b, 1] += 1
        log_r = l1 - l0 + lq_rev - lq_fwd
        if np.isfinite(log_r) and np.log(rng.random()) < log_r:
            self.collapsed_counts[b, 0] += 1
            theta = prop
            st.coef[b][:, 0] = prop
        # the latent from its full conditional given the (new or kept) regression
        z[:, [j]] = self._draw_block_latents((X @ theta)[:, None], level, rng)

    def _block_score(self, X: np.ndarray, theta: np.ndarray, level: np.ndarray, lam: np.ndarray, om_inv: np.ndarray):
        r"""Log posterior (collapsed likelihood + prior), its gradient and its observed information.

        With :math:`\eta_i = \theta^\top x_i` the information of
        :math:`\mathrm{vec}(\theta)` (row-major, index (a, t)) is
        :math:`-\sum_i x_{ia} x_{ib} H_{i,ts}` plus the prior precision
        :math:`\lambda_a \Omega^{-1}`, with :math:`H_i` the exact Hessian of
        :func:`mnp_log_likelihood` (positive definite: the likelihood is
        log-concave). The outer product of the scores (BHHH) used before
        approximates it only near the maximum likelihood estimate; with the exact
        curvature the Newton proposal on NHANES' marital_status was accepted 0.64
        of the time instead of 0.46 (2 chains x 300 iterations), on the mixed
        Adult set's marital_status (n = 500) 0.06 instead of 0.002.
        """
        ll, g, h = mnp_log_likelihood(X @ theta, level, grad=True, hess=True)
        prior_g = -(lam[:, None] * (theta @ om_inv)).ravel()
        lp = float(ll.sum()) - 0.5 * float(np.einsum("k,kd,de,ke->", lam, theta, om_inv, theta))
        return lp, (X.T @ g).ravel() + prior_g, self._information(X, -h, lam, om_inv)

    @staticmethod
    def _information(X: np.ndarray, curv: np.ndarray, lam: np.ndarray, om_inv: np.ndarray) -> np.ndarray:
        r""":math:`\sum_i (x_i x_i^\top) \otimes C_i + \mathrm{diag}(\lambda) \otimes \Omega^{-1}`, rows of
        :math:`\mathrm{vec}(\theta)` in row-major order (index (a, t)); ``curv`` (n, d, d) holds the
        per-record :math:`C_i` (minus the Hessian of :math:`\log \Pr(y_i \mid \eta_i)` in :math:`\eta_i`)."""
        p, d = X.shape[1], curv.shape[1]
        info = np.empty((p, d, p, d))
        for t in range(d):
            for u in range(t, d):
                blk = (X * curv[:, t, u][:, None]).T @ X
                info[:, t, :, u] = blk
                info[:, u, :, t] = blk.T
        return info.reshape(p * d, p * d) + np.kron(np.diag(lam), om_inv)

    def _newton_block_move(self, st: CopulaState, b: int, X: np.ndarray, rng: np.random.Generator) -> None:
        r"""Newton-proposal Metropolis-Hastings move of a nominal block's regression, latents integrated out.

        Proposal: :math:`\theta' \sim N(m(\theta), K^{-1})`, one Newton step
        :math:`m(\theta) = \theta + K^{-1} s(\theta)` on the collapsed log posterior
        (s its score), accepted with probability :math:`\min\{1, \pi(\theta')
        q(\theta \mid \theta') / \pi(\theta) q(\theta' \mid \theta)\}`. In burn-in
        :math:`K = I(\theta)` is the observed information at the current point
        (:meth:`_block_score`), so the reverse proposal needs the information at
        :math:`\theta'` too; from the end of burn-in on, :math:`K = \sum_i x_i x_i^\top
        \otimes \bar C_i + \Lambda \otimes \Omega^{-1}` (:meth:`_information`) with the
        per-record curvatures :math:`\bar C_i` frozen at the last burn-in state:
        K then depends on the design X (fixed during the move: it is what the move
        conditions on, and it follows the rescaling of the ranked latents) but not on
        :math:`\theta`, so the move needs two scores and no Hessian (NHANES'
        marital_status: 36 ms a move, with the assembly of K and the latent redraw
        when accepted, instead of 52 ms; n = 5,265, 6 levels) and
        the log-determinants cancel. Accepted, the latents are redrawn exactly from
        :math:`p(z_S \mid \theta', y)` (partially collapsed Gibbs, van Dyk & Park
        2008); rejected, the pair :math:`(\theta, z_S)` is kept: the move is then a
        Metropolis-Hastings step on :math:`(\theta, z_S)` with proposal
        :math:`q(\theta' \mid \theta)\, p(z'_S \mid \theta', y)`, whose acceptance ratio
        is the collapsed one, so a redraw given the unchanged :math:`\theta` is not
        needed. Near-independent draws where the collapsed posterior is close to normal
        (NHANES' marital_status: accepted 0.6-0.8 of the time);
        :meth:`_hmc_block_move` takes over in burn-in where it is not.
        """
        S, level, theta, lam, om_inv = self._block_terms(st, b)
        shape = theta.shape
        curv = self.newton_curvature[b]
        K = None if curv is None else self._information(X, curv, lam, om_inv)

        def score(th):
            # (log posterior, score, K): K the observed information in burn-in, the frozen one after
            if K is None:
                return self._block_score(X, th.reshape(shape), level, lam, om_inv)
            return (*self._collapsed_log_posterior(X, th.reshape(shape), level, lam, om_inv), K)

        try:
            l0, s0, K0 = score(theta)
            C0 = np.linalg.cholesky(K0)
            m0 = theta.ravel() + np.linalg.solve(K0, s0)
            prop = m0 + solve_triangular(C0.T, rng.standard_normal(m0.size), lower=False)
            if not np.all(np.isfinite(prop)):
                return
            with np.errstate(invalid="ignore", over="ignore"):
                l1, s1, K1 = score(prop)
            if not (np.isfinite(l1) and np.all(np.isfinite(s1)) and np.all(np.isfinite(K1))):
                self._count(b, False)
                return
            C1 = C0 if K1 is K0 else np.linalg.cholesky(K1)
            m1 = prop + np.linalg.solve(K1, s1)
        except np.linalg.LinAlgError:
            return
        lq_fwd = -0.5 * float(np.sum((C0.T @ (prop - m0)) ** 2)) + float(np.sum(np.log(np.diag(C0))))
        lq_rev = -0.5 * float(np.sum((C1.T @ (theta.ravel() - m1)) ** 2)) + float(np.sum(np.log(np.diag(C1))))
        log_r = l1 - l0 + lq_rev - lq_fwd
        ok = bool(np.isfinite(log_r) and np.log(rng.random()) < log_r)
        self._count(b, ok)
        if ok:
            st.coef[b] = prop.reshape(shape)
            # the latents given the new regression
            st.z[:, S] = mnp_draw_latents(X @ st.coef[b], level, rng)
        ad = self._adapt
        if ad is not None and self.freeze_newton_curvature and ad["t"] == ad["burn"] - 1:
            # the last burn-in iteration: freeze the per-record curvatures of the Newton proposal
            self.newton_curvature[b] = -mnp_log_likelihood(X @ st.coef[b], level, grad=True, hess=True)[2]

    def _block_terms(self, st: CopulaState, b: int):
        """Block b's latent columns, completed levels, coefficients, prior precisions and inverse error covariance."""
        return self.blocks[b][0], self.block_level(st, b), st.coef[b], self.prior_precision(st, b), self.omega_inv[b]

    def _count(self, b: int, accepted: bool) -> None:
        self.collapsed_counts[b, 1] += 1
        self.collapsed_counts[b, 0] += int(accepted)
        ad = self._adapt
        if ad is not None and ad["window"][0] <= ad["t"] < ad["window"][1] and self.nominal_move[b] == "newton":
            ad["newton"][b, 1] += 1
            ad["newton"][b, 0] += int(accepted)

    # -- Hamiltonian moves of a nominal block's regression ------------------------------------
    def start_adaptation(self, burn: int) -> None:
        """Choose and tune the nominal blocks' moves over the next ``burn`` iterations (then frozen).

        Every nominal block starts with :meth:`_newton_block_move`; its acceptance over
        iterations [burn/4, burn/2) decides: below ``_NEWTON_MIN_ACCEPTANCE`` the block
        switches to :meth:`_hmc_block_move` at burn/2, whose whitening is estimated at
        burn/2, 5 burn/8 and 3 burn/4 and its step size by dual averaging after each.
        With a burn-in under 40 iterations there is nothing to decide from: Hamiltonian
        moves from the start (whitening at 0, burn/4, burn/2).
        """
        short = burn < 40
        self.nominal_move = ["hmc" if short else "newton"] * len(self.blocks)
        at = [0, burn // 4, burn // 2] if short else [burn // 2, 5 * burn // 8, 3 * burn // 4]
        self._adapt = {"t": 0, "burn": burn, "metric_at": sorted({t for t in at if t < burn}),
                       "window": (burn // 4, burn // 2) if not short else (0, 0),
                       "newton": np.zeros((len(self.blocks), 2), dtype=np.int64), "da": [None] * len(self.blocks)}
        self.hmc_eps[:] = 0.5
        self.hmc_chol = [None] * len(self.blocks)
        self.newton_curvature = [None] * len(self.blocks)

    def stop_adaptation(self) -> None:
        if self._adapt is not None:
            for b, da in enumerate(self._adapt["da"]):
                if da is not None:
                    self.hmc_eps[b] = float(np.clip(np.exp(da["log_eps_bar"]), 1e-3, 2.0))
        self._adapt = None

    def hmc_tuning(self) -> tuple[np.ndarray, list, list, list]:
        """The nominal blocks' frozen tuning: step sizes, whitening, move kinds, Newton curvatures."""
        return (self.hmc_eps.copy(), [None if c is None else c.copy() for c in self.hmc_chol], list(self.nominal_move),
                [None if c is None else c.copy() for c in self.newton_curvature])

    def set_hmc_tuning(self, tunings: Sequence[tuple[np.ndarray, list, list, list]]) -> None:
        """The tuning of several chains pooled for continuations: a block moves by Hamiltonian moves
        if any chain chose them, with the geometric mean step size and the mean information; by
        Newton moves otherwise, with the mean of the chains' frozen per-record curvatures (a
        positive definite average of positive definite matrices)."""
        eps, chol, curv = np.full(len(self.blocks), 0.5), [], []
        for b in range(len(self.blocks)):
            # only the chains whose block moved by Hamiltonian moves tuned it
            tuned = [t for t in tunings if t[2][b] == "hmc" and t[1][b] is not None]
            if tuned:
                eps[b] = float(np.exp(np.mean([np.log(t[0][b]) for t in tuned])))
            cs = [t[1][b] for t in tuned]
            chol.append(np.linalg.cholesky(np.mean([c @ c.T for c in cs], axis=0)) if cs else None)
            cv = [t[3][b] for t in tunings if t[3][b] is not None]
            curv.append(np.mean(cv, axis=0) if cv else None)
        self.hmc_eps = eps
        self.hmc_chol = chol
        self.newton_curvature = curv
        self.nominal_move = ["hmc" if any(t[2][b] == "hmc" for t in tunings) and chol[b] is not None else "newton"
                             for b in range(len(self.blocks))]

    def _collapsed_log_posterior(self, X, theta, level, lam, om_inv, grad: bool = True):
        r"""Block log posterior with its latents integrated out, and its gradient in :math:`\theta`."""
        if not grad:
            ll = mnp_log_likelihood(X @ theta, level)
            return float(ll.sum()) - 0.5 * float(np.einsum("k,kd,de,ke->", lam, theta, om_inv, theta)), None
        ll, g = mnp_log_likelihood(X @ theta, level, grad=True)
        lp = float(ll.sum()) - 0.5 * float(np.einsum("k,kd,de,ke->", lam, theta, om_inv, theta))
        return lp, (X.T @ g - lam[:, None] * (theta @ om_inv)).ravel()

    def _hmc_block_move(self, st: CopulaState, b: int, X: np.ndarray, rng: np.random.Generator) -> None:
        r"""Hamiltonian Monte Carlo move of a nominal block's regression with its latents integrated out.

        Target: the collapsed posterior :math:`\log \pi(\theta) = \sum_i \log
        \Pr(y_i \mid \eta_i(\theta)) + \log \pi_0(\theta)` (:func:`mnp_log_likelihood`,
        exact gradient; a missing y at its current imputed level), given the ranked
        latents and the earlier blocks' levels. Leapfrog (Neal 2011) in whitened
        coordinates :math:`\phi = L^\top\theta`, :math:`L L^\top` the posterior
        information at a burn-in state; step size tuned in burn-in by dual
        averaging to acceptance 0.75 (Hoffman & Gelman 2014, Alg. 5), then fixed,
        with a trajectory of length about 1.5 and the step jittered by +-10 %.
        Accepted, the latents are redrawn exactly from :math:`p(z_S \mid \theta, y)`
        (:func:`mnp_draw_latents`): a partially collapsed Gibbs step (van Dyk & Park
        2008); rejected, they are kept (see :meth:`_newton_block_move`). Why not the
        Newton-proposal Metropolis-Hastings step of the binary blocks: when a level is (almost) implied by an earlier column (Adult's
        relationship "Spouse" and marital_status "Married") the collapsed posterior is
        strongly skewed (importance ESS of its Laplace approximation 1.3 % of draws)
        and any Gaussian proposal is almost never accepted, while the gradient moves
        along it.
        """
        S, level, theta0, lam, om_inv = self._block_terms(st, b)
        shape = theta0.shape
        ad = self._adapt
        if ad is not None and (ad["t"] in ad["metric_at"] or self.hmc_chol[b] is None or ad["da"][b] is None):
            try:
                info = self._block_score(X, theta0, level, lam, om_inv)[2]
                self.hmc_chol[b] = np.linalg.cholesky(info)
            except np.linalg.LinAlgError:
                self.hmc_chol[b] = np.diag(np.sqrt(np.repeat(lam, S.size)))
            ad["da"][b] = {"mu": np.log(10.0 * self.hmc_eps[b]), "hbar": 0.0, "log_eps_bar": 0.0, "n": 0}
        Lc = self.hmc_chol[b]
        if Lc is None:
            return
        eps = self.hmc_eps[b] * rng.uniform(0.9, 1.1)
        n_leap = int(min(_HMC_MAX_LEAPFROG, max(1, np.ceil(_HMC_LENGTH / eps))))

        def grad_phi(th):
            lp, g = self._collapsed_log_posterior(X, th.reshape(shape), level, lam, om_inv)
            return lp, _tri_solve(Lc, g, lower=True)

        th = theta0.ravel().copy()
        lp0, gphi = grad_phi(th)
        p = rng.standard_normal(th.size)
        h0 = -lp0 + 0.5 * float(p @ p)
        phi_step = lambda v: _tri_solve(Lc.T, v, lower=False)  # noqa: E731  (d theta = L^-T d phi)
        lp1 = -np.inf
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            p = p + 0.5 * eps * gphi
            for k in range(n_leap):
                th = th + eps * phi_step(p)
                lp1, gphi = grad_phi(th)
                if not (np.isfinite(lp1) and np.all(np.isfinite(gphi))):
                    lp1 = -np.inf
                    break
                if k < n_leap - 1:
                    p = p + eps * gphi
            p = p + 0.5 * eps * gphi
            h1 = -lp1 + 0.5 * float(p @ p)
        log_r = h0 - h1 if np.isfinite(lp1) else -np.inf
        acc_prob = float(np.exp(min(0.0, log_r))) if np.isfinite(log_r) else 0.0
        ok = bool(np.log(rng.random()) < log_r)
        self._count(b, ok)
        if ok:
            st.coef[b] = th.reshape(shape)
            # the latents given the new regression (rejected: kept, as in _newton_block_move)
            st.z[:, S] = mnp_draw_latents(X @ st.coef[b], level, rng)
        if ad is not None:
            # dual averaging of the step size (Hoffman & Gelman 2014, Alg. 5: gamma 0.05, t0 10, kappa 0.75)
            da = ad["da"][b]
            da["n"] += 1
            m = da["n"]
            da["hbar"] = (1.0 - 1.0 / (m + 10.0)) * da["hbar"] + (_HMC_TARGET - acc_prob) / (m + 10.0)
            log_eps = da["mu"] - np.sqrt(m) / 0.05 * da["hbar"]
            w = m ** -0.75
            da["log_eps_bar"] = w * log_eps + (1.0 - w) * da["log_eps_bar"]
            self.hmc_eps[b] = float(np.clip(np.exp(log_eps), 1e-3, 2.0))

    def end_iteration(self) -> None:
        """Advance the burn-in clock of the adaptation; freeze the tuning when burn-in ends."""
        ad = self._adapt
        if ad is not None:
            ad["t"] += 1
            if ad["t"] == ad["window"][1]:
                for b, (acc, prop) in enumerate(ad["newton"]):
                    if self.blocks[b][0].size > 1 and prop >= 10 and acc < _NEWTON_MIN_ACCEPTANCE * prop:
                        self.nominal_move[b] = "hmc"
            if ad["t"] >= ad["burn"]:
                self.stop_adaptation()

    def _group_moves(self, z, E, mu, P, j, rng) -> None:
        r"""Shift and rescale a whole ranked latent column (generalised Gibbs; Liu & Sabatti 2000).

        Single-site updates move a ranked column only within the gaps of its
        neighbours, so its location and spread relative to the other columns
        (which carry the margin under MAR) drift slowly. Both maps preserve
        D(y). With :math:`m_i, s^2` the conditional mean / variance of
        :math:`z_{ij}` given the other columns, the translation
        :math:`z_j \to z_j + a` has :math:`a \sim N(\overline{m - z_j}, s^2/n)`,
        and the scaling :math:`z_j \to b z_j` has density :math:`\propto
        b^{n-1} \exp\{-\sum_i (b z_{ij} - m_i)^2 / 2s^2\}` (Jacobian
        :math:`b^n` times the Haar measure db/b), drawn by an independence
        Metropolis step from its Laplace approximation.
        """
        n = self.n
        pjj = P[j, j]
        s2 = 1.0 / pjj
        cm = mu[j] - (E @ P[:, j] - E[:, j] * pjj) / pjj
        a = np.mean(cm - z[:, j]) + np.sqrt(s2 / n) * rng.standard_normal()
        z[:, j] += a
        zj = z[:, j]
        Szz = float(zj @ zj)
        Szm = float(zj @ cm)
        if Szz > 0:
            b0 = (Szm + np.sqrt(Szm * Szm + 4.0 * Szz * (n - 1) * s2)) / (2.0 * Szz)
            prec = (n - 1) / b0**2 + Szz / s2
            sd_b = 1.0 / np.sqrt(prec)
            b1 = b0 + sd_b * rng.standard_normal()
            if b1 > 0:
                logf = lambda b: (n - 1) * np.log(b) - (b * b * Szz - 2.0 * b * Szm) / (2.0 * s2)  # noqa: E731
                logq = lambda b: -0.5 * ((b - b0) / sd_b) ** 2  # noqa: E731
                # current value is b = 1
                if np.log(rng.random()) < (logf(b1) - logq(b1)) - (logf(1.0) - logq(1.0)):
                    z[:, j] = b1 * zj
        if self.knot_moves:
            sd_j = float(np.sqrt(np.linalg.inv(P)[j, j]))
            for side in (1.0, -1.0):
                self._knot_move(z, cm, s2, j, side, sd_j, rng)
        E[:, j] = z[:, j] - mu[j]

    def _knot_move(self, z, cm, s2, j, side, sd_j, rng) -> None:
        r"""Rescale one side of a ranked latent column about a random knot (generalised Gibbs).

        The shift and the scaling of :meth:`_group_moves` move a column's location and
        spread; the spacing of its levels (the implicit thresholds of a heavily tied
        column) then moves only by the gaps between neighbouring levels' extremes, a
        random walk with steps of order 1/n (the slow threshold moves of data
        augmentation for ordinal probits; Cowles 1996). The map :math:`\phi_u(z) = k +
        u (z - k)` for :math:`z > k` (``side`` 1; :math:`z < k` for -1), identity on
        the other side, is increasing for every :math:`u > 0`, so it keeps D(y), and
        :math:`\{\phi_u\}` is a group (:math:`\phi_u \circ \phi_v = \phi_{uv}`) that
        leaves the N records beyond k beyond k. With Jacobian :math:`u^N` and Haar
        measure du/u, u is drawn from :math:`\propto u^{N-1} \exp\{-\sum_{i} (k + u
        d_i - m_i)^2 / 2s^2\}`, :math:`d_i = z_{ij} - k` over the records beyond k
        (Liu & Sabatti 2000), by an independence Metropolis step from its Laplace
        approximation as in :meth:`_group_moves`. The knot :math:`k \sim N(0,
        \Sigma_{jj})` (``sd_j``: the column's sd in the parameters) is drawn from a
        law that does not depend on :math:`z_j`, so the move is a mixture of exact moves.
        """
        zj = z[:, j]
        k = sd_j * float(rng.standard_normal())
        idx = np.flatnonzero(side * (zj - k) > 0)
        N = idx.size
        if N < 2:
            return
        d = zj[idx] - k
        r = cm[idx] - k
        Szz = float(d @ d)
        Szm = float(d @ r)
        b0 = (Szm + np.sqrt(Szm * Szm + 4.0 * Szz * (N - 1) * s2)) / (2.0 * Szz)
        prec = (N - 1) / b0**2 + Szz / s2
        sd_b = 1.0 / np.sqrt(prec)
        b1 = b0 + sd_b * rng.standard_normal()
        if b1 <= 0:
            return
        logf = lambda b: (N - 1) * np.log(b) - (b * b * Szz - 2.0 * b * Szm) / (2.0 * s2)  # noqa: E731
        logq = lambda b: -0.5 * ((b - b0) / sd_b) ** 2  # noqa: E731
        if np.log(rng.random()) < (logf(b1) - logq(b1)) - (logf(1.0) - logq(1.0)):
            z[idx, j] = k + b1 * d

    # -- ranked columns: partially collapsed moves -------------------------------------------
    def collapsed_ranked_moves(self, st: CopulaState, rng: np.random.Generator) -> None:
        """One :meth:`_collapsed_ranked_move` per ranked column (when there are at least two)."""
        if self.ranked_cols.size < 2:
            return
        for a in range(self.ranked_cols.size):
            self._collapsed_ranked_move(st, a, rng)

    def _ranked_log_target(self, st: CopulaState, E: np.ndarray, j: int, T: np.ndarray, lo: np.ndarray,
                           hi: np.ndarray, sigma_a: np.ndarray, coef: list) -> float:
        r"""log posterior of the parameters with the latents :math:`z_{Tj}` integrated out (up to a constant).

        .. math::

            \log\pi(\Sigma_{AA}) + \log\pi(\theta \mid \Sigma_{AA})
            + \sum_{i \notin T} \log N(z_i; \mu_i, \Sigma)
            + \sum_{i \in T} \big[\log N(z_{i,-j}; \mu_{i,-j}, \Sigma_{-j,-j})
            + \log\{\Phi((h_i - m_i)/s) - \Phi((l_i - m_i)/s)\}\big],

        :math:`\Sigma` the covariance :meth:`implied` by ``sigma_a`` and ``coef``,
        :math:`m_i, s^2` the conditional mean and variance of :math:`z_{ij}` given
        :math:`z_{i,-j}`, :math:`(l_i, h_i)` the interval the rank likelihood leaves
        :math:`z_{ij}` given the records outside T; :math:`\log N(z_{i,-j})` is
        :math:`\log N(z_i) - \log N(z_{ij}; m_i, s^2)` (whatever the value of
        :math:`z_{ij}`). The inverse-Wishart prior :math:`\mathcal{IW}(\nu_0, I)`:
        :math:`-\tfrac{\nu_0 + q_A + 1}{2}\log|\Sigma_{AA}| - \tfrac12
        \operatorname{tr}\Sigma_{AA}^{-1}`; the coefficients' prior
        :meth:`_coef_log_prior`. ``E`` holds the latents minus their record means
        (:meth:`offsets`, which the move leaves unchanged).
        """
        tmp = CopulaState(st.z, st.mu, st.sigma, sigma_a, coef)
        self.implied(tmp)
        try:
            C = np.linalg.cholesky(tmp.sigma)
            Ca = np.linalg.cholesky(sigma_a)
        except np.linalg.LinAlgError:
            return -np.inf
        W = solve_triangular(C, E.T, lower=True)
        n = E.shape[0]
        ll = -float(np.sum(np.log(np.diag(C)))) * n - 0.5 * float(np.sum(W * W))
        Pj = solve_triangular(C.T, solve_triangular(C, np.eye(self.q)[:, j], lower=True), lower=False)
        pjj = Pj[j]
        s = 1.0 / np.sqrt(pjj)
        if T.size:
            zt = st.z[T, j]
            m = zt - (E[T] @ Pj) / pjj
            ll -= float(np.sum(-np.log(s) - 0.5 * ((zt - m) / s) ** 2))
            ll += float(np.sum(log_interval_probability((lo - m) / s, (hi - m) / s)))
        qa = sigma_a.shape[0]
        Ci = solve_triangular(Ca, np.eye(qa), lower=True)
        lp = -(self.prior_df + qa + 1) * float(np.sum(np.log(np.diag(Ca)))) - 0.5 * float(np.sum(Ci * Ci))
        return ll + lp + self._coef_log_prior(tmp, sigma_a)

    def _collapsed_ranked_move(self, st: CopulaState, a: int, rng: np.random.Generator) -> None:
        r"""Partially collapsed move of ranked column ``a``'s associations, then its latents exactly.

        Data augmentation alone (latents given the parameters, parameters given
        the latents) mixes slowly when a ranked column is heavily tied (few levels,
        a zero-inflated or top-coded value) or much of it is missing: its latents
        carry much more information about its correlations than the ranks do. As
        for the probit blocks (van Dyk & Park 2008), this move integrates out the
        latents :math:`z_{Tj}` of one half of the column's records: the records at
        the levels of one parity (drawn at random) and its missing records. Given
        the other records those latents are independent normals restricted to the
        interval between the neighbouring levels' extremes (:class:`_RankIndex`),
        so the marginal is :meth:`_ranked_log_target`. The parameters moved: the
        regression :math:`\beta = \Sigma_{rr}^{-1}\Sigma_{ra}` of the column on the
        other ranked latents (its residual variance :math:`\sigma^2` and
        :math:`\Sigma_{rr}` held, so :math:`\Sigma_{AA}` stays positive definite;
        the Jacobian of :math:`(\Sigma_{ra}, \Sigma_{aa}) \mapsto (\beta, \sigma^2)`
        is :math:`|\Sigma_{rr}|`, constant) and every probit block's coefficients on
        the column (but those held at zero, :meth:`fix_zero_coefficients`). A random-walk Metropolis step with a normal proposal whose
        scale depends only on :math:`\sigma^2`, n and the other ranked latents
        (none of which the move changes, nor the integrated latents): sd
        :math:`\kappa\sigma (Z_r^\top Z_r + I)^{-1/2}` for :math:`\beta` and
        :math:`\kappa (\Omega_{b,dd} / (n\sigma^2))^{1/2}` for a block coefficient
        (the conditional sds given complete latents), :math:`\kappa = 2.38 /
        \sqrt{k}` for k moved parameters. Then :math:`z_{Tj}` is drawn from its
        conditional (truncated normal) given the new parameters.
        """
        A = self.ranked_cols
        j = int(A[a])
        mg = next(m for m in self.margins if m.ranked and m.cols[0] == j)
        ri = self.rank[mg.name]
        parity = int(rng.integers(2))
        block, lev = ri.blocks[parity], ri.block_levels[parity]
        T = np.concatenate([block, ri.missing])
        zmax, zmin = ri.extremes(st.z[:, j])
        L = mg.n_levels
        lo = np.concatenate([np.where(lev > 0, zmax[np.maximum(lev - 1, 0)], -np.inf), np.full(ri.missing.size, -np.inf)])
        hi = np.concatenate([np.where(lev < L - 1, zmin[np.minimum(lev + 1, L - 1)], np.inf),
                             np.full(ri.missing.size, np.inf)])
        F = self.design(st)
        E = st.z - self.offsets(st, F)
        r = np.delete(np.arange(A.size), a)
        Sa = st.sigma_a
        Srr = Sa[np.ix_(r, r)]
        beta = np.linalg.solve(Srr, Sa[r, a])
        s2 = float(Sa[a, a] - Sa[a, r] @ beta)
        Zr = st.z[:, A[r]]
        Lb = np.linalg.cholesky(np.linalg.inv(Zr.T @ Zr + np.eye(r.size)) * s2)
        # a coefficient held at zero (fix_zero_coefficients) is not moved
        free = [b for b in range(len(self.blocks)) if a not in self.zero_coef.get(b, ())]
        k = r.size + sum(self.blocks[b][0].size for b in free)
        kappa = 2.38 / np.sqrt(k)
        beta_new = beta + kappa * (Lb @ rng.standard_normal(r.size))
        Sa_new = Sa.copy()
        Sra = Srr @ beta_new
        Sa_new[r, a] = Sra
        Sa_new[a, r] = Sra
        Sa_new[a, a] = s2 + float(beta_new @ Sra)
        coef_new = [c.copy() for c in st.coef]
        for b in free:
            sd = kappa * np.sqrt(np.diag(self.omegas[b]) / (self.n * s2))
            coef_new[b][1 + a] += sd * rng.standard_normal(sd.size)
        log_r = (self._ranked_log_target(st, E, j, T, lo, hi, Sa_new, coef_new)
                 - self._ranked_log_target(st, E, j, T, lo, hi, Sa, st.coef))
        self.ranked_counts[a, 1] += 1
        if np.log(rng.random()) < log_r:
            self.ranked_counts[a, 0] += 1
            st.sigma_a = Sa_new
            st.coef = coef_new
            self.implied(st)
        # the integrated latents from their conditional given the (new or kept) parameters
        P = np.linalg.inv(st.sigma)
        pjj = P[j, j]
        m = st.z[T, j] - (E[T] @ P[:, j]) / pjj
        st.z[T, j] = truncated_normal(m, 1.0 / np.sqrt(pjj), lo, hi, rng)

    # -- from latents to levels -------------------------------------------------------
    def cuts(self, st: CopulaState) -> dict[int, np.ndarray]:
        return {mg.name: self.rank[mg.name].cuts(st.z[:, mg.cols[0]]) for mg in self.margins if mg.ranked}

    def completed_levels(self, st: CopulaState) -> list[np.ndarray]:
        """Per margin, levels with missing entries filled from the latents."""
        out = []
        cuts = self.cuts(st)
        for mg in self.margins:
            lv = mg.level.copy()
            miss = lv < 0
            if miss.any():
                if mg.ranked:
                    lv[miss] = np.searchsorted(cuts[mg.name], st.z[miss, mg.cols[0]])
                else:
                    lv[miss] = _nominal_level(st.z[np.ix_(miss, mg.cols)])
            out.append(lv)
        return out


def levels_to_frame(margins: list[_Margin], levels: list[np.ndarray], schema: Schema, like: pd.DataFrame) -> pd.DataFrame:
    """Data values (original dtypes) from per-margin level indices."""
    out = {}
    for mg, lv in zip(margins, levels):
        if mg.kind == "continuous":
            vals = mg.support[lv].astype(float)
            if pd.api.types.is_integer_dtype(like[mg.name].dtype):
                out[mg.name] = pd.Series(np.rint(vals).astype(like[mg.name].dtype), index=like.index)
            else:
                out[mg.name] = pd.Series(vals, index=like.index).astype(like[mg.name].dtype)
        else:
            codes = mg.support[lv]
            s = schema.from_codes(mg.name, codes, like[mg.name])
            s.index = like.index
            out[mg.name] = s
    return pd.DataFrame(out, index=like.index)[[mg.name for mg in margins]]


# --------------------------------------------------------------------------- public model
def _imputed_summary_spec(margins: list[_Margin]) -> list[tuple[str, int, np.ndarray]]:
    """(column, latent column, missing rows) for every latent column of a margin with missing values."""
    out = []
    for mg in margins:
        miss = np.flatnonzero(mg.level < 0)
        if miss.size:
            out += [(mg.name, j, miss) for j in mg.cols]
    return out


def _coef_monitor_spec(sampler: "CopulaGibbs") -> list[tuple[tuple[str, ...], int, int, int]]:
    r"""(columns it links, block, row, column) of every monitored block coefficient: each block's
    intercepts and its coefficients on earlier blocks' level indicators (the associations among
    categorical columns, which the latent correlations do not carry); coefficients held at zero
    are left out.

    Why raw coefficients (issue 28): Vehtari et al. (2021) ask for the convergence of the
    quantities of interest, and a weakly identified coefficient (a level all but implied by an
    earlier column pushes it towards its prior's tail) could fail the check while the data's
    implied distribution had converged. Measured, that was not what failed: on the Adult file
    (benchmarks/results/copula_nominal_mixing.json, main's sampler) the slowest coefficient,
    relationship[Own-child] ~ 1 (an intercept, not a separation direction), had bulk ESS 44, and
    the level shares the copies depend on (the mean over records of :math:`\Pr(y_{ib} = l \mid
    \eta_{ib})`, marginal and by every level of each earlier block, recorded by the benchmark) were
    slow with it (relationship = Own-child among the
    married: bulk ESS 75); the sampler was fixed instead (:meth:`CopulaGibbs._collapsed_level_move`).
    A coefficient in a separation direction (relationship[Own-child] ~ marital_status[Widowed]:
    posterior sd 2.2 against a prior sd of 3.5) still sets the copies' rare cells, so it stays
    monitored. The implied shares were left out at first (a likelihood evaluation per level and
    record at every iteration; they mostly mixed faster than the slowest monitored quantity: bulk
    ESS 75 against 44 on Adult before the fix, min(bulk, tail) 214 against 114 on anes96), but not
    always: on Adult after the fix the share of Widowed among men had tail ESS 132 while the
    slowest monitored quantity had 225. So they are monitored too (:func:`_share_monitor_spec`,
    computed for the kept draws by one quadrature for all levels, :func:`_level_probabilities`:
    +9.5 % CPU per kept iteration on Adult)."""
    out = []
    for b, (mg, (S, _)) in enumerate(zip(sampler.block_margins, sampler.blocks)):
        fixed = set((sampler.zero_coef.get(b, np.empty(0, dtype=np.int64)) + 1).tolist())
        out += [((mg.name,), b, 0, t) for t in range(S.size)]
        for bb in range(b):
            other = sampler.block_margins[bb]
            s = sampler.ind_start[bb]
            out += [((mg.name, other.name), b, row, t) for row in range(s, s + other.n_levels - 1)
                    if row not in fixed for t in range(S.size)]
    return out


def _coef_label(sampler: "CopulaGibbs", b: int, row: int, t: int) -> str:
    """'<column>[<latent>] ~ 1' for an intercept, '<column>[<latent>] ~ <earlier column>[<level>]' for a
    level indicator's coefficient (category labels, never data values)."""
    mg = sampler.block_margins[b]
    lat = mg.categories[mg.support[t + 1]]
    if row == 0:
        return f"{mg.name}[{lat}] ~ 1"
    for bb in range(b):
        s = sampler.ind_start[bb]
        other = sampler.block_margins[bb]
        if s <= row < s + other.n_levels - 1:
            return f"{mg.name}[{lat}] ~ {other.name}[{other.categories[other.support[row - s + 1]]}]"
    raise InputError(f"row {row} of block {mg.name} is not an intercept or a level indicator")


def _share_monitor_spec(sampler: "CopulaGibbs") -> list[tuple[tuple[str, ...], str, str]]:
    r"""(columns it involves, table row, label) of every monitored implied level share, in the order
    :func:`_implied_shares` computes them.

    The share of level :math:`l` of block :math:`b` implied by a state is the mean over records
    of :math:`\Pr(y_{ib} = l \mid \eta_{ib})`, :math:`\eta_{ib} = x_{ib}^\top\theta_b` (the
    record's probit mean given its ranked latents and earlier blocks' completed levels): marginal,
    ``"share b=l"``, and among the records at each level :math:`k` of each earlier block
    :math:`b'`, ``"share b=l | b'=k"`` (the cells the copies' cross-tabulations are drawn from).
    A binary block has one share per condition (level 1; level 0's is its complement), a nominal
    block one per level. Labels name columns and category labels, never data values. Why they are
    monitored: see :func:`_coef_monitor_spec` (Adult: the share of Widowed among men, tail ESS 132
    while every monitored coefficient and correlation had >= 225; issue 28 item 2)."""
    out = []
    for b, mg in enumerate(sampler.block_margins):
        labs = [str(mg.categories[s]) for s in mg.support]
        levels = [1] if mg.n_levels == 2 else range(mg.n_levels)
        out += [((mg.name,), f"share {mg.name}", f"share {mg.name}={labs[l]}") for l in levels]
        for bb in range(b):
            o = sampler.block_margins[bb]
            for k in range(o.n_levels):
                out += [((mg.name, o.name), f"share {mg.name} | {o.name}",
                         f"share {mg.name}={labs[l]} | {o.name}={o.categories[o.support[k]]}") for l in levels]
    return out


_SHARE_NODES, _SHARE_WEIGHTS = np.polynomial.hermite_e.hermegauss(8)
# w_k / phi(x_k) (up to the constant sqrt(2 pi), which cancels in the normalisation): the rule
# integrates f(c + x) dx as sum_k w_k f(c + x_k) / phi(x_k)
_SHARE_W = _SHARE_WEIGHTS * np.exp(0.5 * _SHARE_NODES ** 2)


@numba.njit(cache=True, fastmath={"contract"}, error_model="numpy")
def _phi_pdf_batch(x, p, f, count):  # pragma: no cover - compiled
    r""":math:`\Phi(x)` and :math:`\phi(x)` of ``x[:count]`` into ``p`` and ``f`` (:func:`_phi_mills`'
    terms; both 0 at and below x = -37, where they are below 1e-298), in a loop LLVM vectorises."""
    for i in range(count):
        xi = x[i]
        pp, g = _phi_gauss(xi)
        ok = xi > -37.0
        p[i] = pp if ok else 0.0
        f[i] = g * 0.3989422804014327 if ok else 0.0


@numba.njit(cache=True)
def _level_probability_kernel(eta, nodes, weights):  # pragma: no cover - compiled
    """Compiled body of :func:`_level_probabilities` (one pass per record; each level's normal CDF
    and density at every node from one exponential and the tabulated erfcx, a record's K L of them in
    one vectorised loop, :func:`_phi_pdf_batch`, instead of an ``erfc`` and an ``exp`` each: the same
    values within a few ulps for |x| < 5, issue 28)."""
    n, d = eta.shape
    L = d + 1
    K = nodes.size
    out = np.zeros((n, L))
    full = np.zeros(L)
    cdf = np.zeros(L)
    pdf = np.zeros(L)
    xb = np.zeros(K * L)
    cb = np.zeros(K * L)
    fb = np.zeros(K * L)
    pre = np.zeros(L + 1)
    suf = np.zeros(L + 1)
    for i in range(n):
        c = 0.0
        full[0] = 0.0
        for j in range(d):
            full[j + 1] = eta[i, j]
            c = max(c, eta[i, j])
        tot = 0.0
        for k in range(K):
            for j in range(L):
                xb[k * L + j] = c + nodes[k] - full[j]
        _phi_pdf_batch(xb, cb, fb, K * L)
        for k in range(K):
            wk = weights[k]
            for j in range(L):
                cdf[j] = cb[k * L + j]
                pdf[j] = fb[k * L + j]
            # products of the other levels' CDFs without dividing (a CDF may underflow to 0)
            pre[0] = 1.0
            for j in range(L):
                pre[j + 1] = pre[j] * cdf[j]
            suf[L] = 1.0
            for j in range(L - 1, -1, -1):
                suf[j] = suf[j + 1] * cdf[j]
            for j in range(L):
                v = wk * pdf[j] * pre[j] * suf[j + 1]
                out[i, j] += v
                tot += v
        if tot > 0.0:
            for j in range(L):
                out[i, j] /= tot
    return out


def _level_probabilities(eta: np.ndarray) -> np.ndarray:
    r"""(n, L) :math:`\Pr(y_i = l \mid \eta_i)` of a multinomial probit with iid utilities, every
    level at once, for the implied shares (:func:`_implied_shares`).

    With :math:`F(t) = \prod_j \Phi(t - \eta_j)` (the CDF of the largest utility, :math:`\eta_0 = 0`),

    .. math::

        \Pr(y = l \mid \eta) = \int \phi(t - \eta_l) \prod_{j \ne l} \Phi(t - \eta_j)\, dt,

    the formula of :func:`mnp_log_likelihood` with :math:`t = s + \eta_l`. One 8-point
    Gauss-Hermite rule centred at :math:`\max_j \eta_j` (where the largest utility's density
    sits) serves all L levels, so the CDFs are evaluated once per node (L evaluations per node
    instead of :math:`L(L - 1)` plus the adaptive rule's Newton steps per level); the L values
    are normalised to sum to one. Against the adaptive rule (:func:`mnp_log_likelihood`;
    2,000 records, 3-8 levels, :math:`\eta` of sd 0.5-8) the largest error of a record's
    probability was 1.6e-3 and of a share (their mean) 2.9e-5 (12 nodes: 2.3e-4 and 2.2e-6
    at 1.5 x the cost): what is monitored is a function of the state within 3e-5 of the
    share, at about a tenth of the adaptive rule's cost (L calls).
    """
    eta = np.ascontiguousarray(eta, dtype=float)
    return _level_probability_kernel(eta, _SHARE_NODES, _SHARE_W)


def _implied_shares(sampler: "CopulaGibbs", st: CopulaState) -> np.ndarray:
    r"""The implied level shares of ``st`` (:func:`_share_monitor_spec`'s order).

    .. math::

        s_{bl} = \frac{1}{n}\sum_i \Pr(y_{ib} = l \mid \eta_{ib}), \qquad
        s_{bl \mid b'k} = \frac{\sum_i 1\{y_{ib'} = k\} \Pr(y_{ib} = l \mid \eta_{ib})}{\sum_i 1\{y_{ib'} = k\}}

    with :math:`y_{ib'}` the completed level (observed, else the level of the latents).
    One design and one probability matrix per block (binary: :math:`\Phi(\eta / \sqrt 2)`, as
    :meth:`CopulaGibbs.level_log_probabilities`; nominal: :func:`_level_probabilities`), the
    conditional sums as one product with the earlier blocks' one-hot levels. Computed for the kept
    draws only (and the pilot's); measured CPU per kept iteration (risk-dami frames of
    ``benchmarks/copula_files.py``): +8.0 % on anes96 (22 shares), +9.3 % on randhie (13), +9.5 % on
    adult (99); with each level's adaptive-rule likelihood instead, +37 % on adult. A level no record holds (possible only for a level never observed, which
    is not modelled) would give 0 / 0: its share is set to 0 instead.
    """
    nb = len(sampler.blocks)
    if not nb:
        return np.empty(0)
    # each block's completed levels once (the design and the one-hot conditions both use them)
    levels = [sampler.block_level(st, b) for b in range(nb)]
    F = sampler.design(st, levels=levels)
    onehot = []
    for b in range(nb):
        H = np.zeros((sampler.n, sampler.block_margins[b].n_levels))
        H[np.arange(sampler.n), levels[b]] = 1.0
        onehot.append(H)
    out = []
    for b in range(nb):
        eta = F[:, :sampler.n_design[b]] @ st.coef[b]
        if eta.shape[1] == 1:  # binary: closed form, level 1's probability
            p = ndtr(eta / np.sqrt(2.0))
        else:
            p = _level_probabilities(eta)
        out.append(p.mean(axis=0))
        if b:
            H = np.hstack(onehot[:b])
            cnt = H.sum(axis=0)
            out.append(((H.T @ p) / np.maximum(cnt, 1.0)[:, None]).ravel())
    return np.concatenate(out)


def _monitored(st: CopulaState, iu, spec, cspec, sampler: "CopulaGibbs | None" = None,
               shares: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The quantities diagnosed: correlations, imputed-cell summaries, block coefficients and
    (``shares``) implied level shares of ``st``."""
    sd = np.sqrt(np.diag(st.sigma))
    # where the imputed cells sit on the standardised latent scale
    imp = np.array([(st.z[miss, j].mean() - st.mu[j]) / sd[j] for _, j, miss in spec])
    coefs = np.array([st.coef[b][row, col] for _, b, row, col in cspec])
    sh = _implied_shares(sampler, st) if shares else np.empty(0)
    return st.correlation[iu], imp, coefs, sh


def _restore_tuning(sampler: "CopulaGibbs", tuning: tuple[np.ndarray, list, list, list]) -> None:
    """Give the shared sampler one chain's frozen tuning (:meth:`CopulaGibbs.hmc_tuning`) back,
    exactly (a continuation segment moves as the chain's own end of burn-in left it)."""
    eps, chol, moves, curv = tuning
    sampler._adapt = None
    sampler.hmc_eps = eps.copy()
    sampler.hmc_chol = [None if c is None else c.copy() for c in chol]
    sampler.nominal_move = list(moves)
    sampler.newton_curvature = [None if c is None else c.copy() for c in curv]


def _run_chain(sampler: "CopulaGibbs", n_iter: int, burn: int, rng: np.random.Generator, spec, cspec=(),
               report=None, pilot: tuple[int, float] | None = None, shares: bool = False, start=None):
    """One chain: correlation, imputed-cell summary, block-coefficient and implied-share draws after
    burn-in, the end state, the collapsed moves' counts, the frozen tuning, the generator's state and
    the chain's CPU seconds (``cpu_seconds``, of which ``monitor_cpu_seconds`` computing the monitored
    quantities; for :attr:`GaussianCopulaImputer.timing_`).

    ``report(kind, payload)``, when given, is called with ``("iteration", t)``
    after every iteration and, when ``pilot = (iterations, deadline)``, once with
    ``("pilot", (draws, seconds, t))``: the monitored quantities (correlations,
    imputed-cell summaries, coefficients, shares side by side) over the second half of
    the first ``iterations`` iterations, or of the ``t`` done when the monotonic
    clock passes ``deadline`` (after at least 20), and the wall seconds per
    iteration since the first (which carries the kernels' compilation).
    Reporting never touches ``rng``: the chain is the same with or without it.

    ``start = (state, tuning)`` continues a chain (``n_iter="auto"``): from a copy of its end
    state, with its frozen tuning (:func:`_restore_tuning`), no adaptation and no burn-in
    (``burn`` must be 0); ``rng`` must be the chain's own generator where it stopped.
    """
    q = sampler.q
    iu = np.triu_indices(q, 1)
    # counts are per chain (the sampler object is shared by sequential chains)
    sampler.collapsed_counts[:] = 0
    if start is None:
        sampler.start_adaptation(burn)
        st = sampler.initial_state()
    else:
        _restore_tuning(sampler, start[1])
        st = start[0].copy()
    n_sh = len(_share_monitor_spec(sampler)) if shares else 0
    corr = np.empty((n_iter - burn, len(iu[0])))
    imp = np.empty((n_iter - burn, len(spec)))
    coefs = np.empty((n_iter - burn, len(cspec)))
    sh = np.empty((n_iter - burn, n_sh))
    pil = (np.empty((min(pilot[0], n_iter), corr.shape[1] + imp.shape[1] + coefs.shape[1] + n_sh))
           if pilot else None)
    t1 = None
    cpu0 = time.process_time()
    cpu_mon = 0.0
    for t in range(n_iter):
        sampler.step(st, rng)
        if t == 0:
            t1 = time.monotonic()
        if t >= burn or pil is not None:
            m0 = time.process_time()
            c, i, k, s_ = _monitored(st, iu, spec, cspec, sampler, shares)
            cpu_mon += time.process_time() - m0
            if t >= burn:
                corr[t - burn], imp[t - burn], coefs[t - burn], sh[t - burn] = c, i, k, s_
            if pil is not None:
                pil[t] = np.concatenate([c, i, k, s_])
                if t + 1 == len(pil) or (t + 1 >= 20 and time.monotonic() >= pilot[1]):
                    report("pilot", (pil[(t + 1) // 2 : t + 1].copy(), (time.monotonic() - t1) / max(t, 1), t + 1))
                    pil = None
        if report is not None:
            report("iteration", t + 1)
    acc = sampler.collapsed_counts.copy()
    if start is None:
        sampler.stop_adaptation()
    cpu = {"cpu_seconds": time.process_time() - cpu0, "monitor_cpu_seconds": cpu_mon, "iterations": n_iter}
    return corr, imp, st, acc, coefs, sampler.hmc_tuning(), sh, rng.bit_generator.state, cpu


def _chain_worker(sampler, chain_ids, n_iter, burn, rngs, spec, cspec, pilot, queue, shares=False,
                  starts=None) -> None:
    """A forked process running the chains ``chain_ids`` in turn, reporting through ``queue``:
    ``("iteration", c, t)`` at most twice a second, ``("pilot", c, draws)``, then
    ``("done", c, result)`` (its last item the chain's generator state, which the parent
    sets on its copy so that a continuation continues the same stream), or ``("error", c, traceback)``."""
    import traceback

    for c in chain_ids:
        last = [-np.inf]

        def report(kind, payload, c=c):
            if kind == "iteration":
                now = time.monotonic()
                if now - last[0] < 0.5 and payload != n_iter:
                    return
                last[0] = now
            queue.put((kind, c, payload))

        try:
            res = _run_chain(sampler, n_iter, burn, rngs[c], spec, cspec, report, pilot.get(c), shares,
                             None if starts is None else starts[c])
        except BaseException:  # the parent raises it; the process ends
            queue.put(("error", c, traceback.format_exc()))
            return
        queue.put(("done", c, res))


def _run_forked(sampler, chains, workers, n_iter, burn, rngs, spec, cspec, pilot, monitor, shares=False,
                starts=None) -> list:
    """The chains in ``workers`` forked processes (worker w runs chains w, w + workers, ...),
    their reports passed to ``monitor`` as they come; the processes are ended if the
    monitor stops the fit. Same chains as run in turn: each has its own generator, and
    ``rngs[c]`` is left where chain c's stream stopped in its process (as if run here)."""
    import multiprocessing as mp
    import queue as _queue

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_chain_worker,
                         args=(sampler, list(range(w, chains, workers)), n_iter, burn, rngs, spec, cspec, pilot, q,
                               shares, starts))
             for w in range(workers)]
    for p in procs:
        p.start()
    results: dict[int, Any] = {}
    try:
        while len(results) < chains:
            try:
                kind, c, payload = q.get(timeout=0.25)
            except _queue.Empty:
                if any(p.exitcode not in (None, 0) for p in procs):
                    raise ComputationError("A chain process of the copula sampler ended without a result "
                                       f"(exit codes {[p.exitcode for p in procs]}).") from None
                monitor.tick()
                continue
            if kind == "done":
                results[c] = payload
                rngs[c].bit_generator.state = payload[7]
            elif kind == "error":
                raise ComputationError(f"Chain {c} of the copula sampler failed:\n{payload}")
            else:
                monitor.handle(kind, c, payload)
    finally:
        for p in procs:
            if p.is_alive() and len(results) < chains:
                p.terminate()
        for p in procs:
            p.join()
        q.close()
    return [results[c] for c in range(chains)]


#: ``n_iter="auto"``: the first segment's iterations (burn-in and adaptation in its first half, as
#: for ``n_iter=1000``), the cap on a chain's iterations in all (about 15 CPU-minutes a chain on the
#: slowest file measured, nhanes; documented in GaussianCopulaImputer), and the most a segment may
#: multiply the kept draws by (an early, tiny ESS projects poorly: the check is re-run after at most
#: 8 x the draws; the budget is held to the full projection). The growth itself is the toolkit's one
#: rule, :func:`synthmi.diagnostics.extension_factor` (its default margin 1.2 and least growth 1.25)
AUTO_FIRST_SEGMENT = 1000
AUTO_MAX_ITER = 40_000
_AUTO_MAX_GROWTH = 8.0


# The pilot's projection of the iterations the ESS threshold needs is multiplied by this
# factor. A pilot of 100 iterations keeps 50 draws a chain, in the burn-in: for the slow
# quantity its bulk ESS is ~4, i.e. an autocorrelation time about half the pilot's length,
# which a series that short cannot resolve (its own mean absorbs the slow component, so
# the autocorrelations and the time are underestimated, and two chains that have not met
# look alike): the projection is optimistic, not conservative. Measured realized / projected
# bulk ESS at n_iter = 1,000 (agency file, 300 rows x 7 columns with gaps, 2 chains, seeds
# 0-4): 0.19, 0.12, 0.067, 0.39, 0.23 (median 0.19); a user's 299-row file: 44.6 / 100 at
# 300 vs a projected 338 (0.50). 1 / 0.19 ~ 5; and at 5 x the projection (n_iter 5,300 /
# 6,600, seeds 4 / 3) the realized bulk ESS was 77 / 100 of the 100 wanted. A longer pilot
# resolves more of the slow component: pilots of 530 / 660 iterations (a tenth of those
# runs) projected 7,490 / 9,370 unscaled, already above the ~5,300-6,600 that gave ESS
# 77-100. So the factor is _PILOT_SAFETY at the shortest pilot (_PILOT_MIN iterations) and
# shrinks as 1 / (pilot iterations) to 1: K = max(1, 5 x 100 / t_pilot) (fitted to these two
# pilot lengths on one file; a rule of thumb, not a bound).
_PILOT_SAFETY = 5.0
_PILOT_MIN = 100


class _ChainMonitor:
    r"""Progress lines, the pilot's projection and the time budget of a copula fit (issue 28).

    The pilot chains (the first chain, or the first round of parallel chains)
    report their first ``pilot`` iterations (:func:`_run_chain`). Their bulk ESS
    :math:`E` (Vehtari et al. 2021; of the monitored quantity that mixes worst)
    over :math:`n_p` kept draws gives the ESS per draw :math:`r = E / n_p`; ESS
    grows about linearly in the number of draws, so the release threshold
    :math:`E^*` needs about :math:`E^* / r` kept draws, i.e. per chain
    :math:`k = \lceil E^* / (r C) \rceil` and ``n_iter`` :math:`2k` (burn-in half) or
    ``burn`` + :math:`k`. A chain's wall seconds per iteration :math:`s` (measured,
    so the machine's load is in it) and the rounds :math:`\lceil C / J \rceil` of
    :math:`C` chains on :math:`J` processes give the projected seconds of any
    ``n_iter``. The fit stops with :class:`~synthmi.diagnostics.SamplerBudgetExceeded`
    when the configured ``n_iter`` would overrun ``max_seconds``, or when the
    threshold needs more iterations than configured and those overrun it; and in
    any case when the budget has run out.

    The pilot is short and sits in the burn-in: its ESS per draw overstates the run's
    (realized / projected ESS 0.07-0.50, median 0.19, after a 100-iteration pilot;
    measured, see ``_PILOT_SAFETY``), so the iterations shown and suggested are
    :math:`K` times the projection, :math:`k = \lceil K E^* / (r C) \rceil`, with
    :math:`K = \min(5, \max(1, 5 \cdot 100 / t_p))` for a pilot of :math:`t_p`
    iterations (a longer pilot resolves more of the slow component). The early stop on the threshold uses the
    unscaled projection (``n_iter_needed_raw``): a run is stopped only when even the
    optimistic projection overruns the budget, so no run that could pass is stopped
    on the safety factor alone.
    """

    def __init__(self, *, n_iter: int, burn: int, burn_param: int | None, chains: int, workers: int,
                 max_seconds: float | None, ess_target: float | None, start: float, say, owner: str):
        from .._progress import PROGRESS_EVERY, Throttle

        self.n_iter, self.burn, self.burn_param = n_iter, burn, burn_param
        self.chains, self.workers = chains, workers
        self.rounds = -(-chains // workers)
        self.max_seconds, self.ess_target = max_seconds, ess_target
        self.start, self.say, self.owner = start, say, owner
        self.chains_start = time.monotonic()
        self.throttle = Throttle(PROGRESS_EVERY)
        self.done = [0] * chains
        self.base = [0] * chains  # iterations of a chain before the running segment (n_iter="auto")
        self.pilots: dict[int, np.ndarray] = {}
        self.pilot_t: dict[int, int] = {}  # the iteration at which each pilot chain reported
        self.expect = 1 if workers == 1 else min(workers, chains)
        self.estimate: dict[str, Any] | None = None
        self.spi = 0.0  # wall seconds per iteration of a pilot chain (the slowest)
        self.first: tuple[float, int] | None = None  # (time, iteration) of the first report

    def pilot_plan(self) -> tuple[int, float]:
        """(iterations, deadline) of the pilot: a tenth of the run, at least 100 iterations
        (or the whole run when shorter), cut at a quarter of the budget left when the chains start."""
        it = min(self.n_iter, max(_PILOT_MIN, self.n_iter // 10))
        if self.max_seconds is None:
            return it, np.inf
        left = max(self.max_seconds - (self.chains_start - self.start), 0.0)
        return it, self.chains_start + 0.25 * left

    def handle(self, kind: str, chain: int, payload) -> None:
        if kind == "iteration":
            if self.done[chain] == 0 and self.first is None:
                self.first = (time.monotonic(), int(payload))
            self.done[chain] = self.base[chain] + int(payload)
        elif kind == "pilot":
            self.pilots[chain] = payload[0]
            self.spi = max(self.spi, float(payload[1]))
            self.done[chain] = max(self.done[chain], int(payload[2]))
            self.pilot_t[chain] = int(payload[2])
            if len(self.pilots) == self.expect:
                self._decide()
        self.tick()

    def tick(self) -> None:
        now = time.monotonic()
        if self.max_seconds is not None and now - self.start >= self.max_seconds:
            self._stop("the budget ran out before the chains ended")
        if self.say is not None and self.throttle.due():
            from .._progress import eta_text

            self.say(f"copula Gibbs: {eta_text(sum(self.done), self.chains * self.n_iter, now - self.chains_start)}"
                     f" ({self.chains} chains, {min(self.workers, self.chains)} at a time)")

    def continue_to(self, n_iter: int) -> None:
        """A continuation segment starts: every chain goes on to ``n_iter`` iterations in all
        (the progress lines count and project over the whole run)."""
        self.base = list(self.done)
        self.n_iter = int(n_iter)
        self.tick()

    def seconds_per_iteration(self) -> float:
        """Wall seconds per iteration of a chain so far, all segments (the machine's load in it):
        the chains' elapsed time over the iterations of the busiest process."""
        per_worker = max(sum(self.done[c] for c in range(w, self.chains, self.workers))
                         for w in range(min(self.workers, self.chains)))
        return (time.monotonic() - self.chains_start) / max(per_worker, 1)

    def _speed_advice(self) -> str:
        """What makes the chains faster, for the budget's stop messages: parallel processes when
        they run in turn, else a smaller frame."""
        return (f"chains in parallel (--param n_jobs={self.chains})" if self.workers < self.chains
                else "fewer rows or columns")

    def stop_continuation(self, n_iter: int, need: int, seconds: float, check: str) -> None:
        """Raise :class:`~synthmi.diagnostics.SamplerBudgetExceeded`: ``n_iter="auto"`` projects
        ``need`` iterations a chain (``seconds`` from the budget's start) for the release check,
        which fails after ``n_iter`` (``check`` says how), beyond the budget."""
        from ..diagnostics import SamplerBudgetExceeded

        elapsed = time.monotonic() - self.start
        spi = self.seconds_per_iteration()
        e = dict(self.estimate or {})
        e.update({"n_iter_done": int(n_iter), "n_iter_needed": int(need), "seconds_needed": float(seconds),
                  "seconds_per_iteration": spi, "ess_target": self.ess_target})
        par = self._speed_advice()
        msg = (f"The sampler of {self.owner} was stopped after {elapsed:.1f} s of its max_seconds="
               f"{self.max_seconds:g} s budget: with n_iter='auto', after {n_iter} iterations per chain the release "
               f"check fails ({check}); at the ESS per draw measured so far it needs about n_iter={need} "
               f"({spi:.3f} s per iteration of a chain, {self.chains} chains, {min(self.workers, self.chains)} at a "
               f"time: about {seconds:.0f} s from the start), beyond the budget; a lower bound, as a longer run can "
               f"find another quantity slower (a tail ESS, another column). Nothing was released. Change: "
               f"--max-seconds {math.ceil(1.2 * seconds)} (the 'max_seconds' parameter), or {par}.")
        raise SamplerBudgetExceeded(msg, estimate=e)

    def finish(self) -> None:
        """The last progress line, when every chain has ended."""
        if self.say is not None:
            from .._progress import eta_text

            total = self.chains * self.n_iter
            self.say(f"copula Gibbs: {eta_text(total, total, time.monotonic() - self.chains_start)}"
                     f" ({self.chains} chains, {min(self.workers, self.chains)} at a time), done")

    def _seconds(self, n_iter: int, spi: float) -> float:
        """Projected seconds from the budget's start to the end of ``n_iter`` iterations per chain:
        the time so far, the rest of the running round and the later rounds."""
        t = max(self.done)
        return (time.monotonic() - self.start) + (max(n_iter - t, 0) + (self.rounds - 1) * n_iter) * spi

    def _decide(self) -> None:
        from .. import diagnostics as dg

        d = min(len(p) for p in self.pilots.values())
        x = np.stack([p[len(p) - d:] for p in self.pilots.values()])
        if x.shape[0] == 1:  # one chain: its two halves
            h = d // 2
            x = np.stack([x[0, :h], x[0, h : 2 * h]])
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            eb = dg.ess_bulk(x) if x.shape[1] >= 4 and x.shape[2] else np.array([np.nan])
        worst = float(np.nanmin(eb)) if np.isfinite(eb).any() else np.nan
        rate = worst / (x.shape[0] * x.shape[1]) if np.isfinite(worst) and worst > 0 else np.nan
        t_p = max(self.pilot_t.values())
        spi = self.spi
        target = dg.ESS_MIN if self.ess_target is None else float(self.ess_target)
        def iterations(factor: float) -> int | None:
            if not np.isfinite(rate):
                return None
            per_chain = int(math.ceil(factor * target / (rate * self.chains)))
            return max(2 * per_chain if self.burn_param is None else self.burn_param + per_chain, 2)

        # capped at _PILOT_SAFETY: a pilot cut short by the budget's deadline is not extrapolated beyond what was measured
        factor = min(_PILOT_SAFETY, max(1.0, _PILOT_SAFETY * _PILOT_MIN / max(t_p, 1)))
        need, raw = iterations(factor), iterations(1.0)
        self.estimate = {"pilot_iterations": int(t_p), "seconds_per_iteration": spi, "pilot_min_ess_bulk": worst,
                         "ess_target": target, "n_iter_needed": need, "n_iter_needed_raw": raw,
                         "safety_factor": factor,
                         "seconds_needed": None if need is None else self._seconds(need, spi),
                         "seconds_needed_raw": None if raw is None else self._seconds(raw, spi),
                         "seconds_planned": self._seconds(self.n_iter, spi)}
        if self.say is not None:
            msg = (f"copula Gibbs pilot ({t_p} iterations): {spi:.3f} s per iteration of a chain; n_iter="
                   f"{self.n_iter} takes about {self.estimate['seconds_planned']:.0f} s")
            if need is not None:
                msg += (f"; the release check's bulk ESS >= {target:g} needs about n_iter={need} "
                        f"({self.estimate['seconds_needed']:.0f} s; {factor:.3g} x the pilot's projection "
                        f"n_iter={raw}, which short pilots overstate)")
            self.say(msg)
        if self.max_seconds is None:
            return
        if self.estimate["seconds_planned"] > self.max_seconds:
            self._stop(f"n_iter={self.n_iter} would take about {self.estimate['seconds_planned']:.0f} s")
        if (self.ess_target is not None and raw is not None and raw > self.n_iter
                and self.estimate["seconds_needed_raw"] > self.max_seconds):
            self._stop(f"even the pilot's optimistic projection for the release threshold (bulk ESS >= {target:g}) "
                       f"is n_iter={raw}, about {self.estimate['seconds_needed_raw']:.0f} s")

    def _stop(self, reason: str) -> None:
        from ..diagnostics import SamplerBudgetExceeded

        elapsed = time.monotonic() - self.start
        e = self.estimate
        if e is None:  # no pilot yet: the rate so far
            t = max(self.done)
            t0, i0 = self.first if self.first is not None else (self.chains_start, 0)
            # after the first iteration (which carries the compilation) when there is more than one
            spi = (time.monotonic() - t0) / (t - i0) if t > i0 else (time.monotonic() - self.chains_start) / max(t, 1)
            e = {"pilot_iterations": t, "seconds_per_iteration": spi, "n_iter_needed": None, "seconds_needed": None,
                 "n_iter_needed_raw": None, "seconds_needed_raw": None, "safety_factor": _PILOT_SAFETY,
                 "seconds_planned": self._seconds(self.n_iter, spi) if t else None, "ess_target": self.ess_target}
        if e["n_iter_needed"] is not None:
            est = (f"the release threshold (bulk ESS >= {e['ess_target']:g}) needs about n_iter="
                   f"{e['n_iter_needed']}, about {e['seconds_needed']:.0f} s ({e['safety_factor']:.3g} x the "
                   f"pilot's projection n_iter={e['n_iter_needed_raw']}, which short pilots overstate)")
            n_sugg, s_sugg = e["n_iter_needed"], e["seconds_needed"]
        else:
            est = "too few iterations to estimate the ESS"
            n_sugg, s_sugg = self.n_iter, e["seconds_planned"]
        planned = ("" if e["seconds_planned"] is None or "would take" in reason
                   else f"; n_iter={self.n_iter} takes about {e['seconds_planned']:.0f} s")
        budget = "" if s_sugg is None or not np.isfinite(s_sugg) else f" and max_seconds={math.ceil(1.2 * s_sugg)}"
        par = self._speed_advice()
        msg = (f"The sampler of {self.owner} was stopped after {elapsed:.1f} s of its max_seconds={self.max_seconds:g} s "
               f"budget: {reason}. Estimate from {e['pilot_iterations']} iterations per chain "
               f"({e['seconds_per_iteration']:.3f} s per iteration of a chain, {self.chains} chains, "
               f"{min(self.workers, self.chains)} at a time): {est}{planned}. Nothing was released. Change: "
               f"--param n_iter={n_sugg}{budget.replace(' and max_seconds=', ' --max-seconds ')} (the 'n_iter' and "
               f"'max_seconds' parameters), or {par}.")
        raise SamplerBudgetExceeded(msg, estimate=e)


class _PhaseClock:
    """Wall and CPU seconds between two laps: this process's CPU, and that of the child processes
    it has waited for (the forked chains, counted once they are joined)."""

    def __init__(self):
        self._last = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float]:
        import os

        t = os.times()
        return time.perf_counter(), t.user + t.system, t.children_user + t.children_system

    def lap(self) -> dict[str, float]:
        now = self._now()
        w, c, k = (a - b for a, b in zip(now, self._last))
        self._last = now
        return {"wall_seconds": w, "cpu_seconds": c, "children_cpu_seconds": k}


def _timing_summary(t: dict[str, Any]) -> dict[str, Any]:
    """:attr:`GaussianCopulaImputer.timing_` from the laps of a fit: per phase wall and CPU seconds,
    the chains' CPU split into the sampler's steps and the monitored quantities, and the wall seconds
    the chains did not cover (setup, checks between segments, the end)."""
    seg = t["segments"]
    chains_cpu = float(sum(sum(s["chains_cpu_seconds"]) for s in seg))
    mon_cpu = float(sum(sum(s["monitor_cpu_seconds"]) for s in seg))
    seg_wall = float(sum(s["wall_seconds"] for s in seg))
    checks_wall = float(sum(c["wall_seconds"] for c in t["checks"]))
    total = t["setup"]["wall_seconds"] + seg_wall + checks_wall + t["finish"]["wall_seconds"]
    return {
        "setup": t["setup"], "segments": seg, "checks": t["checks"], "finish": t["finish"],
        "total_wall_seconds": total, "segments_wall_seconds": seg_wall, "checks_wall_seconds": checks_wall,
        "chains_cpu_seconds": chains_cpu, "step_cpu_seconds": chains_cpu - mon_cpu, "monitor_cpu_seconds": mon_cpu,
        "outside_chains_wall_seconds": total - seg_wall,
    }


class GaussianCopulaImputer(ParamsMixin):
    r"""Bayesian Gaussian copula imputation model for mixed data (Hoff 2007).

    See the module docstring for the model, the encoding of nominal variables
    and the sampler.

    Parameters
    ----------
    n_iter : int or "auto", default "auto"
        Iterations of each chain run by ``fit`` (including burn-in). ``"auto"``: a
        first segment of :data:`AUTO_FIRST_SEGMENT` (1,000) iterations, then, while
        the release check (R-hat, bulk and tail ESS over every monitored quantity of
        all chains; ``rhat_target`` / ``ess_target`` of :meth:`fit`, else
        :data:`~synthmi.diagnostics.RHAT_MAX` / :data:`~synthmi.diagnostics.ESS_MIN`)
        fails, every chain continues from its end state (same generator stream, its
        tuning frozen at the end of the burn-in: the adaptation ends with it, so the
        continuation is a plain Markov chain) by the iterations its ESS rate and R-hat excess so far
        project (:meth:`_auto_next`, the toolkit's one growth rule
        :func:`~synthmi.diagnostics.extension_factor`; Gong & Flegal 2016, Vats, Flegal & Jones 2019),
        until the check passes, the projection no longer fits ``max_seconds``, or a
        chain reaches :data:`AUTO_MAX_ITER` (40,000) iterations. ``n_iter_`` and
        ``sampling_`` (also ``diagnostics_["sampling"]``) record the segments, the
        iterations run and why it stopped. An integer runs exactly that many.
    burn : int, optional
        Burn-in of each chain discarded from the stored draws (default ``n_iter // 2``;
        with ``"auto"`` half the first segment, kept fixed when the chains continue).
    chains : int, default 2
        Independent chains (same starting latents, different random streams);
        R-hat compares them.
    n_jobs : int, default 1
        Chains run in parallel processes (fork) when > 1.
    thin : int, default 5
        Iterations between two states used for imputations (``impute``).
    prior_df : float, optional
        Degrees of freedom :math:`\nu_0` of the inverse-Wishart prior of the
        ranked block (default :math:`q_A + 1`: marginally uniform correlations).
    random_state : int, Generator or None, default 0
        Seed (same seed -> same fit, whatever ``n_jobs``).
    collapsed : {"all", "binary", "none"}, default "all"
        Which probit blocks get the partially collapsed moves
        (:meth:`CopulaGibbs._collapsed_binary_move`,
        :meth:`CopulaGibbs._newton_block_move` / :meth:`CopulaGibbs._hmc_block_move`) on top of plain data
        augmentation. Measured on NHANES with marital_status
        (``benchmarks/copula_samplers.py``, 2 chains x 600 iterations, CPU
        seconds): min bulk ESS over the 91 correlations and 10 imputed-cell
        summaries 70.3 for "all" (90 ms per iteration; 0.65 ESS per CPU second,
        max R-hat 1.04), 6.4 for "binary" (26 ms; 0.21 per s, R-hat 1.24) and
        3.6 for "none" (18 ms; 0.17 per s, R-hat 1.62): "all" is the default on
        ESS per second. (Before the compiled likelihood and exact-Hessian
        proposal, "all" took 113 ms per iteration for a min ESS of 52.6:
        0.39 per CPU second.) These figures predate the level-indicator
        model; with it NHANES reaches min bulk ESS 536 over 91 correlations,
        35 block coefficients and 10 imputed-cell summaries with 2 chains x
        1,300 iterations (``benchmarks/results/nhanes_table.json``).
    progress : bool, default False
        Print progress lines on stderr while fitting (iterations, elapsed
        seconds, an ETA; one every few seconds) and the pilot's estimate.
    max_seconds : float, optional
        Time budget of ``fit`` in seconds (``None``: none). A pilot of the
        first tenth of the iterations (at least 100; cut at a quarter of the
        budget left when the chains start, after at least 20) projects the run's wall time and the iterations the release
        threshold needs (:class:`_ChainMonitor`); ``fit`` raises
        :class:`~synthmi.diagnostics.SamplerBudgetExceeded`, with the estimate
        and what to change, as soon as the projection or the clock exceeds the
        budget.
    reference : {"first", "frequent"}, default "first"
        Reference level of each nominal column's probit block (the utility the
        others are differenced against, and the level left out of its indicators
        in later blocks' designs): its first observed level in category order, or
        its most frequent observed level (ties: category order). The block's own
        likelihood and prior are the same for any reference; the prior of later
        blocks' intercepts and indicator coefficients is not (module docstring,
        "Reference level"). On the agency file (issue 28, 400 rows, risk-dami,
        2 x 2,100 iterations, seeds 3-5; ``benchmarks/results/copula_reference.json``)
        "frequent" gave min bulk ESS 95.6 / 284.2 / 241.1 (0.97 / 2.73 / 2.52 per
        CPU-second) against 146.6 / 294.4 / 220.4 (1.50 / 2.71 / 2.38) for
        "first": no reliable gain, so "first" is the default.

    Attributes
    ----------
    correlation_draws_ : ndarray (chains * (n_iter - burn), q, q)
        Posterior draws of the latent correlation matrix C, chain after chain.
    correlation_ : DataFrame
        Posterior mean of C, labelled by latent column.
    coefficient_draws_ : ndarray (chains * (n_iter - burn), k)
        Posterior draws of the probit blocks' intercepts and coefficients on
        earlier blocks' level indicators (the associations among categorical
        columns), chain after chain; ``coefficient_labels_`` names them.
    diagnostics_ : dict
        Rank-normalised split R-hat, bulk and tail ESS (ArviZ) of every
        correlation, block coefficient and imputed cells' summary, worst values and a
        per-column ``table`` (see :meth:`fit`).
    state_ : CopulaState
        Last state of the first chain.
    pilot_ : dict or None
        The pilot's estimate (iterations, seconds per iteration of a chain,
        ``n_iter_needed``, projected seconds); ``None`` when the run ended first.
    n_iter_ : int
        Iterations each chain ran (``n_iter``, or the total of ``"auto"``'s segments).
    sampling_ : dict
        ``n_iter`` as given, ``n_iter_run``, ``burn``, ``segments`` (iterations of
        each), ``stopped`` (why: converged, the budget, the cap, or a fixed n_iter) and
        ``checks`` (``"auto"``: the release check's figures after each segment).
    timing_ : dict
        Where the fit's time went (wall and CPU seconds; ``children_cpu_seconds`` is the
        forked chains'): ``setup`` (encoding, kernels), each of ``segments`` (with its
        chains' own CPU seconds and the share spent computing the monitored quantities),
        each of ``checks`` (the release check between segments, chains waiting),
        ``finish`` (draws assembled, final diagnostics), and the totals
        (``step_cpu_seconds``, ``monitor_cpu_seconds``, ``outside_chains_wall_seconds``).
        Timings only: never compared, never part of a release.
    """

    _parameter_constraints = {
        "n_iter": [Interval("int", 2, None), Options("auto")],
        "burn": [None, Interval("int", 0, None)],
        "thin": [Interval("int", 1, None)],
        "prior_df": [None, Interval("real", 0.0, None, closed="neither")],
        "random_state": [None, "random_state"],
        "progress": ["boolean"],
        "chains": [Interval("int", 1, None)],
        "n_jobs": [Interval("int", 1, None)],
        "collapsed": [Options("none", "binary", "all")],
        "max_seconds": [None, Interval("real", 0.0, None, closed="neither")],
        "reference": [Options("first", "frequent")],
    }

    def __init__(
        self,
        n_iter: int | str = "auto",
        burn: int | None = None,
        thin: int = 5,
        prior_df: float | None = None,
        random_state: int | np.random.Generator | None = 0,
        progress: bool = False,
        chains: int = 2,
        n_jobs: int = 1,
        collapsed: str = "all",
        max_seconds: float | None = None,
        reference: str = "first",
    ):
        self.reference = reference
        self.collapsed = collapsed
        self.max_seconds = max_seconds
        self.n_iter = n_iter
        self.burn = burn
        self.thin = thin
        self.prior_df = prior_df
        self.random_state = random_state
        self.progress = progress
        self.chains = chains
        self.n_jobs = n_jobs

    def _check_params(self) -> None:
        owner = f"{type(self).__name__} (the copula of method 'risk-dami'; --param burn=...)"
        if self.burn is not None:
            n_first = AUTO_FIRST_SEGMENT if self.n_iter == "auto" else self.n_iter
            check_scalar(self.burn, "burn", owner, kind="int", lower=0, upper=n_first - 1)

    def fit(
        self,
        df: pd.DataFrame,
        schema: Schema | dict | None = None,
        complete: Sequence[str] | None = None,
        zero_coefficients: Sequence[tuple[str, str]] | None = None,
        *,
        ess_target: float | None = None,
        rhat_target: float | None = None,
        progress_callback=None,
        budget_start: float | None = None,
    ) -> "GaussianCopulaImputer":
        """Run the sampler on ``df`` (missing values allowed anywhere).

        Parameters
        ----------
        df : DataFrame
            Data; every column is modelled. Never modified.
        schema : Schema or dict, optional
            Column kinds (a dict overrides inference per column).
        complete : list of str, optional
            Columns declared complete: a missing value in one of them is an error.
        zero_coefficients : list of (column, column), optional
            Pairs whose linking probit coefficients are held at zero
            (:meth:`CopulaGibbs.fix_zero_coefficients`); the pairs applied are in
            ``zero_coefficients_``.
        ess_target : float, optional
            The release threshold on the bulk ESS the caller will apply: with
            ``max_seconds``, the fit stops early when the pilot projects that
            reaching it takes longer than the budget. ``None``: only the run as
            configured is held to the budget (the pilot's estimate, shown, then uses
            the release check's default, ``diagnostics.ESS_MIN``).
        rhat_target : float, optional
            The release threshold on R-hat the caller will apply (default
            ``diagnostics.RHAT_MAX``). The warning after the chains names this
            threshold and ``ess_target``: one set of thresholds in a run's messages
            (issue 28 follow-up: the warning named 1.01 / 400 while the check
            applied 1.05 / 100).
        progress_callback : callable, optional
            ``f(message)`` receiving the progress lines (default: stderr when
            ``progress``, else none).
        budget_start : float, optional
            ``time.monotonic()`` from which ``max_seconds`` counts (a caller's
            own start; default the start of this call).
        """
        budget_start = time.monotonic() if budget_start is None else budget_start
        clock = _PhaseClock()
        self._validate_params()
        check_dataframe(df, "df", min_rows=3)
        check_not_degenerate(df, list(df.columns), "df")
        if complete is not None:
            check_no_missing(df, check_columns_exist(df, complete, "complete", "df"), "df")
        if isinstance(schema, Schema):
            self.schema_ = schema
        else:
            self.schema_ = Schema.infer(df, schema)
        self.margins_ = _encode(df, self.schema_, self.reference)
        q = sum(len(mg.cols) for mg in self.margins_)
        q_a = sum(1 for mg in self.margins_ if mg.ranked)
        if self.prior_df is not None and self.prior_df <= q_a - 1:
            raise param_error(
                "prior_df", f"{type(self).__name__} (the copula of method 'risk-dami'; --param prior_df=...)",
                f"> q_A - 1 = {q_a - 1} (the number of continuous and ordinal columns, the ranked block, - 1)",
                self.prior_df,
            )
        self.q_ = q
        self.latent_names_ = _latent_names(self.margins_)
        self.columns_ = list(df.columns)
        self.like_ = df.iloc[:0].copy()
        self.index_ = df.index.copy()
        self.sampler_ = CopulaGibbs(self.margins_, q, self.prior_df)
        self.sampler_.collapse_binary = self.collapsed in ("binary", "all")
        self.sampler_.collapse_nominal = self.collapsed == "all"
        self.zero_coefficients_ = self.sampler_.fix_zero_coefficients(list(zero_coefficients or []))
        rng = check_random_state(self.random_state)
        auto = self.n_iter == "auto"
        n_first = AUTO_FIRST_SEGMENT if auto else self.n_iter
        burn = n_first // 2 if self.burn is None else self.burn
        rngs = rng.spawn(self.chains)
        spec = _imputed_summary_spec(self.margins_)
        cspec = _coef_monitor_spec(self.sampler_)
        sspec = _share_monitor_spec(self.sampler_)
        say = progress_callback
        if say is None and self.progress:
            def say(msg):
                print(msg, file=sys.stderr, flush=True)
        workers = min(self.n_jobs, self.chains)
        # compile the truncated-normal kernel and the latent draw's rejection round (not cacheable on
        # disk) here, once, so that the forked chains and everything after them share them, and so
        # that the budget is checked after it; load the quadrature kernel (cached on disk: 0.15 s, but
        # ~5 s to compile when the cache is cold, which forked chains would each pay)
        truncated_normal(np.zeros(1), 1.0, -1.0, 1.0, np.random.default_rng(0), compiled=True)
        _mnp_rejection_round()
        if any(S.size > 1 for S, _ in self.sampler_.blocks):
            # ... and its rounds' loop (~1 CPU-s to compile; only a nominal block draws latents this way)
            _mnp_rejection_loop()
        mnp_log_likelihood(np.zeros((1, 1)), np.zeros(1, dtype=np.int64))
        # ... and the implied shares' kernel (a compile of seconds under load inside the pilot's first
        # monitored iteration held the budget's clock check back: starved test 15.9 s of 12)
        _level_probabilities(np.zeros((1, 2)))
        # ... and load the ESS routine the pilot calls (its first call imported ArviZ: 2.5 s quiet,
        # 7-11 s at load ~7, measured; now NumPy, its SciPy modules still load on the first call):
        # otherwise the pilot's step, run between two iterations, holds the progress lines back
        # (issue 28 follow-up, flaky progress test)
        from .. import diagnostics as _dg

        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _dg.ess_bulk(np.random.default_rng(0).normal(size=(2, 8, 1)))
        monitor = _ChainMonitor(n_iter=n_first, burn=burn, burn_param=self.burn, chains=self.chains,
                                workers=workers, max_seconds=self.max_seconds, ess_target=ess_target,
                                start=budget_start, say=say,
                                owner=f"method 'risk-dami' ({type(self).__name__})")
        monitor.tick()
        self.pilot_ = None
        from .. import diagnostics as dg

        r_req = dg.RHAT_MAX if rhat_target is None else float(rhat_target)
        e_req = dg.ESS_MIN if ess_target is None else float(ess_target)

        def segment(n: int, b: int, starts=None, pilot=True) -> list:
            if workers > 1:
                plan = monitor.pilot_plan() if pilot else None
                return _run_forked(self.sampler_, self.chains, workers, n, b, rngs, spec, cspec,
                                   {c: plan for c in range(workers)} if pilot else {}, monitor, True, starts)
            out = []
            for c, r in enumerate(rngs):
                def report(kind, payload, c=c):
                    monitor.handle(kind, c, payload)

                out.append(_run_chain(self.sampler_, n, b, r, spec, cspec, report,
                                      monitor.pilot_plan() if c == 0 and pilot else None, True,
                                      None if starts is None else starts[c]))
            return out

        timing: dict[str, Any] = {"setup": clock.lap(), "segments": [], "checks": []}

        def timed_segment(n: int, b: int, starts=None, pilot=True) -> list:
            out = segment(n, b, starts, pilot)
            lap = clock.lap()
            lap.update(iterations=int(n), chains_cpu_seconds=[r[8]["cpu_seconds"] for r in out],
                       monitor_cpu_seconds=[r[8]["monitor_cpu_seconds"] for r in out])
            timing["segments"].append(lap)
            return out

        runs = timed_segment(n_first, burn)
        segments, stopped, checks = [n_first], "fixed n_iter", []
        last: dict[str, Any] = {}  # the last check's diagnostics: the fit's (the draws it stopped on)
        while auto:
            last.clear()
            stopped, more = self._auto_next(runs, segments, burn, r_req, e_req, ess_target, spec, cspec, sspec,
                                            monitor, checks, last)
            timing["checks"].append(clock.lap())
            if more == 0:
                break
            total = sum(segments)
            monitor.continue_to(total + more)
            nxt = timed_segment(more, 0, {c: (r[2], r[5]) for c, r in enumerate(runs)}, pilot=False)
            runs = [(np.concatenate([a[0], b_[0]]), np.concatenate([a[1], b_[1]]), b_[2], a[3] + b_[3],
                     np.concatenate([a[4], b_[4]]), b_[5], np.concatenate([a[6], b_[6]]), b_[7], b_[8])
                    for a, b_ in zip(runs, nxt)]
            segments.append(more)
        monitor.finish()
        self.pilot_ = monitor.estimate
        self.n_iter_ = int(sum(segments))
        self.sampling_ = {"n_iter": "auto" if auto else int(self.n_iter), "n_iter_run": self.n_iter_,
                          "burn": int(burn), "segments": [int(k) for k in segments], "stopped": stopped,
                          "checks": checks}
        corr = np.stack([r[0] for r in runs])  # (chains, draws, pairs)
        imp = np.stack([r[1] for r in runs])
        self.chain_states_ = [r[2] for r in runs]
        self.chain_rngs_ = rngs
        self.state_ = self.chain_states_[0]
        iu = np.triu_indices(q, 1)
        n_keep = corr.shape[1]
        draws = np.empty((self.chains * n_keep, q, q))
        flat = corr.reshape(-1, len(iu[0]))
        draws[:, iu[0], iu[1]] = flat
        draws[:, iu[1], iu[0]] = flat
        draws[:, np.arange(q), np.arange(q)] = 1.0
        self.correlation_draws_ = draws
        self.correlation_ = pd.DataFrame(draws.mean(axis=0), index=self.latent_names_, columns=self.latent_names_)
        acc = np.sum([r[3] for r in runs], axis=0)
        coefs = np.stack([r[4] for r in runs])
        self.coefficient_draws_ = coefs.reshape(coefs.shape[0] * coefs.shape[1], len(cspec))
        self.coefficient_labels_ = [_coef_label(self.sampler_, b, row, t) for _, b, row, t in cspec]
        # the continuation (impute / states / nests) moves with the chains' pooled tuning
        self.sampler_.set_hmc_tuning([r[5] for r in runs])
        self.diagnostics_ = last.get("d") or _chain_diagnostics(corr, imp, self.margins_, self.latent_names_, spec,
                                                                acc, coefs, cspec, np.stack([r[6] for r in runs]), sspec)
        self.diagnostics_["sampling"] = dict(self.sampling_)
        timing["finish"] = clock.lap()
        self.timing_ = _timing_summary(timing)
        d = self.diagnostics_
        if d["max_r_hat"] is not None and (not d["max_r_hat"] <= r_req or not d["min_ess_bulk"] >= e_req
                                           or not d["min_ess_tail"] >= e_req):
            warnings.warn(
                f"The copula of method 'risk-dami' (GaussianCopulaImputer): worst R-hat {d['max_r_hat']:.3f} "
                f"(release check: <= {r_req:g}), smallest bulk ESS {d['min_ess_bulk']:.0f} and tail ESS "
                f"{d['min_ess_tail']:.0f} (release check: >= {e_req:g}) over the "
                f"correlations, imputed-cell summaries, block coefficients and implied level shares ({d['worst']}"
                f"; n_iter={self.n_iter_}, {self.sampling_['stopped']}); run longer or more chains: "
                "--param n_iter=N or n_iter=auto with a larger --max-seconds, --param chains=C (the 'n_iter', "
                "'max_seconds' and 'chains' parameters).",
                RuntimeWarning,
                stacklevel=2,
            )
        return self

    def _auto_next(self, runs, segments, burn, r_req, e_req, ess_target, spec, cspec, sspec, monitor, checks,
                   last=None):
        r"""``n_iter="auto"``: why to stop, or the iterations of the next continuation segment.

        The release check over every monitored quantity of all chains so far (burn-in fixed at the
        first segment's). When it fails, bulk and tail ESS grow about linearly in the kept draws
        :math:`n` and the R-hat excess shrinks about as :math:`1 / n`, so the check needs about
        :math:`n' = g n` kept draws, :math:`g` the toolkit's growth rule
        (:func:`~synthmi.diagnostics.extension_factor`, uncapped: :math:`g = \max(1.25, 1.2 E^* /
        \min(E_{bulk}, E_{tail}), 1.2 (\hat R - 1) / (\hat R^* - 1))`, each term where its
        threshold fails); the chains continue by :math:`n' - n` iterations, capped at
        :data:`AUTO_MAX_ITER` in all (then it stops). This is a sequential fixed-width stopping rule on the
        effective sample size (Gong & Flegal 2016, JCGS 25(3); Vats, Flegal & Jones 2019,
        Biometrika 106(2)), the check re-run on all draws after every segment; a segment adds at
        most :data:`_AUTO_MAX_GROWTH` x the kept draws (a tiny early ESS projects poorly). The
        projected seconds of :math:`n'` (wall seconds per iteration of a chain so far) must fit
        ``max_seconds``: if not,
        :class:`~synthmi.diagnostics.SamplerBudgetExceeded` when the caller applies the check
        (``ess_target`` given), else the run stops there (released with the warning). Returns
        ``(reason, 0)`` to stop, ``(reason, iterations)`` to continue; each check's iterations, R-hat,
        bulk and tail ESS and slowest row are appended to ``checks``; ``last["d"]`` (when given) is set
        to the check's diagnostics, which are the fit's when it stops here (the same draws).
        """
        from .. import diagnostics as dg

        d = _chain_diagnostics(np.stack([r[0] for r in runs]), np.stack([r[1] for r in runs]), self.margins_,
                               self.latent_names_, spec, np.sum([r[3] for r in runs], axis=0),
                               np.stack([r[4] for r in runs]), cspec, np.stack([r[6] for r in runs]), sspec)
        if last is not None:
            last["d"] = d
        total = sum(segments)
        if d["max_r_hat"] is None:
            return "nothing to diagnose", 0
        rh, eb, et = d["max_r_hat"], d["min_ess_bulk"], d["min_ess_tail"]
        checks.append({"n_iter": int(total), "max_r_hat": rh, "min_ess_bulk": eb, "min_ess_tail": et,
                       "worst": d["worst"]})
        if rh <= r_req and eb >= e_req and et >= e_req:
            return f"converged (R-hat {rh:.4f} <= {r_req:g}, bulk / tail ESS {eb:.0f} / {et:.0f} >= {e_req:g})", 0
        check = f"R-hat {rh:.4f}, bulk / tail ESS {eb:.0f} / {et:.0f} ({d['worst']}); wanted <= {r_req:g}, >= {e_req:g}"
        if total >= AUTO_MAX_ITER:
            return f"cap: n_iter={AUTO_MAX_ITER} reached ({check})", 0
        kept = total - burn
        # the projection is uncapped (the budget is held to it); no finite figure: the largest segment
        grow = dg.extension_factor(rh, min(eb, et), e_req, r_req, most=np.inf, unknown=_AUTO_MAX_GROWTH)
        # the projection (held to the budget) and the next segment (at most _AUTO_MAX_GROWTH x the kept
        # draws: an early, tiny ESS projects poorly, so the check is re-run before going further)
        need = burn + int(math.ceil(kept * grow))
        more = min(need, burn + int(math.ceil(kept * _AUTO_MAX_GROWTH)), AUTO_MAX_ITER) - total
        spi = monitor.seconds_per_iteration()
        rounds = monitor.rounds
        seconds = (time.monotonic() - monitor.start) + rounds * (need - total) * spi
        if self.max_seconds is not None and seconds > self.max_seconds:
            if ess_target is not None:
                monitor.stop_continuation(total, need, seconds, check)
            return f"budget: n_iter={need} projected to take about {seconds:.0f} s > max_seconds ({check})", 0
        if monitor.say is not None:
            monitor.say(f"copula Gibbs: after {total} iterations per chain the release check fails ({check}); "
                        f"continuing the chains to n_iter={total + more} (about {rounds * more * spi:.0f} s more)")
        return "continued", more

    def _check_fitted(self) -> None:
        if not hasattr(self, "state_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with appropriate arguments "
                "before using 'impute'."
            )

    def states(self, m: int, rng: np.random.Generator) -> list[CopulaState]:
        """Continue the chains from their fitted end states (in turn); a state every ``thin`` iterations."""
        self._check_fitted()
        sts = [s.copy() for s in self.chain_states_]
        out = []
        for k in range(m):
            st = sts[k % len(sts)]
            for _ in range(self.thin):
                self.sampler_.step(st, rng)
            out.append(st.copy())
        return out

    def completed_frame(self, st: CopulaState) -> pd.DataFrame:
        """The data with missing values filled from the latents of ``st``."""
        lv = self.sampler_.completed_levels(st)
        out = levels_to_frame(self.margins_, lv, self.schema_, self.like_.reindex(self.index_))
        return out

    def impute(self, m: int = 5, random_state: int | np.random.Generator | None = None) -> list[pd.DataFrame]:
        """``m`` completed data sets (combine analyses with ``combine(..., rule="rubin")``)."""
        self._check_fitted()
        m = check_scalar(m, "m", type(self).__name__, kind="int", lower=1)
        rng = check_random_state(random_state)
        return [self.completed_frame(st) for st in self.states(m, rng)]


#: the name used before the imputer was named as one
GaussianCopula = GaussianCopulaImputer


def _ess_rhat(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat, bulk and tail ESS of (chains, draws, k) draws (:mod:`synthmi.diagnostics`)."""
    from .. import diagnostics as dg

    if x.shape[2] == 0:
        e = np.empty(0)
        return e, e, e
    return dg.rhat_ess(x)


def _chain_diagnostics(corr, imp, margins, names, spec, acc, coefs=None, cspec=(), shares=None,
                       sspec=()) -> dict[str, Any]:
    """R-hat and ESS of every correlation, imputed-cell summary, block coefficient and implied level
    share, worst values, per-column table.

    A column's row in ``table`` holds the worst figures over the correlations
    and block coefficients involving its latent variables (a nominal column has
    several); a column with
    missing values has a second row, ``"<column> (imputed cells)"``, for the
    standardised mean latent of its missing cells. The implied level shares
    (:func:`_share_monitor_spec`) have a row per block, ``"share <column>"``, and
    per block and earlier block, ``"share <column> | <earlier column>"``, each
    with ``"slowest"``, the label of its share with the smallest min(bulk, tail)
    ESS (e.g. ``"share marital_status=Widowed | sex=Male"``: category labels,
    never data values); ``slowest_share`` names the slowest of all.
    """
    chains, n_draws, n_pairs = corr.shape
    out: dict[str, Any] = {"n_chains": int(chains), "n_draws": int(n_draws), "max_r_hat": None,
                           "min_ess_bulk": None, "min_ess_tail": None, "min_ess": None, "table": {}, "worst": None}
    if n_pairs and n_draws < 4:
        # too few kept draws to compute R-hat: fail closed on the ESS, which cannot exceed the
        # number of draws (an empty table would pass the release check)
        k = float(chains * n_draws)
        out.update(min_ess_bulk=k, min_ess_tail=k, min_ess=k, worst="copula (too few draws to diagnose)")
        out["table"] = {"copula (too few draws to diagnose)": {"ess_bulk": k, "ess_tail": k}}
        return out
    if n_pairs == 0:
        return out
    single = chains == 1
    if single:  # one chain: judged as two halves
        h = n_draws // 2
        corr = np.stack([corr[0, :h], corr[0, h : 2 * h]])
        imp = np.stack([imp[0, :h], imp[0, h : 2 * h]])
        if coefs is not None:
            coefs = np.stack([coefs[0, :h], coefs[0, h : 2 * h]])
        if shares is not None:
            shares = np.stack([shares[0, :h], shares[0, h : 2 * h]])
    if coefs is None:
        coefs = np.empty(corr.shape[:2] + (0,))
    if shares is None:
        shares = np.empty(corr.shape[:2] + (0,))
    r, eb, et = _ess_rhat(corr)
    rs, ebs, ets = _ess_rhat(shares)
    rc, ebc, etc = _ess_rhat(coefs)
    ri, ebi, eti = _ess_rhat(imp)
    q = len(names)
    iu = np.triu_indices(q, 1)
    owner = [mg.name for mg in margins for _ in mg.cols]
    rows: dict[str, dict[str, Any]] = {}

    def _add(key, rr, bb, tt):
        row = rows.setdefault(key, {"r_hat": -np.inf, "ess_bulk": np.inf, "ess_tail": np.inf})
        row["r_hat"] = float(np.nanmax([row["r_hat"], rr])) if np.isfinite(rr) else float("nan")
        row["ess_bulk"] = float(np.nanmin([row["ess_bulk"], bb]))
        row["ess_tail"] = float(np.nanmin([row["ess_tail"], tt]))

    for k, (i, j) in enumerate(zip(*iu)):
        for col in dict.fromkeys((owner[i], owner[j])):
            _add(col, r[k], eb[k], et[k])
    for k, (col, _, _) in enumerate(spec):
        _add(f"{col} (imputed cells)", ri[k], ebi[k], eti[k])
    for k, (owners, _, _, _) in enumerate(cspec):
        for col in owners:
            _add(col, rc[k], ebc[k], etc[k])
    slowest: dict[str, tuple[float, str]] = {}
    for k, (_, key, label) in enumerate(sspec):
        _add(key, rs[k], ebs[k], ets[k])
        e_k = float(np.nanmin([ebs[k], ets[k]])) if np.isfinite([ebs[k], ets[k]]).any() else -np.inf
        if key not in slowest or e_k < slowest[key][0]:
            slowest[key] = (e_k, label)
    for key, (_, label) in slowest.items():
        rows[key]["slowest"] = label
    block_names = [mg.name for mg in margins if mg.kind == "binary"] + [mg.name for mg in margins if mg.kind == "nominal"]
    rates = {}
    for name, (a, p) in zip(block_names, np.asarray(acc).reshape(-1, 2)):
        if p:
            rates[name] = float(a / p)
            if name in rows:
                rows[name]["acceptance"] = rates[name]
    out["collapsed_acceptance"] = rates
    allr = np.concatenate([r, ri, rc, rs])
    alle = np.concatenate([eb, ebi, ebc, ebs])
    allt = np.concatenate([et, eti, etc, ets])
    out["max_r_hat"] = float(np.max(allr)) if np.all(np.isfinite(allr)) else float("nan")
    out["min_ess_bulk"] = float(np.nanmin(alle))
    out["min_ess_tail"] = float(np.nanmin(allt))
    out["min_ess"] = out["min_ess_bulk"]
    out["max_r_hat_correlations"] = float(np.max(r)) if np.all(np.isfinite(r)) else float("nan")
    out["min_ess_bulk_correlations"] = float(np.nanmin(eb))
    out["n_correlations"] = int(n_pairs)
    out["n_imputed_summaries"] = int(len(spec))
    out["max_r_hat_coefficients"] = float(np.max(rc)) if rc.size and np.all(np.isfinite(rc)) else None
    out["min_ess_bulk_coefficients"] = float(np.nanmin(ebc)) if ebc.size else None
    out["n_coefficients"] = int(len(cspec))
    out["max_r_hat_shares"] = float(np.max(rs)) if rs.size and np.all(np.isfinite(rs)) else None
    out["min_ess_bulk_shares"] = float(np.nanmin(ebs)) if ebs.size else None
    out["min_ess_tail_shares"] = float(np.nanmin(ets)) if ets.size else None
    out["n_shares"] = int(len(sspec))
    out["slowest_share"] = min(slowest.values())[1] if slowest else None
    out["table"] = rows
    worst = max(rows, key=lambda k: (rows[k]["r_hat"] if np.isfinite(rows[k]["r_hat"]) else np.inf, -rows[k]["ess_bulk"]))
    out["worst"] = worst
    return out


# --------------------------------------------------------------------------- PyMC specification
def copula_pymc_model(df: pd.DataFrame, schema: Schema | dict | None = None, prior_df: float | None = None):
    r"""The copula of :class:`GaussianCopula` as a PyMC model (for small n), every column kind.

    The same posterior as the Gibbs sampler, written out so that NUTS can
    sample it (the agreement test compares the two):

    * **ranked block** (continuous and ordinal columns): :math:`z_A \sim N(0,
      C_{AA})` on the unit scale, with the prior of C the marginal of
      :math:`\Sigma \sim \mathcal{IW}(\nu_0, I)` (Barnard, McCulloch & Meng 2000,
      eq. 8), :math:`f(C) \propto |C|^{(\nu_0 - 1)(q - 1)/2 - 1} \prod_i
      |C_{(-i)}|^{-\nu_0/2}`, added to an LKJ(1) (flat) base. The extended rank
      likelihood :math:`1\{z \in D(y)\}`: a column with distinct observed values
      has its sorted latents under PyMC's ``ordered`` transform; a column with
      ties (ordinal) has ordered cut points t (flat) and each record's latent
      inside its level's interval :math:`(t_{l-1}, t_l)` (logistic or log
      transforms, Jacobians added), with the correction
      :math:`-\sum_l \log(\min_{y = l+1} z - \max_{y = l} z)`: the cut point's
      conditional density is uniform on its gap, so the t-marginal is exactly
      :math:`N(z; 0, C)\,1\{z \in D(y)\}`. Missing latents are free.
    * **probit blocks** (binary first, then nominal, as the Gibbs sampler orders
      them): :math:`z_{S_b} = c_b + B_b z_A + D_b h_{<b} + e`, :math:`e \sim N(0, I + J)`,
      with :math:`h_{<b}` the indicators of the earlier blocks' levels, rows of
      :math:`[c_b; B_b; D_b]` :math:`N(0, \tau^2 (I + J))` (the coefficients of
      the unit-scale ranked latents are the Gibbs sampler's standardised
      coefficients, so the priors agree). Missing values are covered in ranked
      columns and in the last probit block (an earlier block's missing level
      would enter later designs as a discrete unknown, which NUTS cannot move;
      the Gibbs sampler draws it); the level
      constraints by construction: a binary latent is :math:`\pm e^w`; a
      nominal record at level k > 0 has :math:`z_k = e^v` and :math:`z_j = z_k -
      e^{w_j}`, at the reference level :math:`z_j = -e^{w_j}` (log-Jacobians
      added).

    ``corr`` (dims ``pair``) holds the implied latent correlations in the
    order of ``np.triu_indices(q, 1)`` over :class:`GaussianCopula`'s latent
    columns, so the two samplers' draws compare entry by entry.
    """
    import pymc as pm
    import pytensor.tensor as pt

    sch = schema if isinstance(schema, Schema) else Schema.infer(df, schema)
    margins = _encode(df, sch)
    names = _latent_names(margins)
    q = sum(len(mg.cols) for mg in margins)
    sampler = CopulaGibbs(margins, q, prior_df)
    n = len(df)
    A = sampler.ranked_cols
    q_a = A.size
    nu0 = sampler.prior_df
    iu = np.triu_indices(q, 1)
    logdet = lambda M: 2.0 * pt.sum(pt.log(pt.diag(pt.linalg.cholesky(M))))  # noqa: E731
    with pm.Model(coords={"pair": [f"{names[i]}~{names[j]}" for i, j in zip(*iu)]}) as model:
        cols: dict[int, Any] = {}
        # ---- ranked block
        if q_a >= 2:
            C = pm.LKJCorr("C_ranked", n=q_a, eta=1.0, return_matrix=True)
            prior = ((nu0 - 1.0) * (q_a - 1.0) / 2.0 - 1.0) * logdet(C)
            for i in range(q_a):
                keep = [k for k in range(q_a) if k != i]
                sub = C[keep][:, keep]
                prior = prior - nu0 / 2.0 * (logdet(sub) if q_a > 2 else pt.log(sub[0, 0]))
            pm.Potential("corr_prior", prior)
        else:
            C = pt.eye(max(q_a, 1))
        for mg in margins:
            if not mg.ranked:
                continue
            j = mg.cols[0]
            lv = mg.level
            obs = lv >= 0
            col = pt.zeros(n)
            if len(np.unique(lv[obs])) == obs.sum():  # distinct values: ordered latents
                order = np.flatnonzero(obs)[np.argsort(lv[obs])]
                init = ndtri((np.arange(obs.sum()) + 1.0) / (obs.sum() + 1.0))
                zs = pm.Flat(f"z_{mg.name}", shape=int(obs.sum()), transform=pm.distributions.transforms.ordered,
                             initval=init)
                col = pt.set_subtensor(col[order], zs)
            else:  # ties: cut points, latents inside their level's interval, gap correction
                L = mg.n_levels
                init_t = ndtri(np.cumsum(np.bincount(lv[obs], minlength=L))[:-1] / (obs.sum() + 1.0))
                t = pm.Flat(f"cuts_{mg.name}", shape=L - 1, transform=pm.distributions.transforms.ordered,
                            initval=init_t)
                w = pm.Flat(f"w_{mg.name}", shape=int(obs.sum()))
                lo_idx = np.clip(lv[obs] - 1, 0, L - 2)
                hi_idx = np.clip(lv[obs], 0, L - 2)
                lo = t[lo_idx]
                hi = t[hi_idx]
                first = lv[obs] == 0
                last = lv[obs] == L - 1
                mid = ~first & ~last
                zo = pt.switch(first, hi - pt.exp(w), pt.switch(last, lo + pt.exp(w), lo + (hi - lo) * pt.sigmoid(w)))
                jac = pt.switch(mid, pt.log(hi - lo) + pt.log(pt.sigmoid(w)) + pt.log1p(-pt.sigmoid(w)), w)
                pm.Potential(f"jacobian_{mg.name}", jac.sum())
                gaps = []
                for l in range(L - 1):
                    below = zo[np.flatnonzero(lv[obs] == l)]
                    above = zo[np.flatnonzero(lv[obs] == l + 1)]
                    gaps.append(pt.log(pt.min(above) - pt.max(below)))
                pm.Potential(f"gap_correction_{mg.name}", -pt.sum(pt.stack(gaps)))
                col = pt.set_subtensor(col[np.flatnonzero(obs)], zo)
            if (~obs).any():
                zm = pm.Flat(f"z_missing_{mg.name}", shape=int((~obs).sum()))
                col = pt.set_subtensor(col[np.flatnonzero(~obs)], zm)
            cols[j] = col
        if q_a:
            ZA = pt.stack([cols[j] for j in A], axis=1)
            pm.Potential("ranked_latent", pm.logp(pm.MvNormal.dist(mu=np.zeros(q_a), cov=C), ZA).sum())
        # ---- probit blocks: regressions on the unit-scale ranked latents and earlier blocks' levels
        H = np.zeros((n, sampler.n_full - 1 - q_a))  # indicators of the observed levels (no missing one here)
        for b, mg in enumerate(sampler.block_margins):
            later = b < len(sampler.block_margins) - 1
            if later and (mg.level < 0).any():
                raise NotImplementedError(
                    f"copula_pymc_model: column '{mg.name}' has missing values and later probit blocks "
                    "regress on its level; the PyMC specification covers missing values in ranked columns "
                    "and in the last probit block only (the Gibbs sampler imputes every column)."
                )
            L = mg.n_levels
            s0 = sampler.ind_start[b] - 1 - q_a
            ok = mg.level > 0
            H[np.flatnonzero(ok), s0 + mg.level[ok] - 1] = 1.0
        B_rows = []
        for b, (mg, (S, W)) in enumerate(zip(sampler.block_margins, sampler.blocks)):
            d = S.size
            lv = mg.level
            obs = np.flatnonzero(lv >= 0)
            mis = np.flatnonzero(lv < 0)
            Zb = pt.zeros((n, d))
            if d == 1:
                w = pm.Flat(f"w_{mg.name}", shape=obs.size)
                sign = np.where(lv[obs] == 1, 1.0, -1.0)
                Zb = pt.set_subtensor(Zb[obs, 0], sign * pt.exp(w))
                pm.Potential(f"jacobian_{mg.name}", w.sum())
            else:
                lvo = lv[obs]
                pos = np.flatnonzero(lvo > 0)
                v = pm.Flat(f"v_{mg.name}", shape=pos.size)
                base = pt.set_subtensor(pt.zeros(obs.size)[pos], pt.exp(v))
                chosen = np.zeros((obs.size, d), dtype=bool)
                chosen[pos, lvo[pos] - 1] = True
                r_idx, c_idx = np.nonzero(~chosen)
                w = pm.Flat(f"w_{mg.name}", shape=r_idx.size)
                dev = pt.set_subtensor(pt.zeros((obs.size, d))[r_idx, c_idx], pt.exp(w))
                Zb = pt.set_subtensor(Zb[obs], base[:, None] - dev)
                pm.Potential(f"jacobian_{mg.name}", w.sum() + v.sum())
            if mis.size:
                zm = pm.Flat(f"z_missing_{mg.name}", shape=(mis.size, d))
                Zb = pt.set_subtensor(Zb[mis], zm)
            for k, c in enumerate(S):
                cols[int(c)] = Zb[:, k]
            n_ind = sampler.n_design[b] - 1 - q_a
            XA = pt.stack([cols[int(c)] for c in A], axis=1) if q_a else pt.zeros((n, 0))
            X = pt.concatenate([XA, H[:, :n_ind]], axis=1) if n_ind else XA
            p_b = q_a + n_ind
            coef = pm.Flat(f"coef_{mg.name}", shape=(1 + p_b, d))
            sd = np.r_[PRIOR_SD_INTERCEPT, np.full(p_b, PRIOR_SD_SLOPE)]
            om0 = nominal_error_covariance(d)
            pm.Potential(f"coef_prior_{mg.name}",
                         pm.logp(pm.MvNormal.dist(mu=np.zeros(d), cov=om0), coef / sd[:, None]).sum())
            mean = coef[0][None, :] + (pt.dot(X, coef[1:]) if p_b else 0.0)
            om = nominal_error_covariance(d)
            pm.Potential(f"block_{mg.name}", pm.logp(pm.MvNormal.dist(mu=np.zeros(d), cov=om), Zb - mean).sum())
            B_rows.append(coef[1:1 + q_a].T)
        # implied latent covariance given the levels (CopulaGibbs.implied)
        Sig = pt.zeros((q, q))
        if q_a:
            Sig = pt.set_subtensor(Sig[np.ix_(A, A)], C)
        if B_rows:
            S_all = sampler.nominal_cols
            err = np.zeros((S_all.size, S_all.size))
            k = 0
            for S, _ in sampler.blocks:
                err[k:k + S.size, k:k + S.size] = nominal_error_covariance(S.size)
                k += S.size
            if q_a:
                B_all = pt.concatenate(B_rows, axis=0)
                bs = pt.dot(B_all, C)
                Sig = pt.set_subtensor(Sig[np.ix_(S_all, A)], bs)
                Sig = pt.set_subtensor(Sig[np.ix_(A, S_all)], bs.T)
                Sig = pt.set_subtensor(Sig[np.ix_(S_all, S_all)], pt.dot(bs, B_all.T) + err)
            else:
                Sig = pt.set_subtensor(Sig[np.ix_(S_all, S_all)], err)
        sd = pt.sqrt(pt.diag(Sig))
        R = Sig / (sd[:, None] * sd[None, :])
        pm.Deterministic("corr", R[iu], dims="pair")
    return model
