"""Rubin's multiple-imputation synthesis with sequential conditional models ("norm+logit").

The imputation model :math:`p(X \\mid Z, \\gamma)` for quasi-identifiers
:math:`X = (X_1, \\dots, X_q)` given the released columns Z is built from
sequential conditionals in a chosen order,

.. math:: p(X \\mid Z, \\gamma) = \\prod_{j=1}^q p(X_j \\mid Z, X_{<j}, \\gamma_j),

each a regression on an intercept, Z and the preceding X's (continuous
predictors standardised, categorical ones as treatment dummies):

* continuous: normal linear regression, optionally on log X or on rank-normal
  scores (Phi^{-1}((rank - 1/2)/n), mapped back through the observed
  quantiles as in synthpop's ``normrank``; note that this back-transform
  interpolates between confidential order statistics and returns the
  observed minimum / maximum in the tails);
* binary: logistic (default) or probit regression;
* nominal: multinomial logit;
* ordinal: cumulative (ordered) logit (default) or probit.

Synthetic values are drawn from the posterior predictive
(Rubin 1993, J. Off. Stat. 9:461-468; shared/seeds/003, "Rubin's original
MI-based synthetic methods"):

.. math::

    P(\\tilde X_i \\mid \\tilde Z_i, D) = \\int P(\\tilde X_i \\mid \\tilde Z_i, \\gamma)
    P(\\gamma \\mid D)\\, d\\gamma,

sequentially (X~_1 given Z, then X~_2 given Z and X~_1, ...), with one
independent posterior draw of gamma per copy (proper MI, so that Reiter's
2003 partially-synthetic combining rules apply).

Posterior draws (``sampler``):

``"fast"`` (default)
    normal regression: exact closed-form draws under
    :math:`p(\\beta, \\log\\sigma) \\propto 1` (:mod:`synthmi.models.conjugate`);
    categorical regressions: independence Metropolis-Hastings targeting the
    exact posterior (:mod:`synthmi.models.glm`), with split-R-hat and ESS.
``"nuts"``
    the PyMC specification of every conditional
    (:mod:`synthmi.models.pymc_specs`) sampled by ``pm.sample`` (NUTS);
    diagnostics are returned as ArviZ InferenceData.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from .._random import PositionalRNG, entropy_from
from .._validate import Interval, Options
from .base import Synthesizer
from .conjugate import NormalRegressionPosterior
from .glm import CategoricalModel, group_rows, independence_mh

TRANSFORMS = (None, "log", "rank")


# ---------------------------------------------------------------------------
@dataclass
class _Encoder:
    """Numeric encoding of one predictor column."""

    name: str
    kind: str  # continuous | categorical
    mean: float = 0.0
    sd: float = 1.0
    n_levels: int = 0

    @property
    def width(self) -> int:
        return 1 if self.kind == "continuous" else self.n_levels - 1

    def encode(self, v: np.ndarray) -> np.ndarray:
        if self.kind == "continuous":
            return ((np.asarray(v, dtype=float) - self.mean) / self.sd)[:, None]
        codes = np.asarray(v, dtype=np.int64)
        return (codes[:, None] == np.arange(1, self.n_levels)[None, :]).astype(float)

    def labels(self) -> list[str]:
        if self.kind == "continuous":
            return [self.name]
        return [f"{self.name}[{k}]" for k in range(1, self.n_levels)]


@dataclass
class _Conditional:
    """The fitted conditional model of one quasi-identifier."""

    column: str
    kind: str  # schema kind of the response
    family: str  # normal | logit | probit | ologit | oprobit
    predictors: list[str]
    n_categories: int = 0
    transform: str | None = None
    coef_names: list[str] = field(default_factory=list)
    fast: Any = None  # NormalRegressionPosterior or CategoricalModel
    y_model: np.ndarray | None = None  # response on the modelling scale (continuous)
    sorted_obs: np.ndarray | None = None  # for the rank back-transform

    @property
    def intercept(self) -> bool:
        return self.family not in ("ologit", "oprobit")


# ---------------------------------------------------------------------------
class RubinSynthesizer(Synthesizer):
    """Partially synthetic data by Rubin's MI with sequential regressions ("norm+logit").

    Parameters
    ----------
    order : list of str, optional
        Order of the sequential conditionals (a permutation of the
        quasi-identifiers). Default: the order given to ``fit``.
    transforms : dict, optional
        Continuous column -> ``"log"`` or ``"rank"`` (default: none).
    binary_link : {"logit", "probit"}
    ordinal_link : {"logit", "probit", "multinomial"}
        Cumulative logit / probit (proportional odds), or ``"multinomial"``:
        a multinomial logit that ignores the order. On Adult the proportional-
        odds restriction does not hold for education given income, and the
        ordered model biases the education terms of an income analysis; the
        multinomial model does not.
    sampler : {"fast", "nuts"}
        Exact fast posterior draws (closed form / independence MH) or PyMC
        NUTS on the PyMC specification.
    chains, draws, tune : int
        MCMC settings. NUTS starts from the Laplace approximation with a dense
        mass matrix, so 500 tuning steps (step size only) suffice; 1000 draws
        per chain keep the sampling noise of R-hat below the 1.01 alarm. For the fast
        sampler ``chains`` and ``draws`` set the independence-MH chains and
        their initial kept length, doubled until split-R-hat <= 1.01 and bulk
        ESS >= 400.
    prior_sd : float > 0
        Standard deviation of the N(0, s^2) prior on the coefficients of
        categorical models (standardised predictors) and on cutpoints.
    progressbar : bool
        Show PyMC's progress bar (NUTS).

    Examples
    --------
    >>> syn = RubinSynthesizer().fit(df, quasi_identifiers=["age", "sex"])  # doctest: +SKIP
    >>> copies = syn.sample(20, random_state=1)  # doctest: +SKIP
    """

    method = "rubin"
    _parameter_constraints = {
        "order": [None, "columns"],
        "transforms": [None, "dict"],
        "binary_link": [Options("logit", "probit")],
        "ordinal_link": [Options("logit", "probit", "multinomial")],
        "sampler": [Options("fast", "nuts")],
        "chains": [Interval("int", 1, None)],
        "draws": [Interval("int", 1, None)],
        "tune": [Interval("int", 0, None)],
        "prior_sd": [Interval("real", 0.0, None, closed="neither")],
        "progressbar": ["boolean"],
    }

    def __init__(
        self,
        order: Sequence[str] | None = None,
        transforms: dict[str, str | None] | None = None,
        binary_link: str = "logit",
        ordinal_link: str = "logit",
        sampler: str = "fast",
        chains: int = 2,
        draws: int = 1000,
        tune: int = 500,
        prior_sd: float = 10.0,
        progressbar: bool = True,
    ):
        self.order = order
        self.transforms = transforms
        self.binary_link = binary_link
        self.ordinal_link = ordinal_link
        self.sampler = sampler
        self.chains = chains
        self.draws = draws
        self.tune = tune
        self.prior_sd = prior_sd
        self.progressbar = progressbar

    # ---- parameters --------------------------------------------------------
    def _needs_records_to_sample(self) -> bool:
        # NUTS samples the posterior at sample time, from the records; so does the
        # fast sampler for a categorical conditional (its likelihood is the grouped
        # design rows: the records' predictors). Normal conditionals keep only
        # sufficient statistics (conjugate posterior).
        return self.sampler == "nuts" or any(c.family != "normal" for c in getattr(self, "conditionals_", []))

    def _strip_records(self, state: dict[str, Any]) -> bool:
        conds = state.get("conditionals_")
        if not conds:
            return False
        import dataclasses

        stripped = []
        for c in conds:
            # y_model: the response in record order; a categorical model's grouped
            # design rows are records too. Sufficient statistics of normal models stay.
            keep_fast = c.family == "normal"
            stripped.append(dataclasses.replace(c, y_model=None, fast=c.fast if keep_fast else None))
        state["conditionals_"] = stripped
        return True

    def _check_params(self) -> None:
        owner = type(self).__name__
        for c, t in (self.transforms or {}).items():
            if t not in TRANSFORMS:
                raise ValueError(
                    f"The transform for column '{c}' in the 'transforms' parameter of {owner} must be one of "
                    f"None, 'log', 'rank'. Got {t!r} instead."
                )

    # ---- fit ----------------------------------------------------------------
    def _resolve_order(self, qi: list[str]) -> list[str]:
        order = self._from_spec("order", "visit_sequence")
        if order is None:
            return list(qi)
        order = list(order)
        if sorted(order) != sorted(qi) or len(set(order)) != len(order):
            raise ValueError(
                f"The 'order' parameter of {type(self).__name__} must be a permutation of the quasi-identifiers "
                f"{qi}. Got {order} instead."
            )
        return order

    def _encoder(self, c: str) -> _Encoder:
        v = self.schema_[c]
        if v.kind == "continuous":
            x = self.data_[c].to_numpy(dtype=float)
            sd = float(x.std())
            return _Encoder(c, "continuous", float(x.mean()), sd if sd > 0 else 1.0)
        return _Encoder(c, "categorical", n_levels=v.n_levels)

    def _values(self, c: str) -> np.ndarray:
        """Column as floats (continuous) or integer codes (categorical)."""
        if self.schema_[c].kind == "continuous":
            return self.data_[c].to_numpy(dtype=float)
        codes = self.schema_.codes(self.data_[c])
        return codes

    def _family(self, kind: str, n_levels: int) -> str:
        if kind == "continuous":
            return "normal"
        if kind == "binary":
            return self.binary_link
        if kind == "nominal":
            return "logit"
        return {"logit": "ologit", "probit": "oprobit", "multinomial": "logit"}[self.ordinal_link]

    def _design(self, cond: _Conditional, X_values: dict[str, np.ndarray]) -> np.ndarray:
        blocks = [self._Z_design_]
        for c in cond.predictors:
            if c in X_values:
                blocks.append(self.encoders_[c].encode(X_values[c]))
        D = np.hstack(blocks) if len(blocks) > 1 else blocks[0]
        return D if cond.intercept else D[:, 1:]

    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        owner = type(self).__name__
        qi = list(X.columns)
        self.order_ = self._resolve_order(qi)
        transforms = dict(self.transforms or {})
        unknown = [c for c in transforms if c not in qi]
        if unknown:
            raise ValueError(f"The 'transforms' parameter of {owner} names columns that are not quasi-identifiers: {unknown}.")
        for c, t in transforms.items():
            if t is not None and self.schema_[c].kind != "continuous":
                raise ValueError(f"The transform {t!r} given for column '{c}' needs a continuous column; '{c}' is {self.schema_[c].kind}.")
            if t == "log" and np.any(self.data_[c].to_numpy(dtype=float) <= 0):
                raise ValueError(f"The 'log' transform given for column '{c}' needs positive values; the column has values <= 0.")
        self.encoders_ = {c: self._encoder(c) for c in list(Z.columns) + qi}
        n = len(self.data_)
        zblocks = [np.ones((n, 1))] + [self.encoders_[c].encode(self._values(c)) for c in Z.columns]
        self._Z_design_ = np.hstack(zblocks)
        z_names = ["(Intercept)"] + [lab for c in Z.columns for lab in self.encoders_[c].labels()]
        obs = {c: self._values(c) for c in qi}
        self.conditionals_: list[_Conditional] = []
        for j, c in enumerate(self.order_):
            v = self.schema_[c]
            fam = self._family(v.kind, v.n_levels)
            cond = _Conditional(
                column=c, kind=v.kind, family=fam, predictors=self.order_[:j],
                n_categories=v.n_levels, transform=transforms.get(c),
            )
            names = z_names + [lab for p in cond.predictors for lab in self.encoders_[p].labels()]
            cond.coef_names = names if cond.intercept else names[1:]
            D = self._design(cond, obs)
            if fam == "normal":
                y = obs[c]
                if cond.transform == "log":
                    y = np.log(y)
                elif cond.transform == "rank":
                    cond.sorted_obs = np.sort(y)
                    ranks = pd.Series(y).rank(method="average").to_numpy()
                    y = ndtri((ranks - 0.5) / n)
                cond.y_model = y
                cond.fast = NormalRegressionPosterior.fit(D, y)
            else:
                Xg, Yg = group_rows(D, obs[c], v.n_levels)
                cond.fast = CategoricalModel(fam, Xg, Yg, prior_sd=float(self.prior_sd))
            self.conditionals_.append(cond)
        self._fit_extra(X, Z)

    def _fit_extra(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        """Hook for subclasses (DA-MI draws its pseudo-variables here)."""

    # ---- posterior draws ------------------------------------------------------
    def _posterior_draws(self, m: int, rng: np.random.Generator) -> list[list[dict[str, np.ndarray]]]:
        """For each conditional, ``m`` independent posterior parameter sets."""
        if self.sampler == "nuts":
            from .pymc_specs import sample_conditionals

            draws, idata = sample_conditionals(self, m, rng)
            self.diagnostics_ = idata
            return draws
        out = []
        diag: dict[str, Any] = {"sampler": "fast", "columns": {}}
        r_hats, esss = [], []
        for cond in self.conditionals_:
            if cond.family == "normal":
                beta, sigma = cond.fast.draw(m, rng)
                out.append([{"beta": beta[i], "sigma": sigma[i]} for i in range(m)])
                diag["columns"][cond.column] = {"family": "normal", "method": "closed-form conjugate draws", "independent_draws": m}
                continue
            chains = int(self.chains)
            n_keep = max(int(self.draws), -(-m // chains))
            res = independence_mh(cond.fast, n_keep, rng, chains=max(chains, 1), warn=False)
            n_keep = res.draws.shape[1]
            pooled = res.draws.reshape(-1, res.draws.shape[-1])
            # evenly spaced draws across the pooled chains: far apart, hence nearly independent
            idx = np.linspace(0, pooled.shape[0] - 1, m).round().astype(int) if m > 1 else np.array([pooled.shape[0] - 1])
            params = cond.fast.unpack(pooled[idx])
            out.append([{k: v[i] for k, v in params.items()} for i in range(m)])
            diag["columns"][cond.column] = {
                "family": cond.family, "method": "independence Metropolis-Hastings",
                "chains": chains, "draws_per_chain": n_keep, "acceptance_rate": res.acceptance,
                "r_hat": res.r_hat, "ess_bulk": res.ess_bulk,
            }
            r_hats.append(res.r_hat)
            esss.append(res.ess_bulk)
        diag["max_r_hat"] = float(np.nanmax(r_hats)) if r_hats else None
        diag["min_ess_bulk"] = float(np.nanmin(esss)) if esss else None
        self.diagnostics_ = diag
        return out

    # ---- predictive draws -------------------------------------------------------
    def _predict(self, cond: _Conditional, j: int, D: np.ndarray, theta: dict[str, np.ndarray],
                 rng: np.random.Generator, copy: int) -> np.ndarray:
        """One synthetic column from p(X_j | Z, X~_<j, theta); DA-MI overrides this."""
        if cond.family == "normal":
            mu = D @ theta["beta"]
            return mu + theta["sigma"] * rng.standard_normal(mu.shape[0])
        logp = cond.fast.log_probs({k: v[None] for k, v in theta.items()}, D)[0]
        return _draw_categorical(logp, rng)

    def _back_transform(self, cond: _Conditional, y: np.ndarray) -> np.ndarray:
        if cond.transform == "log":
            return np.exp(y)
        if cond.transform == "rank":
            # synthpop normrank: normal scores -> quantiles of the observed values
            q = ndtr(y)
            pos = q * len(cond.sorted_obs) - 0.5
            return np.interp(pos, np.arange(len(cond.sorted_obs)), cond.sorted_obs)
        return y

    def _sampling_plan(self, m: int, rng: np.random.Generator) -> tuple[list, tuple[int, int]]:
        """Posterior draws for ``m`` copies and the root key of the record-level streams."""
        post_rng, rec_rng = rng.spawn(2)
        return self._posterior_draws(m, post_rng), entropy_from(rec_rng)

    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        thetas, entropy = self._sampling_plan(m, rng)
        # record-level draws keyed by record position (synthmi._random), so that a copy made
        # partition by partition (synthmi.scale) is the same as this one
        out = [self._sample_copy(i, thetas, PositionalRNG(entropy, tag=(i,), offset=0)) for i in range(m)]
        self._check_diagnostics()
        return out

    def _sample_copy(self, i: int, thetas: list, r) -> pd.DataFrame:
        """Copy ``i`` of the quasi-identifiers of the rows in ``self.data_`` (one posterior draw each).

        ``r`` supplies the record-level draws (a :class:`~synthmi._random.PositionalRNG`
        positioned at the first row of ``self.data_``); :mod:`synthmi.scale` calls this on
        each partition.
        """
        syn: dict[str, np.ndarray] = {}
        for j, cond in enumerate(self.conditionals_):
            D = self._design(cond, syn)
            syn[cond.column] = self._predict(cond, j, D, thetas[j][i], r, i)
        frame = {}
        for cond in self.conditionals_:
            c = cond.column
            if cond.family == "normal":
                frame[c] = pd.Series(self._back_transform(cond, syn[c]), name=c)
            else:
                frame[c] = self.schema_.from_codes(c, syn[c], like=self.data_[c]).reset_index(drop=True)
        return pd.DataFrame({c: frame[c].array for c in self.quasi_identifiers_}, index=self.data_.index)

    def _check_diagnostics(self) -> None:
        d = getattr(self, "diagnostics_", None)
        if isinstance(d, dict):
            rh = d.get("max_r_hat")
        else:
            from ..synthetic import diagnostics_summary

            rh = diagnostics_summary(d).get("max_r_hat") if d is not None else None
        if rh is not None and np.isfinite(rh) and rh > 1.01:
            warnings.warn(
                f"{type(self).__name__}: the posterior sampler reports max r_hat = {rh:.3f} > 1.01; "
                "increase 'draws'/'tune' before trusting the copies.",
                RuntimeWarning,
                stacklevel=3,
            )

    def _diagnostics(self) -> Any:
        return getattr(self, "diagnostics_", None)

    def coefficient_names(self) -> dict[str, list[str]]:
        """Names of the regression coefficients of each conditional model."""
        self._check_fitted()
        return {c.column: list(c.coef_names) for c in self.conditionals_}


def _draw_categorical(logp: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One category per row from (n, C) log-probabilities (inverse CDF, one uniform per row)."""
    p = np.exp(logp - logp.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    u = rng.random(p.shape[0]) * cdf[:, -1]
    return np.minimum((u[:, None] >= cdf).sum(axis=1), p.shape[1] - 1).astype(np.int64)
