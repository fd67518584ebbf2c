r"""Risk-subgroup targeted DA-MI with a Gaussian copula and missing data.

The model (short-course slides, "The joint subgroup-targeted imputation model";
Jiang, Mitra, Gao & Wang 2022 for DA-MI):

.. math::

    p(X_{obs}, Z_{obs}, W_{obs} \mid H) = \int
    \underbrace{p(X, Z \mid H, \theta)}_{M_{copula}}
    \prod_{g \in \{low, medium, high\}}
    \underbrace{p(W^g \mid X^g, \lambda_g)}_{M^g_{mask}}
    \, dZ_{mis}\, dX_{mis}.

* :math:`M_{copula}` is :class:`~synthmi.models.copula.GaussianCopulaImputer` (Hoff
  2007): every column, quasi-identifier (X) or not (Z), may have missing
  values, imputed under MAR.
* Records are labelled low / medium / high re-identification risk
  (:func:`~synthmi.evaluation.risk_subgroups`, k0 matching neighbours) and
  subgroup g gets its own masking models :math:`\lambda_g` (e.g.
  :class:`NormalMasking` K_g, sigma_e,g for a continuous QI; ``alpha_g`` or
  ``p_g`` for a categorical one), so high-risk records can be perturbed more
  and low-risk records less.
* Synthetic :math:`\tilde X_i` are drawn from the posterior predictive as in
  DA-MI: for each copy a fresh :math:`\tilde W_i \sim p(W \mid X_i,
  \lambda_{g(i)})` from the (completed) confidential X, then

  .. math:: \tilde X_i \sim p(X \mid Z_i, \tilde W_i, \theta) \propto
      p(X \mid Z_i, \theta)\, p(\tilde W_i \mid X, \lambda_{g(i)}),

  by Gibbs sweeps over the latent vector of record i: the quasi-identifiers
  with the masking evidence, the Z latents within the slots of Z's
  (completed) levels. A ranked QI is updated by drawing its level from
  :math:`\Pr(l) \propto [\Phi(\frac{c_l - m_i}{s}) - \Phi(\frac{c_{l-1} -
  m_i}{s})]\, p(\tilde W_i \mid x_l)` and then its latent within the slot;
  a nominal QI by an independence Metropolis step proposing from the copula
  conditional. Since the Z latents are resampled too, the result does not
  depend on the latent values of record i's confidential X.

Agency microdata (column roles the copula sees)
------------------------------------------------
:meth:`RiskTargetedSynthesizer._copula_frame` builds the frame the copula is
fitted on from the released columns; the copies are assembled from it as
follows.

* **Survey weight** (``weights``): released unchanged and left out of the
  copula unless ``weight_as_predictor=True`` (:mod:`synthmi.models.base`).
* **Missing values of a synthesized column** (item non-response; with
  ``masks`` given, i.e. when the copies are synthetic, not imputations): a 0/1
  indicator ``<col>_NA`` enters the copula as one more synthesized (binary)
  column, its coefficient on the column's own latent held at zero
  (:meth:`~synthmi.models.copula.CopulaGibbs.fix_zero_coefficients`): the
  missingness does not depend on the missing value given the ranked latents
  and the levels of the blocks earlier in the copula's order -- a MAR-type restriction, not independence given
  everything else, since later blocks regress on both. A copy carries a
  missing value where its synthetic indicator is 1, so the copies'
  missingness rate follows the original's instead of being imputed away.
  With fewer than ``min_missing_cells`` item-missing cells no indicator is
  added (a handful of ones leaves its correlations to the prior and stalls
  the chain); the copies' missing values are then drawn completely at random,
  at a rate from the Jeffreys posterior Beta(k + 1/2, n - k + 1/2).
* **Skip patterns** (``rules``: hours worked missing when ``employed ==
  'No'``; also detected: a column missing exactly on the rows where a complete
  categorical column takes some of its levels, :func:`_skip_patterns`, e.g.
  a kept occupation): those cells do not exist, so they are left missing inside the
  copula (imputed there, never released: the rule blanks them in every copy),
  the indicator above is modelled on the other rows only, and the coefficients
  linking the column and a categorical condition column that takes a single
  level where the value exists are held at zero (the association of a value
  that does not exist with the condition that removes it has nothing to be
  estimated from, and left free it made the chain crawl: split R-hat 2.3 on
  the agency file). A condition column with two or more levels (or a
  continuous one) on those rows keeps its coefficient: the association is in
  the data.
* **High-cardinality kept columns**: a kept nominal column with more than
  ``max_kept_levels`` observed levels (51 states) is conditioned on through
  its ``max_kept_levels - 1`` most frequent levels, the others pooled into one
  level ``<other>`` (ties by level order). A nominal column with L levels is
  L - 1 latent columns whose probit block regresses on every earlier latent;
  50 of them made the sampler fail (R-hat 3.6). The column itself is released
  unchanged; ``structure["copula_columns"]`` records what was pooled (level
  counts only).

Output and inference
--------------------
``masks=None``
    Plain copula multiple imputation: the copies are the m completed data sets
    (observed values unchanged). Combine with ``combine(..., rule="rubin")``
    (Rubin 1987).
``masks`` given, ``r=None`` (one stage)
    Each copy imputes the missing values and synthesizes the QIs from one
    posterior draw. There is no exact rule for this output (Reiter 2004);
    ``rule="rubin"`` is conservative (its variance :math:`\bar v + (1 +
    1/m) b` exceeds the partial-synthesis :math:`\bar v + b/m`).
``masks`` given, ``r`` set (two stages, nested)
    ``sample(m)`` returns m x r copies: m completed data sets (imputation),
    each followed by r synthetic copies drawn from the posterior given that
    completed data set (the chain continued with the imputed values held
    fixed). Copies come nest by nest (``structure={"m": m, "r": r}``);
    combine with ``rule="nested"`` (Reiter 2004). This is the valid output
    when data are missing.

References
----------
Jiang, B., Raftery, A. E., Steele, R. J. and Wang, N. (2022). Balancing
inferential integrity and disclosure risk via model targeted masking and
multiple imputation. JASA 117(537), 52-66.
Reiter, J. P. (2004). Simultaneous use of multiple imputation for missing data
and disclosure limitation. Survey Methodology 30, 235-242.
Hoff, P. D. (2007). Extending the rank likelihood for semiparametric copula
estimation. Annals of Applied Statistics 1, 265-283.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numba
import numpy as np
import pandas as pd

from ..diagnostics import ESS_MIN, RHAT_MAX
from .._validate import Interval, Options, check_columns_exist, check_no_missing, param_error
from .base import Synthesizer
from .copula import (
    CopulaGibbs,
    CopulaState,
    GaussianCopulaImputer,
    _Margin,
    _log_ndtr_scalar,
    _gumbel_argmax,
    _nominal_level,
    levels_to_frame,
    mnp_draw_latents,
    truncated_normal,
)
from .masking import MaskingModel, bind_mask, make_masking
from ..errors import ParameterError

__all__ = ["RiskTargetedSynthesizer", "RISK_LEVELS", "draw_levels"]

RISK_LEVELS = ("low", "medium", "high")
_BINARY_CUT = np.zeros(1)


def draw_levels(mean: np.ndarray, sd: float, edges: np.ndarray, evidence: np.ndarray | None,
                rng: np.random.Generator) -> np.ndarray:
    r"""One level per record from :math:`\Pr(l) \propto [\Phi(\frac{e_{l+1} - m_i}{sd}) -
    \Phi(\frac{e_l - m_i}{sd})]\, \exp(\mathrm{ev}_{il})` (sorted ``edges``, L + 1 of them).

    Inversion with one uniform per record; compiled, one normal CDF per edge (the lower tail
    left of the mean, the upper tail right of it, so an interval's mass keeps its relative
    precision). A record whose weights all underflow (mean beyond ~37 sd of every edge, or
    evidence against every level with mass) is drawn in log space (:func:`log_interval_probability`
    per level). ``evidence`` (n, L), each row's maximum 0, or None.
    """
    mean = np.ascontiguousarray(mean, dtype=float)
    edges = np.ascontiguousarray(edges, dtype=float)
    ev = np.zeros((0, edges.size - 1)) if evidence is None else np.ascontiguousarray(evidence, dtype=float)
    return _draw_levels_kernel(mean, float(sd), edges, ev, rng.random(mean.size))


@numba.njit(cache=True)
def _draw_levels_kernel(mean, sd, edges, ev, u):  # pragma: no cover - compiled
    n = mean.size
    L = edges.size - 1
    has_ev = ev.shape[0] > 0
    out = np.empty(n, dtype=np.int64)
    cdf = np.empty(L + 1)
    sf = np.empty(L + 1)
    w = np.empty(L)
    for i in range(n):
        for k in range(L + 1):
            t = (edges[k] - mean[i]) / sd
            if t <= 0.0:
                cdf[k] = 0.5 * math.erfc(-t * 0.7071067811865476)
                sf[k] = 1.0 - cdf[k]
            else:
                sf[k] = 0.5 * math.erfc(t * 0.7071067811865476)
                cdf[k] = 1.0 - sf[k]
        tot = 0.0
        for l in range(L):
            t = (edges[l] - mean[i]) / sd
            p = cdf[l + 1] - cdf[l] if t <= 0.0 else sf[l] - sf[l + 1]
            p = max(p, 0.0)
            if has_ev:
                p *= math.exp(ev[i, l])
            w[l] = p
            tot += p
        if not (tot > 1e-290):
            # log space: log(Phi(b) - Phi(a)) on the lower tail (mirrored right of the mean)
            lmax = -np.inf
            for l in range(L):
                a = (edges[l] - mean[i]) / sd
                b = (edges[l + 1] - mean[i]) / sd
                if a > 0.0:
                    a, b = -b, -a
                lb = _log_ndtr_scalar(b)
                la = _log_ndtr_scalar(a)
                v = lb + math.log1p(-math.exp(la - lb)) if b > a else -np.inf
                if has_ev:
                    v += ev[i, l]
                w[l] = v
                lmax = max(lmax, v)
            tot = 0.0
            for l in range(L):
                w[l] = math.exp(w[l] - lmax)
                tot += w[l]
        target = u[i] * tot
        acc = 0.0
        lev = L - 1
        for l in range(L):
            acc += w[l]
            if target < acc and w[l] > 0.0:
                lev = l
                break
        # (rounding can leave target above the last partial sum: the last level with weight)
        if lev == L - 1 and not (w[lev] > 0.0):
            for l in range(L - 1, -1, -1):
                if w[l] > 0.0:
                    lev = l
                    break
        out[i] = lev
    return out


class RiskTargetedSynthesizer(Synthesizer):
    r"""Risk-subgroup targeted DA-MI synthesis on a Gaussian copula with missing data.

    Parameters
    ----------
    masks : dict, optional
        ``None``: no synthesis, plain copula multiple imputation. A dict
        ``{qi: mask}``: the same masks for every record (untargeted DA-MI). A
        dict ``{"low": {qi: mask}, "medium": {...}, "high": {...}}`` naming
        all three subgroups: subgroup-specific tuning. A mask is a masking
        model or a dict spec (:func:`~synthmi.models.masking.make_masking`,
        e.g. ``{"K": 1, "sigma_e": 8}``, ``{"alpha": 1}``, ``{"p": 0.8}``). A
        quasi-identifier without a mask in a subgroup is synthesized from the
        copula alone (Rubin 1993) for those records.
    subgroups : Series or array of labels, optional
        Risk labels low / medium / high per record (aligned with the data's
        rows). Default: :func:`~synthmi.evaluation.risk_subgroups` of the
        data with ``k0`` and ``tolerance`` (only used with per-subgroup masks).
    k0 : int, default 5
        Neighbours that make a record "not unique" (risk subgroups).
    tolerance : None, number or dict
        Closeness on continuous QIs for the risk subgroups.
    r : int, optional
        Synthetic copies per completed data set (two-stage nested output; see
        the module docstring). ``None``: one-stage copies.
    complete : list of str, optional
        Columns declared complete: a missing value in one is an error.
    n_iter, burn, thin, prior_df
        Gibbs settings of :class:`~synthmi.models.copula.GaussianCopulaImputer`;
        ``thin`` also separates the states used for successive copies. ``n_iter``
        defaults to ``"auto"``: the chains run 1,000 iterations, then continue from
        their end states until the release check (``rhat_max``, ``ess_min``) holds,
        within ``max_seconds`` (stopped early, nothing released, when the ESS rate
        projects beyond it); an integer runs exactly that many (issue 28).
    n_sweeps : int, default 10
        Gibbs sweeps over each synthetic record's latent vector.
    random_state : int, Generator or None, default 0
        Seed of the fitting chain.
    progressbar : bool, default False
        Progress lines on stderr while fitting (iterations, elapsed seconds, an
        ETA, every few seconds; the pilot's estimate); a callback given with
        ``set_progress`` receives them instead (the command line's way).
    chains, n_jobs : int, default 2 and 1
        Chains of the copula sampler and how many run in parallel processes;
        ``n_jobs`` processes also draw the nests of the two-stage output. The
        command line's default is ``n_jobs`` = min(chains, cores) (the fit is the
        same whatever ``n_jobs``; ``--param n_jobs=1`` runs the chains in turn).
    impute_keep : bool, default False
        Missing values of the kept (Z) columns are imputed inside the model in
        any case (the copula needs complete latents), but by default the copies
        carry the kept columns exactly as given, missing values included. With
        ``True`` the copies carry the imputed kept columns (each copy its own
        draw). Either way ``diagnostics["imputed_cells"]`` (and metadata.json)
        records per column how many cells were imputed and whether the imputed
        values were released (counts only, never values).
    accept_diagnostics : bool, default False
        Release the copies even when the sampler fails the convergence check
        (:func:`synthmi.diagnostics.check_diagnostics`); the copies are then
        flagged as unconverged. By default ``sample`` raises
        :class:`~synthmi.diagnostics.DiagnosticsFailed` instead.
    rhat_max, ess_min : float, default 1.01 and 400
        Thresholds of that check (largest R-hat, smallest bulk and tail ESS of any
        column; Vehtari et al. 2021, :mod:`synthmi.diagnostics`). The former 1.05 and
        100 (:data:`synthmi.diagnostics.LENIENT`) are an explicit choice, recorded
        with the copies and flagged by the report.
    max_kept_levels : int, default 8
        A kept nominal column with more observed levels enters the copula with
        its ``max_kept_levels - 1`` most frequent levels and the rest pooled
        (module docstring, "Agency microdata"); it is released unchanged.
    min_missing_cells : int, default 20
        A synthesized column needs at least this many item-missing cells for its
        missing-value indicator to enter the copula; with fewer, the copies'
        missingness is drawn completely at random at a rate from the Jeffreys
        posterior :math:`\mathrm{Beta}(k + 1/2,\, n - k + 1/2)` (``k`` missing of
        the ``n`` rows where the value can exist). An indicator with a handful of
        ones leaves its latent correlations to the prior and stalls the chain:
        5 missing cells of ``marital_status`` in NHANES gave split R-hat 2.54.
    max_seconds : float or None, default 300
        Time budget of the fit in seconds (``None``: none; on the command line
        ``--max-seconds``). A pilot of the copula's chains projects the run's
        time and the iterations the release check (``ess_min``) needs; when
        either overruns the budget the fit stops within it, raising
        :class:`~synthmi.diagnostics.SamplerBudgetExceeded` with the estimate
        and what to change (:class:`~synthmi.models.copula.GaussianCopulaImputer`).
        With ``accept_diagnostics`` only the run as configured is held to it.
    """

    method = "risk-dami"
    combining_rule = "rubin"
    allows_missing = True
    _parameter_constraints = {
        "masks": [None, "dict"],
        "subgroups": [None, "array-like"],
        "k0": [Interval("int", 1, None)],
        "tolerance": [None, "object"],
        "r": [None, Interval("int", 1, None)],
        "complete": [None, "columns"],
        "n_iter": [Interval("int", 2, None), Options("auto")],
        "burn": [None, Interval("int", 0, None)],
        "thin": [Interval("int", 1, None)],
        "n_sweeps": [Interval("int", 1, None)],
        "prior_df": [None, Interval("real", 0.0, None, closed="neither")],
        "random_state": [None, "random_state"],
        "progressbar": ["boolean"],
        "chains": [Interval("int", 1, None)],
        "n_jobs": [Interval("int", 1, None)],
        "impute_keep": ["boolean"],
        "accept_diagnostics": ["boolean"],
        "rhat_max": [Interval("real", 1.0, None, closed="neither")],
        "ess_min": [Interval("real", 0.0, None)],
        "max_kept_levels": [Interval("int", 2, None)],
        "min_missing_cells": [Interval("int", 1, None)],
        "max_seconds": [None, Interval("real", 0.0, None, closed="neither")],
    }
    # the copula chain is conditional on the records (completed levels, latents,
    # risk labels), and the synthesizer keeps the data it imputes
    _confidential_attributes = ("copula_", "subgroup_labels_", "group_", "copula_data_")

    def _needs_records_to_sample(self) -> bool:
        return True

    def __init__(
        self,
        masks: Mapping[str, Any] | None = None,
        subgroups: Any = None,
        k0: int = 5,
        tolerance: Any = None,
        r: int | None = None,
        complete: Sequence[str] | None = None,
        n_iter: int | str = "auto",
        burn: int | None = None,
        thin: int = 5,
        n_sweeps: int = 10,
        prior_df: float | None = None,
        random_state: int | np.random.Generator | None = 0,
        progressbar: bool = False,
        chains: int = 2,
        n_jobs: int = 1,
        impute_keep: bool = False,
        accept_diagnostics: bool = False,
        rhat_max: float = RHAT_MAX,
        ess_min: float = ESS_MIN,
        max_kept_levels: int = 8,
        min_missing_cells: int = 20,
        max_seconds: float | None = 300.0,
    ):
        self.masks = masks
        self.subgroups = subgroups
        self.k0 = k0
        self.tolerance = tolerance
        self.r = r
        self.complete = complete
        self.n_iter = n_iter
        self.burn = burn
        self.thin = thin
        self.n_sweeps = n_sweeps
        self.prior_df = prior_df
        self.random_state = random_state
        self.progressbar = progressbar
        self.chains = chains
        self.n_jobs = n_jobs
        self.impute_keep = impute_keep
        self.accept_diagnostics = accept_diagnostics
        self.rhat_max = rhat_max
        self.ess_min = ess_min
        self.max_kept_levels = max_kept_levels
        self.min_missing_cells = min_missing_cells
        self.max_seconds = max_seconds

    @property
    def synthesizes_quasi_identifiers(self) -> bool:
        # masks=None is copula multiple imputation: observed quasi-identifiers are released as they are
        return self._masks() is not None

    # ------------------------------------------------------------------ params
    def _check_params(self) -> None:
        owner = type(self).__name__
        if self.r is not None:
            if self.masks is None:
                raise ParameterError(
                    f"The 'r' parameter of {owner} sets synthetic copies per completed data set; it needs "
                    "'masks' (with masks=None the copies are imputations only). Got r="
                    f"{self.r!r} and masks=None instead.", parameter='r'
                )

    def _masks(self) -> Any:
        """The masks parameter, or the spec's masks when it is None."""
        return self._from_spec("masks", "masks")

    def _per_group_masks(self, qi: list[str]) -> dict[str, dict[str, MaskingModel]] | None:
        owner = type(self).__name__
        if self._masks() is None:
            return None
        keys = set(self._masks())
        if keys & set(RISK_LEVELS):
            if keys != set(RISK_LEVELS):
                raise ParameterError(
                    f"The 'masks' parameter of {owner} must name all of {list(RISK_LEVELS)} when it is given per "
                    f"subgroup (use {{}} for a subgroup synthesized without masking). Got {sorted(keys)} instead.", parameter='masks'
                )
            raw = {g: self._masks()[g] for g in RISK_LEVELS}
        else:
            raw = {g: self._masks() for g in RISK_LEVELS}
        out: dict[str, dict[str, MaskingModel]] = {}
        for g, spec in raw.items():
            if not isinstance(spec, Mapping):
                raise param_error(f"masks['{g}']", owner, "a dict {quasi-identifier: mask}", type(spec).__name__)
            unknown = [c for c in spec if c not in qi]
            if unknown:
                raise ParameterError(
                    f"The 'masks' parameter of {owner} names columns that are not quasi-identifiers: {unknown}. "
                    f"Quasi-identifiers: {qi}.", parameter='masks'
                )
            out[g] = {c: make_masking(v, column=c) for c, v in spec.items()}
        return out

    @property
    def _targeted(self) -> bool:
        return self._masks() is not None and bool(set(self._masks()) & set(RISK_LEVELS))

    # ------------------------------------------------------------------ fit
    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        import time

        start = time.monotonic()  # max_seconds counts from here
        data = pd.concat([X, Z], axis=1)
        if self.complete is not None:
            cols = check_columns_exist(data, self.complete, "complete", "df")
            check_no_missing(data, cols, "df")
        self._prepare_masks(X, data)
        frame, schema, zero_pairs = self._copula_frame(X, Z)
        self.copula_data_ = frame
        self._qi_set = set(X.columns) | set(self.missing_indicators_.values())
        self.copula_ = GaussianCopulaImputer(
            n_iter=self.n_iter,
            burn=self.burn,
            thin=self.thin,
            prior_df=self.prior_df,
            random_state=self.random_state,
            progress=self.progressbar,
            chains=self.chains,
            n_jobs=self.n_jobs,
            max_seconds=self.max_seconds,
        ).fit(frame, schema=schema, zero_coefficients=zero_pairs,
              ess_target=None if self.accept_diagnostics else self.ess_min,
              rhat_target=None if self.accept_diagnostics else self.rhat_max,
              progress_callback=self._progress, budget_start=start)

    def _copula_frame(self, X: pd.DataFrame, Z: pd.DataFrame):
        """The frame, schema and zero-coefficient pairs of the copula (module docstring,
        "Agency microdata"): kept columns first (so that the synthesized nominal blocks
        come last and have no later block to carry), high-cardinality kept columns
        pooled, a missing-value indicator per synthesized column with item non-response,
        skip patterns from ``rules``."""
        import re

        from ..schema import Schema, Variable

        cols: dict[str, Any] = {}
        variables: dict[str, Variable] = {}
        zero_pairs: list[tuple[str, str]] = []
        self.pooled_: dict[str, dict[str, int]] = {}
        self.missing_indicators_: dict[str, str] = {}
        # column -> (item-missing cells, rows where the value can exist, skip-rule rows)
        self.mcar_missing_: dict[str, tuple[int, int, np.ndarray]] = {}
        taken = set(X.columns) | set(Z.columns)
        for c in Z.columns:
            v = self.schema_[c]
            s = Z[c]
            seen = s.dropna()
            if v.kind == "nominal" and seen.nunique() > self.max_kept_levels:
                counts = seen.astype(object).value_counts(sort=False)
                order = sorted(range(len(counts)), key=lambda k: -counts.iloc[k])  # stable: level order on ties
                top = [counts.index[k] for k in order[: self.max_kept_levels - 1]]
                top = [lev for lev in v.categories if lev in set(top)]
                other = "<other>"
                while other in set(v.categories):
                    other += "_"
                vals = s.astype(object).where(s.isna() | s.isin(top), other)
                cats = top + [other]
                cols[c] = pd.Categorical(vals, categories=cats)
                variables[c] = Variable(c, "nominal", tuple(cats))
                self.pooled_[c] = {"levels": int(seen.nunique()), "modelled": len(cats)}
            else:
                cols[c] = s
                variables[c] = v
        # rules: rows where a skip condition holds; the condition's columns
        rule_rows: dict[str, np.ndarray] = {}
        frame_cols = list(Z.columns) + list(X.columns)
        for c, (cond, value) in getattr(self, "rules_", {}).items():
            if value is not None or c not in frame_cols:
                continue
            rule_rows[c] = self.released_.eval(cond).to_numpy(dtype=bool)
            present = ~rule_rows[c]
            for other in frame_cols:
                if other != c and re.search(r"(?<![\w`])`?" + re.escape(other) + r"`?(?![\w`])", cond):
                    # held at zero only where nothing identifies it: a categorical condition column
                    # with one level on the rows where the value exists (employed == 'No' -> 'Yes').
                    # With two or more levels there (hours given full- vs part-time when the rule
                    # removes 'none') the association is in the data, and zeroing it erased it
                    # (copies' mean hours 33 and 33 where the data have 42 and 20).
                    v = self.released_[other][present].dropna()
                    if self.schema_[other].is_categorical and v.nunique() <= 1:
                        zero_pairs.append((c, other))
        for c in X.columns:
            s = X[c]
            cols[c] = s
            variables[c] = self.schema_[c]
            miss = s.isna().to_numpy()
            structural = rule_rows.get(c, np.zeros(len(s), dtype=bool))
            item = miss & ~structural
            if not item.any() or self.masks_ is None:
                # (masks=None is plain multiple imputation: the missing values are to be imputed)
                continue
            if int(item.sum()) < int(self.min_missing_cells):
                # too few to model inside the copula: missing completely at random in the copies
                self.mcar_missing_[c] = (int(item.sum()), int((~structural).sum()), structural)
                continue
            ind = f"{c}_NA"
            while ind in taken:
                ind += "_"
            taken.add(ind)
            # 1 = item non-response, 0 = observed; not modelled (missing) where the skip rule holds
            cols[ind] = pd.Categorical(np.where(structural, None, np.where(item, "yes", "no")).astype(object),
                                       categories=["no", "yes"])
            variables[ind] = Variable(ind, "binary", ("no", "yes"))
            self.missing_indicators_[c] = ind
            zero_pairs.append((ind, c))
        frame = pd.DataFrame(cols, index=X.index)
        self.skip_patterns_ = _skip_patterns(frame, Schema(variables), set(self.missing_indicators_.values()))
        for pair in self.skip_patterns_:
            if pair not in zero_pairs and pair[::-1] not in zero_pairs:
                zero_pairs.append(pair)
        return frame, Schema(variables), zero_pairs

    def _prepare_masks(self, X: pd.DataFrame, data: pd.DataFrame) -> None:
        """Subgroup labels and resolved masks (everything of the fit that depends on
        ``masks``; the copula does not, so :func:`synthmi.workflow.tuning.remask` re-runs only this)."""
        owner = type(self).__name__
        masks = self._per_group_masks(list(X.columns))
        # subgroups and masks are checked before the (long) Gibbs run
        n = len(data)
        if self.subgroups is not None:
            lab = pd.Series(np.asarray(self.subgroups, dtype=object)) if not isinstance(self.subgroups, pd.Series) else self.subgroups
            if len(lab) != n:
                raise ParameterError(
                    f"The 'subgroups' parameter of {owner} must have one label per record ({n}). Got {len(lab)} instead.", parameter='subgroups'
                )
            bad = sorted({str(v) for v in pd.unique(lab.astype(object)) if v not in RISK_LEVELS})
            if bad:
                raise ParameterError(
                    f"The 'subgroups' parameter of {owner} must hold the labels {list(RISK_LEVELS)}; it has {bad}.", parameter='subgroups'
                )
            group = np.array([RISK_LEVELS.index(v) for v in lab.astype(object)], dtype=np.int64)
        elif masks is not None:
            # computed for untargeted masks too, so that risk can be reported by subgroup
            from ..evaluation.subgroups import risk_subgroups

            rs = risk_subgroups(X, list(X.columns), self.k0, self.tolerance)
            group = rs.labels.cat.codes.to_numpy().astype(np.int64)
        else:
            group = None
        if group is None:  # plain imputation: no synthesis, no subgroups needed
            self.subgroup_labels_ = None
            self.subgroup_counts_ = None
            self.group_ = np.zeros(n, dtype=np.int64)
        else:
            self.subgroup_labels_ = pd.Series(
                pd.Categorical.from_codes(group, categories=list(RISK_LEVELS), ordered=True),
                index=data.index,
                name="risk_subgroup",
            )
            self.subgroup_counts_ = pd.Series(np.bincount(group, minlength=3), index=list(RISK_LEVELS), name="count")
            self.group_ = group
        # masks: check kinds, calibrate reliabilities, refuse masks for empty subgroups
        self.masks_: dict[str, dict[str, MaskingModel]] | None = None
        if masks is not None:
            resolved: dict[str, dict[str, MaskingModel]] = {}
            for gi, g in enumerate(RISK_LEVELS):
                if self._targeted and masks[g] and self.subgroup_counts_[g] == 0:
                    raise ParameterError(
                        f"The 'masks' parameter of {owner} sets masks for the '{g}' risk subgroup, which has no "
                        f"records (subgroup sizes: {self.subgroup_counts_.to_dict()}); drop those masks or change "
                        "k0 / tolerance.", parameter='masks'
                    )
                resolved[g] = {}
                for c, mk in masks[g].items():
                    resolved[g][c] = bind_mask(mk, c, self.schema_[c],
                                               lambda c=c: float(np.var(X[c].dropna().to_numpy(dtype=float), ddof=1)))
            self.masks_ = resolved
        self._qi_set = set(X.columns) | set(getattr(self, "missing_indicators_", {}).values())

    # ------------------------------------------------------------------ sample
    def _structure(self, m: int) -> dict[str, Any]:
        if self._masks() is None:
            out = {"output": "imputation", "rule": "rubin"}
        elif self.r is None:
            out = {"output": "one-stage", "rule": "rubin"}
        else:
            out = {"m": m, "r": int(self.r), "output": "nested", "rule": "nested"}
        cc = self._copula_columns()
        if cc:
            out["copula_columns"] = cc
        return out

    def _copula_columns(self) -> dict[str, Any]:
        """What the copula saw instead of the released columns (names and level counts only)."""
        out: dict[str, Any] = {}
        if getattr(self, "pooled_", None):
            out["pooled"] = {c: dict(v, rule=f"the {v['modelled'] - 1} most frequent levels kept, the rest "
                                                 "pooled as '<other>'") for c, v in self.pooled_.items()}
        if getattr(self, "missing_indicators_", None):
            out["missing_indicators"] = dict(self.missing_indicators_)
        if getattr(self, "skip_patterns_", None):
            out["skip_patterns"] = [list(p) for p in self.skip_patterns_]
        if getattr(self, "mcar_missing_", None):
            out["missingness_mcar"] = {
                c: f"{k} item-missing cells (fewer than min_missing_cells={self.min_missing_cells}): the copies' "
                   "missing values are drawn completely at random, rate from Beta(k + 1/2, n - k + 1/2)"
                for c, (k, _, _) in self.mcar_missing_.items()}
        zc = getattr(getattr(self, "copula_", None), "zero_coefficients_", None)
        if zc:
            out["zero_coefficients"] = [list(p) for p in zc]
        return out

    def _imputed_cells(self) -> dict[str, Any]:
        """Per column: missing cells imputed in the model, and what the copies carry there."""
        released, internal, kept_missing = {}, {}, {}
        skip = {c for c, (_, v) in getattr(self, "rules_", {}).items() if v is None}
        for c in self.copula_.columns_:
            if c in self.missing_indicators_.values():
                continue
            k = int(self.copula_data_[c].isna().sum()) if c in self.copula_data_ else 0
            if not k:
                continue
            synthesized_missing = c in self.missing_indicators_ or c in skip or c in getattr(self, "mcar_missing_", {})
            if c in self._qi_set and synthesized_missing and self.masks_ is not None:
                # synthesized with its missingness (indicator and / or skip rule): the copies have
                # missing values of their own, not these cells imputed
                kept_missing[c] = k
            elif c in self._qi_set:
                # a quasi-identifier is synthesized (masks) or imputed (masks=None) in every cell
                released[c] = k
            elif self.impute_keep and c not in getattr(self, "pooled_", {}):
                released[c] = k
            else:
                # (a pooled kept column is released as given: its pooled imputations are not values)
                internal[c] = k
        return {
            "released": released,
            "internal_only": internal,
            "missingness_synthesized": kept_missing,
            "note": "counts of missing cells per column; 'released': the copies carry imputed (or synthetic) "
                    "values there; 'internal_only': imputed inside the model, released as missing; "
                    "'missingness_synthesized': a synthesized column whose copies have synthetic missing "
                    "values (its missing-value indicator, its skip rule)",
        }

    def _diagnostics(self) -> Any:
        d = dict(self.copula_.diagnostics_)
        d["imputed_cells"] = self._imputed_cells()
        if self.subgroup_counts_ is not None:
            d["subgroup_counts"] = {k: int(v) for k, v in self.subgroup_counts_.items()}
        return d

    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        cop = self.copula_
        states = cop.states(m, rng)
        out: list[pd.DataFrame] = []
        if self.masks_ is not None and self.r is not None:
            # two stages: nest k continues the chain given completed data set k and draws r copies
            # from it. Each nest has its own random stream (spawned in nest order), so the copies are
            # the same whether the nests run in turn or in n_jobs processes
            nest_rngs = rng.spawn(len(states))
            if self.n_jobs > 1 and len(states) > 1:
                import multiprocessing as mp
                from concurrent.futures import ProcessPoolExecutor

                # the model holds the records (it is not pickled: _confidential_attributes); forked
                # workers inherit it through a module global, and only the nest index is sent
                global _FORKED
                _FORKED = (self, states, nest_rngs)
                try:
                    with ProcessPoolExecutor(max_workers=min(self.n_jobs, len(states)),
                                             mp_context=mp.get_context("fork")) as ex:
                        nests = list(ex.map(_forked_nest, range(len(states))))
                finally:
                    _FORKED = None
            else:
                nests = [self._nest(st, r) for st, r in zip(states, nest_rngs)]
            return [f for nest in nests for f in nest]
        for st in states:
            levels = cop.sampler_.completed_levels(st)
            if self.masks_ is None:
                out.append(self._frame(levels))
            else:
                out.append(self._frame(self._synthesize(st, levels, cop.sampler_, rng), rng))
        return out

    def _nest(self, st: CopulaState, rng: np.random.Generator) -> list[pd.DataFrame]:
        """The r synthetic copies of one completed data set (the chain continued given it)."""
        cop = self.copula_
        levels = cop.sampler_.completed_levels(st)
        comp_margins = [_replace_level(mg, lv) for mg, lv in zip(cop.margins_, levels)]
        sampler = CopulaGibbs(comp_margins, cop.q_, cop.prior_df)
        sampler.collapse_binary = cop.sampler_.collapse_binary
        sampler.collapse_nominal = cop.sampler_.collapse_nominal
        sampler.zero_coef = dict(cop.sampler_.zero_coef)
        sampler.set_hmc_tuning([cop.sampler_.hmc_tuning()])
        st2 = st.copy()
        out = []
        for _ in range(int(self.r)):
            for _ in range(cop.thin):
                sampler.step(st2, rng)
            out.append(self._frame(self._synthesize(st2, levels, sampler, rng), rng))
        return out

    def _frame(self, levels: list[np.ndarray], rng: np.random.Generator | None = None) -> pd.DataFrame:
        """The columns a copy replaces: the quasi-identifiers, and the imputed kept columns if asked."""
        cop = self.copula_
        like = self.copula_data_[[mg.name for mg in cop.margins_]]
        out = levels_to_frame(cop.margins_, levels, cop.schema_, like)
        for c, ind in self.missing_indicators_.items():
            # a synthetic missing value where the synthetic indicator says so
            gone = (out[ind].astype(object) == "yes").to_numpy()
            out[c] = out[c].where(~gone, None if isinstance(out[c].dtype, pd.CategoricalDtype) else np.nan)
            out = out.drop(columns=ind)
        for c, (k, n_ok, structural) in getattr(self, "mcar_missing_", {}).items():
            if rng is None or c not in out:
                continue
            # posterior predictive of MCAR item non-response: a rate from the Jeffreys posterior
            # Beta(k + 1/2, n - k + 1/2), then each row where the value can exist missing with it
            rate = rng.beta(k + 0.5, n_ok - k + 0.5)
            gone = ~structural & (rng.random(len(out)) < rate)
            out[c] = out[c].where(~gone, None if isinstance(out[c].dtype, pd.CategoricalDtype) else np.nan)
        for c in self.pooled_:
            # a pooled kept column is released as given (its pooled imputations are not values)
            out[c] = self.copula_data_[c] if c not in self.released_ else self.released_[c]
        if self.impute_keep:
            return out
        return out[[c for c in out.columns if c in self._qi_set]]

    def _evidence(self, mg: _Margin, x_level: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
        """(n, L) log p(W~_i | X = level l) from fresh W~ per record, or None if no record is masked."""
        n = len(x_level)
        ev = None
        for gi, g in enumerate(RISK_LEVELS):
            mk = self.masks_[g].get(mg.name)
            rows = np.flatnonzero(self.group_ == gi)
            if mk is None or mk.is_null or rows.size == 0:
                continue
            if ev is None:
                ev = np.zeros((n, mg.n_levels))
            if mg.kind == "continuous":
                x = mg.support[x_level[rows]]
                w = mk.draw(x, rng)
                wbar, var = mk.posterior_normal(w)
                ev[rows] = -0.5 * (wbar[:, None] - mg.support[None, :]) ** 2 / var
            else:
                codes = mg.support[x_level[rows]]
                w = mk.draw(codes, rng)
                table = mk.loglik_table(w, len(mg.categories))
                ev[rows] = table[:, mg.support]
        if ev is not None:
            ev -= ev.max(axis=1, keepdims=True)
        return ev

    def _synthesize(
        self, st: CopulaState, levels: list[np.ndarray], sampler: CopulaGibbs, rng: np.random.Generator
    ) -> list[np.ndarray]:
        r"""Synthetic levels of every margin (QIs drawn, others = completed levels).

        A Gibbs sweep over the quasi-identifiers given everything else and the
        masked evidence. Given the levels the latents are jointly normal (record
        means :meth:`CopulaGibbs.offsets`, covariance ``st.sigma``); a probit
        block's level also enters the later blocks' designs, so its discrete
        conditional carries :meth:`CopulaGibbs.level_log_weights`, and the record
        means are refreshed after every level it changes.
        """
        cop = self.copula_
        margins = cop.margins_
        n, q = st.z.shape
        P = np.linalg.inv(st.sigma)
        cuts = sampler.cuts(st)
        A_rank = sampler.ranked_cols
        rank_pos = {int(c): k for k, c in enumerate(A_rank)}
        block_of = {mg.name: b for b, mg in enumerate(sampler.block_margins)}
        qi_m = [mg for mg in margins if mg.name in self._qi_set]
        evid = {mg.name: self._evidence(mg, lv, rng) for mg, lv in zip(margins, levels) if mg.name in self._qi_set}
        lv_of = {mg.name: lv for mg, lv in zip(margins, levels)}
        z = st.z.copy()
        F = sampler.design(st, z, [lv_of[mg.name] for mg in sampler.block_margins])
        M = sampler.offsets(st, F)
        # start the QI block from its copula conditional given the other latents (at the completed levels)
        B = np.array([c for mg in qi_m for c in mg.cols])
        A = np.array([c for c in range(q) if c not in set(B.tolist())], dtype=np.int64)
        Pbb_inv = np.linalg.inv(P[np.ix_(B, B)])
        cond = M[:, B] - ((z[:, A] - M[:, A]) @ P[np.ix_(A, B)]) @ Pbb_inv
        z[:, B] = cond + rng.standard_normal((n, B.size)) @ np.linalg.cholesky(Pbb_inv).T
        syn = {}
        for mg, lv in zip(margins, levels):
            if mg.name in self._qi_set:
                if mg.ranked:
                    syn[mg.name] = np.searchsorted(cuts[mg.name], z[:, mg.cols[0]])
                else:
                    syn[mg.name] = _nominal_level(z[:, mg.cols])
            else:
                syn[mg.name] = lv
        for b, mg in enumerate(sampler.block_margins):
            sampler.set_indicators(F, b, syn[mg.name])
        if A_rank.size:
            F[:, 1:1 + A_rank.size] = z[:, A_rank]
        M = sampler.offsets(st, F)
        rows = np.arange(n)
        for _ in range(int(self.n_sweeps)):
            E = z - M
            for mg, lv in zip(margins, levels):
                is_qi = mg.name in self._qi_set
                if mg.ranked or mg.kind == "binary":
                    # one latent column: the level is drawn exactly from its discrete conditional
                    # (a binary block's cut is 0), then the latent within the level's slot
                    j = mg.cols[0]
                    pjj = P[j, j]
                    sd = 1.0 / np.sqrt(pjj)
                    cm = M[:, j] - (E @ P[:, j] - E[:, j] * pjj) / pjj
                    c = cuts[mg.name] if mg.ranked else _BINARY_CUT
                    edges = np.concatenate([[-np.inf], c, [np.inf]])
                    if is_qi:
                        ev = evid[mg.name]
                        if not mg.ranked:
                            ev = _add_log_weights(ev, sampler.level_log_weights(st, F, z, block_of[mg.name], rows))
                        new = draw_levels(cm, sd, edges, ev, rng)
                        syn[mg.name] = new
                    else:
                        new = lv
                    z[:, j] = truncated_normal(cm, sd, edges[new], edges[new + 1], rng)
                    if mg.ranked:
                        F[:, 1 + rank_pos[j]] = z[:, j]
                        E[:, j] = z[:, j] - M[:, j]
                    elif is_qi:
                        sampler.set_indicators(F, block_of[mg.name], new)
                        M = sampler.offsets(st, F)
                        E = z - M
                    else:
                        E[:, j] = z[:, j] - M[:, j]
                elif is_qi:
                    b = block_of[mg.name]
                    ev = _add_log_weights(evid[mg.name], sampler.level_log_weights(st, F, z, b, rows))
                    self._nominal_draw(mg, b, sampler, z, E, M, P, ev, syn, rng)
                    sampler.set_indicators(F, b, syn[mg.name])
                    M = sampler.offsets(st, F)
                    E = z - M
                else:
                    # a kept nominal column: its latents exactly given its level
                    S = np.asarray(mg.cols)
                    others = np.array([c for c in range(q) if c not in set(mg.cols)], dtype=np.int64)
                    Pss_inv = np.linalg.inv(P[np.ix_(S, S)])
                    eta = M[:, S] - (E[:, others] @ P[np.ix_(others, S)]) @ Pss_inv
                    z[:, S] = mnp_draw_latents(eta, lv, rng)
                    E[:, S] = z[:, S] - M[:, S]
        return [syn[mg.name] for mg in margins]

    @staticmethod
    def _nominal_draw(mg, b, sampler, z, E, M, P, ev, syn, rng) -> None:
        r"""A nominal QI block's level and latents drawn exactly from their joint conditional.

        Given every other latent the block is :math:`N(\eta_i, \Omega)` (the copula
        conditional: ``P_SS^{-1} = \Omega``) and the target is

        .. math:: p(l, z_S) \propto N(z_S; \eta_i, \Omega)\, 1\{l(z_S) = l\}\, e^{\mathrm{ev}_{il}}

        (``ev`` the masked values' evidence and the later blocks' weights). Drawn by
        rejection: :math:`z_S \sim N(\eta_i, \Omega)`, its level :math:`l(z_S)`,
        accepted with probability :math:`e^{\mathrm{ev}_{il} - \max_k \mathrm{ev}_{ik}}`
        (an accepted pair has exactly the target law), up to
        ``_NOMINAL_REJECTION_ROUNDS`` rounds; rows still unaccepted then are drawn by
        :math:`\Pr(l) \propto \Pr(y = l \mid \eta_i)\, e^{\mathrm{ev}_{il}}`
        (:func:`mnp_log_likelihood` per level), then the latents given it
        (:func:`mnp_draw_latents`). Each row's draw is the target law whichever way it
        was obtained, so the mixture is too; the quadrature is paid only for the rows
        whose evidence is far from their copula probabilities (NHANES, one imputation's
        4 copies: 0.38 s instead of 2.7 s with quadrature for every row). An
        independence Metropolis step proposing from :math:`N(\eta_i, \Omega)` was used
        before: when a later column (almost) implies the level, its proposals were
        almost never accepted and ten sweeps left rare level combinations
        over-produced (z = 4.7 on a simulated check)."""
        S = np.asarray(mg.cols)
        A = np.array([c for c in range(z.shape[1]) if c not in set(mg.cols)], dtype=np.int64)
        Pss_inv = np.linalg.inv(P[np.ix_(S, S)])
        eta = M[:, S] - (E[:, A] @ P[np.ix_(A, S)]) @ Pss_inv
        n = eta.shape[0]
        chol = np.linalg.cholesky(Pss_inv)
        new = np.empty(n, dtype=np.int64)
        zs = np.empty_like(eta)
        todo = np.arange(n)
        for _ in range(_NOMINAL_REJECTION_ROUNDS):
            u = eta[todo] + rng.standard_normal((todo.size, S.size)) @ chol.T
            lv = _nominal_level(u)
            if ev is None:
                ok = np.ones(todo.size, dtype=bool)
            else:
                ev_t = ev[todo]
                ok = np.log(rng.random(todo.size)) < ev_t[np.arange(todo.size), lv] - ev_t.max(axis=1)
            new[todo[ok]] = lv[ok]
            zs[todo[ok]] = u[ok]
            todo = todo[~ok]
            if not todo.size:
                break
        if todo.size:
            logp = sampler.level_log_probabilities(b, eta[todo])
            if ev is not None:
                logp = logp + ev[todo]
            new[todo] = _gumbel_argmax(logp, rng)
            zs[todo] = mnp_draw_latents(eta[todo], new[todo], rng)
        z[:, S] = zs
        E[:, S] = z[:, S] - M[:, S]
        syn[mg.name] = new


#: rounds of the rejection sampler of a nominal QI's level and latents (RiskTargetedSynthesizer._nominal_draw)
#: before the rows left are drawn by quadrature
_NOMINAL_REJECTION_ROUNDS = 20


def _add_log_weights(ev: np.ndarray | None, w: np.ndarray) -> np.ndarray | None:
    """Masked-value evidence plus later blocks' log weights, each row's maximum 0 (None if neither)."""
    out = w if ev is None else ev + w
    if not np.any(out):
        return ev
    return out - out.max(axis=1, keepdims=True)


#: (model, states, random streams) of the nests being drawn in forked processes (RiskTargetedSynthesizer._sample)
_FORKED: Any = None


def _forked_nest(k: int) -> list[pd.DataFrame]:
    model, states, rngs = _FORKED
    return model._nest(states[k], rngs[k])


def _skip_patterns(frame: pd.DataFrame, schema, exclude: set) -> list[tuple[str, str]]:
    """Detected skip patterns: (x, y) when x is missing exactly on the rows where the complete
    categorical column y takes some of its levels (occupation missing exactly when employed is
    'No'), whether or not a rule says so. Every level of y then has x all missing or all
    present, the levels with it all missing hold at least 3 records each, and x exists on one
    level of y only (so the coefficient held at zero is one nothing in the data identifies)."""
    out = []
    for x in frame.columns:
        if x in exclude:
            continue
        mx = frame[x].isna().to_numpy()
        if not mx.any() or mx.all():
            continue
        for y in frame.columns:
            if y == x or y in exclude or not schema[y].is_categorical or frame[y].isna().any():
                continue
            codes = schema.codes(frame[y])
            per_level = np.bincount(codes, weights=mx, minlength=schema[y].n_levels)
            size = np.bincount(codes, minlength=schema[y].n_levels)
            seen = size > 0
            full = seen & (per_level == size)
            # (a level of one or two records all missing is no pattern)
            present = seen & (per_level == 0)
            # only where nothing identifies the association: y has one level where x exists (with
            # two or more there, the association is in the data and zeroing it would erase it)
            if np.all(present | full) and np.all(size[full] >= 3) and int(present.sum()) == 1:
                out.append((x, y))
    return out


def _replace_level(mg: _Margin, level: np.ndarray) -> _Margin:
    return _Margin(mg.name, mg.kind, mg.cols, mg.support, level, mg.categories)
