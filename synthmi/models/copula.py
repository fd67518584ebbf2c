r"""Bayesian Gaussian copula for mixed data with missing values (Hoff 2007).

The model
---------
Each record i has a latent vector :math:`z_i \in \mathbb{R}^q` with

.. math::

    z_i \mid \mu, \Sigma \sim N_q(\mu, \Sigma), \qquad
    \Sigma \sim \mathcal{IW}(\nu_0, I_q),

and each observed variable is a function of its own block of latent columns:

* **continuous, binary, ordinal** (one latent column j): :math:`y_{ij} =
  g_j(z_{ij})` with :math:`g_j` non-decreasing and otherwise unknown. The
  margins are not modelled; the data enter through Hoff's (2007, Sec. 2.2)
  *extended rank likelihood*

  .. math::

      \Pr\{ z \in D(y) \}, \qquad D(y) = \{ z : y_{ij} < y_{kj} \Rightarrow
      z_{ij} < z_{kj} \},

  which depends on :math:`\Sigma` only through the correlation matrix
  :math:`C = \mathrm{diag}(\Sigma)^{-1/2} \Sigma\, \mathrm{diag}(\Sigma)^{-1/2}`
  (the set :math:`D(y)` is invariant to rescaling a column), so :math:`\mu_j =
  0` for these columns and :math:`C` is the copula parameter. Continuous margins
  are the empirical distribution functions of the observed values; binary and
  ordinal variables are thresholds on the latent scale, the thresholds
  being located by the ordering of the latent values.
* **nominal** with L observed levels (L - 1 latent columns, a multinomial-probit
  encoding with the first observed level as reference; McCulloch & Rossi 1994):

  .. math::

      y_i = \begin{cases} 0 & \max_k z_{ik} < 0 \\
      1 + \arg\max_k z_{ik} & \text{otherwise,} \end{cases}

  with free means :math:`\mu_k` (flat prior). Only levels seen in the data are
  modelled: a declared category that never occurs is never generated.

A missing entry leaves its latent unconstrained, so the Gibbs sampler imputes
it from :math:`p(z_{i,mis} \mid z_{i,obs}, \mu, \Sigma)`; this is valid under
MAR because the observed-data likelihood is the integral of the copula density
over the missing latents.

The Gibbs sampler
-----------------
One iteration (Hoff 2007, Sec. 3, with the per-level loop vectorised):

1. for every latent column j: :math:`z_{ij} \mid z_{i,-j}` is normal with mean
   :math:`\mu_j - P_{jj}^{-1} \sum_{k \ne j} P_{jk}(z_{ik} - \mu_k)` and
   variance :math:`P_{jj}^{-1}` (:math:`P = \Sigma^{-1}`), truncated to the set
   allowed by the data. For a ranked variable the bounds of a record at level l
   are the largest latent at level l-1 and the smallest at level l+1; records at
   even levels are conditionally independent given those at odd levels, so the
   update is two vectorised blocks (even levels, then odd levels) instead of
   Hoff's loop over levels;
2. nominal means: :math:`\mu_S \mid z, \Sigma \sim N(P_{SS}^{-1} P_{S\cdot}
   \bar z, (n P_{SS})^{-1})` (flat prior);
3. :math:`\Sigma \mid z, \mu \sim \mathcal{IW}(\nu_0 + n, I + \sum_i (z_i -
   \mu)(z_i - \mu)^\top)`.

Neither constraint set involves :math:`\Sigma`, so step 3 is the exact full
conditional. With :math:`\nu_0 = q + 1` (default) the implied prior of each
correlation is uniform on (-1, 1) (Barnard, McCulloch & Meng 2000).

Single-site updates let a ranked column move only within the gaps of its
neighbours, so its location and spread relative to the other columns drift
slowly; under MAR that drift is what carries the margin's uncertainty, and
without help the imputations were improper (coverage 0.87 for a mean in the
simulation of ``tests/test_copula.py``). Each iteration therefore adds
rank-preserving group moves (Liu & Sabatti 2000): a shift and a rescaling of
every ranked column, and a common rescaling of every nominal block with its
means. Nominal blocks still mix slowly (a known multinomial-probit property;
split-R-hat is reported and warned about).

PyMC specification
------------------
:func:`copula_pymc_model` writes the same posterior in PyMC for data whose
columns are continuous with distinct values (ordered transform on the sorted
latents, free missing latents, the IW-induced prior on C); the agreement
test compares its NUTS posterior of the correlation with the Gibbs one.
Tied (binary / ordinal) and nominal columns have no PyMC form here.

From latent to data values
--------------------------
A latent value (imputed or synthetic) of a ranked variable is mapped to the
level whose slot it falls in: the cut between levels l and l+1 is the midpoint
between the largest current latent at level l and the smallest at level l+1
(observed records only). Imputed values therefore lie in the observed support,
as in Hoff's ``sbgcop``; unlike ``sbgcop`` (which maps through the empirical
quantiles of the *observed* values) the slot rule uses where the observed
records sit on the latent scale, so it stays consistent when the observed
values are a MAR-selected subset.

References
----------
Hoff, P. D. (2007). Extending the rank likelihood for semiparametric copula
estimation. Annals of Applied Statistics 1(1), 265-283.
Barnard, J., McCulloch, R. and Meng, X.-L. (2000). Modeling covariance matrices
in terms of standard deviations and correlations. Statistica Sinica 10, 1281-1311.
McCulloch, R. and Rossi, P. E. (1994). An exact likelihood analysis of the
multinomial probit model. Journal of Econometrics 64, 207-240.
Liu, J. S. and Sabatti, C. (2000). Generalised Gibbs sampler and multigrid
Monte Carlo for Bayesian computation. Biometrika 87(2), 353-369.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.special import log_ndtr, ndtr, ndtri, ndtri_exp
from scipy.stats import invwishart

from .._validate import (
    NotFittedError,
    check_columns_exist,
    check_dataframe,
    check_no_missing,
    check_not_degenerate,
    check_random_state,
    Interval,
    check_scalar,
    param_error,
)
from ..schema import Schema
from .base import ParamsMixin

__all__ = ["GaussianCopula", "copula_pymc_model", "truncated_normal", "log_interval_probability"]


# --------------------------------------------------------------------------- numerics
def truncated_normal(
    mu: np.ndarray, sd: np.ndarray | float, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    r"""Vectorised draws from :math:`N(\mu, sd^2)` truncated to ``(lo, hi)``.

    Inverse-CDF sampling, :math:`x = \Phi^{-1}(\Phi(a) + U (\Phi(b) -
    \Phi(a)))`, on the lower tail (intervals right of the mean are mirrored) so
    that ``ndtr`` keeps full relative precision; entries whose :math:`\Phi(b)`
    underflows (intervals beyond ~37 sd) are redone in log space
    (``log_ndtr`` / ``ndtri_exp``).
    """
    mu = np.asarray(mu, dtype=float)
    sd = np.broadcast_to(np.asarray(sd, dtype=float), mu.shape)
    a = (np.broadcast_to(lo, mu.shape) - mu) / sd
    b = (np.broadcast_to(hi, mu.shape) - mu) / sd
    flip = a > 0
    a2 = np.where(flip, -b, a)
    b2 = np.where(flip, -a, b)
    u = rng.random(mu.shape)
    pa = ndtr(a2)
    pb = ndtr(b2)
    x = ndtri(pa + u * (pb - pa))
    # Phi(b2) below ~1e-300: redo those entries in log space
    tail = ~(pb > 1e-300)
    if tail.any():
        la = log_ndtr(a2[tail])
        lb = log_ndtr(b2[tail])
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            ratio = np.exp(la - lb)
            ratio = np.where(np.isfinite(ratio), ratio, 0.0)
            logp = lb + np.log(ratio + u[tail] * (1.0 - ratio))
            x[tail] = ndtri_exp(np.minimum(logp, 0.0))
    x = np.clip(x, a2, b2)
    x = np.where(flip, -x, x)
    return mu + sd * x


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


def _gumbel_argmax(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One categorical draw per row of unnormalised log-probabilities."""
    g = -np.log(-np.log(rng.random(logits.shape)))
    return np.argmax(logits + g, axis=1)


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
        return self.kind != "nominal"

    @property
    def n_levels(self) -> int:
        return len(self.support)


