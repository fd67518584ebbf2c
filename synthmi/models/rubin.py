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
(Rubin 1993, J. Off. Stat. 9:461-468; short-course slides, "Rubin's original
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

import copy as _copy
import dataclasses
import functools
import warnings
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.special import ndtri

from ..diagnostics import ESS_MIN, RHAT_MAX
from .._numeric import non_aliased as _non_aliased
from .._numeric import independent_columns_gram, non_aliased_gram
from .._random import PositionalRNG, entropy_from
from .._validate import Interval, Options, check_degenerate_found, check_random_state, check_scalar
from ..diagnostics import enforce as enforce_diagnostics
from ..engine import Frame, Remote, refuse_dask
from .._json import plain
from ..columns import ColumnSpec
from ..schema import Schema
from ..spec import ReleaseSpec, column_from_dtype, role_order
from ..synthetic import PartitionedSyntheticData
from .base import Synthesizer, check_roles, rule_columns, rule_value
from .conditional import (
    AdditiveDesign,
    Conditional,
    Encoder,
    FormulaDesign,
    VariableSpec,
    WHOLE_METHODS,
    expand_models,
    _METHOD_KINDS,
    parse_models,
    per_variable_setting,
    predictors_from_matrix,
    resolve_visit_sequence,
    z_frame,
)
from .conjugate import NormalRegressionPosterior
from .column_posterior import HMC_INITIAL_DRAWS, IMH_MIN_ESS_FRACTION, draw_columns  # noqa: F401 (re-exported)
from .glm import CategoricalModel, categorical_model_of, group_rows, merge_bucket, resolve_prior_sd
from .model_choice import _point_masses, choose_models, spec_with_models, wants_auto
from .predictive import Prepared, draw_categorical, sequential_draw
from .truncation import Support, detect_grid, distinct_capped
from ..errors import ColumnError, InputError, ParameterError

TRANSFORMS = (None, "log", "log1p", "rank")

# ---------------------------------------------------------------------------
class RubinSynthesizer(Synthesizer):
    """Partially synthetic data by Rubin's MI with sequential regressions ("norm+logit").

    Parameters
    ----------
    order : list of str, optional
        Alias of ``visit_sequence`` (kept for existing code).
    transforms : dict, optional
        Continuous column -> ``"log"``, ``"log1p"`` (log(1 + x)) or ``"rank"``
        (default: none). With a two-part column (missing values, ``semicont``
        point masses; :mod:`synthmi.models.base`) the transform applies to its
        value part, which is modelled on the rows that have a value.
    binary_link : {"logit", "probit"}
        Default model of binary columns.
    ordinal_link : {"logit", "probit", "multinomial"}
        Default model of ordinal columns: cumulative logit / probit
        (proportional odds), or ``"multinomial"``: a multinomial logit that
        ignores the order. On Adult the proportional-odds restriction does not
        hold for education given income, and the ordered model biases the
        education terms of an income analysis; the multinomial model does not.
        Also the link of ``method="ordered"``.
    sampler : {"fast", "imh", "nuts"}
        Exact fast posterior draws (closed form / independence MH / Gibbs for
        the hierarchical model; a logit model whose 200-draw pilot shows
        degenerate importance weights, ``IMH_MIN_ESS_FRACTION``, switches to HMC
        whitened by the Laplace fit); ``"imh"``: the same without the HMC
        switch (what a Dask fit runs when its grouped rows are too many to
        gather); or PyMC NUTS on the PyMC specification.
    chains, draws, tune : int
        MCMC settings. NUTS starts from the Laplace approximation with a dense
        mass matrix, so 500 tuning steps (step size only) suffice; 1000 draws
        per chain keep the sampling noise of R-hat below the 1.01 alarm. For the fast
        sampler ``chains`` and ``draws`` set the independence-MH chains and
        their initial kept length, doubled until split-R-hat <= 1.01 and bulk
        ESS >= 400.
    prior_sd : float > 0 or None, default None
        The prior of the categorical models' coefficients (their design: an
        intercept, 0/1 treatment dummies, other predictors standardised to sd 1).
        None (default): the weakly informative default of
        :mod:`synthmi.models.glm`, :math:`N(0, 2.5^2)` on every coefficient
        but the intercept (a dummy's log odds ratio; one sd of a standardised
        predictor) and :math:`N(0, 10^2)` on the intercept and on cutpoints
        (``glm.default_prior_sd``; rstanarm's default scales before its
        release 2.21.1, Gelman et al. 2008's for binary inputs). A number s:
        :math:`N(0, s^2)` on every coefficient and cutpoint (the default before
        issue 29 was s = 10, whose wide flat sides for rare levels slowed the
        samplers). With the exact samplers (``sampler`` other than ``"nuts"``)
        each column's prior is recorded in
        ``diagnostics_["columns"][column]["prior"]``.
    progressbar : bool
        Show PyMC's progress bar (NUTS).
    models : dict, "auto", "tree" or "cart", optional
        Per-variable models, ``{column: spec}``; a spec is a method name
        (``"normal"``, ``"logit"``, ``"probit"``, ``"ordered"``,
        ``"multinomial"``, ``"cart"``, ``"tree"``, ``"hierarchical"``), a formula
        (``"~ age * sex + bs(hours, 4)"``) or a dict with keys ``method``,
        ``formula``, ``predictors``, ``group``, ``min_leaf`` (see
        :mod:`synthmi.models.conditional`). ``"auto"`` (the whole setting, or
        a column's entry, the given entries winning) chooses the model of each
        such column by posterior predictive checks of its release
        (:mod:`synthmi.models.model_choice`); the choice and its figures are
        in ``model_choice_``, the release's ``structure["model_choice"]`` and
        its spec. Default None: the default models (not "auto", which fits
        every candidate once more). ``"tree"`` or ``"cart"`` (the whole setting, as
        synthpop's ``method = "cart"``): that method for every quasi-identifier. A
        whole-setting word (``"auto"`` too) fills the columns the spec's own
        ``"models"`` do not name; the spec's entries win for theirs.
    visit_sequence : list of str, optional
        Order of the sequential conditionals (a permutation of the
        quasi-identifiers); default the order given to ``fit``.
    predictor_matrix : DataFrame or dict, optional
        synthpop's ``predictor.matrix``: a row per quasi-identifier, a column per
        candidate predictor, 1 where it is used. Predictors must be kept
        columns or earlier quasi-identifiers.
    bounds : dict, optional
        ``{column: (lower, upper)}`` declared public bounds of continuous
        quasi-identifiers (``None`` for an open side). Columns without declared
        bounds use the observed minimum and maximum, which discloses them;
        both kinds are recorded in the release's ``structure["support"]``.
    grid : "auto", None or dict
        ``"auto"``: continuous quasi-identifiers whose observed values lie on a
        grid (whole numbers, half-years) are synthesized on it
        (:func:`~synthmi.models.truncation.detect_grid`); ``None``: no grid;
        a dict ``{column: step | None | "auto"}`` per column.
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
    n_jobs : int, default 1
        Worker processes for the fast sampler's posterior draws, one column per
        process at a time (the columns' posteriors are independent given the
        data; :mod:`synthmi.models.column_posterior`); -1 uses every core. The
        draws are identical for every value.
    proper : bool, default True
        ``True``: each copy draws its own parameters from the posterior (proper MI,
        the module docstring). ``False``: every copy uses one plug-in value, the
        posterior mean of the ``tree`` conditionals' leaves (each leaf's empirical
        donor distribution, :meth:`synthmi.models.tree.TreePosterior.plug_in`), as
        synthpop's ``proper = FALSE`` samples a leaf's donors; the copies then vary by
        the predictive draw only (expected table S_pMSE 1 instead of 2,
        :mod:`synthmi.evaluation.battery`). Only for releases whose every
        quasi-identifier is modelled by ``"tree"`` or ``"cart"`` (or fixed by a
        structural rule): the parametric models have no plug-in here, and
        ``models="auto"`` is refused with it. Recorded in the release's
        ``structure["proper"]`` and ``params``; the diagnostics' sampler reads
        ``"plug-in"`` (no posterior is sampled, so ``sampler``, ``chains``, ``draws``
        and the convergence thresholds have no effect). When to prefer it: to
        release copies whose tables match synthpop's default (improper) ``cart``,
        or to compare with it at equal table utility; on fair the unmasked
        plug-in tree has CART's risk and worst one-/two-way table S_pMSE
        (1.24/1.58 against CART's 1.20/1.58; the proper tree 2.28/2.28), but on
        none of four files did it raise the CI overlap above CART's
        (``benchmarks/frontier_battery.py``). Keep ``True`` for copies that carry
        the parameters' posterior uncertainty (proper MI). From the command line:
        ``--models tree`` (or the spec's ``"models"``) and ``--param proper=false``.

    Notes
    -----
    Normal predictive draws are exact truncated-normal draws inside the
    bounds (then snapped to the grid), never clipped
    (:mod:`synthmi.models.truncation`).

    Examples
    --------
    >>> syn = RubinSynthesizer(models={"income": "~ age * sex"}).fit(df, quasi_identifiers=["age", "sex", "income"])  # doctest: +SKIP
    >>> copies = syn.sample(20, random_state=1)  # doctest: +SKIP
    """

    method = "rubin"
    _parameter_constraints = {
        "order": [None, "columns"],
        "transforms": [None, "dict"],
        "binary_link": [Options("logit", "probit")],
        "ordinal_link": [Options("logit", "probit", "multinomial")],
        "sampler": [Options("fast", "imh", "nuts")],
        "chains": [Interval("int", 1, None)],
        "draws": [Interval("int", 1, None)],
        "tune": [Interval("int", 0, None)],
        "prior_sd": [None, Interval("real", 0.0, None, closed="neither")],
        "progressbar": ["boolean"],
        "models": [None, Options("auto", *WHOLE_METHODS), "dict"],
        "visit_sequence": [None, "columns"],
        "predictor_matrix": [None, "object"],
        "bounds": [None, "dict"],
        "grid": [None, Options("auto"), "dict"],
        "accept_diagnostics": ["boolean"],
        "rhat_max": [Interval("real", 1.0, None, closed="neither")],
        "ess_min": [Interval("real", 0.0, None)],
        "n_jobs": [Interval("int", None, None)],
        "proper": ["boolean"],
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
        prior_sd: float | None = None,
        progressbar: bool = True,
        models: Mapping[str, Any] | None = None,
        visit_sequence: Sequence[str] | None = None,
        predictor_matrix: Any = None,
        bounds: Mapping[str, Any] | None = None,
        grid: Any = "auto",
        accept_diagnostics: bool = False,
        rhat_max: float = RHAT_MAX,
        ess_min: float = ESS_MIN,
        n_jobs: int = 1,
        proper: bool = True,
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
        self.models = models
        self.visit_sequence = visit_sequence
        self.predictor_matrix = predictor_matrix
        self.bounds = bounds
        self.grid = grid
        self.accept_diagnostics = accept_diagnostics
        self.rhat_max = rhat_max
        self.ess_min = ess_min
        self.n_jobs = n_jobs
        self.proper = proper

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
        if int(self.n_jobs) == 0:
            # scikit-learn's convention: None/1 serial, k > 1 processes, -1 all cores, 0 invalid
            # (it was taken silently as 1)
            raise ParameterError(
                f"The 'n_jobs' parameter of {owner} must be a number of worker processes (1: in this process) "
                "or negative (-1: all cores, -2: all but one), as in scikit-learn. Got 0 instead.", parameter='n_jobs'
            )
        for c, t in (self.transforms or {}).items():
            if t not in TRANSFORMS:
                raise ParameterError(
                    f"The transform for column '{c}' in the 'transforms' parameter of {owner} must be one of "
                    f"None, 'log', 'log1p', 'rank'. Got {t!r} instead.", parameter='transforms'
                )

    # ---- fit ----------------------------------------------------------------
    def _encoder(self, c: str) -> Encoder:
        if self.schema_[c].kind == "continuous":
            x = self.data_[c].to_numpy(dtype=float)
            mean = x.mean()
            # the centred sum of squares as numpy's x.std() forms it (same rounding)
            return self._encoder_from_moments(c, mean, float(np.square(x - mean).sum()), len(x))
        return self._encoder_from_moments(c, None, None, len(self.data_))

    def _values(self, c: str) -> np.ndarray:
        """Column as floats (continuous) or integer codes (categorical)."""
        if self.schema_[c].kind == "continuous":
            return self.data_[c].to_numpy(dtype=float)
        return self.schema_.codes(self.data_[c])

    def _default_method(self, kind: str) -> str:
        if kind == "continuous":
            return "normal"
        if kind == "binary":
            return self.binary_link
        if kind == "nominal":
            return "multinomial"
        return "multinomial" if self.ordinal_link == "multinomial" else "ordered"

    def _family(self, kind: str, n_levels: int = 0) -> str:
        """The family of the default model of a column of this kind (used by :meth:`_fit_partitioned`)."""
        return self._method_family(self._default_method(kind))

    def _resolve_order(self, qi: list[str]) -> list[str]:
        released = list(getattr(self, "released_qi_", qi))
        # an explicit parameter wins over the spec's visit sequence
        spec_seq = None if (self.visit_sequence is not None or self.order is not None) else self._from_spec(
            "visit_sequence", "visit_sequence")
        order = resolve_visit_sequence(self.visit_sequence if spec_seq is None else spec_seq, self.order, released,
                                       type(self).__name__)
        # a two-part column's indicator is synthesized just before its values
        out = []
        for c in order:
            part = self._part_of(c)
            out += [part, c] if part is not None else [c]
        return out

    def _method_family(self, method: str) -> str:
        if method in ("normal", "hierarchical"):
            return "normal"
        if method in ("logit", "multinomial"):
            return "logit"
        if method == "ordered":
            return "oprobit" if self.ordinal_link == "probit" else "ologit"
        return method  # probit, cart, tree

    def _support(self, c: str) -> Support:
        owner = type(self).__name__
        x = self._values(c)
        rows = getattr(self, "value_rows_", {}).get(c)
        if rows is not None:
            x = x[rows]  # a two-part column's values (its fill at other rows is not data)
        declared = (self.bounds or {}).get(c)
        if declared is not None:
            try:
                lo, hi = declared
                lo = -np.inf if lo is None else float(lo)
                hi = np.inf if hi is None else float(hi)
            except (TypeError, ValueError):
                raise ParameterError(f"The bounds of column '{c}' in the 'bounds' parameter of {owner} must be a pair "
                                 f"(lower, upper). Got {declared!r} instead.", parameter='bounds') from None
            if not lo < hi:
                raise InputError(f"The bounds of column '{c}' must have lower < upper. Got {declared!r} instead.")
            if np.any(x < lo) or np.any(x > hi):
                # the values themselves are confidential: say only that some lie outside
                raise ColumnError(f"Column '{c}' has values outside its declared bounds {declared!r}; fix the data "
                                 "or the bounds.")
            source = "declared"
        else:
            lo, hi, source = float(x.min()), float(x.max()), "observed"
        g = self.grid
        step = g.get(c, "auto") if isinstance(g, Mapping) else g
        if step == "auto":
            grid = detect_grid(x)
        elif step is None:
            grid = None
        else:
            step = float(check_scalar(step, f"grid['{c}']", owner, lower=0, lower_inclusive=False))
            grid = (0.0, step)
        return Support(lo, hi, source, grid)

    def _transforms(self, specs: dict[str, VariableSpec] | None = None) -> dict[str, str | None]:
        """Per-column transforms: the 'transforms' parameter (--transform) merged with the
        'transform' entries of ``models`` (the parameter's or the spec's); one mechanism."""
        if specs is None:
            specs = parse_models(self._models_setting(), list(self.quasi_identifiers_), type(self).__name__)
        return per_variable_setting(specs, "transform", self.transforms, "transforms", type(self).__name__)

    def _models_setting(self) -> Any:
        """The per-variable models of this fit: those ``models="auto"`` chose
        (:mod:`synthmi.models.model_choice`), else the parameter, else the spec's."""
        chosen = getattr(self, "_chosen_models", None)
        if chosen is not None:
            return chosen
        spec = getattr(self, "spec_", None)
        # a whole-setting word ("tree") fills the columns the spec's own "models" do not name
        return expand_models(self._from_spec("models", "models"), list(self.quasi_identifiers_),
                             None if spec is None else spec.models)

    def _fit_release(self, df: pd.DataFrame, spec: ReleaseSpec, **fit_params: Any) -> None:
        # models="auto" (the parameter, or the spec's when the parameter is None): choose each such
        # column's model by posterior predictive checks first; the spec then records the choice
        self._chosen_models = None
        self.__dict__.pop("model_choice_", None)
        if wants_auto(self.models if self.models is not None else spec.models):
            if not getattr(self, "proper", True):
                raise ParameterError(
                    f"The 'proper' parameter of {type(self).__name__} can be False only with the 'tree' and 'cart' "
                    "methods (plug-in leaves), and models='auto' chooses among parametric models too. Got "
                    "proper=False with models='auto' instead. Give every quasi-identifier a 'tree' (or 'cart') model, "
                    "e.g. models='tree' (on the command line: --models tree, or the spec's \"models\"), "
                    "or keep proper=True.",
                    parameter="proper")
            choice = choose_models(self, df, spec, fit_params, progress=self._progress)
            self.model_choice_ = choice
            self._chosen_models = choice.models
            spec = self.spec_ = spec_with_models(spec, choice.models)
        super()._fit_release(df, spec, **fit_params)

    def _fit(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        owner = type(self).__name__
        qi = list(X.columns)
        self.order_ = self._resolve_order(qi)
        specs = parse_models(self._models_setting(), qi, owner)
        pm_preds = predictors_from_matrix(self.predictor_matrix, qi, list(self.data_.columns), owner)
        for c in pm_preds:
            if c in specs and (specs[c].formula or specs[c].predictors is not None):
                raise ColumnError(f"Column '{c}' has predictors both in 'predictor_matrix' and in 'models'; give one.")
        transforms = self._transforms(specs)

        def minimum(c: str) -> float:
            x = self.data_[c].to_numpy(dtype=float)[getattr(self, "value_rows_", {}).get(c, slice(None))]
            return float(np.min(x[~np.isnan(x)], initial=np.inf))

        self._check_transforms(transforms, qi, minimum)
        bad = [c for c in (self.bounds or {}) if c not in qi or self.schema_[c].kind != "continuous"]
        if bad:
            raise ParameterError(f"The 'bounds' parameter of {owner} names columns that are not continuous quasi-identifiers: {bad}.", parameter='bounds')
        self.encoders_ = {c: self._encoder(c) for c in list(Z.columns) + qi}
        n = len(self.data_)
        # the full Z design (intercept, then every kept column encoded); each conditional uses a subset
        z_blocks = [self.encoders_[c].encode(self._values(c)) for c in Z.columns]
        self._Z_design_ = np.hstack([np.ones((n, 1))] + z_blocks)
        self._fit_Z_design_ = self._Z_design_
        z_names = ["(Intercept)"] + [lab for c in Z.columns for lab in self.encoders_[c].labels()]
        z_cols_of, pos = {}, 1
        for c, b in zip(Z.columns, z_blocks):
            z_cols_of[c] = list(range(pos, pos + b.shape[1]))
            pos += b.shape[1]
        self._z_frame_ = None
        obs = {c: self._values(c) for c in qi}
        self.supports_ = {c: self._support(c) for c in qi if self.schema_[c].kind == "continuous"}
        self.conditionals_: list[Conditional] = []
        part_cols = {p["column"] for p in getattr(self, "parts_", {}).values()}
        for j, c in enumerate(self.order_):
            v = self.schema_[c]
            spec = specs.get(c, VariableSpec())
            method = spec.method or self._default_method(v.kind)
            if v.kind not in _METHOD_KINDS[method]:
                raise InputError(f"The method {method!r} given for column '{c}' cannot model a {v.kind} column; "
                                 f"it models {list(_METHOD_KINDS[method])} columns.")
            if transforms.get(c) is not None and method not in ("normal", "hierarchical"):
                raise ColumnError(f"Column '{c}' has a transform, which only the 'normal' and 'hierarchical' methods use.")
            earlier = self.order_[:j]
            preds = spec.predictors if spec.predictors is not None else pm_preds.get(c)
            if preds is not None:
                # a listed two-part column brings its indicator, as synthpop's padMis.syn copies the
                # predictor-matrix entry to both: alone, its value (zeros filled with the mean of the
                # positive values) would hide the point mass from this model
                extra = [p for x in preds if (p := self._part_of(x)) is not None and p not in preds
                         and (p in earlier or p in Z.columns)]
                preds = list(preds) + extra
                wrong = [p for p in preds if p not in Z.columns and p not in earlier]
                if wrong:
                    raise InputError(
                        f"The predictors of column '{c}' include {wrong}, which are neither kept columns nor "
                        f"quasi-identifiers earlier in the visit sequence ({earlier})."
                    )
            fam = self._method_family(method)
            value_rows = getattr(self, "value_rows_", {}).get(c) if fam == "normal" else None
            rule = self._rule_of(c)
            # the rows the model is fitted on: a value model's rows with a value, and for a column
            # governed by a structural rule only the rows the rule leaves free (synthmi.models.base)
            rows = self._fit_rows(c, fam)
            cond = Conditional(column=c, kind=v.kind, family=fam, method=method, predictors=[],
                               n_categories=v.n_levels, transform=transforms.get(c), formula=spec.formula,
                               support=self.supports_.get(c), rule=rule)
            if rule is not None and v.kind != "continuous" and np.unique(obs[c][rows]).size == 1:
                # one level on the free rows: the column is a function of the rule's (released)
                # columns, with no parameter to estimate (e.g. hours missing exactly when not employed)
                cond.family, cond.method, cond.free_level = "fixed", "fixed by rule", int(obs[c][rows][0])
                self.conditionals_.append(cond)
                continue
            exclude = set()
            if method == "hierarchical":
                if self.sampler == "nuts":
                    raise InputError(
                        f"The hierarchical model of column '{c}' is sampled by its exact blocked Gibbs path "
                        "(sampler='fast'), which tests/models/test_hierarchical.py checks against NUTS on the PyMC "
                        "specification (synthmi.models.hierarchical.pymc_model); use sampler='fast'."
                    )
                grp = spec.group
                if grp not in Z.columns or not self.schema_[grp].is_categorical:
                    raise InputError(f"The group of the hierarchical model of column '{c}' must be a kept categorical "
                                     f"column. Got {grp!r} instead.")
                cond.group = grp
                cond.group_codes = self._values(grp)
                exclude.add(grp)
            intercept = cond.intercept
            if spec.formula is not None:
                if self._z_frame_ is None:
                    self._z_frame_ = z_frame(self.schema_, self.data_, list(Z.columns))
                design = FormulaDesign(spec.formula, c, obs, self._z_frame_.drop(columns=list(exclude)),
                                       self.schema_, earlier, intercept)
            else:
                zc = [z for z in Z.columns if z not in exclude and (preds is None or z in preds)]
                xc = [x for x in earlier if preds is None or x in preds]
                if value_rows is not None:
                    # a value model is fitted where values exist: the part indicators are constant
                    # there or repeat kept columns (a skip pattern), so they are not its predictors
                    xc = [x for x in xc if x not in part_cols]
                xc_tree = list(xc)
                idx = [0] + [k for z in zc for k in z_cols_of[z]]
                # aliased kept columns are dropped as R's lm / glm do: skip patterns make them (the
                # <NA> level of occupation is employed == 'No'), and more on a value model's rows
                zsub = self._Z_design_[:, idx] if rows is None else self._Z_design_[rows][:, idx]
                idx = [idx[k] for k in _non_aliased(zsub)]
                # so is a column the rule fixes as a function of kept columns (family "fixed"): the
                # <NA> level of hours' indicator is employed == 'No', a direction the data cannot
                # identify (only the prior does), which slows the sampler of every later model
                fixed = {cd.column: cd for cd in self.conditionals_ if cd.family == "fixed"}
                xc = [x for x in xc if x not in fixed or not _in_span(
                    self._Z_design_[:, idx] if rows is None else self._Z_design_[rows][:, idx],
                    self.encoders_[x].encode(obs[x] if rows is None else obs[x][rows]))]
                zrows = self._Z_design_[:, idx] if rows is None else self._Z_design_[rows][:, idx]
                encs = _drop_aliased(zrows, [self.encoders_[x] for x in xc],
                                     {x: obs[x] if rows is None else obs[x][rows] for x in xc})
                design = AdditiveDesign(self._Z_design_, z_names, encs, intercept, idx)
                if fam in ("tree", "cart"):
                    # CART's own design (TreeDesign): every kept predictor and earlier QI, none dropped,
                    # so that a 'cart' or 'tree' column's partition is CartSynthesizer's
                    design = TreeDesign(self.schema_, self._Z_design_, [(z, z_cols_of[z]) for z in zc], xc_tree)
            cond.design = design
            cond.predictors = list(design.inputs)
            cond.coef_names = list(design.names)
            D = design.matrix(obs)
            if fam == "normal":
                y = obs[c]
                if rows is not None:
                    D, y = D[rows], y[rows]
                if value_rows is not None:
                    info = self.parts_[c]
                    cond.part = (info["column"], info["fill"])
                y = _model_scale(cond, y)
                if method == "hierarchical":
                    from .hierarchical import HierarchicalNormal

                    cond.fast = HierarchicalNormal(D, y, cond.group_codes, self.schema_[cond.group].n_levels)
                else:
                    try:
                        cond.fast = NormalRegressionPosterior.fit(D, y)
                    except ValueError as err:
                        # name the column modelled and its design (what the user can change)
                        raise InputError(f"The normal model of column '{c}' (predictors {cond.coef_names}, "
                                         f"{len(y)} rows): {err}") from None
                    if cond.transform is None:
                        self._warn_normal_misfit(c, D, y, cond.fast, cond.support)
            elif fam == "cart":
                y = obs[c]
                if rows is not None:
                    D, y = D[rows], y[rows]
                cond.min_leaf = spec.min_leaf
                cond.fast = _fit_cart(D, y, v.kind == "continuous", spec.min_leaf or 5)
            elif fam == "tree":
                if c in getattr(self, "value_rows_", {}):
                    raise ColumnError(
                        f"Column '{c}' has missing values or point masses (a two-part model) and the method 'tree', "
                        "which models complete columns; give it 'cart' or 'normal', or its value part no point masses."
                    )
                y = obs[c]
                if rows is not None:
                    D, y = D[rows], y[rows]
                cond.min_leaf, cond.smoothing = spec.min_leaf, spec.smoothing
                cond.fast = _fit_tree(cond, D, y, spec.min_leaf or 5, spec.smoothing)
                _warn_tree_point_mass(c, cond, np.asarray(y, dtype=float))
            else:
                y = obs[c]
                if rows is not None:
                    D, y = D[rows], y[rows]
                Xg, Yg = group_rows(D, y, v.n_levels)
                cond.fast = CategoricalModel(fam, Xg, Yg, prior_sd=resolve_prior_sd(self.prior_sd, cond.coef_names))
            self.conditionals_.append(cond)
        self._check_plug_in()
        self._fit_extra(X, Z)

    def _check_plug_in(self) -> None:
        """``proper=False`` needs a plug-in for every conditional: trees, cart donors, fixed columns."""
        if getattr(self, "proper", True):
            return
        bad = {c.column: c.method or c.family for c in self.conditionals_ if c.family not in ("tree", "cart", "fixed")}
        if bad:
            raise ParameterError(
                f"The 'proper' parameter of {type(self).__name__} can be False only when every quasi-identifier is "
                f"modelled by 'tree' or 'cart' (plug-in leaves; synthpop's proper = FALSE); the parametric models "
                f"have no plug-in here. Got proper=False with {bad} instead. Give these columns 'tree' (or 'cart', "
                f"unmasked) models, e.g. models={dict.fromkeys(bad, 'tree')} or models='tree' (on the command "
                f"line: --models tree, or the spec's \"models\"), or keep proper=True.", parameter="proper")

    def _warn_normal_misfit(self, c: str, D: np.ndarray, y: np.ndarray, post: NormalRegressionPosterior,
                            support: Support | None) -> None:
        """Warn when the normal model of column ``c`` cannot keep its distribution.

        A normal linear model keeps means and linear relations, not the shape of a
        skewed, bounded or flat distribution: an income with a few losses is drawn with
        its residual spread, far below zero (515 negative values in copies of a CPS file
        whose data hold 21), and a uniform age loses the share of children on which a skip
        pattern (income missing under 15) depends. The check compares the data's
        distribution function with the model's predictive one at the fitted values,
        truncated to the support as the draws are,

        .. math:: D = \\max_t \\Bigl| \\hat F(t) - \\frac{1}{n} \\sum_i
            \\frac{\\Phi((t - x_i^\\top\\hat\\beta)/s) - \\Phi((l - x_i^\\top\\hat\\beta)/s)}
            {\\Phi((u - x_i^\\top\\hat\\beta)/s) - \\Phi((l - x_i^\\top\\hat\\beta)/s)} \\Bigr|,

        (a Kolmogorov distance; :math:`\\hat F` the mid-point empirical distribution
        function, so that ties of whole numbers count half) over 99 quantiles of the data,
        and warns when it exceeds both 0.05 and the 1% critical value 1.63 / sqrt(n) of
        Kolmogorov's distribution (Massey 1951): a normal column has D well below it (its
        estimated parameters make D smaller still, Lilliefors 1967).
        """
        from scipy.special import ndtr

        n = len(y)
        if n < 20 or post.s2 <= 0:
            return
        mu = D @ post.beta_hat
        s = float(np.sqrt(post.s2))
        lo, hi = (support.lower, support.upper) if support is not None else (-np.inf, np.inf)
        a, b = ndtr((lo - mu) / s), ndtr((hi - mu) / s)
        mass = np.maximum(b - a, 1e-300)
        t = np.unique(np.quantile(y, np.linspace(0.01, 0.99, 99)))
        model = np.array([np.mean(np.clip((ndtr((tt - mu) / s) - a) / mass, 0.0, 1.0)) for tt in t])
        ys = np.sort(y)
        data = (np.searchsorted(ys, t, side="left") + np.searchsorted(ys, t, side="right")) / (2.0 * n)
        dist = float(np.max(np.abs(model - data)))
        if dist > max(0.05, 1.63 / np.sqrt(n)):
            below = " (e.g. values below zero where the data have few)" if lo < 0 < hi else ""
            from .tree import DISCRETE_MAX

            warnings.warn(
                f"The normal model of column '{c}' does not fit its distribution (Kolmogorov distance {dist:.2f} "
                f"between the data and the model): its copies will not keep the distribution's shape{below}, nor "
                f"the share of a range that other columns (a skip pattern) depend on. --transform {c}=rank "
                f"(transforms={{'{c}': 'rank'}}) keeps its distribution; log or log1p suit positive skewed "
                f"values, --semicont {c}=0 a point mass such as zeros; a tree fits any shape (--models tree, "
                f"models={{'{c}': 'tree'}}: synthpop's cart, which DA-MI can mask; a column of at most "
                f"{DISCRETE_MAX} distinct values is drawn from its donors' values), and --models auto "
                "(models='auto') chooses by posterior predictive checks.",
                UserWarning, stacklevel=4)

    def _rule_of(self, c: str) -> tuple | None:
        """(released column, fixed value in the model's coding, label) of the structural rule
        governing model column ``c`` (:mod:`synthmi.models.base`), None if none fixes any row."""
        r = getattr(self, "ruled_", {}).get(c)
        if r is None:
            return None
        col, label = r
        rows = getattr(self, "rule_rows_", {}).get(col)
        if rows is None or not rows.any():
            return None
        if self.schema_[c].is_categorical:
            return col, list(self.schema_[c].categories).index(label), label
        return col, float(label), label

    def _fit_rows(self, c: str, family: str) -> np.ndarray | None:
        """Rows model column ``c`` is fitted on (None: all): where a value model's column has a
        value, and where no structural rule fixes it."""
        rows = getattr(self, "value_rows_", {}).get(c) if family == "normal" else None
        rule = self._rule_of(c)
        if rule is not None:
            free = ~self.rule_rows_[rule[0]]
            rows = free if rows is None else rows & free
        return rows

    def _fit_extra(self, X: pd.DataFrame, Z: pd.DataFrame) -> None:
        """Hook for subclasses (DA-MI draws its pseudo-variables here)."""

    def _design(self, cond: Conditional, X_values: dict[str, np.ndarray]) -> np.ndarray:
        """The design matrix of a conditional for the rows of ``self.data_``, the QIs set to ``X_values``."""
        return self._bound(cond).design.matrix(X_values)

    def _bound(self, cond: Conditional) -> Conditional:
        """``cond`` with its design on the rows whose Z design is ``self._Z_design_``.

        In memory that is the fitted design itself. :meth:`_fit_partitioned` fits by reduction and
        samples partition by partition: it sets ``_Z_design_`` to a partition's Z design, and its
        conditionals (default models only) carry no design, so the default one is built here.
        """
        if cond.rule is not None:
            # the rows of this frame where the rule holds: the fit's (in memory) or a partition's
            cond = dataclasses.replace(cond, rule_rows=self.rule_rows_[cond.rule[0]])
        Zd = self._Z_design_
        if cond.family == "fixed" or (cond.design is not None and Zd is getattr(self, "_fit_Z_design_", None)):
            return cond
        if cond.design is None:
            z_names = ["(Intercept)"] + [lab for c in self.keep_ for lab in self.encoders_[c].labels()]
            design = AdditiveDesign(Zd, z_names, [self.encoders_[p] for p in cond.predictors], cond.intercept)
        elif isinstance(cond.design, (AdditiveDesign, TreeDesign)) and cond.group is None:
            design = cond.design.rebind(Zd)
        else:
            raise InputError(f"The model of column '{cond.column}' ({cond.method}, formula or group) cannot be "
                             "evaluated on other rows than the fitted ones.")
        return dataclasses.replace(cond, design=design)

    # ---- posterior draws ------------------------------------------------------
    def _posterior_draws(self, m: int, rng: np.random.Generator) -> list[list[dict[str, np.ndarray] | None]]:
        """For each conditional, ``m`` independent posterior parameter sets (``None`` for cart);
        with ``proper=False``, ``m`` copies of the plug-in (the posterior mean of the tree's leaves)."""
        if not getattr(self, "proper", True):
            self._check_plug_in()  # a partitioned fit builds its conditionals elsewhere
            self.posterior_cpu_seconds_ = {c.column: None for c in self.conditionals_}
            self.diagnostics_ = {"sampler": "plug-in", "max_r_hat": None, "min_ess_bulk": None, "columns": {
                c.column: {"family": c.family, "method": "plug-in leaves (posterior mean; proper=False)"
                           if c.family == "tree" else "no parameters"} for c in self.conditionals_}}
            return [c.fast.plug_in(m) if c.family == "tree" else [None] * m for c in self.conditionals_]
        if self.sampler == "nuts":
            from .pymc_specs import sample_conditionals

            draws, idata = sample_conditionals(self, m, rng)
            self.diagnostics_ = idata
            return draws
        diag: dict[str, Any] = {"sampler": "fast", "columns": {}}
        # one child stream per conditional, split before anything is drawn: the draws are the
        # same whether the columns run here or in n_jobs worker processes
        streams = rng.spawn(len(self.conditionals_))
        tasks = [{"family": c.family, "method": c.method, "fast": c.fast, "m": m, "rng": streams[j],
                  "chains": self.chains, "draws": self.draws, "sampler": self.sampler}
                 for j, c in enumerate(self.conditionals_)]

        def done(j: int, d: dict[str, Any]) -> None:
            if self._progress is not None and "r_hat" in d and d.get("method", "").startswith(("HMC", "indep")):
                self._progress(f"posterior of '{self.conditionals_[j].column}': {d['method']}, "
                               f"r_hat {d['r_hat']:.3f}, ESS {d['ess_bulk']:.0f}")

        results = draw_columns(tasks, n_jobs=getattr(self, "n_jobs", 1), on_done=done)
        out = []
        r_hats, esss = [], []
        # CPU seconds per column: work, not part of the release's diagnostics (same seed ->
        # identical release metadata)
        self.posterior_cpu_seconds_ = {}
        for cond, (sets, d) in zip(self.conditionals_, results):
            out.append(sets)
            self.posterior_cpu_seconds_[cond.column] = d.pop("cpu_seconds", None)
            diag["columns"][cond.column] = d
            if "r_hat" in d:
                r_hats.append(d["r_hat"])
                esss.append(d["ess_bulk"])
        diag["max_r_hat"] = float(np.nanmax(r_hats)) if r_hats else None
        diag["min_ess_bulk"] = float(np.nanmin(esss)) if esss else None
        self.diagnostics_ = diag
        return out

    # ---- predictive draws -------------------------------------------------------
    def _draw_copy(self, conds: list[Conditional], preps: list[Prepared], rng: np.random.Generator) -> dict[str, np.ndarray]:
        """One synthetic copy's quasi-identifiers; Rubin's MI draws sequentially, which is exact without masks."""
        values, _, _ = sequential_draw(conds, preps, {}, rng)
        return values

    def _sampling_plan(self, m: int, rng: np.random.Generator) -> tuple[list, tuple[int, int]]:
        """Posterior draws for ``m`` copies and the root key of the record-level streams."""
        post_rng, rec_rng = rng.spawn(2)
        return self._posterior_draws(m, post_rng), entropy_from(rec_rng)

    def _sample(self, m: int, rng: np.random.Generator) -> list[pd.DataFrame]:
        thetas, entropy = self._sampling_plan(m, rng)
        # record-level draws keyed by record position (synthmi._random), so that a copy made
        # partition by partition (sample_partition) is the same as this one
        out = [self._sample_copy(i, thetas, PositionalRNG(entropy, tag=(i,), offset=0)) for i in range(m)]
        self._check_diagnostics()
        return out

    def _sample_copy(self, i: int, thetas: list, r) -> pd.DataFrame:
        """Copy ``i`` of the quasi-identifiers of the rows in ``self.data_`` (one posterior draw each).

        ``r`` supplies the record-level draws (a :class:`~synthmi._random.PositionalRNG`
        positioned at the first row of ``self.data_``); :meth:`sample_partition` calls this on
        each partition.
        """
        if self._progress is not None:
            self._progress(f"copy {i + 1}/{len(thetas[0]) if thetas else 0}: drawing {len(self.conditionals_)} columns")
        conds = [self._bound(c) for c in self.conditionals_]
        preps = [Prepared(cond, thetas[j][i]) for j, cond in enumerate(conds)]
        syn = self._draw_copy(conds, preps, r)
        frame = {}
        for cond in conds:
            c = cond.column
            if cond.kind == "continuous":
                frame[c] = pd.Series(syn[c], name=c)
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

    def _structure(self, m: int) -> dict[str, Any]:
        return {
            "visit_sequence": list(self.order_),
            "models": {c.column: c.to_dict() for c in self.conditionals_},
            # bounds used for the continuous quasi-identifiers; source "observed" discloses min and max
            "support": {c: s.to_dict() for c, s in getattr(self, "supports_", {}).items()},
            # False: one plug-in parameter value shared by the copies (synthpop's proper = FALSE)
            "proper": bool(getattr(self, "proper", True)),
            # models="auto": what was chosen and the figures that chose it
            **({"model_choice": self.model_choice_.to_dict()} if getattr(self, "model_choice_", None) else {}),
        }

    # ---- partitioned data (a dask DataFrame through synthmi.engine) ----------------------------
    # The fast posteriors depend on the data only through sums over records, which the engine
    # computes per partition and adds in an order fixed by record position (synthmi.engine.
    # canonical_sum: the same for every partitioning):
    #
    # * encoders: means, then centred sums of squares of the continuous columns;
    # * a normal conditional y = X beta + e: X'X, X'y, y'y and n, from which the conjugate posterior
    #   (BDA3 eqs. 14.4-14.7; NormalRegressionPosterior.from_stats) equals the in-memory QR fit's
    #   up to rounding;
    # * a categorical conditional: the grouped likelihood of synthmi.models.glm is a sum over the
    #   distinct design rows; each partition groups its rows and sends each distinct row to one of
    #   K buckets by a hash of its bytes (K depends on n only), a bucket pools its pieces (integer
    #   counts: exact). When the distinct rows are few (GROUPED_ON_CLIENT_MAX numbers) the buckets
    #   are gathered into one CategoricalModel, the very model the in-memory fit builds, and the
    #   whole posterior search and sampler run here with no further pass over the data; otherwise
    #   they stay on the workers (BucketedCategoricalModel), one round trip per batch of proposals.
    #
    # Copies are drawn by the same _sample_copy as in memory, partition by partition, with
    # record-keyed streams starting at each partition's global offset (synthmi._random), so a copy
    # is the same for every partitioning and equals the in-memory one up to rounding of the
    # fitted parameters.
    #
    # Not available on partitions (refused with a message): NUTS, the "rank" transform, per-variable
    # models / predictor matrices / declared bounds, survey weights, point masses, and rules that
    # read a synthesized column, set a missing value or leave a single level free.
    supports_partitions = True

    def _check_partition_support(self) -> None:
        name = type(self).__name__
        if self.sampler not in ("fast", "imh"):
            refuse_dask(f"{name}.fit with sampler='nuts'",
                        "NUTS evaluates the log-density gradient over all records at every leapfrog step (thousands of "
                        "passes over the data)", "Use sampler='fast' (exact conjugate draws and independence "
                        "Metropolis-Hastings fitted by reduction).")
        custom = [p for p in ("models", "predictor_matrix", "bounds") if getattr(self, p, None)]
        # a spec's per-variable models likewise, but for transforms (the partitioned fit applies them)
        spec_models = self._from_spec("models", "models") or {}
        if wants_auto(spec_models):
            refuse_dask(f"{name}.fit with models='auto'",
                        "the choice fits every candidate model in memory (synthmi.models.model_choice)",
                        "Fit in memory, or give the models the choice made (the spec of an in-memory release).")
        if isinstance(spec_models, str):  # one method for every quasi-identifier ("tree", "cart")
            spec_models = {"every quasi-identifier": spec_models}
        for c, m in spec_models.items():
            if any(k != "transform" and v is not None for k, v in (m if isinstance(m, Mapping) else {"method": m}).items()):
                refuse_dask(f"{name}.fit with the spec's model {m!r} for column '{c}'",
                            "the partition-wise fit builds the default main-effects models only (per-variable "
                            "methods, predictors and formulas are fitted in memory)",
                            "Fit in memory, or drop the entry from the spec's 'models'.")
        if custom:
            refuse_dask(f"{name}.fit with '{custom[0]}'",
                        "the partition-wise fit builds the default main-effects models only (per-variable models, "
                        "formulas and declared bounds are fitted in memory)",
                        "Fit in memory, or drop the parameter.")
        bad = [c for c, t in (self.transforms or {}).items() if t == "rank"]
        if bad:
            refuse_dask(f"{name}.fit with transforms={{'{bad[0]}': 'rank'}}",
                        "the rank transform needs every record's rank and keeps the sorted confidential values",
                        "Use the 'log' transform or none.")

    def _on_rows(self, part: pd.DataFrame, offset: int = 0) -> "RubinSynthesizer":
        """This fitted synthesizer on the rows of ``part`` (global position ``offset``): the same
        ``_values``, ``_design`` and ``_sample_copy``, evaluated on a partition."""
        local = _copy.copy(self)
        local.data_ = part
        n = len(part)
        local._Z_design_ = np.hstack([np.ones((n, 1))] + [self.encoders_[c].encode(local._values(c)) for c in self.keep_])
        local.rule_rows_ = {c: part.eval(cond).to_numpy(dtype=bool) for c, (cond, _) in getattr(self, "rules_", {}).items()}
        return local

    def _model_designs(self, only: Sequence[int] | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """(design, response on the modelling scale) of conditionals ``only`` (default all) on the rows of
        ``data_`` each is fitted on (all, or those its structural rule leaves free)."""
        obs = {c: self._values(c) for c in self.quasi_identifiers_}
        out = {}
        for j, cond in enumerate(self.conditionals_):
            if only is not None and j not in only:
                continue
            D = self._design(cond, obs)
            y = obs[cond.column]
            if cond.rule is not None:
                free = ~self.rule_rows_[cond.rule[0]]
                D, y = D[free], y[free]
            if cond.family == "normal" and cond.transform == "log":
                y = np.log(y)
            elif cond.family == "normal" and cond.transform == "log1p":
                y = np.log1p(y)
            out[j] = (D, y)
        return out

    def _fit_partitioned(self, frame: Frame, quasi_identifiers: Sequence[str], keep: Sequence[str] | None = None,
                         schema: Any = None, rules: dict | None = None) -> "RubinSynthesizer":
        """Fit to a partitioned (Dask) frame by reduction (see the comment above). Returns self."""
        from .base import infer_frame_schema

        owner = type(self).__name__
        self._validate_params()
        self._check_partition_support()
        self.frame_ = None  # a previous fit's frame must not travel with the partition tasks
        cols = frame.columns
        qi, keep_cols = check_roles(cols, quasi_identifiers or [], keep)
        if not qi:
            raise ParameterError(f"The 'quasi_identifiers' parameter of {owner} must name at least one column. Got [] instead.", parameter='quasi_identifiers')
        if keep_cols is None:
            keep_cols = [c for c in cols if c not in qi]
        used = qi + keep_cols
        if isinstance(schema, Schema):
            inferred = infer_frame_schema(frame)
            self.schema_ = Schema({c: schema[c] if c in schema else inferred[c] for c in cols})
        else:
            self.schema_ = infer_frame_schema(frame, schema)
        n = frame.n_rows
        cont = [c for c in used if self.schema_.kind(c) == "continuous"]
        cat = [c for c in used if self.schema_[c].is_categorical]
        self.rules_, self.rule_rows_ = {}, {}
        rule_specs = self._check_partition_rules(frame, rules, qi, keep_cols, owner) if rules else []
        checks = frame.map_partitions(_partition_checks, self.schema_, used, cont, cat, rule_specs)
        rule_of = {}
        for c, cond, coded in rule_specs:
            hits = sum(ch["rules"][c][0] for ch in checks)
            broken = sum(ch["rules"][c][1] for ch in checks)
            if broken:
                # in memory the data are set to the rule's value (with a warning); partitions are not rewritten
                raise ColumnError(f"Column '{c}' breaks its rule on {broken} rows of df; the Dask path needs data that "
                                 "follow their rules (fit in memory, where the models see the data as the rule says).", data='df')
            free = sum(ch["rules"][c][2] for ch in checks) if self.schema_[c].is_categorical else None
            if free is not None and int((free > 0).sum()) < 2:
                refuse_dask(f"{owner}.fit with the rule for column '{c}'",
                            "the rows the rule leaves free hold a single level, so the column is a function of kept "
                            "columns (family 'fixed'), whose removal from later models is decided in memory",
                            "Fit in memory.")
            if hits:
                rule_of[c] = ((c, coded, self.rules_[c][1]), free)
        miss = {c: sum(ch["missing"][c] for ch in checks) for c in used}
        lo_of = {c: min(ch["min"][c] for ch in checks) for c in cont}
        hi_of = {c: max(ch["max"][c] for ch in checks) for c in cont}
        counts_of = {c: sum(ch["levels"][c] for ch in checks) for c in cat}
        check_degenerate_found([c for c in used if miss[c] == n],
                               [c for c in used if (not lo_of[c] < hi_of[c] if c in cont else
                                                    c in cat and int((counts_of[c] > 0).sum()) < 2)], "df")
        if not self.allows_missing:
            for c in used:
                if miss[c]:
                    raise ColumnError(f"Column '{c}' has {miss[c]} missing values; the Dask path of {owner} needs complete "
                                     "data (synthesize in memory, where missing values are modelled, or impute with "
                                     "--method risk-dami).")
        if n < self.min_rows:
            raise InputError(f"{owner} needs at least {self.min_rows} rows to fit. Got {n} instead.")
        meta = frame.meta
        self.quasi_identifiers_ = qi
        self.keep_ = keep_cols
        self.columns_ = cols
        self.dtypes_ = meta.dtypes.copy()
        self.whole_number_columns_ = [c for c in cont if pd.api.types.is_float_dtype(meta[c])
                                      and sum(ch["fractional"][c] for ch in checks) == 0]
        self.n_ = n
        if getattr(self, "spec_", None) is None:
            self.spec_ = _roles_spec(self.schema_, meta, qi, keep_cols, lo_of, hi_of, self.whole_number_columns_)
        self.data_ = meta.copy()
        transforms = self._transforms()
        self._check_transforms(transforms, qi, lambda c: lo_of[c])

        # encoders: mean, then centred sum of squares (canonical order: the same for any partitioning)
        if cont:
            means = frame.reduce(lambda p: (p[cont].to_numpy(dtype=float).sum(axis=0),))[0] / n
            ss = frame.reduce(lambda p: (((p[cont].to_numpy(dtype=float) - means) ** 2).sum(axis=0),))[0]
        else:
            means, ss = np.zeros(0), np.zeros(0)
        mean_of, ss_of = dict(zip(cont, means)), dict(zip(cont, ss))
        self.order_ = self._resolve_order(qi)
        self.encoders_ = {c: self._encoder_from_moments(c, mean_of.get(c), ss_of.get(c), n) for c in keep_cols + qi}
        z_names = ["(Intercept)"] + [lab for c in keep_cols for lab in self.encoders_[c].labels()]
        self.supports_ = {}
        steps = {c: self.grid.get(c, "auto") if isinstance(self.grid, Mapping) else self.grid
                 for c in qi if self.schema_[c].kind == "continuous"}
        auto = [c for c, step in steps.items() if step == "auto"]
        # the grid "auto" as in memory (_support): detect_grid of the column's distinct values, the
        # union of each partition's (capped where detect_grid gives up: the same grid for any partitioning)
        distinct: dict[str, np.ndarray | None] = {c: np.zeros(0) for c in auto}
        for pr in (frame.map_partitions(_partition_distinct, auto) if auto else []):
            for c in auto:
                u = None if distinct[c] is None or pr[c] is None else np.union1d(distinct[c], pr[c])
                distinct[c] = None if u is None or u.size > DISTINCT_CAP else u
        for c, step in steps.items():
            if step == "auto":
                grid = None if distinct[c] is None else detect_grid(distinct[c])
            else:
                grid = None if step is None else (0.0, float(check_scalar(step, f"grid['{c}']", owner, lower=0,
                                                                            lower_inclusive=False)))
            self.supports_[c] = Support(float(lo_of[c]), float(hi_of[c]), "observed", grid)
        self.conditionals_ = []
        for j, c in enumerate(self.order_):
            v = self.schema_[c]
            cond = Conditional(column=c, kind=v.kind, family=self._family(v.kind, v.n_levels),
                               predictors=self.order_[:j], n_categories=v.n_levels, transform=transforms.get(c),
                               support=self.supports_.get(c))
            names = z_names + [lab for pr in cond.predictors for lab in self.encoders_[pr].labels()]
            cond.coef_names = names if cond.intercept else names[1:]
            if c in rule_of:
                cond.rule = rule_of[c][0]
            self.conditionals_.append(cond)
        light = _copy.copy(self)  # what the partition tasks need (no dask objects inside)
        light.retain_records()  # shipped to this job's workers, never published: pickled whole
        # every model drops aliased columns as in memory (_fit): kept columns by the pivoted QR of their
        # Gram matrix, then earlier quasi-identifiers' columns aliased with those before them
        # (_drop_aliased_gram), from the Gram matrix of [Z | every QI encoded] summed over partitions on
        # the model's rows (a ruled column's: the rows its rule leaves free)
        ruled = [j for j, cd in enumerate(self.conditionals_) if cd.rule is not None]
        grams = frame.reduce(lambda p: _alias_grams(light._on_rows(p), ruled))
        gram_of = {j: grams[1 + k] for k, j in enumerate(ruled)}
        pz = len(z_names)
        x_cols, pos = {}, pz
        for c in self.order_:
            x_cols[c] = list(range(pos, pos + self.encoders_[c].width))
            pos += self.encoders_[c].width
        for j, cond in enumerate(self.conditionals_):
            G = gram_of.get(j, grams[0])
            idx = [int(k) for k in non_aliased_gram(G[:pz, :pz])]
            # Zc of _drop_aliased: the kept Z columns, after an intercept unless the first is all ones
            # (sum x = sum x^2 = n on the model's rows)
            first_ones = bool(idx) and G[idx[0], idx[0]] == G[0, 0] == G[0, idx[0]]
            zc = idx if first_ones else [0] + idx
            encs = [self.encoders_[pr] for pr in cond.predictors]
            if encs:
                sel = zc + [k for pr in cond.predictors for k in x_cols[pr]]
                encs = _drop_aliased_gram(G[np.ix_(sel, sel)], len(zc), encs)
            cond.design = AdditiveDesign(np.zeros((1, pz)), z_names, encs, cond.intercept, np.asarray(idx))
            cond.predictors = list(cond.design.inputs)
            cond.coef_names = list(cond.design.names)
        light = _copy.copy(self)
        light.retain_records()
        normal_idx = [j for j, cd in enumerate(self.conditionals_) if cd.family == "normal"]
        cat_idx = [j for j, cd in enumerate(self.conditionals_) if cd.family != "normal"]
        if normal_idx:
            stats = frame.reduce(lambda p: _normal_stats(light._on_rows(p), normal_idx))
            for k, j in enumerate(normal_idx):
                XtX, Xty, yty, nn = stats[4 * k: 4 * k + 4]
                cond = self.conditionals_[j]
                try:
                    cond.fast = NormalRegressionPosterior.from_stats(XtX, Xty, float(yty), float(nn))
                except ValueError as err:
                    # name the column modelled and its design, as the in-memory fit does
                    raise InputError(f"The normal model of column '{cond.column}' (predictors {cond.coef_names}): "
                                     f"{err}") from None
        K = n_buckets(n)
        if cat_idx:
            pieces = frame.lazy_partitions(_partition_groups, light, cat_idx, K)
            prior_of = {j: resolve_prior_sd(self.prior_sd, self.conditionals_[j].coef_names) for j in cat_idx}
            sizes = {j: (len(self.conditionals_[j].coef_names), self.conditionals_[j].n_categories) for j in cat_idx}
            remotes = Remote.merge_many(frame, pieces, [[(j, k) for k in range(K)] for j in cat_idx], merge_bucket,
                                        lambda key: (self.conditionals_[key[0]].family, *sizes[key[0]], prior_of[key[0]]))
            for j, remote in zip(cat_idx, remotes):
                cond = self.conditionals_[j]
                p, C = sizes[j]
                # category totals of the rows the model is fitted on (a ruled column: its free rows)
                totals = rule_of[cond.column][1] if cond.rule is not None else counts_of[cond.column]
                cond.fast = categorical_model_of(remote, cond.family, p, C, prior_of[j], totals)
        self._fit_partitioned_extra({c: ss_of.get(c, np.nan) / (n - 1) for c in qi}, n)
        self.frame_ = frame
        return self

    def _fit_partitioned_extra(self, variance_of: dict[str, float], n: int) -> None:
        """Hook for subclasses (DA-MI fits its masking models here); ``variance_of`` the QIs' variances (ddof 1)."""

    def _encoder_from_moments(self, c: str, mean: float | None, ss: float | None, n: int) -> Encoder:
        """:meth:`_encoder` from a column's mean and centred sum of squares (population sd, as ``x.std()``)."""
        v = self.schema_[c]
        if v.kind == "continuous":
            sd = float(np.sqrt(ss / n))
            return Encoder(c, "continuous", float(mean), sd if sd > 0 else 1.0)
        return Encoder(c, "categorical", n_levels=v.n_levels)

    def _check_partition_rules(self, frame: Frame, rules: dict, qi: list[str], keep_cols: list[str],
                               owner: str) -> list[tuple[str, str, Any]]:
        """Validate ``rules`` for a partitioned fit; returns (column, condition, coded value) per rule."""
        self.rules_ = self._check_rules(frame.meta, rules, owner)
        specs = []
        for c, (cond, value) in self.rules_.items():
            refs = rule_columns(cond, frame.columns)
            if c not in qi or not refs or not refs <= set(keep_cols):
                refuse_dask(f"{owner}.fit with the rule {cond!r} for column '{c}'",
                            "a rule is fitted partition by partition only when it governs a quasi-identifier and its "
                            "condition reads kept columns alone (a rule on a synthesized column is applied to each "
                            "copy after synthesis, in memory)", "Fit in memory, or condition the rule on kept columns.")
            if value is None:
                refuse_dask(f"{owner}.fit with the rule for column '{c}' setting a missing value",
                            "the Dask path takes complete data and models no missing values",
                            "Fit in memory, where missing values are modelled.")
            v = self.schema_[c]
            coded = rule_value(v, c, value)
            if v.is_categorical:
                coded = list(v.categories).index(coded)
            specs.append((c, cond, coded))
        return specs

    def sampling_plan(self, m: int, random_state: Any = None) -> tuple[list, tuple[int, int]]:
        """Posterior draws for ``m`` copies and the root key of their record-level streams."""
        return self._sampling_plan(m, check_random_state(random_state))

    def sample_partition(self, part: pd.DataFrame, offset: int, plan: tuple[list, tuple[int, int]],
                         copies: Sequence[int]) -> list[pd.DataFrame]:
        """Copies ``copies`` (0-based) of the records in ``part``, which start at global position ``offset``,
        under the :meth:`sampling_plan` ``plan``: the same records whatever the partitioning."""
        thetas, entropy = plan
        local = self._on_rows(part, offset)
        return [local._assemble(local._sample_copy(i, thetas, PositionalRNG(entropy, tag=(i,), offset=offset)))
                for i in copies]

    def _sample_partitioned(self, m: int, random_state: Any) -> PartitionedSyntheticData:
        """``m`` lazy copies of the partitioned data this synthesizer was fitted on."""
        m = check_scalar(m, "m", type(self).__name__, kind="int", lower=1)
        seed = random_state if isinstance(random_state, (int, np.integer)) else None
        plan = self.sampling_plan(m, random_state)
        diagnostics = self._diagnostics()
        # fail closed, as in memory: a sampler that failed the convergence check gives no copies,
        # not even lazy ones, unless the user accepted the failure (then it is recorded)
        check = enforce_diagnostics(diagnostics, owner=type(self).__name__, accept=self.accept_diagnostics,
                                    rhat_max=self.rhat_max, ess_min=self.ess_min)
        self._check_diagnostics()
        light = _copy.copy(self)
        light.retain_records()  # shipped to this job's workers, never published: pickled whole
        light.frame_ = None
        light.conditionals_ = [dataclasses.replace(c, fast=getattr(c.fast, "template", c.fast))
                               for c in self.conditionals_]
        return PartitionedSyntheticData(
            m=m, method=self.method, params=self.get_params(), seed=None if seed is None else int(seed),
            quasi_identifiers=list(self.quasi_identifiers_), diagnostics=diagnostics, diagnostics_check=check,
            frame=self.frame_, sample_partition=functools.partial(_sample_with_plan, light, plan),
            meta=self.data_[self.columns_], rule=self.combining_rule,
            spec=self.spec_.public_view() if getattr(self, "spec_", None) is not None else None,
        )

    def _check_transforms(self, transforms: dict[str, str | None], qi: list[str],
                          minimum: Callable[[str], float]) -> None:
        """The transforms name continuous quasi-identifiers whose values they can take;
        ``minimum(c)``: the smallest value of column ``c`` on the rows its model is fitted on."""
        owner = type(self).__name__
        unknown = [c for c in transforms if c not in qi]
        if unknown:
            raise ParameterError(f"The 'transforms' parameter of {owner} names columns that are not quasi-identifiers: {unknown}.", parameter='transforms')
        for c, t in transforms.items():
            if t is not None and self.schema_[c].kind != "continuous":
                raise InputError(f"The transform {t!r} given for column '{c}' needs a continuous column; '{c}' is {self.schema_[c].kind}.")
            if t == "log" and minimum(c) <= 0:
                hint = "" if c in getattr(self, "semicont_", {}) else \
                    f" (zeros? give them as a point mass: semicont={{'{c}': [0]}}, --semicont {c}=0)"
                raise InputError(
                    f"The 'log' transform given for column '{c}' needs positive values; the column has values <= 0{hint}."
                )
            if t == "log1p" and minimum(c) <= -1:
                raise InputError(f"The 'log1p' transform given for column '{c}' needs values > -1.")

    def coefficient_names(self) -> dict[str, list[str]]:
        """Names of the regression coefficients of each conditional model."""
        self._check_fitted()
        return {c.column: list(c.coef_names) for c in self.conditionals_ if c.family not in ("cart", "fixed")}


def _fit_cart(D: np.ndarray, y: np.ndarray, continuous: bool, min_leaf: int = 5):
    """A tree on the design with synthpop's settings and its leaves' donors (synthpop ``cart``)."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    from .cart import _RPART_MAXDEPTH, _leaf_donors

    cls = DecisionTreeRegressor if continuous else DecisionTreeClassifier
    # CartSynthesizer's defaults: leaves of >= 5 records (min_leaf), rpart's minsplit = 3 * minbucket, no pruning
    tree = cls(min_samples_leaf=min_leaf, min_samples_split=max(2, 3 * min_leaf), max_depth=_RPART_MAXDEPTH,
               random_state=0).fit(D, y)
    return tree, _leaf_donors(tree.apply(D), np.asarray(y))


class TreeDesign:
    r"""The design a ``tree`` conditional grows and applies its partition on: CartSynthesizer's.

    :class:`~synthmi.models.cart.CartSynthesizer` grows each tree on the kept columns Z, then
    the quasi-identifiers visited before, encoded by its ``_Encoder`` (continuous columns as
    they are, binary and ordinal ones as codes :math:`0..C-1`, nominal ones with more than two
    levels one-hot), with no intercept. The parametric models' :class:`AdditiveDesign` has an
    intercept, treatment dummies (no column for the reference level, aliased ones dropped) and
    standardised numbers: a tree on it cannot isolate a nominal reference level in one split,
    splits an ordinal column's levels one dummy at a time, and the extra constant column
    changes scikit-learn's random order of the features and so its choice between tied splits.
    On anes96 (QIs age, educ, income; all ``tree``) educ's and income's partitions differed
    from CART's on the same data. On this design, with the same settings and ``random_state``
    (:func:`_fit_cart`), the tree is CART's: with masks that carry no information and
    ``proper=False`` the tree conditional is synthpop's ``cart`` (a uniform donor of CART's own
    leaf; ``tests/models/test_tree_plug_in.py``). What it changed in utility is small: on anes96
    (unmasked, improper, kernels at 1/1000 of their bandwidth; frontier_battery's measures, M = 5,
    seeds 0-29) the battery's CI overlap went from 0.785 to 0.788 (paired difference 0.003 +-
    0.001), the worst one-way / two-way S_pMSE from 1.36 / 1.72 to 1.35 / 1.73 (+- 0.05 / 0.02;
    CART leaf 5: 0.776, 1.22 / 1.70). The 1.60 against CART's 1.14 of the battery's seeds 0-5
    was their spread (seeds 6-29: tree 1.30, CART 1.24, +- 0.06 each).

    The kept columns are read back from the synthesizer's Z design (codes from the treatment
    dummies; continuous columns standardised, an increasing affine map that leaves every split
    of the records unchanged), so :meth:`rebind` evaluates it on other rows as the additive
    design does.
    """

    additive = False

    def __init__(self, schema: Schema, z_block: np.ndarray, z_cols: Sequence[tuple[str, list[int]]],
                 inputs: Sequence[str]):
        """``z_block``: the synthesizer's full Z design; ``z_cols``: (kept column, its columns in
        ``z_block``) of the kept predictors, in CART's order; ``inputs``: earlier QIs, visit order."""
        from .cart import _Encoder

        self.schema = schema
        self.z_cols = [(c, list(idx)) for c, idx in z_cols]
        self.inputs = list(inputs)
        self._encoder = _Encoder(schema, [c for c, _ in self.z_cols] + self.inputs)
        self._z = self._z_design(z_block)
        self.names = [lab for c, _ in self.z_cols for lab in self._labels(c)] + \
            [lab for c in self.inputs for lab in self._labels(c)]

    def _labels(self, c: str) -> list[str]:
        v = self.schema[c]
        if v.kind == "nominal" and v.n_levels > 2:
            return [f"{c}[{k}]" for k in range(v.n_levels)]
        return [c]

    def _z_design(self, z_block: np.ndarray) -> np.ndarray:
        blocks = []
        for c, idx in self.z_cols:
            cols = z_block[:, idx]
            if self.schema[c].is_categorical:
                # the treatment dummies of levels 1..C-1 (the full Z design keeps them all): back to codes
                values = np.rint(cols @ np.arange(1, len(idx) + 1, dtype=float)).astype(np.int64)
            else:
                values = cols[:, 0]
            blocks.append(self._encoder.block(c, values))
        return np.hstack(blocks) if blocks else np.empty((z_block.shape[0], 0))

    def rebind(self, z_block: np.ndarray) -> "TreeDesign":
        """The same design on other rows: ``z_block`` is the full Z design of those rows."""
        new = _copy.copy(self)
        new._z = self._z_design(z_block)
        return new

    def matrix(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        blocks = [self._z] + [self._encoder.block(c, values[c]) for c in self.inputs]
        out = np.hstack(blocks)
        if out.shape[1] == 0:
            # no predictors: one leaf (CartSynthesizer._design's column of zeros)
            out = np.zeros((out.shape[0], 1))
        return out


def _model_scale(cond: Conditional, y: np.ndarray) -> np.ndarray:
    """A continuous response on its modelling scale (``cond.transform``), kept as ``cond.y_model``."""
    if cond.transform == "log":
        y = np.log(y)
    elif cond.transform == "log1p":
        y = np.log1p(y)
    elif cond.transform == "rank":
        cond.sorted_obs = np.sort(y)
        ranks = pd.Series(y).rank(method="average").to_numpy()
        y = ndtri((ranks - 0.5) / len(y))
    cond.y_model = y
    return y


def _fit_tree(cond: Conditional, D: np.ndarray, y: np.ndarray, min_leaf: int = 5, smoothing: float | None = None):
    """The tree model of :mod:`synthmi.models.tree`: ``_fit_cart``'s partition, conjugate leaves.

    ``smoothing`` None (the default): discrete leaves (the donors' values, as CartSynthesizer draws)
    for a column of at most :data:`~synthmi.models.tree.DISCRETE_MAX` distinct values, the kernel
    (factor 1) above that; 0: discrete leaves, refused above ``DISCRETE_MAX``; c > 0: the kernel
    scaled by c (a few-valued column keeps discrete leaves whatever the setting)."""
    from .tree import DISCRETE_MAX, TreePosterior, few_valued

    continuous = cond.kind == "continuous"
    tree, _ = _fit_cart(D, y, continuous, min_leaf)
    leaf = tree.apply(D)
    if not continuous:
        return TreePosterior(tree, leaf, y, cond.n_categories)
    lo, hi = cond.latent_bounds()
    # the grid's step is on the modelling scale unless a transform changes the scale
    grid = None if cond.support is None or cond.transform else cond.support.grid
    # a few-valued column (heaped, bracketed) keeps its donors' values: no kernel (models/tree.py);
    # so does, by default or with smoothing=0, any column of up to DISCRETE_MAX values: with the
    # kernel as the default, the unmasked plug-in tree was not CART (Adult, 5,000 rows, age's tree:
    # hours ~ age * education CI overlap 0.49 against CART's 0.87 on the same partition, 0.82 with
    # the donors' values; models/tree.py)
    discrete = few_valued(y)
    if not discrete and (smoothing is None or smoothing == 0):
        yy = np.asarray(y, dtype=float)
        n_values = int(np.unique(yy[~np.isnan(yy)]).size)
        if n_values <= DISCRETE_MAX:
            discrete = True
        elif smoothing == 0:
            raise ColumnError(
                f"Column '{cond.column}' has {n_values} distinct values and the tree's smoothing 0 (the donors' "
                f"values, no kernel), which is for columns of at most {DISCRETE_MAX} values (the joint predictive "
                "tabulates each leaf over the column's values). Give it a smoothing > 0 (a kernel), or the method "
                "'cart' if it is not masked.")
    return TreePosterior(tree, leaf, _model_scale(cond, np.asarray(y, dtype=float)), 0, lo, hi,
                         smoothing=1.0 if smoothing is None else smoothing,
                         grid_step=None if grid is None else float(grid[1]), discrete=discrete)


def _warn_tree_point_mass(c: str, cond: Conditional, y: np.ndarray) -> None:
    """Warn when the tree's kernel will spread a point mass of column ``c`` that nothing snaps back.

    Only a kernel column reaches the check: a continuous tree column with more than
    :data:`synthmi.models.tree.DISCRETE_MAX` distinct values, or one given a ``smoothing`` > 0 (the
    default gives a column of at most that many values discrete leaves, the donors' values). Its
    copies are drawn from kernels around its donors' values; a value held by many donors (a heap)
    gets the narrowest kernel and returns to itself only by snapping to the column's grid. A column
    with no grid (or a transform) and a point mass (its most frequent value holding at least
    ``POINT_MASS_MIN_SHARE`` of the rows, the rule :mod:`synthmi.models.model_choice` uses) then
    releases no copy of that value: fair's ``affairs`` (67.8% zeros, no grid) had no exact zero in
    its kernel copies and a one-way S_pMSE of 851, against cart's 1.14, with no message (the new-user
    review of issue 29). The advice is the donors' values (``smoothing`` 0, or none given) up to
    ``DISCRETE_MAX`` values, the method ``'cart'`` above that. The warning names the column and the
    share only (no value)."""
    from .tree import DISCRETE_MAX

    post = cond.fast
    # the tree's own settings (few-valued columns get discrete leaves; the grid _fit_tree gave it)
    if cond.kind != "continuous" or post.discrete or post.grid_step is not None:
        return
    mass = _point_masses(None, y)
    if not mass:
        return
    share = float(np.mean(y == mass[0]))
    if np.unique(y[~np.isnan(y)]).size <= DISCRETE_MAX:
        advice = ("Give it the tree's smoothing 0 (the donors' values, no kernel, as synthpop's cart: "
                  f"models={{'{c}': {{'method': 'tree', 'smoothing': 0}}}}, the same entry in a spec's \"models\"; "
                  "leaving out the smoothing does the same), or the method 'cart' if it is not masked.")
    else:
        advice = (f"It has more than {DISCRETE_MAX} distinct values, too many for the tree's discrete leaves "
                  "(smoothing 0): give it the method 'cart' (the donors' values) if it is not masked.")
    warnings.warn(
        f"Column '{c}' has a value held by {share:.0%} of its rows (a point mass or heap) and the method 'tree', "
        "whose kernels spread it over nearby values: the column has no grid to snap the draws back to, so its "
        f"copies will hold almost none of that value. {advice}",
        UserWarning, stacklevel=5)


def _in_span(Z: np.ndarray, X: np.ndarray, tol: float = 1e-8) -> bool:
    """Whether every column of ``X`` is a linear combination of the columns of ``Z`` (least squares)."""
    coef = np.linalg.lstsq(Z, X, rcond=None)[0]
    return bool(np.max(np.abs(X - Z @ coef), initial=0.0) <= tol * max(1.0, float(np.max(np.abs(X), initial=0.0))))


def _drop_aliased(Z: np.ndarray, encoders: list[Encoder], values: Mapping[str, np.ndarray],
                  tol: float = 1e-10) -> list[Encoder]:
    """The encoders of a design's earlier quasi-identifiers without their aliased columns.

    Going through the columns in order after the (full-rank) kept block ``Z``
    (intercept first), a column is aliased when it is a linear combination of
    the columns kept before it on the model's rows (:func:`_drop_aliased_gram`).
    Skip patterns make such columns: on the rows where hours worked has a value,
    ``employed`` is always ``'Yes'`` and its ``<NA>`` dummy is 0.
    """
    if not encoders:
        return []
    # the intercept spans the cut-points of ordinal models, which have none in the design
    Zc = Z if Z.shape[1] and np.all(Z[:, 0] == 1.0) else np.hstack([np.ones((Z.shape[0], 1)), Z])
    X = np.hstack([e.encode(values[e.name]) for e in encoders])
    D = np.hstack([Zc, X])
    return _drop_aliased_gram(D.T @ D, Zc.shape[1], encoders, tol)


def _drop_aliased_gram(G: np.ndarray, q: int, encoders: list[Encoder], tol: float = 1e-10) -> list[Encoder]:
    r""":func:`_drop_aliased` from the Gram matrix :math:`G = D^\top D` of ``D = [Zc | X]``
    (``q`` columns of ``Zc``; a partitioned fit sums it over partitions).

    A column is aliased when :func:`~synthmi._numeric.independent_columns_gram` says so
    (residual sum of squares at most ``tol`` :math:`G_{jj}`). A categorical column keeps
    the dummies of its other levels (:attr:`Encoder.levels`), a continuous or fully
    aliased one leaves the design.
    """
    keep = independent_columns_gram(G, tol)
    out, pos = [], q
    for e in encoders:
        k = keep[pos: pos + e.width]
        pos += e.width
        if k.all():
            out.append(e)
        elif e.kind == "categorical" and k.any():
            out.append(dataclasses.replace(e, levels=tuple(int(v) for v in e.coded_levels[k])))
    return out


# ---------------------------------------------------------------------------
# what a partition computes for RubinSynthesizer._fit_partitioned (shipped to the workers)
#: rows per bucket of grouped design rows (the number of buckets depends on n only)
ROWS_PER_BUCKET = 250_000
MIN_BUCKETS = 4


def n_buckets(n: int) -> int:
    return max(MIN_BUCKETS, -(-int(n) // ROWS_PER_BUCKET))


def _sample_with_plan(light: RubinSynthesizer, plan: tuple, part: pd.DataFrame, offset: int,
                      copies: Sequence[int]) -> list[pd.DataFrame]:
    return light.sample_partition(part, offset, plan, copies)


def _partition_checks(part: pd.DataFrame, offset: int, schema: Schema, used: list[str], cont: list[str],
                      cat: list[str], rule_specs: list) -> dict[str, Any]:
    """Counts, ranges and level counts of one partition's columns, and per rule: rows where it holds,
    rows that break it, and (categorical) level counts on the rows it leaves free."""
    out: dict[str, Any] = {"n": len(part), "missing": {c: int(part[c].isna().sum()) for c in used}}
    x = {c: part[c].to_numpy(dtype=float) for c in cont}
    out["min"] = {c: float(np.nanmin(x[c])) if len(part) else np.inf for c in cont}
    out["max"] = {c: float(np.nanmax(x[c])) if len(part) else -np.inf for c in cont}
    out["fractional"] = {c: int(np.sum(np.mod(x[c][~np.isnan(x[c])], 1.0) != 0.0)) for c in cont}
    # level counts through the schema's coding: categorical dtypes and 0/1 integer columns alike
    out["levels"] = {}
    for c in cat:
        codes = schema.codes(part[c])
        out["levels"][c] = np.bincount(codes[codes >= 0], minlength=schema[c].n_levels)
    out["rules"] = {}
    for c, cond, value in rule_specs:
        hit = part.eval(cond).to_numpy(dtype=bool)
        if schema[c].is_categorical:
            codes = schema.codes(part[c])
            broken = int(np.sum(hit & (codes != value)))
            free = np.bincount(codes[~hit], minlength=schema[c].n_levels)
        else:
            broken = int(np.sum(hit & (part[c].to_numpy(dtype=float) != value)))
            free = None
        out["rules"][c] = (int(hit.sum()), broken, free)
    return out


def _roles_spec(schema: Schema, meta: pd.DataFrame, qi: list[str], keep: list[str], lo_of: Mapping[str, float],
                hi_of: Mapping[str, float], whole: Sequence[str]) -> ReleaseSpec:
    """The spec the roles stand for (what :meth:`ReleaseSpec.from_roles` gives in memory) from a partitioned
    fit's summaries: levels from the schema, a used numeric column's observed range and whether its
    values are whole; a numeric column that is neither kept nor synthesized (not read) by its dtype."""
    cols = {}
    for c in role_order(meta.columns, qi, keep):
        role = "quasi_identifier" if c in qi else ("keep" if c in keep else "excluded")
        if schema[c].is_categorical:
            cols[c] = ColumnSpec(c, role, schema[c].kind, levels=tuple(plain(x) for x in schema[c].categories),
                                 declared=False)
        elif c in lo_of:
            kind = "integer" if pd.api.types.is_integer_dtype(meta[c].dtype) or c in whole else "continuous"
            cols[c] = ColumnSpec(c, role, kind, bounds=(float(lo_of[c]), float(hi_of[c])), declared=False)
        else:
            cols[c] = column_from_dtype(c, meta[c].dtype, role)
    return ReleaseSpec(cols)


#: distinct values per column past which detect_grid finds no grid (its max_points + 1)
DISTINCT_CAP = 1_000_001


def _partition_distinct(part: pd.DataFrame, offset: int, cols: list[str]) -> dict[str, np.ndarray | None]:
    """Each column's sorted distinct finite values on ``part`` (None: more than :data:`DISTINCT_CAP`)."""
    return {c: distinct_capped(part[c].to_numpy(dtype=float), DISTINCT_CAP) for c in cols}


def _alias_grams(view: RubinSynthesizer, ruled: list[int]) -> tuple:
    """W'W of W = [Z | every QI encoded, in visit order] over all rows, then over the rows each ruled
    conditional's structural rule leaves free."""
    W = np.hstack([view._Z_design_] + [view.encoders_[c].encode(view._values(c)) for c in view.order_])
    out = [W.T @ W]
    for j in ruled:
        Wf = W[~view.rule_rows_[view.conditionals_[j].rule[0]]]
        out.append(Wf.T @ Wf)
    return tuple(out)


def _normal_stats(view: RubinSynthesizer, normal_idx: list[int]) -> tuple:
    """X'X, X'y, y'y and n of each normal conditional on the rows of ``view``."""
    ds = view._model_designs(normal_idx)
    out = []
    for j in normal_idx:
        D, y = ds[j]
        out += [D.T @ D, D.T @ y, np.array(y @ y), np.array(float(len(y)))]
    return tuple(out)


def _hash_rows(X: np.ndarray) -> np.ndarray:
    if X.shape[0] == 0:
        return np.zeros(0, dtype=np.uint64)
    return pd.util.hash_pandas_object(pd.DataFrame(X), index=False).to_numpy()


def _partition_groups(part: pd.DataFrame, offset: int, light: RubinSynthesizer, cat_idx: list[int], K: int) -> dict:
    """Each categorical conditional's grouped design rows on ``part``, split into ``K`` buckets by row hash."""
    ds = light._on_rows(part, offset)._model_designs(cat_idx)
    out = {}
    for j in cat_idx:
        Xg, Yg = group_rows(*ds[j], light.conditionals_[j].n_categories)
        b = (_hash_rows(Xg) % np.uint64(K)).astype(np.int64)
        for k in range(K):
            out[(j, k)] = (Xg[b == k], Yg[b == k])
    return out
