"""Data-augmented multiple-imputation synthesis (DA-MI; Jiang, Mitra, Gao & Wang 2022).

Pseudo-variables W are generated from each masked quasi-identifier by a
masking model M_mask with known tuning lambda (:mod:`synthmi.models.masking`).
The joint model on the augmented data D_DA = (D, W) is

.. math:: p(X, W \\mid Z, \\lambda, \\theta) =
    \\underbrace{p(X \\mid Z, \\theta)}_{M_{assoc}}
    \\underbrace{p(W \\mid X, \\lambda)}_{M_{mask}},

and the target of synthesis is the joint predictive of all quasi-identifiers
of a record (shared/seeds/003, "The new data-augmented MI synthetic
framework"; Jiang et al. 2022, JASA 117:52-66, eq. 3)

.. math::

    P(\\tilde X_i \\mid \\tilde Z_i, \\tilde W_i, D_{DA}) \\propto \\int
    P(\\tilde X_i \\mid \\tilde Z_i, \\theta) P(\\tilde W_i \\mid \\tilde X_i, \\lambda)
    P(\\lambda, \\theta \\mid D_{DA})\\, d\\lambda\\, d\\theta .

This class draws from a sequential approximation to it, not from eq. 3
itself (see "Sequential approximation" below).

With X observed and lambda known, W carries no information about theta, so
the posterior of theta is the Rubin MI posterior (fitted exactly as in
:class:`~synthmi.models.rubin.RubinSynthesizer`); W acts only in the
predictive step. For each copy and each quasi-identifier X_j, in the
sequential order:

* continuous X_j with normal masking (:math:`\\bar W_i \\mid X_i \\sim
  N(X_i, \\sigma_e^2/K)`) and regression prediction
  :math:`N(\\mu_i, \\sigma^2)`: the predictive is normal in closed form,

  .. math:: \\tilde X_i \\mid \\cdot \\sim N\\left(
      \\frac{\\mu_i/\\sigma^2 + K \\bar W_i/\\sigma_e^2}{1/\\sigma^2 + K/\\sigma_e^2},
      \\frac{1}{1/\\sigma^2 + K/\\sigma_e^2}\\right);

* categorical X_j: a finite sum over categories,
  :math:`P(\\tilde X_i = c \\mid \\cdot) \\propto p(c \\mid \\tilde Z_i,
  \\tilde X_{i,<j}, \\theta)\\, p(\\tilde W_i \\mid c)`.

Sequential approximation. X~_j is drawn given theta, Z~, the earlier
X~_{<j} and its own W~_j only:
:math:`p(\\tilde X_j \\mid \\cdot) \\propto p(\\tilde X_j \\mid \\tilde Z,
\\tilde X_{<j}, \\theta)\\, p(\\tilde W_j \\mid \\tilde X_j)`. W~ of later
columns does not feed back into earlier ones. Given theta, the exact joint
predictive of eq. 3 would weight each earlier draw by the evidence
:math:`\\int p(x_k \\mid \\tilde Z, \\tilde X_{<k}, \\theta)\\,
p(\\tilde W_k \\mid x_k)\\, dx_k` of every later masked column k, which the
sequential draw omits. The two coincide only when these evidence terms do
not depend on the earlier X~: when a single quasi-identifier is masked and it
comes first in ``order``, or, more generally, when each masked
quasi-identifier is conditionally independent of the quasi-identifiers
before it given Z (under M_assoc, for each theta). Otherwise (several dependent masked columns, or a masked
column after columns it depends on) the copies are an approximation to
eq. 3. The evidence for valid inference is for one masked quasi-identifier:
partial-rule coverage in ``benchmarks/dami_coverage.py`` and the tuning
behaviour in ``benchmarks/dami_tuning.py`` (both tested in
``tests/test_dami.py``).

W~_i is an independent copy of W_i: by default (``w_tilde="fresh"``) a new
draw from M_mask given the confidential X_i for every synthetic copy; with
``w_tilde="reuse"`` the W drawn at fit time is used for all copies. Which
choice keeps Reiter (2003) inference valid is measured by
``benchmarks/dami_coverage.py`` (see ``tests/test_dami.py``).

With every mask null (K = 0, alpha = 0, pi rows equal) DA-MI is exactly
Rubin MI: the same random_state gives identical copies.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._random import PositionalRNG, entropy_from
from .._validate import Options, check_random_state
from .masking import MaskingModel, NormalMasking, TransitionMasking, make_masking
from .rubin import RubinSynthesizer, _Conditional, _draw_categorical


class DAMISynthesizer(RubinSynthesizer):
    """DA-MI synthesis: Rubin's MI posterior predictive conditioned on masking pseudo-variables.

    Each masked quasi-identifier is drawn given its own W~ and the earlier
    synthetic columns (sequentially). This equals the joint predictive of
    Jiang et al. (2022, eq. 3) only for a single masked quasi-identifier placed
    first in ``order`` or for masked quasi-identifiers conditionally
    independent of the earlier ones given Z; otherwise it approximates it
    (see the module docstring). Coverage and tuning were checked with one
    masked quasi-identifier.

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
    order, transforms, binary_link, ordinal_link, sampler, chains, draws, tune, prior_sd, progressbar
        As in :class:`~synthmi.models.rubin.RubinSynthesizer`.
    """

    method = "dami"
    _parameter_constraints = {
        **RubinSynthesizer._parameter_constraints,
        "masks": [None, "dict"],
        "w_tilde": [Options("fresh", "reuse")],
        "random_state": [None, "random_state"],
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
        prior_sd: float = 10.0,
        progressbar: bool = True,
    ):
        super().__init__(
            order=order, transforms=transforms, binary_link=binary_link, ordinal_link=ordinal_link,
            sampler=sampler, chains=chains, draws=draws, tune=tune, prior_sd=prior_sd, progressbar=progressbar,
        )
        self.masks = masks
        self.w_tilde = w_tilde
        self.random_state = random_state

    def _check_params(self) -> None:
        super()._check_params()
        # build every mask now so that bad K / sigma_e / alpha / pi fail before any fitting
        for c, spec in (self.masks or {}).items():
            make_masking(spec, c)

    def _needs_records_to_sample(self) -> bool:
        return super()._needs_records_to_sample() or bool(getattr(self, "masks_", None))

    def _fit_extra(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        owner = type(self).__name__
        qi = list(X.columns)
        specs = dict(self._from_spec("masks", "masks") or {})
        unknown = [c for c in specs if c not in qi]
        if unknown:
            raise ValueError(
                f"The 'masks' parameter of {owner} names columns that are not quasi-identifiers: {unknown}. "
                f"Quasi-identifiers: {qi}."
            )
        transforms = dict(self.transforms or {})
        self.masks_: dict[str, MaskingModel] = {}
        self._x_conf_: dict[str, np.ndarray] = {}
        for c in qi:
            if c not in specs:
                continue
            mask = make_masking(specs[c], c)
            kind = self.schema_[c].kind
            if kind == "continuous":
                if not isinstance(mask, NormalMasking):
                    raise ValueError(
                        f"Column '{c}' is continuous; its mask must be a NormalMasking (K, sigma_e). "
                        f"Got {type(mask).__name__} instead."
                    )
                if not mask.is_null and transforms.get(c) is not None:
                    raise ValueError(
                        f"Column '{c}' has the {transforms[c]!r} transform and a normal mask: the mask acts on the raw "
                        "scale and the regression on the transformed one, so the predictive is not normal. "
                        "Drop one of the two."
                    )
                mask = mask.calibrate(self._values(c))
            else:
                if isinstance(mask, NormalMasking):
                    raise ValueError(
                        f"Column '{c}' is {kind}; its mask must be LinearCategoricalMasking (alpha) or "
                        "TransitionMasking (pi or p). Got NormalMasking instead."
                    )
                if isinstance(mask, TransitionMasking):
                    mask = mask.bind(self.schema_[c].n_levels)
            self.masks_[c] = mask
            self._x_conf_[c] = self._values(c)
        # the augmented data D_DA: W from M_mask given the confidential X (seeded by random_state)
        # keyed by record position (synthmi._random) so that a partitioned fit draws the same W
        self.w_entropy_ = entropy_from(check_random_state(self.random_state))
        self.W_ = {c: mask.draw(self._x_conf_[c], self._w_rng(c, 0)) for c, mask in self.masks_.items() if not mask.is_null}

    def _w_rng(self, c: str, offset: int) -> PositionalRNG:
        """The record stream of the fit-time pseudo-variables W of column ``c``."""
        return PositionalRNG(self.w_entropy_, tag=(self.quasi_identifiers_.index(c),), offset=offset)

    def _w_tilde(self, c: str, rng: np.random.Generator) -> np.ndarray:
        if self.w_tilde == "reuse":
            return self.W_[c]
        return self.masks_[c].draw(self._x_conf_[c], rng)

    def _predict(self, cond: _Conditional, j: int, D: np.ndarray, theta: dict[str, np.ndarray],
                 rng: np.random.Generator, copy: int) -> np.ndarray:
        mask = self.masks_.get(cond.column)
        if mask is None or mask.is_null:
            return super()._predict(cond, j, D, theta, rng, copy)
        W = self._w_tilde(cond.column, rng)
        if cond.family == "normal":
            mu = D @ theta["beta"]
            w_bar, v = mask.posterior_normal(W)
            prec = 1.0 / theta["sigma"] ** 2 + 1.0 / v
            mean = (mu / theta["sigma"] ** 2 + w_bar / v) / prec
            return mean + np.sqrt(1.0 / prec) * rng.standard_normal(mu.shape[0])
        logp = cond.fast.log_probs({k: val[None] for k, val in theta.items()}, D)[0]
        return _draw_categorical(logp + mask.loglik_table(W, cond.n_categories), rng)

    def _structure(self, m: int) -> dict[str, Any]:
        masks = getattr(self, "masks_", {})
        return {"masks": {c: mk.to_dict() for c, mk in masks.items()}, "w_tilde": self.w_tilde}