def _encode(df: pd.DataFrame, schema: Schema) -> list[_Margin]:
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
            raise ValueError(
                f"Column '{c}' is {v.kind} with {v.n_levels} level; a categorical variable needs at "
                "least 2 levels to be modelled."
            )
        codes = schema.codes(s)
        seen = np.unique(codes[codes >= 0])
        if len(seen) < 2:
            raise ValueError(
                f"Column '{c}' ({v.kind}) has {len(seen)} observed level; it needs at least 2 to be modelled."
            )
        level = np.full(len(codes), -1, dtype=np.int64)
        level[codes >= 0] = np.searchsorted(seen, codes[codes >= 0])
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
    """One state of the chain: latents ``z`` (n, q), means ``mu`` (q,), covariance ``sigma`` (q, q)."""

    z: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray

    def copy(self) -> "CopulaState":
        return CopulaState(self.z.copy(), self.mu.copy(), self.sigma.copy())

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

    def extremes(self, zc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = zc[self.order]
        return np.maximum.reduceat(v, self.starts), np.minimum.reduceat(v, self.starts)

    def cuts(self, zc: np.ndarray) -> np.ndarray:
        """Cut points between adjacent levels: midpoints of the gaps (L - 1 values)."""
        zmax, zmin = self.extremes(zc)
        return 0.5 * (zmax[:-1] + zmin[1:])


def _nominal_bounds(z: np.ndarray, cols: list[int], k: int, level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of component k of a nominal block given the other components and the level."""
    n = z.shape[0]
    lo = np.full(n, -np.inf)
    hi = np.full(n, np.inf)
    others = [c for kk, c in enumerate(cols) if kk != k]
    omax = z[:, others].max(axis=1) if others else np.full(n, -np.inf)
    is_ref = level == 0
    is_me = level == k + 1
    is_other = (level > 0) & ~is_me
    hi[is_ref] = 0.0
    lo[is_me] = np.maximum(0.0, omax[is_me])
    if is_other.any():
        idx = np.flatnonzero(is_other)
        hi[idx] = z[idx, np.asarray(cols)[level[idx] - 1]]
    return lo, hi


def _nominal_level(v: np.ndarray) -> np.ndarray:
    """Level of each row of a nominal block's latents (0 = reference)."""
    return np.where(v.max(axis=1) < 0, 0, np.argmax(v, axis=1) + 1)


class CopulaGibbs:
    """Gibbs sampler for the copula given per-record levels (-1 = missing).

    Built once per data set (the level index is precomputed); ``step`` runs one
    iteration in place on a :class:`CopulaState`.
    """

    def __init__(self, margins: list[_Margin], q: int, prior_df: float | None = None):
        self.margins = margins
        self.q = q
        self.n = len(margins[0].level)
        self.prior_df = float(q + 1) if prior_df is None else float(prior_df)
        self.rank = {mg.name: _RankIndex(mg.level, mg.n_levels) for mg in margins if mg.ranked}
        self.nominal_cols = np.array([c for mg in margins if not mg.ranked for c in mg.cols], dtype=np.int64)

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
                scores = _ndtri((mid + 0.5) / (len(obs) + 1.0))
                z[obs, mg.cols[0]] = scores[mg.level[obs]]
            else:
                lv = mg.level
                for k, c in enumerate(mg.cols):
                    z[:, c] = np.where(lv == k + 1, 0.5, -0.5)
        return CopulaState(z=z, mu=np.zeros(q), sigma=np.eye(q))

    # -- one iteration -----------------------------------------------------------
    def step(self, st: CopulaState, rng: np.random.Generator) -> None:
        z, mu = st.z, st.mu
        P = np.linalg.inv(st.sigma)
        E = z - mu
        for mg in self.margins:
            for k, j in enumerate(mg.cols):
                pjj = P[j, j]
                sd = 1.0 / np.sqrt(pjj)
                if mg.ranked:
                    ri = self.rank[mg.name]
                    for block in ri.blocks:
                        if block.size == 0:
                            continue
                        cm = mu[j] - (E[block] @ P[:, j] - E[block, j] * pjj) / pjj
                        zmax, zmin = ri.extremes(z[:, j])
                        lev = mg.level[block]
                        lo = np.where(lev > 0, zmax[np.maximum(lev - 1, 0)], -np.inf)
                        hi = np.where(lev < mg.n_levels - 1, zmin[np.minimum(lev + 1, mg.n_levels - 1)], np.inf)
                        z[block, j] = truncated_normal(cm, sd, lo, hi, rng)
                        E[block, j] = z[block, j] - mu[j]
                    miss = ri.missing
                    if miss.size:
                        cm = mu[j] - (E[miss] @ P[:, j] - E[miss, j] * pjj) / pjj
                        z[miss, j] = cm + sd * rng.standard_normal(miss.size)
                        E[miss, j] = z[miss, j] - mu[j]
                    self._group_moves(z, E, mu, P, j, rng)
                else:
                    cm = mu[j] - (E @ P[:, j] - E[:, j] * pjj) / pjj
                    lo, hi = _nominal_bounds(z, mg.cols, k, mg.level)
                    z[:, j] = truncated_normal(cm, sd, lo, hi, rng)
                    E[:, j] = z[:, j] - mu[j]
        for mg in self.margins:
            if not mg.ranked:
                self._nominal_scale_move(z, mu, P, np.asarray(mg.cols), rng)
        S = self.nominal_cols
        if S.size:
            Pss = P[np.ix_(S, S)]
            zbar = z.mean(axis=0)
            # mu restricted to S: mean Pss^{-1} P_{S,.} zbar, precision n Pss
            rhs = P[S] @ zbar
            mean = np.linalg.solve(Pss, rhs)
            L = np.linalg.cholesky(np.linalg.inv(self.n * Pss))
            mu[S] = mean + L @ rng.standard_normal(S.size)
        E = z - mu
        scale = np.eye(self.q) + E.T @ E
        st.sigma = np.asarray(invwishart.rvs(df=self.prior_df + self.n, scale=scale, random_state=rng)).reshape(
            self.q, self.q
        )

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
        E[:, j] = z[:, j] - mu[j]

    def _nominal_scale_move(self, z, mu, P, S, rng) -> None:
        r"""Rescale a nominal block (latents and means) by b > 0 (generalised Gibbs).

        The level rule depends only on signs and order within the block, so
        :math:`(z_S, \mu_S) \to (b z_S, b \mu_S)` preserves the data; the
        multinomial-probit chain otherwise moves slowly along this
        unidentified common scale. With :math:`e = z - \mu` split into the
        block S and the rest A, the density of b is :math:`\propto b^{N-1}
        \exp\{-(b^2 Q_{SS} + 2 b Q_{AS})/2\}`, :math:`N = (n + 1)|S|`,
        :math:`Q_{SS} = \sum_i e_{iS}^\top P_{SS} e_{iS}`, :math:`Q_{AS} =
        \sum_i e_{iA}^\top P_{AS} e_{iS}`; drawn by independence Metropolis
        from its Laplace approximation.
        """
        A = np.setdiff1d(np.arange(self.q), S)
        E = z - mu
        eS = E[:, S]
        Qss = float(np.einsum("ij,jk,ik->", eS, P[np.ix_(S, S)], eS))
        Qas = float(np.einsum("ij,jk,ik->", E[:, A], P[np.ix_(A, S)], eS)) if A.size else 0.0
        N = (self.n + 1) * S.size
        if Qss <= 0:
            return
        b0 = (-Qas + np.sqrt(Qas * Qas + 4.0 * Qss * (N - 1))) / (2.0 * Qss)
        sd_b = 1.0 / np.sqrt((N - 1) / b0**2 + Qss)
        b1 = b0 + sd_b * rng.standard_normal()
        if b1 <= 0:
            return
        logf = lambda b: (N - 1) * np.log(b) - (b * b * Qss + 2.0 * b * Qas) / 2.0  # noqa: E731
        logq = lambda b: -0.5 * ((b - b0) / sd_b) ** 2  # noqa: E731
        if np.log(rng.random()) < (logf(b1) - logq(b1)) - (logf(1.0) - logq(1.0)):
            z[:, S] *= b1
            mu[S] *= b1

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


def _ndtri(p: np.ndarray) -> np.ndarray:
    from scipy.special import ndtri

    return ndtri(p)


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
class GaussianCopulaImputer(ParamsMixin):
    r"""Bayesian Gaussian copula imputation model for mixed data (Hoff 2007).

    An imputer, not a synthesizer: ``fit`` then ``impute(m)`` returns ``m``
    completed data sets (Rubin's rule). The risk-targeted synthesizer
    (:class:`~synthmi.models.risk_targeted.RiskTargetedSynthesizer`) wraps it.

    See the module docstring for the model, the encoding of nominal variables
    and the sampler.

    Parameters
    ----------
    n_iter : int, default 1000
        Gibbs iterations run by ``fit`` (including burn-in).
    burn : int, optional
        Burn-in discarded from the stored correlation draws (default ``n_iter // 2``).
    thin : int, default 5
        Iterations between two states used for imputations (``impute``).
    prior_df : float, optional
        Degrees of freedom :math:`\nu_0` of the inverse-Wishart prior (default q + 1:
        marginally uniform correlations).
    random_state : int, Generator or None, default 0
        Seed of the fitting chain (same seed -> same fit).
    progress : bool, default False
        Show a progress bar while fitting.

    Attributes
    ----------
    correlation_draws_ : ndarray (n_iter - burn, q, q)
        Posterior draws of the latent correlation matrix C.
    correlation_ : DataFrame
        Posterior mean of C, labelled by latent column.
    diagnostics_ : dict
        Effective sample size and split-R-hat of the correlations (single chain).
    state_ : CopulaState
        Last state of the chain (imputations continue from it).
    """

    _parameter_constraints = {
        "n_iter": [Interval("int", 2, None)],
        "burn": [None, Interval("int", 0, None)],
        "thin": [Interval("int", 1, None)],
        "prior_df": [None, Interval("real", 0.0, None, closed="neither")],
        "random_state": [None, "random_state"],
        "progress": ["boolean"],
    }

    def __init__(
        self,
        n_iter: int = 1000,
        burn: int | None = None,
        thin: int = 5,
        prior_df: float | None = None,
        random_state: int | np.random.Generator | None = 0,
        progress: bool = False,
    ):
        self.n_iter = n_iter
        self.burn = burn
        self.thin = thin
        self.prior_df = prior_df
        self.random_state = random_state
        self.progress = progress

    def _check_params(self) -> None:
        owner = type(self).__name__
        if self.burn is not None:
            check_scalar(self.burn, "burn", owner, kind="int", lower=0, upper=self.n_iter - 1)

    def fit(
        self,
        df: pd.DataFrame,
        schema: Schema | dict | None = None,
        complete: Sequence[str] | None = None,
    ) -> "GaussianCopulaImputer":
        """Run the Gibbs sampler on ``df`` (missing values allowed anywhere).

        Parameters
        ----------
        df : DataFrame
            Data; every column is modelled. Never modified.
        schema : Schema or dict, optional
            Column kinds (a dict overrides inference per column).
        complete : list of str, optional
            Columns declared complete: a missing value in one of them is an error.
        """
        self._validate_params()
        check_dataframe(df, "df", min_rows=3)
        check_not_degenerate(df, list(df.columns), "df")
        if complete is not None:
            check_no_missing(df, check_columns_exist(df, complete, "complete", "df"), "df")
        if isinstance(schema, Schema):
            self.schema_ = schema
        else:
            self.schema_ = Schema.infer(df, schema)
        self.margins_ = _encode(df, self.schema_)
        q = sum(len(mg.cols) for mg in self.margins_)
        if self.prior_df is not None and self.prior_df <= q - 1:
            raise param_error("prior_df", type(self).__name__, f"> q - 1 = {q - 1} (number of latent columns - 1)", self.prior_df)
        self.q_ = q
        self.latent_names_ = _latent_names(self.margins_)
        self.columns_ = list(df.columns)
        self.like_ = df.iloc[:0].copy()
        self.index_ = df.index.copy()
        self.sampler_ = CopulaGibbs(self.margins_, q, self.prior_df)
        rng = check_random_state(self.random_state)
        burn = self.n_iter // 2 if self.burn is None else self.burn
        st = self.sampler_.initial_state()
        draws = np.empty((self.n_iter - burn, q, q))
        it = range(self.n_iter)
        if self.progress:
            from tqdm.auto import tqdm

            it = tqdm(it, desc="copula Gibbs", leave=False)
        for t in it:
            self.sampler_.step(st, rng)
            if t >= burn:
                draws[t - burn] = st.correlation
        self.state_ = st
        self.correlation_draws_ = draws
        self.correlation_ = pd.DataFrame(draws.mean(axis=0), index=self.latent_names_, columns=self.latent_names_)
        self.diagnostics_ = _chain_diagnostics(draws)
        if self.diagnostics_["max_r_hat"] is not None and self.diagnostics_["max_r_hat"] > 1.01:
            warnings.warn(
                f"GaussianCopulaImputer: split-R-hat of the correlations is {self.diagnostics_['max_r_hat']:.3f} > 1.01; "
                "increase n_iter.",
                RuntimeWarning,
                stacklevel=2,
            )
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "state_"):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with appropriate arguments "
                "before using 'impute'."
            )

    def states(self, m: int, rng: np.random.Generator) -> list[CopulaState]:
        """Continue the chain from the fitted end state; a state every ``thin`` iterations."""
        self._check_fitted()
        st = self.state_.copy()
        out = []
        for _ in range(m):
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


