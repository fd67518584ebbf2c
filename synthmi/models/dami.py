"""Data-augmented multiple-imputation synthesis (DA-MI; Jiang, Mitra, Gao & Wang 2022).

Pseudo-variables W are generated from each masked quasi-identifier by a
masking model M_mask with known tuning lambda (:mod:`synthmi.models.masking`).
The joint model on the augmented data D_DA = (D, W) is

.. math:: p(X, W \\mid Z, \\lambda, \\theta) =
    \\underbrace{p(X \\mid Z, \\theta)}_{M_{assoc}}
    \\underbrace{p(W \\mid X, \\lambda)}_{M_{mask}},

and the target of synthesis is the joint predictive of all quasi-identifiers
of a record (short-course slides, "The new data-augmented MI synthetic
framework"; Jiang et al. 2022, JASA 117:52-66, eq. 3)

.. math::

    P(\\tilde X_i \\mid \\tilde Z_i, \\tilde W_i, D_{DA}) \\propto \\int
    P(\\tilde X_i \\mid \\tilde Z_i, \\theta) P(\\tilde W_i \\mid \\tilde X_i, \\lambda)
    P(\\lambda, \\theta \\mid D_{DA})\\, d\\lambda\\, d\\theta .

By default (``predictive="joint"``) the copies are drawn from eq. 3 itself
for each posterior draw theta: all quasi-identifiers of a record jointly,
by exact enumeration when they are all categorical with a small product of
levels, otherwise by a within-record Gibbs sampler vectorised over records
(:mod:`synthmi.models.predictive`), ``n_sweeps`` sweeps started from the
sequential draw.

With X observed and lambda known, W carries no information about theta, so
the posterior of theta is the Rubin MI posterior (fitted exactly as in
:class:`~synthmi.models.rubin.RubinSynthesizer`); W acts only in the
predictive step. Its pieces, per quasi-identifier X_j:

* continuous X_j with normal masking (:math:`\\bar W_i \\mid X_i \\sim
  N(X_i, \\sigma_e^2/K)`) and regression prediction
  :math:`N(\\mu_i, \\sigma^2)`: the product is normal in closed form,
  truncated to the variable's bounds (:mod:`synthmi.models.truncation`),

  .. math:: \\tilde X_i \\mid \\cdot \\sim N\\left(
      \\frac{\\mu_i/\\sigma^2 + K \\bar W_i/\\sigma_e^2}{1/\\sigma^2 + K/\\sigma_e^2},
      \\frac{1}{1/\\sigma^2 + K/\\sigma_e^2}\\right) \\mathbb 1[l, u];

* categorical X_j: a finite sum over categories,
  :math:`P(\\tilde X_i = c \\mid \\cdot) \\propto p(c \\mid \\text{pred}_{ij},
  \\theta)\\, p(\\tilde W_i \\mid c)`.

``predictive="sequential"`` is the approximation of earlier versions: X~_j
drawn from these pieces given the earlier X~_{<j} and its own W~_j only, in
the visit sequence. W~ of later columns does not feed back into earlier
ones; given theta, the exact joint predictive would weight each earlier draw
by the evidence :math:`\\int p(x_k \\mid \\cdot, \\theta)\\, p(\\tilde W_k
\\mid x_k)\\, dx_k` of every later masked column k. The two coincide only
when a single quasi-identifier is masked and comes first, or more generally
when each masked quasi-identifier is conditionally independent of the
quasi-identifiers before it. ``benchmarks/dami_coverage.py`` measures the
difference with three dependent masked quasi-identifiers.

W~_i is an independent copy of W_i: by default (``w_tilde="fresh"``) a new
draw from M_mask given the confidential X_i for every synthetic copy; with
``w_tilde="reuse"`` the W drawn at fit time is used for all copies. Which
choice keeps Reiter (2003) inference valid is measured by
``benchmarks/dami_coverage.py`` (see ``tests/models/test_dami.py``).

With every mask null (K = 0, alpha = 0, pi rows equal) DA-MI is exactly
Rubin MI: the same random_state gives identical copies.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..diagnostics import ESS_MIN, RHAT_MAX
from .._random import PositionalRNG, entropy_from
from .._validate import Interval, Options, check_random_state
from .masking import MaskingModel, NormalMasking, bind_mask, make_masking
from .predictive import Prepared, can_enumerate, check_joint, enumerate_draw, gibbs_draw, sequential_draw
from .rubin import RubinSynthesizer
from ..errors import ColumnError, ParameterError


class DAMISynthesizer(RubinSynthesizer):
    """DA-MI synthesis: Rubin's MI posterior predictive conditioned on masking pseudo-variables.

    By default every record's quasi-identifiers are drawn jointly from the
    predictive of Jiang et al. (2022, eq. 3) (see the module docstring);
    ``predictive="sequential"`` gives the cheaper sequential approximation.

    Parameters
    ----------
    masks : dict, optional
        Quasi-identifier -> masking model or dict spec (see
        :func:`~synthmi.models.masking.make_masking`), e.g.
        ``{"age": NormalMasking(3, sigma_e=5), "sex": {"p": 0.9}}``.
        Unmasked quasi-identifiers are synthesized as in Rubin's MI.
    w_tilde : {"fresh", "reuse"}
        ``"fresh"``: a new W~ from M_mask given the confidential X for every
        copy; ``"reuse"``: the W drawn at fit time for all copies.
    random_state : int, Generator or None
        Seed of the fit-time pseudo-variables W (used by ``w_tilde="reuse"``).
    predictive : {"joint", "sequential"}
        ``"joint"`` (default): eq. 3, by exact enumeration or within-record
        Gibbs sweeps; ``"sequential"``: the approximation described in the
        module docstring.
    n_sweeps : int >= 0, default 5
        Gibbs sweeps per copy for the joint predictive (0 gives the
        sequential draw it starts from). ``benchmarks/dami_sweeps.py``
        compares the draw after s sweeps with exact enumeration
        (``benchmarks/results/dami_sweeps.json``): in the settings tried the
        total-variation distance falls about threefold per sweep and reaches
        the Monte Carlo floor after 2-3 sweeps. The coverage benchmark with
        three dependent masked QIs (``benchmarks/dami_coverage.py --multi``,
        1,000 replications; ``dami_coverage_multi_sweeps{2,3,5}.json`` and,
        at 10 sweeps, ``dami_coverage_multi.json``) is more demanding: the
        bias of the X1-by-X2 gap is -0.029, -0.022, -0.014 and -0.010 after
        2, 3, 5 and 10 sweeps (sequential draw: -0.128; Monte Carlo s.e.
        about 0.004), with coverage 0.93-0.96 throughout. 5 sweeps leave a
        residual within one s.e. of 10 sweeps; 3 do not.
    max_enumeration : int, default 256
        Largest product of numbers of levels for which all-categorical
        quasi-identifiers are drawn by exact enumeration instead of Gibbs.
    order, transforms, binary_link, ordinal_link, sampler, chains, draws, tune, prior_sd, progressbar, models, visit_sequence, predictor_matrix, bounds, grid,
        accept_diagnostics, rhat_max, ess_min, n_jobs, proper
        As in :class:`~synthmi.models.rubin.RubinSynthesizer`. With ``proper=False`` the
        masks enter the joint predictive exactly as with posterior draws, through the
        plug-in leaves (:meth:`synthmi.models.tree.TreePosterior.plug_in`).
    """

    method = "dami"
    _parameter_constraints = {
        **RubinSynthesizer._parameter_constraints,
        "masks": [None, "dict"],
        "w_tilde": [Options("fresh", "reuse")],
        "random_state": [None, "random_state"],
        "predictive": [Options("joint", "sequential")],
        "n_sweeps": [Interval("int", 0, None)],
        "max_enumeration": [Interval("int", 1, None)],
    }
    # the confidential values of the masked columns (fresh W~ per copy) and W
    _confidential_attributes = ("_x_conf_", "W_")

    def __init__(
        self,
        masks: Mapping[str, Any] | None = None,
        w_tilde: str = "fresh",
        random_state: int | None = None,
        order: Sequence[str] | None = None,
        transforms: dict[str, str | None] | None = None,
        binary_link: str = "logit",
        ordinal_link: str = "logit",
        sampler: str = "fast",
        chains: int = 2,
        draws: int = 1000,
        tune: int = 500,
        prior_sd: float | None = None,
        progressbar: bool = True,
        models: Mapping[str, Any] | None = None,
        visit_sequence: Sequence[str] | None = None,
        predictor_matrix: Any = None,
        bounds: Mapping[str, Any] | None = None,
        grid: Any = "auto",
        predictive: str = "joint",
        n_sweeps: int = 5,
        max_enumeration: int = 256,
        accept_diagnostics: bool = False,
        rhat_max: float = RHAT_MAX,
        ess_min: float = ESS_MIN,
        n_jobs: int = 1,
        proper: bool = True,
    ):
        super().__init__(
            order=order, transforms=transforms, binary_link=binary_link, ordinal_link=ordinal_link,
            sampler=sampler, chains=chains, draws=draws, tune=tune, prior_sd=prior_sd, progressbar=progressbar,
            models=models, visit_sequence=visit_sequence, predictor_matrix=predictor_matrix, bounds=bounds, grid=grid,
            accept_diagnostics=accept_diagnostics, rhat_max=rhat_max, ess_min=ess_min, n_jobs=n_jobs, proper=proper,
        )
        self.masks = masks
        self.w_tilde = w_tilde
        self.random_state = random_state
        self.predictive = predictive
        self.n_sweeps = n_sweeps
        self.max_enumeration = max_enumeration

    def _check_params(self) -> None:
        super()._check_params()
        # build every mask now so that bad K / sigma_e / alpha / pi fail before any fitting
        for c, spec in (self.masks or {}).items():
            make_masking(spec, c)

    def _needs_records_to_sample(self) -> bool:
        return super()._needs_records_to_sample() or bool(getattr(self, "masks_", None))

    def _fit_masks(self, qi: list[str], variance: Callable[[str], float]) -> None:
        """The masking models ``masks_`` (in memory and on partitions alike); ``variance(c)``: var of
        column ``c`` (ddof 1), which calibrates a mask given by its reliability."""
        owner = type(self).__name__
        specs = dict(self._from_spec("masks", "masks") or {})
        unknown = [c for c in specs if c not in qi]
        if unknown:
            raise ParameterError(
                f"The 'masks' parameter of {owner} names columns that are not quasi-identifiers: {unknown}. "
                f"Quasi-identifiers: {qi}.", parameter='masks'
            )
        if not specs:
            # the synthesis is then Rubin's MI exactly: say so rather than let the name suggest masking
            warnings.warn(
                f"{owner} has no masks: it synthesizes exactly as RubinSynthesizer (no pseudo-variables W). "
                "Pass masks={column: spec} to condition on masked copies, or use RubinSynthesizer.",
                UserWarning,
                stacklevel=4,
            )
        transforms = self._transforms()
        self.masks_: dict[str, MaskingModel] = {}
        for c in qi:
            if c not in specs:
                continue
            mask = make_masking(specs[c], c)
            if c in getattr(self, "parts_", {}) or c in getattr(self, "na_level_columns_", []):
                raise ColumnError(
                    f"Column '{c}' has missing values or point masses and a mask: DA-MI masks are defined for "
                    "complete columns. Mask another column, or synthesize this one without a mask."
                )
            mask = bind_mask(mask, c, self.schema_[c], lambda: variance(c))
            if isinstance(mask, NormalMasking) and not mask.is_null and transforms.get(c) is not None:
                raise ColumnError(
                    f"Column '{c}' has the {transforms[c]!r} transform and a normal mask: the mask acts on the raw "
                    "scale and the regression on the transformed one, so the predictive is not normal. "
                    "Drop one of the two."
                )
            self.masks_[c] = mask
        families = {cond.column: cond.family for cond in self.conditionals_}
        carts = [c for c, mk in self.masks_.items() if not mk.is_null and families[c] == "cart"]
        if carts:
            raise ColumnError(
                f"Columns {carts} are masked but synthesized by 'cart', which has no likelihood to combine with the "
                "masking evidence; give them " + ("'tree' or a parametric method in 'models'." if self.proper else
                                                  "'tree' in 'models' (with proper=False the parametric methods "
                                                  "have no plug-in).")
            )
        if self.predictive == "joint" and any(not mk.is_null for mk in self.masks_.values()):
            check_joint(self.conditionals_)
        # the augmented data D_DA: W from M_mask given the confidential X (seeded by random_state),
        # keyed by record position (synthmi._random) so that a partitioned fit draws the same W
        self.w_entropy_ = entropy_from(check_random_state(self.random_state))

    def _fit_extra(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        self._fit_masks(list(X.columns), lambda c: float(np.var(self._values(c), ddof=1)))
        self._x_conf_: dict[str, np.ndarray] = {c: self._values(c) for c in self.masks_}
        self.W_ = {c: mask.draw(self._x_conf_[c], self._w_rng(c, 0)) for c, mask in self.masks_.items() if not mask.is_null}

    def _fit_partitioned_extra(self, variance_of: dict[str, float], n: int) -> None:
        # W is drawn per partition (_on_rows) from the same record-keyed streams
        self._fit_masks(list(self.quasi_identifiers_), variance_of.__getitem__)

    def _on_rows(self, part: pd.DataFrame, offset: int = 0) -> "DAMISynthesizer":
        local = super()._on_rows(part, offset)
        masks = getattr(self, "masks_", {})  # none yet while the models are fitted
        local._x_conf_ = {c: local._values(c) for c in masks}
        local.W_ = {c: mk.draw(local._x_conf_[c], self._w_rng(c, offset)) for c, mk in masks.items() if not mk.is_null}
        return local

    def _w_rng(self, c: str, offset: int) -> PositionalRNG:
        """The record stream of the fit-time pseudo-variables W of column ``c``."""
        return PositionalRNG(self.w_entropy_, tag=(self.quasi_identifiers_.index(c),), offset=offset)

    def _w_tilde(self, c: str, rng: np.random.Generator) -> np.ndarray:
        if self.w_tilde == "reuse":
            return self.W_[c]
        return self.masks_[c].draw(self._x_conf_[c], rng)

    def _evidence(self, rng: np.random.Generator) -> dict[str, Any]:
        """Per masked column, what W~ says about X~: ("normal", w_bar, v) or ("table", log p(W~ | c))."""
        ev: dict[str, Any] = {}
        for cond in self.conditionals_:
            mask = self.masks_.get(cond.column)
            if mask is None or mask.is_null:
                continue
            if isinstance(mask, NormalMasking):
                if self.w_tilde == "fresh":
                    # only the mean of the K replicates enters the normal predictive: draw it directly
                    w_bar, v = mask.draw_mean(self._x_conf_[cond.column], rng)
                else:
                    w_bar, v = mask.posterior_normal(self.W_[cond.column])
                ev[cond.column] = ("normal", w_bar, v)
            else:
                W = self._w_tilde(cond.column, rng)
                ev[cond.column] = ("table", mask.loglik_table(W, cond.n_categories))
        return ev

    def _draw_copy(self, conds: list, preps: list[Prepared], rng: np.random.Generator) -> dict[str, np.ndarray]:
        ev = self._evidence(rng)
        # a two-part column (missing values / point masses) is in the joint predictive: its indicator
        # is updated with the value column's later likelihoods (predictive._two_part_indicator_update);
        # only a cart value column, which has no latent to carry, keeps the sequential draw
        cart_two_part = any(cd.part is not None and cd.family == "cart" for cd in conds)
        if not ev or self.predictive == "sequential" or cart_two_part:
            # without masking evidence the sequential draw is the joint predictive (Rubin's MI)
            values, _, _ = sequential_draw(conds, preps, ev, rng)
            scheme = "sequential" if ev else "sequential (exact: no masking evidence)"
            if cart_two_part and ev and self.predictive == "joint":
                scheme = "sequential (a two-part column modelled by cart: no latent for the joint sweeps)"
            self.predictive_info_ = {"scheme": scheme}
            return values
        if can_enumerate(conds, int(self.max_enumeration)):
            self.predictive_info_ = {"scheme": "exact enumeration"}
            return enumerate_draw(conds, preps, ev, rng, len(self.data_))
        values, rates = gibbs_draw(conds, preps, ev, rng, int(self.n_sweeps))
        info = getattr(self, "predictive_info_", None)
        if not info or info.get("scheme") != "gibbs":
            info = {"scheme": "gibbs", "n_sweeps": int(self.n_sweeps), "acceptance_rate": {}}
        for c, r in rates.items():
            info["acceptance_rate"].setdefault(c, []).append(r)
        self.predictive_info_ = info
        return values

    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        self.predictive_info_ = {}
        return super()._sample(m, rng)

    def _structure(self, m: int) -> dict[str, Any]:
        masks = getattr(self, "masks_", {})
        info = dict(getattr(self, "predictive_info_", {}) or {})
        if "acceptance_rate" in info:
            info["acceptance_rate"] = {c: float(np.mean(r)) for c, r in info["acceptance_rate"].items()}
        return {**super()._structure(m), "masks": {c: mk.to_dict() for c, mk in masks.items()},
                "w_tilde": self.w_tilde, "predictive": self.predictive, "predictive_scheme": info}