def split_r_hat(x: np.ndarray) -> np.ndarray:
    r"""Split-R-hat of one chain per column of ``x`` (draws, k) (Gelman et al. 2013, BDA3 eq. 11.4).

    .. math::

        \hat R = \sqrt{\frac{\frac{h-1}{h} W + \frac{B}{h}}{W}}

    with the chain cut into two halves of length h, W the mean within-half
    variance and B/h the variance of the half means.
    """
    x = np.asarray(x, dtype=float)
    h = x.shape[0] // 2
    halves = np.stack([x[:h], x[h : 2 * h]])
    W = halves.var(axis=1, ddof=1).mean(axis=0)
    B_over_h = halves.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(((h - 1) / h * W + B_over_h) / W)


def effective_sample_size(x: np.ndarray) -> np.ndarray:
    r"""ESS of one chain per column, :math:`N / (1 + 2 \sum_t \rho_t)` with Geyer's (1992)
    initial positive sequence truncation of the autocorrelations."""
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    xc = x - x.mean(axis=0)
    f = np.fft.rfft(xc, n=2 * n, axis=0)
    acov = np.fft.irfft(f * np.conj(f), axis=0)[:n] / n
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = acov / acov[0]
    out = np.empty(x.shape[1])
    for k in range(x.shape[1]):
        r = rho[:, k]
        if not np.isfinite(r[0]):
            out[k] = np.nan
            continue
        # pairs Gamma_t = rho_{2t} + rho_{2t+1}, summed while positive
        m = (n - 1) // 2
        pairs = r[0 : 2 * m : 2] + r[1 : 2 * m + 1 : 2]
        neg = np.flatnonzero(pairs <= 0)
        stop = neg[0] if neg.size else len(pairs)
        tau = -1.0 + 2.0 * pairs[:stop].sum()
        out[k] = n / max(tau, 1e-12)
    return out


def _chain_diagnostics(draws: np.ndarray) -> dict[str, Any]:
    """ESS and split-R-hat of the off-diagonal correlations (one chain)."""
    q = draws.shape[1]
    iu = np.triu_indices(q, 1)
    out: dict[str, Any] = {"n_draws": int(draws.shape[0]), "max_r_hat": None, "min_ess": None}
    if len(iu[0]) == 0 or draws.shape[0] < 8:
        return out
    x = draws[:, iu[0], iu[1]]
    out["max_r_hat"] = float(np.nanmax(split_r_hat(x)))
    out["min_ess"] = float(np.nanmin(effective_sample_size(x)))
    return out


# --------------------------------------------------------------------------- PyMC specification
def copula_pymc_model(df: pd.DataFrame, prior_df: float | None = None):
    r"""The same copula as a PyMC model, for data whose columns are continuous.

    The extended rank likelihood of a column with distinct observed values is
    the event that its latents follow the observed order; PyMC expresses it with
    an ``ordered`` transform on the sorted latents (flat density on the ordered
    set), missing latents are free, and the latent matrix gets the
    :math:`N(0, C)` density through a ``Potential``. The prior of C is the
    marginal of :math:`\Sigma \sim \mathcal{IW}(\nu_0, I)` (Barnard, McCulloch &
    Meng 2000, eq. 8):

    .. math::

        f(C) \propto |C|^{\frac{(\nu_0 - 1)(q - 1)}{2} - 1} \prod_{i=1}^{q}
        |C_{(-i)}|^{-\nu_0 / 2},

    with :math:`C_{(-i)}` the matrix without row and column i, added to an
    LKJ(eta=1) (flat) base. Because the rank likelihood depends on
    :math:`\Sigma` only through C, this has the Gibbs sampler's posterior of C.
    Ties are not supported here (the ordered transform needs strict order).
    """
    import pymc as pm
    import pytensor.tensor as pt

    x = df.to_numpy(dtype=float)
    n, q = x.shape
    nu0 = float(q + 1) if prior_df is None else float(prior_df)
    iu = np.triu_indices(q, 1)
    with pm.Model(coords={"pair": [f"{df.columns[i]}~{df.columns[j]}" for i, j in zip(*iu)]}) as model:
        C = pm.LKJCorr("C", n=q, eta=1.0, return_matrix=True)
        pm.Deterministic("corr", C[iu], dims="pair")
        logdet = lambda M: 2.0 * pt.sum(pt.log(pt.diag(pt.linalg.cholesky(M))))  # noqa: E731
        prior = ((nu0 - 1.0) * (q - 1.0) / 2.0 - 1.0) * logdet(C)
        for i in range(q):
            keep = [k for k in range(q) if k != i]
            sub = C[keep][:, keep]
            prior = prior - nu0 / 2.0 * (logdet(sub) if q > 2 else pt.log(sub[0, 0]))
        pm.Potential("corr_prior", prior)
        cols = []
        for j in range(q):
            obs = ~np.isnan(x[:, j])
            if len(np.unique(x[obs, j])) != obs.sum():
                raise ValueError(f"Column '{df.columns[j]}' has ties; copula_pymc_model needs distinct values.")
            order = np.argsort(x[obs, j])
            init = np.sort(_ndtri((np.arange(obs.sum()) + 1.0) / (obs.sum() + 1.0)))
            zs = pm.Flat(
                f"z_sorted_{j}", shape=int(obs.sum()), transform=pm.distributions.transforms.ordered, initval=init
            )
            col = pt.zeros(n)
            obs_idx = np.flatnonzero(obs)[order]
            col = pt.set_subtensor(col[obs_idx], zs)
            if (~obs).any():
                zm = pm.Flat(f"z_missing_{j}", shape=int((~obs).sum()))
                col = pt.set_subtensor(col[np.flatnonzero(~obs)], zm)
            cols.append(col)
        Z = pt.stack(cols, axis=1)
        pm.Potential("latent", pm.logp(pm.MvNormal.dist(mu=np.zeros(q), cov=C), Z).sum())
    return model
