"""Fit synthesizers across tuning settings: the risk-utility frontier and masking tuned to risk targets.

Why here, in the orchestration layer (:mod:`synthmi.workflow`) and not in
:mod:`synthmi.evaluation`: the measures judge copies from any tool and never
import :mod:`synthmi.models` (data flows down the layers of
:mod:`synthmi._layers`). This driver needs both, fitting synthesizers
(models) and measuring their copies (:mod:`synthmi.evaluation.frontier`), so
it sits above both and imports downward only.

Cheap re-tuning: for DA-MI and risk-targeted DA-MI the masks act only in the
predictive step (Jiang et al. 2022: with X observed and lambda known, W
carries no information about theta), so the fitted posterior (the Rubin
conditionals, or the copula chain) is fitted once per data set and
:func:`remask` swaps the masks of a fitted synthesizer without refitting.
``tests/test_tuning.py`` checks that a remasked synthesizer gives the same
copies as one fitted from scratch with those masks.
"""
from __future__ import annotations

import copy
import json
from types import MethodType
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..evaluation.battery import DEFAULT_MAX_TABLE_S_PMSE, Battery, default_battery, table_violations
from ..evaluation.frontier import (
    HIGHER_IS_BETTER,
    Analysis,
    FrontierResult,
    Target,
    evaluate_release,
    pareto_front,
    summarise,
)
from .evaluate import independent_release  # the review's reference release, also a frontier reference
from ..diagnostics import ESS_MIN, RHAT_MAX
from .._json import jsonable
from .._validate import check_scalar
from ..errors import InputError, InputTypeError

__all__ = ["Setting", "make_synthesizer", "remask", "frontier", "tune", "TuneResult", "mask_flags",
           "LEAF_GRID", "leaf_columns", "spec_with_leaf",
           "independent_release", "greedy_ascent", "coordinate_search", "validate_spec", "SearchBudgetExhausted",
           "ReferenceTarget", "parse_target", "reference_figures", "versus_reference"]

METHODS = ("dami", "risk-dami", "cart", "norm+logit")
_MASKED = {"dami", "risk-dami"}


def _base_method(method: str) -> str:
    """A method variant's label (e.g. "dami (ordered logit)") -> the synthesizer it uses."""
    return method.split(" (")[0]


@dataclass
class Setting:
    """One candidate: ``method`` (one of :data:`METHODS`), a ``label`` and constructor ``params``."""

    method: str
    label: str
    params: dict[str, Any] = field(default_factory=dict)

    def fit_key(self, spec_models: Any = None) -> str:
        """Settings with the same key share one fit (masks act only in the predictive).

        Not when the models are chosen by posterior predictive checks (``models="auto"`` in the
        params, or in ``spec_models``, the spec's, when the params give none): the checks draw
        copies with the masks and a masked column's candidates depend on its mask
        (:mod:`synthmi.models.model_choice`), so each mask setting is fitted on its own.
        """
        from ..models.model_choice import wants_auto

        masked = _base_method(self.method) in _MASKED
        chosen = masked and wants_auto(self.params["models"] if self.params.get("models") is not None else spec_models)
        p = {k: v for k, v in self.params.items() if not (masked and k == "masks" and not chosen)}
        return self.method + json.dumps(p, sort_keys=True, default=str)


def make_synthesizer(method: str, params: Mapping[str, Any] | None = None):
    """An unfitted synthesizer for ``method`` with ``params``."""
    from ..models import CartSynthesizer, DAMISynthesizer, RiskTargetedSynthesizer, RubinSynthesizer

    p = dict(params or {})
    if method == "dami":
        p.setdefault("progressbar", False)
        return DAMISynthesizer(**p)
    if method == "risk-dami":
        return RiskTargetedSynthesizer(**p)
    if method == "cart":
        return CartSynthesizer(**p)
    if method == "norm+logit":
        p.setdefault("progressbar", False)
        return RubinSynthesizer(**p)
    raise InputError(f"The method must be one of {list(METHODS)}. Got {method!r} instead.")


def _memo_draws(self, m: int, rng: np.random.Generator):
    """``_posterior_draws`` memoised on (m, generator state): the parameter draws of the
    association model do not depend on the masks, so settings sharing a seed share them."""
    key = (int(m), json.dumps(rng.bit_generator.state, sort_keys=True, default=str))
    memo = self._posterior_memo
    if key not in memo:
        draws = type(self)._posterior_draws(self, m, rng)
        memo[key] = (draws, getattr(self, "diagnostics_", None))
    draws, diag = memo[key]
    self.diagnostics_ = diag
    return draws


def remask(fitted, masks: Mapping[str, Any] | None, share_posterior_draws: bool = False):
    """A copy of a fitted DA-MI or risk-targeted synthesizer with other masks, without refitting.

    The fitted posterior (and its data) is shared, not copied; the original
    object is not changed. With ``share_posterior_draws`` (DA-MI only), the
    posterior parameter draws for a given ``(m, random_state)`` are computed
    once and shared by every copy remasked from ``fitted`` (common random
    numbers across settings; same copies as without it, tested).
    """
    from ..models import DAMISynthesizer, RiskTargetedSynthesizer

    new = copy.copy(fitted)
    new.masks = masks
    new._check_params()
    X = fitted.data_[fitted.quasi_identifiers_]
    Z = fitted.data_[fitted.keep_]
    if isinstance(fitted, RiskTargetedSynthesizer):
        new._prepare_masks(X, pd.concat([X, Z], axis=1))
    elif isinstance(fitted, DAMISynthesizer):
        new._fit_extra(X, Z)
        if share_posterior_draws:
            if not hasattr(fitted, "_posterior_memo"):
                fitted._posterior_memo = {}
            new._posterior_memo = fitted._posterior_memo
            new._posterior_draws = MethodType(_memo_draws, new)
    else:
        raise InputTypeError(f"remask takes a fitted DA-MI or risk-targeted synthesizer. Got {type(fitted).__name__}.")
    return new


def _progress(progress: Callable[[str], None] | bool | None) -> Callable[[str], None]:
    if progress is True:
        return lambda s: print(s, flush=True)
    if callable(progress):
        return progress
    return lambda s: None


def frontier(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str],
    keep: Sequence[str],
    settings: Iterable[Setting],
    analyses: Iterable[Any],
    m: int = 5,
    replicates: int = 3,
    seed: int = 0,
    tolerance: Any = None,
    target: str | None = None,
    k0: int | None = None,
    subgroup_tolerance: Any = None,
    pmse_copies: int = 1,
    pmse_variables: Sequence[str] | None = None,
    rule: str | None = None,
    references: bool = True,
    progress: Any = None,
    holdout: pd.DataFrame | None = None,
    spec: Any = None,
    battery: Battery | bool = True,
    max_table_s_pmse: float = DEFAULT_MAX_TABLE_S_PMSE,
) -> FrontierResult:
    """Utility and risk of every setting, ``replicates`` syntheses of ``m`` copies each.

    Replicate r of every setting uses the seed ``seed + r`` (common random
    numbers: differences between settings are not blurred by seed noise).
    References: ``original`` (the data released as is: utility 1 by
    definition, its risk measured) and ``independent`` (each QI permuted
    independently, :func:`independent_release`).

    ``battery`` (default True: :func:`~synthmi.evaluation.battery.default_battery`
    of ``spec``, or of a spec drafted from the roles and dtypes, with ``analyses``
    declared) adds every criterion of the battery to each point (mean and Monte
    Carlo SE over the replicates); False measures the declared analyses only.

    Returns
    -------
    FrontierResult
        ``replicates`` (one row per setting and replicate), ``points`` (mean
        and Monte Carlo SE per setting, plus the fit and sampling seconds)
        and ``references``.

    With ``holdout`` (real records not in ``data``), every replicate is also measured by
    each measure of :data:`synthmi.evaluation.targets.HOLDOUT_MEASURES` (membership
    inference AUC and TPR at FPR 0.01), with their Monte Carlo SE over replicates.
    """
    say = _progress(progress)
    qi, keep = list(quasi_identifiers), list(keep)
    analyses = [Analysis.coerce(a) for a in analyses]
    df = data[qi + keep]
    bat = _battery_of(battery, spec, df, qi, keep, analyses)
    # with a spec, every setting is fitted with its kinds (a code read as a number would otherwise be
    # modelled as continuous); its masks are left out (each setting brings its own)
    fit_spec = None if spec is None else _spec_on(spec, qi, keep)
    subgroups = None
    if k0 is not None:
        from ..evaluation.subgroups import risk_subgroups

        subgroups = risk_subgroups(df, qi, k0, subgroup_tolerance).labels
    ev = dict(analyses=analyses, quasi_identifiers=qi, tolerance=tolerance, target=target, subgroups=subgroups,
              rule=rule, pmse_copies=pmse_copies, pmse_variables=pmse_variables, battery=bat,
              max_table_s_pmse=max_table_s_pmse, spec=fit_spec)
    rows = []
    fitted: dict[str, Any] = {}
    for st in settings:
        t0 = time.perf_counter()
        key = st.fit_key(None if fit_spec is None else fit_spec.models)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base_m = _base_method(st.method)
            if base_m in _MASKED and key in fitted:
                synth = remask(fitted[key], st.params.get("masks"), share_posterior_draws=base_m == "dami")
                fit_s = 0.0
            else:
                synth = (make_synthesizer(base_m, st.params).fit(df, quasi_identifiers=qi, keep=keep)
                         if fit_spec is None else make_synthesizer(base_m, st.params).fit(df, fit_spec))
                fit_s = time.perf_counter() - t0
                if base_m in _MASKED:
                    fitted[key] = synth
                    # sample through a remasked copy too, so this setting's posterior draws are shared
                    synth = remask(synth, st.params.get("masks"), share_posterior_draws=base_m == "dami")
            for r in range(replicates):
                t1 = time.perf_counter()
                # measured, not released: a setting whose copies keep the original keys is a point of
                # the frontier (its risk shows it), so the release guard does not stop the sweep
                syn = synth.sample(m, random_state=seed + r, allow_unmodified=True)
                samp_s = time.perf_counter() - t1
                res = evaluate_release(df, syn.copies, **ev)
                if holdout is not None:
                    from ..evaluation.targets import HOLDOUT_MEASURES

                    res.update({name: f(df, holdout[qi + keep], syn.copies, None, seed + r)
                                for name, f in HOLDOUT_MEASURES.items()})
                rows.append({"method": st.method, "setting": st.label,
                             "params": json.dumps(jsonable(st.params), sort_keys=True),
                             "replicate": r, "fit_seconds": fit_s, "sample_seconds": samp_s, **res})
        last = rows[-1]
        say(f"{st.method:>10} {st.label:<40} overlap {last['mean_ci_overlap']:.3f}  "
            + (f"battery {last['battery_ci_overlap']:.3f} worst S_pMSE 1-way {last['worst_one_way_s_pmse']:.3g} "
               f"2-way {last['worst_two_way_s_pmse']:.3g}  " if bat is not None else "")
            + f"matches {last['expected_matches']:.1f}  tmr {last['true_match_rate']:.2e}  "
            f"({time.perf_counter() - t0:.1f} s)")
    reps = pd.DataFrame(rows)
    points = summarise(reps)
    refs = pd.DataFrame()
    if references:
        refs = reference_points(df, qi, m, replicates, seed, ev)
    return FrontierResult(
        replicates=reps, points=points, references=refs,
        settings={"quasi_identifiers": qi, "keep": keep, "analyses": [a.__dict__ for a in analyses], "m": m,
                  "replicates": replicates, "seed": seed, "tolerance": jsonable(tolerance), "target": target,
                  "k0": k0, "subgroup_tolerance": jsonable(subgroup_tolerance), "rule": rule,
                  "pmse_copies": pmse_copies, "pmse_variables": pmse_variables,
                  "battery": bat.to_dict() if bat is not None else None, "max_table_s_pmse": max_table_s_pmse},
    )


def _spec_on(spec: Any, qi: list[str], keep: list[str]):
    """``spec`` restricted to the columns ``qi + keep`` with those roles, without masks or tuning record."""
    from dataclasses import replace

    from ..spec import as_spec

    spec = as_spec(spec)
    missing = [c for c in qi + keep if c not in spec.columns]
    if missing:
        raise InputError(f"The 'spec' does not describe the columns {missing}; it describes {list(spec.columns)}.")
    cols = {c: spec.columns[c] for c in qi + keep}
    seq = spec.visit_sequence if spec.visit_sequence and set(spec.visit_sequence) <= set(qi) else None
    return replace(spec, columns=cols, masks=None, tuning=None, visit_sequence=seq).with_roles(qi, keep)


def _battery_of(battery: Battery | bool, spec: Any, df: pd.DataFrame, qi: list[str], keep: list[str],
                analyses: Sequence[Analysis]) -> Battery | None:
    """The battery to measure: a given one, none (False), or the default of the spec (drafted from the
    roles and dtypes when none is given: the battery reads only roles and kinds)."""
    if isinstance(battery, Battery):
        return battery
    if battery is False or battery is None:
        return None
    if battery is not True:
        raise InputError(f"The 'battery' parameter must be True, False or a Battery. Got {battery!r} instead.")
    from ..spec import ReleaseSpec

    if spec is None:
        spec = ReleaseSpec.draft(df, qi, keep)
    return default_battery(spec.with_roles(qi, keep), [(a.formula, a.family) for a in analyses])


def reference_points(df, qi, m, replicates, seed, ev) -> pd.DataFrame:
    """The original released as is and an independent release, measured like the settings."""
    from ..evaluation import attribute_disclosure, reidentification_risk

    rr = reidentification_risk(df, [df], qi, tolerance=ev["tolerance"], by=ev["subgroups"])
    orig = {"method": "reference", "setting": "original", "mean_ci_overlap": 1.0, "mean_std_diff": 0.0,
            "s_pmse": np.nan,
            **({"battery_ci_overlap": 1.0, "declared_ci_overlap": 1.0, "generic_ci_overlap": 1.0}
               if ev.get("battery") is not None else {}), **{k: float(rr.figures[k]) for k in ("expected_matches", "true_match_rate",
                                                                 "share_above_threshold", "mean_risk")}}
    orig["high_risk_mean_risk"] = (float(rr.by_group.loc["high", "mean_risk"])
                                   if rr.by_group is not None and "high" in rr.by_group.index else np.nan)
    if ev["target"] is not None:
        ad = attribute_disclosure(df, [df], qi, ev["target"], tolerance=ev["tolerance"]).figures
        orig.update(disco=ad["DiSCO"], dcap=ad["DCAP"], attribute_risk_mean=ad["attribute_risk_mean"], repU=ad["repU"])
    rows = []
    for r in range(replicates):
        copies = independent_release(df, qi, m, seed + 10_000 + r)
        rows.append({"method": "reference", "setting": "independent", "replicate": r,
                     **evaluate_release(df, copies, **ev)})
    ind = summarise(pd.DataFrame(rows))
    return pd.concat([pd.DataFrame([orig]), ind], ignore_index=True)


def mask_flags(masks: Mapping[str, Any]) -> list[str]:
    """``{"age": {"K": 3, "sigma_e": 3}}`` -> ``["age:K=3,sigma=3"]`` (``synthmi synthesize --mask``)."""
    out = []
    for col, spec in masks.items():
        spec = jsonable(spec)
        parts = []
        for k, v in spec.items():
            if k == "kind" or v is None:
                continue
            parts.append(f"{'sigma' if k == 'sigma_e' else k}={v:g}" if isinstance(v, float) else f"{k}={v}")
        out.append(f"{col}:{','.join(parts)}")
    return out


# ----------------------------------------------------------------------------- tune
#: default (K, sigma_e) of a continuous QI's normal mask, least informative first. Only
#: sigma_e^2 / K matters (W-bar ~ N(X, sigma_e^2 / K) is sufficient for X), so K = 1 throughout.
CONTINUOUS_GRID: tuple[tuple[int, float], ...] = ((1, 20.0), (1, 10.0), (1, 6.0), (1, 4.0), (1, 3.0), (1, 2.0),
                                                  (1, 1.5), (1, 1.0))
#: default alphas of a categorical QI's linear mask W = alpha X + N(0, 1), least informative first
ALPHA_GRID: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
#: default minimum leaf sizes (rpart's minbucket, the spec's per-column ``min_leaf``) that :func:`tune`
#: tries for the quasi-identifiers whose model is a ``tree`` or ``cart`` without a ``min_leaf`` of its own:
#: 5 is CART's and synthpop's default, each next size doubles the records a leaf's donors are drawn
#: from (coarser leaves copy less of each record: less risk, smoother conditionals)
LEAF_GRID: tuple[int, ...] = (5, 10, 20, 40)


def leaf_columns(fitted: Any, params: Mapping[str, Any], spec: Any) -> list[str]:
    """The quasi-identifiers whose minimum leaf size :func:`tune` searches: those the ``spec``'s
    ``models`` give a ``tree`` or ``cart`` model without a ``min_leaf`` (a leaf size the spec sets is
    the user's and is kept). Empty when the models come from ``params`` rather than the spec (tune
    writes the chosen size into the spec, which the parameter would override) or are chosen by
    ``models="auto"`` (the choice depends on the fit)."""
    from ..models.conditional import expand_models, parse_models
    from ..models.model_choice import wants_auto

    qi = list(fitted.quasi_identifiers_)
    models = expand_models(getattr(spec, "models", None), qi)  # "models": "tree" in the spec: every QI's
    if spec is None or params.get("models") is not None or not isinstance(models, Mapping) or wants_auto(models):
        return []
    specs = parse_models({c: v for c, v in models.items() if c in qi}, qi, "tune")
    return [c for c in qi if c in specs and specs[c].method in ("tree", "cart") and specs[c].min_leaf is None]


def spec_with_leaf(spec: Any, columns: Sequence[str], min_leaf: int):
    """``spec`` with ``min_leaf`` set in the ``models`` entry of each of ``columns`` (a method name
    such as ``"tree"`` becomes ``{"method": "tree", "min_leaf": min_leaf}``); the spec is not changed."""
    from dataclasses import replace

    from ..models.conditional import expand_models

    models = dict(expand_models(spec.models, list(spec.quasi_identifiers)))
    for c in columns:
        entry = models[c]
        entry = {"method": entry} if isinstance(entry, str) else dict(entry)
        entry["min_leaf"] = int(min_leaf)
        models[c] = entry
    return replace(spec, models=models)


@dataclass
class TuneResult:
    """Chosen masks, their confirmed measures, the search trace and timing.

    ``spec`` is the release spec the chosen masks belong to (the input spec,
    or the one the fit drafted from the roles, as ``synthmi spec`` drafts it:
    levels and bounds inferred from the data are marked ``declared: false``);
    :meth:`to_spec` sets the masks in it, for ``synthmi synthesize --spec``.
    """

    masks: dict[str, Any] | None
    confirmed: dict[str, Any] | None
    trace: pd.DataFrame
    targets: list[Target]
    wall_seconds: float
    settings: dict[str, Any] = field(default_factory=dict)
    spec: Any = None
    validated: dict[str, Any] | None = None
    #: the chosen minimum leaf size of the tree quasi-identifiers (``settings["leaf_columns"]``), also in
    #: ``spec``'s ``models``; None when tune searched no leaf size
    min_leaf: int | None = None

    @property
    def feasible(self) -> bool:
        return self.masks is not None

    def to_spec(self):
        """The :class:`~synthmi.spec.ReleaseSpec` with the chosen masks (``synthmi synthesize --spec``).

        Raises ``ValueError`` when no setting met the targets (there are no masks to write).
        """
        from dataclasses import replace

        if not self.feasible:
            raise InputError("No setting met the targets: there are no chosen masks to write as a spec.")
        return replace(self.spec, masks=jsonable(self.masks), tuning=self.tuning_record())

    def tuning_record(self) -> dict[str, Any]:
        """How the masks were chosen, for the spec (and so the report): targets, objective, the table
        rule, the chosen masks, the search's extent and the validated figures (fresh copies) of the
        battery and of the risk targets, each with its Monte Carlo SE. Aggregates only."""
        fig = self.validated or self.confirmed or {}
        keys = ["mean_ci_overlap", "battery_ci_overlap", "declared_ci_overlap", "generic_ci_overlap",
                "worst_one_way_s_pmse", "worst_two_way_s_pmse", "overall_s_pmse"]
        keys += [t.measure for t in self.targets if t.measure not in keys]
        s = self.settings
        return jsonable({
            "by": "synthmi tune",
            "method": s.get("method", "dami"),
            "targets": [str(t) for t in self.targets],
            "objective": s.get("objective", "mean_ci_overlap"),
            "max_table_s_pmse": s.get("max_table_s_pmse"),
            "masks": self.masks,
            **({"min_leaf": self.min_leaf, "min_leaf_columns": s.get("leaf_columns"),
                "leaf_grid": s.get("leaf_grid")} if self.min_leaf is not None else {}),
            "params": s.get("base_params") or {},
            "analyses": s.get("analyses"),
            "figures_from": ("validated (synthesize --spec with seeds seed .. seed + replicates - 1)"
                             if self.validated else "confirmed"),
            "figures": {k: fig.get(k) for k in keys if k in fig},
            "figures_se": {k: fig.get(f"{k}_se") for k in keys if f"{k}_se" in fig},
            "feasible_on_fresh_copies": fig.get("feasible"),
            "m": s.get("m"), "replicates": s.get("replicates"), "seed": s.get("seed"),
            "search_points": s.get("search_points"), "search_stopped_by": s.get("search_stopped_by"),
            "coordinate_search": s.get("coordinate_search"), "not_tried": s.get("not_tried"),
            "validation_seeds": (s.get("validation") or {}).get("seeds"),
            "versus_reference": s.get("versus_reference"),
            "wall_seconds": self.wall_seconds,
        })

    def to_dict(self) -> dict[str, Any]:
        """Everything about the run as JSON-ready data (the chosen masks, figures, trace, timing)."""
        return {
            "masks": jsonable(self.masks),
            "mask_flags": mask_flags(self.masks) if self.masks else None,
            "min_leaf": self.min_leaf,
            "params": self.settings.get("base_params") or {},
            "targets": [str(t) for t in self.targets],
            "confirmed": jsonable(self.confirmed),
            "validated": jsonable(self.validated),
            "wall_seconds": self.wall_seconds,
            "search": self.settings,
            "trace": json.loads(self.trace.to_json(orient="records")),
        }


def _pooled_draws(self, m: int, rng: np.random.Generator):
    """``_posterior_draws`` served from one pool of posterior parameter sets drawn once per tune run:
    copy i of a sample takes pool entry ``_pool_start + i`` (settings share them: common random numbers)."""
    start = int(self._pool_start)
    pool = self._pool
    self.diagnostics_ = self._pool_diagnostics
    return [list(col[start:start + m]) for col in pool]


#: what a forked worker of :func:`tune` needs (set in the parent just before the fork, so the
#: fitted synthesizer and the posterior pool are inherited, not pickled)
_TUNE_STATE: dict[str, Any] = {}


def _measure_candidate(masks: dict[str, Any], mm: int, reps: int, pmse_copies: int, pool_start: int,
                       copy_seed: int, leaf: int = 0) -> list[dict[str, float]]:
    """Utility and risk of one candidate: ``reps`` replicates of ``mm`` copies drawn with the
    shared posterior pool (replicate r: pool entries ``pool_start + r*mm ...`` and seed ``copy_seed + r``),
    from the fit at leaf level ``leaf`` (an index into tune's leaf sizes; 0 when it searches none)."""
    st = _TUNE_STATE
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = remask(st["base"][leaf], masks or None)
        s._pool, s._pool_diagnostics = st["pool"][leaf], st["pool_diagnostics"][leaf]
        s._posterior_draws = MethodType(_pooled_draws, s)
        for r in range(reps):
            s._pool_start = pool_start + r * mm
            syn = s.sample(mm, random_state=copy_seed + r, allow_unmodified=True)  # measured, not released
            rows.append(_measured(st["df"], syn.copies, {**st["ev"], "pmse_copies": pmse_copies}, st.get("holdout"),
                                  st.get("holdout_measures"), copy_seed + r))
    return rows


def _measured(original: pd.DataFrame, release: Any, ev: Mapping[str, Any], holdout: pd.DataFrame | None,
              holdout_measures: Mapping[str, Callable[..., float]] | None, seed: int) -> dict[str, Any]:
    """One release's figures: :func:`~synthmi.evaluation.frontier.evaluate_release` with ``ev``, and
    each holdout measure (the attacks that need non-members) against ``holdout``."""
    row = evaluate_release(original, release, **ev)
    copies = list(getattr(release, "copies", release))
    for name, measure in (holdout_measures or {}).items():
        row[name] = measure(original, holdout, copies, None, seed)
    return row


def validate_spec(
    data: pd.DataFrame,
    spec: Any,
    analyses: Iterable[Any],
    m: int,
    seeds: Sequence[int],
    params: Mapping[str, Any] | None = None,
    *,
    battery: Battery | None = None,
    tolerance: Any = None,
    target: str | None = None,
    k0: int | None = None,
    subgroup_tolerance: Any = None,
    max_table_s_pmse: float = DEFAULT_MAX_TABLE_S_PMSE,
    holdout_share: float | None = None,
    holdout_measures: Mapping[str, Callable[..., float]] | None = None,
) -> list[dict[str, Any]]:
    """One release per seed, made and measured as a user makes and measures it; one row each.

    Release ``s`` is exactly what ``synthmi synthesize --data DATA --spec SPEC --method dami
    --m m --seed s`` (``params`` as ``--param``) writes: the spec round-tripped through its
    JSON file, the released columns (the spec's quasi-identifiers and kept ones) in the data's
    order, with ``--holdout-share`` the rows that ``holdout_positions(n, share, s)`` holds out
    removed, a DA-MI synthesizer with ``random_state = s`` (fit-time randomness follows the
    seed, as in the command) fitted to them with the spec, and ``m`` copies drawn with
    ``random_state = s``. Each is measured by :func:`~synthmi.evaluation.frontier.evaluate_release`
    with the rule the copies record (what ``synthmi analyse`` combines them by) against the
    rows they were made from. ``tests/commands/test_cli_tune_routes.py`` checks that the
    declared analysis's mean CI overlap equals ``synthmi analyse``'s on the files the commands
    write. Why not the tuning pool: the validated figure is the one a user will measure, so it
    is made by the user's route, with a posterior of its own per seed.
    """
    from .._json import dumps as _dumps
    from ..spec import ReleaseSpec, as_spec

    spec = ReleaseSpec.from_dict(json.loads(_dumps(as_spec(spec).to_dict())))  # the file synthesize reads
    qi, keep = list(spec.quasi_identifiers), list(spec.keep)
    released = data[[c for c in data.columns if c in qi or c in keep]]
    rows = []
    for s in seeds:
        s = int(s)
        fit_rows, held = released, None
        if holdout_share is not None:
            from ..evaluation.membership import holdout_positions, split_at

            fit_rows, held = split_at(released, holdout_positions(len(released), holdout_share, s))
        p = dict(params or {})
        p.setdefault("random_state", s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            synth = make_synthesizer("dami", p).fit(fit_rows, spec=spec)
            syn = synth.sample(int(m), random_state=s, allow_unmodified=True)  # measured, not released
            original = fit_rows[qi + keep]
            subgroups = None
            if k0 is not None:
                from ..evaluation.subgroups import risk_subgroups

                subgroups = risk_subgroups(original, qi, k0, subgroup_tolerance).labels
            ev = dict(analyses=analyses, quasi_identifiers=qi, tolerance=tolerance, target=target,
                      subgroups=subgroups, rule=None, battery=battery, max_table_s_pmse=max_table_s_pmse, spec=spec)
            row = _measured(original, syn, ev, None if held is None else held[qi + keep], holdout_measures, s)
        row["seed"] = s
        rows.append(row)
    return rows


def _release_spec(base: Any, analyses: Sequence[Analysis]):
    """The spec tune writes (before its masks and tuning record): the fit's, with ``analyses``
    declared when it declares none, and the models given as the synthesizer's ``models``
    parameter (``tune --models tree`` without ``--spec``) written into its ``models``, so that
    ``synthesize --spec`` of the written spec fits the models tune measured."""
    from dataclasses import replace

    rel = base.spec_
    if getattr(base, "models", None) is not None:
        # the fit's own account of its models (a word such as "tree" spelt out per QI, the spec's
        # entries winning for their columns; models="auto": the spec already records the choice)
        rel = replace(rel, models=base._models_setting())
    if not rel.analyses:
        rel = replace(rel, analyses=[{"formula": a.formula, "family": a.family} for a in analyses])
    return rel


#: z of the rule "at CART's risk": a candidate's mean risk may exceed CART's mean by at most this
#: many combined Monte Carlo SEs (one-sided, about 2.3% of a candidate exactly at CART's risk
#: refused when both means are normal), documented in :class:`ReferenceTarget`
REFERENCE_Z = 2.0
#: replicate seeds of the reference (the issue: MC error from >= 5 replicate seeds)
REFERENCE_REPLICATES = 5


@dataclass
class ReferenceTarget(Target):
    r"""A risk target set by a reference release's own figure and its seed-to-seed spread:
    ``expected_matches<=cart`` ("at CART's risk").

    CART (``reference_params``) is synthesized with ``R`` replicate seeds of ``m`` copies each
    (:func:`reference_figures`); its mean :math:`\bar c`, per-replicate SD :math:`s_c` and MC SE
    :math:`se_c = s_c/\sqrt R` are stored here. A candidate with mean :math:`\bar r` is at CART's
    risk when it is not above CART's beyond Monte Carlo error:

    .. math::

        \bar r - \bar c \le z \sqrt{se_c^2 + se_r^2}, \qquad z = 2,

    :math:`se_r` the candidate's MC SE over its replicates; a single replicate of :math:`M_r`
    copies (the search) has none, and its SD is taken as CART's scaled to its copies,
    :math:`se_r = s_c \sqrt{m / M_r}` (a risk averaged over copies; CART's spread as the
    yardstick). So a candidate exactly at CART's risk is not refused for seed noise, and one
    above it by more than the noise is. The rule is the issue's "at the risk of a CART setting
    (MC error from >= 5 replicate seeds)".
    """

    reference: str = "cart"
    mean: float = float("nan")
    sd: float = float("nan")
    se: float = float("nan")
    m: int = 0
    z: float = REFERENCE_Z

    def met(self, row: Mapping[str, Any], se_mult: float = 0.0) -> bool:
        if not np.isfinite(self.mean):
            raise InputError(f"The target {self.measure}<={self.reference} has no reference figure yet "
                             "(tune measures the reference before the search).")
        v = float(row.get(self.measure, np.nan))
        if not np.isfinite(v):
            return False
        se_r = float(row.get(f"{self.measure}_se", np.nan) or np.nan)
        if not np.isfinite(se_r):
            copies = float(row.get("M", self.m) or self.m)
            se_r = self.sd * np.sqrt(self.m / copies) if copies > 0 else self.sd
        se_r = se_r if np.isfinite(se_r) else 0.0
        se_c = self.se if np.isfinite(self.se) else 0.0
        return v - self.mean <= self.z * float(np.hypot(se_c, se_r))

    def __str__(self) -> str:
        if not np.isfinite(self.mean):
            return f"{self.measure}<={self.reference}"
        return f"{self.measure}<={self.reference} ({self.mean:.4g} +- {self.se:.2g})"


#: the utilities of a tuned release compared with the reference's (:func:`versus_reference`)
_VERSUS_KEYS = ("battery_ci_overlap", "mean_ci_overlap")


def versus_reference(figures: Mapping[str, Any], reference: Mapping[str, Any] | None,
                     z: float = REFERENCE_Z) -> dict[str, Any] | None:
    r"""The tuned release's utility against the reference's (CART's, at whose risk it was tuned).

    Per utility :math:`u` (the battery's mean CI overlap, tune's objective, and the declared
    analyses' ``mean_ci_overlap``), with the tuned release's mean :math:`\bar u_t` and MC SE
    :math:`se_t` over its validation seeds and the reference's :math:`\bar u_c`, :math:`se_c`
    over its replicate seeds:

    .. math::

        d = \bar u_t - \bar u_c, \qquad s = \sqrt{se_t^2 + se_c^2},

    verdict ``"below"`` when :math:`d < -z s`, ``"above"`` when :math:`d > z s`, else
    ``"within Monte Carlo error"`` (:math:`z = 2`, as the risk rule of :class:`ReferenceTarget`).
    A tuned release below the reference at the reference's risk is dominated by it: the reference
    is at least as safe (the targets) and more useful (issue 29: on fair and Adult the tuned DA-MI's
    battery overlap was 0.827 and 0.816 against CART's 0.864 and 0.858, and its overlap on an
    analysis tune never saw was below CART's too). ``reference`` is ``settings["reference"]``
    (``mean`` and ``se`` per figure); None when there is none.
    """
    if not reference:
        return None
    out: dict[str, Any] = {"rule": f"below (above) when the difference is below -{z:g} (above {z:g}) x "
                                   "sqrt(SE_tuned^2 + SE_reference^2), MC SEs over seeds"}
    for k in _VERSUS_KEYS:
        if k not in figures or k not in reference.get("mean", {}):
            continue
        t, c = float(figures[k]), float(reference["mean"][k])
        se_t = float(figures.get(f"{k}_se", np.nan))
        se_c = float(reference.get("se", {}).get(k, np.nan))
        se = float(np.hypot(se_t if np.isfinite(se_t) else 0.0, se_c if np.isfinite(se_c) else 0.0))
        d = t - c
        verdict = "below" if d < -z * se else "above" if d > z * se else "within Monte Carlo error"
        out[k] = {"tuned": t, "tuned_se": se_t, "reference": c, "reference_se": se_c, "difference": d,
                  "se": se, "verdict": verdict}
    return out


def parse_target(text: Any) -> Target:
    """A target: ``MEASURE<=VALUE`` (:meth:`Target.parse`) or ``MEASURE<=cart`` (a
    :class:`ReferenceTarget`, resolved by :func:`tune` from CART's figures over replicate seeds)."""
    if isinstance(text, Target):
        return text
    t = str(text).replace(" ", "")
    if t.lower().endswith("<=cart"):
        probe = Target.parse(t[: -len("cart")] + "0")  # the measure's name checked as any target's
        if probe.measure in HIGHER_IS_BETTER:
            raise InputError(f"The target {text!r} compares a utility with CART's; reference targets are risks "
                             "(e.g. expected_matches<=cart).")
        return ReferenceTarget(probe.measure, "<=", float("nan"))
    return Target.parse(t)


def reference_figures(data: pd.DataFrame, spec: Any, params: Mapping[str, Any] | None, m: int,
                      seeds: Sequence[int], ev: Mapping[str, Any],
                      holdout: pd.DataFrame | None = None,
                      holdout_measures: Mapping[str, Callable[..., float]] | None = None) -> pd.DataFrame:
    """CART's figures over replicate seeds, one row per seed: fitted once (a CART fit draws nothing)
    with ``spec`` and sampled with ``m`` copies per seed, as ``synthmi synthesize --method cart
    --m m --seed S`` does, measured like every tune candidate (``ev``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = make_synthesizer("cart", dict(params or {})).fit(data, spec)
        rows = []
        for s in seeds:
            syn = synth.sample(int(m), random_state=int(s), allow_unmodified=True)  # measured, not released
            row = _measured(data, syn.copies, ev, holdout, holdout_measures, int(s))
            row["seed"] = int(s)
            rows.append(row)
    return pd.DataFrame(rows)


#: a continuous QI whose most informative grid mask keeps less than this share of its variance in
#: W-bar (its reliability) is named: the grid is in the column's units, not scaled to it
GRID_MIN_RELIABILITY = 0.2


def _warn_grid_scale(df: pd.DataFrame, columns: Sequence[str], continuous_grid) -> None:
    r"""Warn when the normal-mask grid carries almost no information about a continuous QI.

    The grid's :math:`\sigma_e` are in the column's units (years of age), one grid for every
    continuous QI. The information a mask gives is its reliability
    :math:`\rho = s^2 / (s^2 + \sigma_e^2 / K)` (:math:`s^2` the column's variance: the share of
    :math:`\bar W`'s variance that is :math:`X`'s). When even the grid's most informative level
    keeps :math:`\rho <` :data:`GRID_MIN_RELIABILITY`, every level is close to no mask and the search
    cannot move that column (statsmodels' randhie: ``physlm``, a 0-1 score, had :math:`\rho \le
    0.09` on the default grid and tune chose :math:`\sigma_e = 10` for it; the new-user review).
    Names the column and its reliability, not its values."""
    levels = [(int(k), float(sd)) for k, sd in continuous_grid if int(k) > 0]
    if not levels:
        return
    v_min = min(sd ** 2 / k for k, sd in levels)
    weak = {}
    for c in columns:
        x = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
        s2 = float(np.nanvar(x)) if np.isfinite(x).sum() > 1 else 0.0
        rho = s2 / (s2 + v_min) if s2 > 0 else 0.0
        if rho < GRID_MIN_RELIABILITY:
            weak[c] = rho
    if weak:
        warnings.warn(
            "tune's normal-mask grid (--continuous-grid, sigma_e in each column's units) carries almost no "
            "information about " + ", ".join(f"'{c}' (its most informative level keeps {r:.0%} of the column's "
                                              "variance)" for c, r in weak.items())
            + ": every level is close to no mask. Give a grid in that column's units (smaller sigma_e), or leave "
            "it unmasked.", UserWarning, stacklevel=3)


def _coordinates(kinds: Mapping[str, str], continuous_grid, alpha_grid) -> list[tuple[str, list[dict | None]]]:
    """Per QI, its mask levels from none (index 0) to the most informative."""
    conts = sorted(((int(k), float(s)) for k, s in continuous_grid), key=lambda ks: ks[1] ** 2 / max(ks[0], 1),
                   reverse=True)
    conts = [ks for ks in conts if ks[0] > 0]
    alphas = sorted(float(a) for a in alpha_grid if float(a) > 0)
    out = []
    for c, kind in kinds.items():
        if kind == "continuous":
            levels = [None] + [{"K": k, "sigma_e": s} for k, s in conts]
        else:
            levels = [None] + [{"alpha": a} for a in alphas]
        if len(levels) > 1:
            out.append((c, levels))
    return out


class SearchBudgetExhausted(Exception):
    """Raised by tune's evaluator when measuring the asked points would take the search past
    ``max_search_points`` distinct settings; :func:`greedy_ascent` and :func:`coordinate_search`
    stop there with ``"point limit"`` (a budget counted in settings, not seconds: the same on a
    loaded machine as on a quiet one)."""


def greedy_ascent(n_levels: Sequence[int], evaluate: Callable[[tuple[int, ...]], Mapping[str, Any]],
                  deadline: float | None = None,
                  evaluate_many: Callable[[list[tuple[int, ...]]], list[Mapping[str, Any]]] | None = None,
                  start: Sequence[int] | None = None) -> tuple[list[tuple[int, ...]], str]:
    """Greedy ascent on a lattice to the boundary of a monotone constraint (the search of :func:`tune`).

    Coordinate j takes levels ``0 .. n_levels[j] - 1``; ``evaluate(x)`` returns
    ``feasible``, ``mean_ci_overlap`` (maximised) and ``risk_ratio`` (ties:
    lower wins); from :func:`tune` it also returns ``meets_targets`` (the
    monotone risk constraint, used instead of ``feasible`` to walk and block),
    ``table_ok`` (raises that pass the table rule are preferred) and
    ``objective`` (maximised instead of ``mean_ci_overlap``): a mask that
    breaks a margin is not a boundary, a stronger one may mend it. From the origin, every coordinate is raised by one level;
    the walk moves to the feasible raise with the highest utility. A
    coordinate whose raise is infeasible is never raised again: feasibility
    is assumed monotone (raising any coordinate never makes an infeasible
    point feasible), so it would be infeasible from every later point too.
    Stops when no raise is feasible (``"boundary"``), every coordinate is at
    its top level (``"top"``), the origin is infeasible (``"origin infeasible"``)
    or ``time.perf_counter()`` passes ``deadline`` (``"time limit"``), or the evaluator
    raises :class:`SearchBudgetExhausted` (``"point limit"``; the origin too: ``"point limit"``
    with an empty path).

    ``start`` (default the origin) is where the walk begins (tune: the previous leaf size's boundary
    point); "origin infeasible" then means that it misses the targets.

    Returns the path (points moved to, origin first) and why it stopped.
    At most ``sum(n_levels - 1)`` moves, each evaluating at most
    ``len(n_levels)`` points; ``evaluate_many`` (same results, e.g. in
    parallel) evaluates the raises of one move together.
    """
    def walkable(r: Mapping[str, Any]) -> bool:
        return bool(r.get("meets_targets", r["feasible"]))

    x = tuple(0 for _ in n_levels) if start is None else tuple(int(v) for v in start)
    try:
        if not walkable(evaluate(x)):
            return [], "origin infeasible"
    except SearchBudgetExhausted:
        return [], "point limit"
    path = [x]
    blocked: set[int] = set()
    while True:
        if deadline is not None and time.perf_counter() > deadline:
            return path, "time limit"
        moves = [j for j, n in enumerate(n_levels) if j not in blocked and x[j] < n - 1]
        if not moves:
            return path, "top" if all(x[j] == n - 1 for j, n in enumerate(n_levels)) else "boundary"
        pts = [tuple(v + (i == j) for i, v in enumerate(x)) for j in moves]
        try:
            rows = evaluate_many(pts) if evaluate_many is not None else [evaluate(p) for p in pts]
        except SearchBudgetExhausted:
            return path, "point limit"
        res = dict(zip(moves, rows))
        blocked |= {j for j, r in res.items() if not walkable(r)}
        ok = [j for j, r in res.items() if walkable(r)]
        if not ok:
            return path, "boundary"
        j = max(ok, key=lambda j: (bool(res[j].get("table_ok", True)),
                                   res[j].get("objective", res[j]["mean_ci_overlap"]), -res[j]["risk_ratio"]))
        x = tuple(v + (i == j) for i, v in enumerate(x))
        path.append(x)


def _rank(r: Mapping[str, Any]) -> tuple:
    """Order of candidates: feasible first (the targets and the table rule), then the objective,
    then the lower risk ratio."""
    return (bool(r.get("feasible", r.get("meets_targets", False))),
            float(r.get("objective", r.get("mean_ci_overlap", -np.inf))), -float(r.get("risk_ratio", 0.0)))


def coordinate_search(n_levels: Sequence[int], evaluate: Callable[[tuple[int, ...]], Mapping[str, Any]],
                      start: tuple[int, ...], deadline: float | None = None,
                      evaluate_many: Callable[[list[tuple[int, ...]]], list[Mapping[str, Any]]] | None = None,
                      max_cycles: int = 10) -> tuple[list[tuple[int, ...]], str, int]:
    """Cyclic coordinate search on a lattice (the second phase of :func:`tune`).

    From ``start``, each coordinate j in turn is set to every one of its levels
    ``0 .. n_levels[j] - 1`` (level 0: no mask, level 1: the weakest mask) with the
    others held, and the point moves to the best of them by :func:`_rank` (feasible
    first, then ``objective``, then the lower ``risk_ratio``) when that beats the
    current point strictly. The cycle over all coordinates repeats until a full cycle
    makes no move (``"converged"``: no single quasi-identifier's mask, weaker or
    stronger, improves on the point), ``max_cycles`` cycles have run (``"cycle limit"``)
    or ``time.perf_counter()`` passes ``deadline`` (``"time limit"``), or the evaluator
    raises :class:`SearchBudgetExhausted` (``"point limit"``).

    Unlike the greedy ascent, which only raises masks and never returns to a quasi-identifier
    whose raise broke a target, this revisits every quasi-identifier after another one
    moved, and tries lowering a mask as well as raising it: the best level of one column
    depends on the others' (a strong mask on one column can leave the risk budget for a weak
    one on another only after that one has moved). ``evaluate`` must be deterministic for a
    point (tune memoises it and uses common random numbers), so each move raises the rank
    strictly and the search ends.

    Returns the path (points moved to, ``start`` first), why it stopped and the cycles run.
    """
    x = tuple(int(v) for v in start)
    try:
        cur = evaluate(x)
    except SearchBudgetExhausted:
        return [x], "point limit", 0
    path = [x]
    cycles = 0
    while True:
        if cycles >= int(max_cycles):
            return path, "cycle limit", cycles
        cycles += 1
        moved = False
        for j, n in enumerate(n_levels):
            if deadline is not None and time.perf_counter() > deadline:
                return path, "time limit", cycles
            pts = [tuple(v if i != j else k for i, v in enumerate(x)) for k in range(int(n))]
            try:
                rows = evaluate_many(pts) if evaluate_many is not None else [evaluate(p) for p in pts]
            except SearchBudgetExhausted:
                return path, "point limit", cycles
            best = max(range(len(pts)), key=lambda k: _rank(rows[k]))
            if _rank(rows[best]) > _rank(cur):
                x, cur = pts[best], rows[best]
                path.append(x)
                moved = True
        if not moved:
            return path, "converged", cycles


def _level_label(level: Mapping[str, Any] | None) -> str:
    if level is None:
        return "none"
    return ",".join(f"{'sigma' if k == 'sigma_e' else k}={v:g}" for k, v in level.items())


def _not_tried(coords: list, unmaskable: Mapping[str, str], trace: list[dict[str, Any]], greedy_stop: str,
               coord_stop: str, max_search_seconds: float | None,
               max_search_points: int | None = None, leaves: Sequence[int] = ()) -> dict[str, Any]:
    """What the search did not try, for the record and the command's output: each QI's grid (masks
    outside it, weaker, stronger or between its levels, were not tried), the QIs never varied and why,
    the levels of a QI no search point used, the lattice's size against the points measured, and the
    budget cut-offs (time limit, point limit, cycle limit)."""
    tried = [tuple(r["levels"]) for r in trace if r["stage"] == "search"]
    grid, never_levels = {}, {}
    for j, (c, levels) in enumerate(coords):
        grid[c] = [_level_label(lv) for lv in levels]
        used = {x[j] for x in tried}
        missing = [_level_label(lv) for k, lv in enumerate(levels) if k not in used]
        if missing:
            never_levels[c] = missing
    never = dict(unmaskable)
    for j, (c, levels) in enumerate(coords):
        if not any(x[j] > 0 for x in tried):
            limit = next((lim for lim in ("time limit", "point limit")
                          if any(lim in s for s in (greedy_stop, coord_stop))), None)
            never[c] = "no search point masked it (" + (
                limit if limit else "the origin misses the targets"
                if greedy_stop == "origin infeasible" else "its weakest mask was never reached") + ")"
    cut = [lim for s in (greedy_stop, coord_stop) for lim in ("time limit", "point limit", "cycle limit") if lim in s]
    leaf = {}
    if leaves:
        # the leaf size is the last coordinate of each point (tune), coarsest first
        used = {x[len(coords)] for x in tried}
        leaf = {"min_leaf_grid": [int(v) for v in leaves],
                "min_leaf_never_tried": [int(v) for k, v in enumerate(leaves) if k not in used]}
    return {
        **leaf,
        "grid": grid,
        "outside_grid": "masks weaker than each QI's weakest level, stronger than its strongest, or between two "
                        "levels; categorical QIs are tried with linear masks (alpha) only, not p= masks; "
                        "continuous ones with K = 1 (only sigma_e^2 / K matters)"
                        + ("; the trees' minimum leaf size only at the sizes of its grid, one size for all tree QIs"
                           if leaves else ""),
        "columns_never_varied": never,
        "levels_never_tried": never_levels,
        "lattice_points": (int(np.prod([len(lv) for _, lv in coords])) if coords else 1) * max(len(leaves), 1),
        "points_tried": len(set(tried)),
        "budget_cut_offs": sorted(set(cut)) + ([f"max_search_seconds={max_search_seconds:g}"]
                                              if max_search_seconds is not None and "time limit" in cut else [])
        + ([f"max_search_points={max_search_points:d}"]
           if max_search_points is not None and "point limit" in cut else []),
    }


#: the fit's warnings tune passes on (the others speak of a release it does not make): a model's misfit
#: (:meth:`synthmi.models.rubin.RubinSynthesizer._warn_normal_misfit`)
_MISFIT = "does not fit its distribution"

#: with a ``MEASURE<=cart`` target, a candidate's worst one-way (two-way) table S_pMSE may be at most
#: this many times CART's (issue 29: "the tuned release's worst one-way S_pMSE within 2x CART's")
DEFAULT_MAX_TABLE_RATIO = 2.0

_TABLE_FIGURES = {"worst_one_way_s_pmse": "one-way", "worst_two_way_s_pmse": "two-way"}


def table_caps(max_table_s_pmse: float, max_table_ratio: float | None,
               reference: Mapping[str, float]) -> dict[str, float]:
    r"""The table rule's bound per table order: the absolute bound, and with a reference release
    ``max_table_ratio`` times its mean worst table S_pMSE of that order, whichever is lower:

    .. math::

        c_w = \min\bigl(c_{\max},\; \rho\, \overline{S}^{\,\mathrm{CART}}_{w}\bigr), \qquad w = 1, 2

    (:math:`\rho` = ``max_table_ratio``; a reference figure that is missing or not finite leaves
    :math:`c_{\max}`). Keys: ``worst_one_way_s_pmse``, ``worst_two_way_s_pmse``.
    """
    caps = {}
    for k in _TABLE_FIGURES:
        c = float(max_table_s_pmse)
        ref = float(reference.get(k, np.nan))
        if max_table_ratio is not None and np.isfinite(ref):
            c = min(c, float(max_table_ratio) * ref)
        caps[k] = c
    return caps


def _infeasibility(trace: Sequence[Mapping[str, Any]], caps: Mapping[str, float],
                   targets: Sequence[Target]) -> dict[str, Any]:
    """Why no setting was feasible, from the search trace: how many settings met the risk targets and
    failed the table rule, and the one of them closest to the rule (lowest worst table S_pMSE relative
    to its cap); without one, the setting closest to the risk targets (lowest ``risk_ratio``)."""
    rows = [r for r in trace if r["stage"] == "search"]
    risk_ok = [r for r in rows if r["meets_targets"]]
    out: dict[str, Any] = {"settings_measured": len(rows), "met_risk_targets": len(risk_ok),
                           "caps": dict(caps), "masks": None}
    if risk_ok:
        def excess(r):
            return max(float(r.get(k, np.nan)) / c if c > 0 and np.isfinite(float(r.get(k, np.nan))) else 0.0
                       for k, c in caps.items())
        best = min(risk_ok, key=excess)
        out.update(binding="table rule", masks=json.loads(best["masks"]), min_leaf=best.get("min_leaf"),
                   worst={k: float(best[k]) for k in caps if k in best})
    elif rows:
        best = min(rows, key=lambda r: r["risk_ratio"])
        out.update(binding="risk targets", closest_masks=json.loads(best["masks"]), min_leaf=best.get("min_leaf"),
                   risk={t.measure: float(best[t.measure]) for t in targets})
    return out


def _measure_tables(masks: Mapping[str, Any], mm: int, pool_start: int, copy_seed: int,
                    caps: Mapping[str, float], leaf: int = 0) -> list[dict[str, Any]]:
    """The one- and two-way tables of ``masks``'s search copies (the same pool entries and seed as
    the search drew them) whose S_pMSE exceeds the cap of their order: ``{"table", "way",
    "s_pmse", "cap"}``, worst first. Table names only, never a value of the data."""
    from ..evaluation.pmse import unchanged_columns, utility_tables

    st = _TUNE_STATE
    bat = st["ev"]["battery"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = remask(st["base"][leaf], dict(masks) or None)
        s._pool, s._pool_diagnostics = st["pool"][leaf], st["pool_diagnostics"][leaf]
        s._posterior_draws = MethodType(_pooled_draws, s)
        s._pool_start = pool_start
        copies = s.sample(mm, random_state=copy_seed, allow_unmodified=True).copies
    original = st["df"]
    variables = [v for v in bat.variables if v in original.columns]
    same = set(unchanged_columns(original, copies, variables))
    tab = utility_tables(original, copies, variables=variables, ways=(1, 2), n_bins=bat.n_bins,
                         spec=bat.spec).to_frame()
    out = []
    for _, r in tab.iterrows():
        if set(str(r["variables"]).split(":")) <= same:
            continue  # kept columns only: released unchanged
        cap = caps["worst_one_way_s_pmse" if int(r["way"]) == 1 else "worst_two_way_s_pmse"]
        if float(r["s_pmse"]) > cap:
            out.append({"table": str(r["variables"]), "way": int(r["way"]), "s_pmse": float(r["s_pmse"]),
                        "cap": float(cap)})
    return sorted(out, key=lambda t: -t["s_pmse"] / t["cap"])


@dataclass(frozen=True)
class AttackTarget:
    """The ``inference`` or ``linkability`` target measured with the intruder's knowledge the user declared
    (``tune --secret / --link-aux``, as ``synthmi disclosure`` takes them): anonymeter's risk
    (Giomi et al. 2023; :func:`~synthmi.evaluation.attack_risks.review_attacks`) pooled over the copies,
    the largest over the secrets for inference. Called as the measures of
    :data:`synthmi.evaluation.targets.HOLDOUT_MEASURES` are."""

    attack: str
    quasi_identifiers: tuple[str, ...]
    secrets: tuple[str, ...] | None = None
    link_aux: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    def __call__(self, train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame], spec: Any = None,
                 random_state: Any = 0) -> float:
        from ..evaluation.attack_risks import review_attacks, worst_inference

        res = review_attacks(train, copies, holdout, quasi_identifiers=list(self.quasi_identifiers),
                             secrets=list(self.secrets) if self.secrets else None,
                             link_aux=(list(self.link_aux[0]), list(self.link_aux[1])) if self.link_aux else None,
                             spec=spec, attacks=[self.attack], random_state=random_state)
        if self.attack == "inference":
            return float(worst_inference(res).risk)
        (r,) = res.values()
        return float(r.risk)


def tune(
    data: pd.DataFrame,
    quasi_identifiers: Sequence[str] | None,
    keep: Sequence[str] | None,
    analyses: Iterable[Any],
    targets: Iterable[Target | str],
    continuous_grid: Sequence[tuple[int, float]] = CONTINUOUS_GRID,
    alpha_grid: Sequence[float] = ALPHA_GRID,
    m_search: int = 3,
    m: int = 5,
    replicates: int = 3,
    n_confirm: int = 3,
    seed: int = 0,
    tolerance: Any = None,
    target: str | None = None,
    k0: int | None = None,
    subgroup_tolerance: Any = None,
    base_params: Mapping[str, Any] | None = None,
    spec: Any = None,
    max_search_seconds: float | None = None,
    max_search_points: int | None = None,
    n_jobs: int = 1,
    progress: Any = None,
    holdout_share: float | None = None,
    battery: Battery | bool = True,
    max_table_s_pmse: float = DEFAULT_MAX_TABLE_S_PMSE,
    max_cycles: int = 10,
    reference_params: Mapping[str, Any] | None = None,
    reference_replicates: int = REFERENCE_REPLICATES,
    max_table_ratio: float | None = DEFAULT_MAX_TABLE_RATIO,
    secrets: Sequence[str] | None = None,
    link_aux: tuple[Sequence[str], Sequence[str]] | None = None,
    leaf_grid: Sequence[int] | None = None,
) -> TuneResult:
    """Masks for DA-MI that maximise the battery's mean CI overlap subject to risk ``targets``.

    The objective is ``battery_ci_overlap``: the mean CI overlap over the
    battery's analyses (the declared ones and the generic regressions of
    :func:`~synthmi.evaluation.battery.default_battery`), not the declared
    analyses alone, which a mask can satisfy while wrecking a margin. A
    candidate is feasible when it meets every target **and** the table rule:
    its worst one-way and two-way table S_pMSE are at most ``max_table_s_pmse``
    (:data:`~synthmi.evaluation.battery.DEFAULT_MAX_TABLE_S_PMSE`, 10: S_pMSE has
    expectation 1 for plug-in copies, Snoke et al. 2018, about 2 for proper ones; the module says why 10).
    ``battery=False`` restores the declared analyses' ``mean_ci_overlap`` as the
    objective and no table rule. The trace and the confirmed and validated
    figures carry every criterion with its Monte Carlo SE over replicates.

    Cheap by construction (the issue's budget: minutes on Adult):

    1. **One fit, one posterior.** The association model is fitted once and
       ``m * replicates`` posterior parameter sets are drawn once (one run of
       the MCMC, checked by the release diagnostics: ``accept_diagnostics``,
       ``rhat_max``, ``ess_min`` in ``base_params``). Masks act only in the
       predictive step (Jiang et al. 2022: with X observed and lambda known,
       W carries no information about theta), so every candidate is a
       :func:`remask` of that fit drawing from the same parameter sets
       (common random numbers: differences between candidates are not seed noise).
    2. **Search** with ``m_search`` copies per candidate, on a lattice: each
       quasi-identifier's mask ranges from none (level 0; drawn from the
       model as in Rubin's MI) through ``continuous_grid`` (normal masks,
       ordered by the information sigma_e^2 / K of W-bar) or ``alpha_grid``
       (linear categorical masks). Risk grows with every coordinate (a more
       informative W reveals X more). Greedy ascent to the risk boundary:
       from all masks off, raise each quasi-identifier's mask one level; of
       the raised settings that meet every target, move to the one with the
       highest mean CI overlap; a quasi-identifier whose raise breaks a
       target is not raised again (by monotonicity it would break it from
       any later point too); stop when no raise meets the targets. Then
       **cyclic coordinate search** (:func:`coordinate_search`) from the best
       point so far (the ascent's points and the diagonal, every QI at its
       k-th level, a uniform mask as one sets by hand): each quasi-identifier in turn is set to every level of
       its grid (no mask and the weakest mask included) with the others held,
       moving to the best; cycles repeat until a full cycle makes no move
       (or ``max_cycles``, or the point budget ``max_search_points``, or the
       time limit). The ascent only raises and never
       revisits a column blocked by a target; the cycles revisit every column
       after another moved and try weaker masks too (issue 29: the ascent
       stopped at the end of two grids and missed a weak mask that beat its
       choice on overlap and both risks). ``settings["not_tried"]`` records
       what was not tried: each column's grid (masks outside it), columns never
       varied and why, levels no point used, lattice size against points
       measured, and budget cut-offs.
    3. **Confirm** the ``n_confirm`` most useful feasible search points with
       ``m`` copies x ``replicates`` replicates (disjoint posterior parameter
       sets, seeds ``seed + replicates + r``; none of them shared with the
       search copies, which use the next ``m_search`` parameter sets and seed
       ``seed + 2 * replicates``) and choose the one with the highest mean
       overlap whose mean risk meets every target; if none does, the next
       ``n_confirm``.
    4. **Validate** the chosen masks by the route a user takes
       (:func:`validate_spec`): replicate ``r`` is exactly the release
       ``synthmi synthesize --spec OUT --method dami --m m --seed SEED`` makes
       with ``SEED = seed + r`` (its own fit and posterior, as the command
       does), measured as ``synthmi analyse`` measures it (the rule the copies
       record). The confirmed figures are the best of ``n_confirm`` candidates
       on the copies that chose among them (optimistic by selection), and
       they came from the shared pool, not the user's route; ``validated``
       holds the figures to report (``settings["validation"]`` per seed) and
       says whether the targets hold on them. When they do not (a risk target
       or the table rule missed on the fresh copies), the next confirmed
       feasible candidate is validated, and so on through the confirmed ones
       (``settings["validation"]["tried"]``); if none holds on its fresh copies,
       the most useful confirmed one is returned, flagged. With a ``MEASURE<=cart`` target,
       ``settings["versus_reference"]`` (:func:`versus_reference`) compares the
       validated battery and declared overlap with CART's: a release below it is
       dominated by the reference it was tuned against.

    Parameters
    ----------
    data : DataFrame
    quasi_identifiers, keep : list of str or None
        Columns to synthesize and to release unchanged (None: the ``spec``'s).
    analyses : iterable
        The analyses whose mean CI overlap is maximised (formulas or
        ``(formula, family)`` pairs).
    targets : iterable of Target or str
        E.g. ``"expected_matches<=6.7"``, or ``"expected_matches<=cart"`` (at CART's risk
        within Monte Carlo error: :class:`ReferenceTarget`); all must hold.
    continuous_grid : sequence of (K, sigma_e)
    alpha_grid : sequence of float
    m_search, m, replicates, n_confirm : int
    seed : int
        Seed of the posterior pool and of the copies.
    tolerance, target, k0, subgroup_tolerance
        As in :func:`frontier`.
    base_params : dict, optional
        Other DA-MI parameters (``ordinal_link``, ``accept_diagnostics``, ...).
    battery : Battery or bool, default True
        The criteria (True: the default battery of the fitted spec with ``analyses``
        declared; False: the declared analyses only, no table rule).
    max_table_s_pmse : float, default 10
        The table rule's bound on the worst one- and two-way S_pMSE.
    max_table_ratio : float or None, default 2
        With a ``MEASURE<=cart`` target, the table rule is also relative to CART: a candidate
        whose worst one-way (two-way) S_pMSE exceeds ``max_table_ratio`` times CART's mean worst
        one-way (two-way) S_pMSE over its replicate seeds is infeasible (:func:`table_caps`).
        None: the absolute bound alone.
    secrets, link_aux : optional
        What anonymeter's intruder assumes in the ``inference`` and ``linkability`` targets
        (as ``synthmi disclosure --secret / --link-aux``): the secret columns, and the two
        auxiliary column lists; default the targets' own (:mod:`synthmi.evaluation.targets`).
    spec : ReleaseSpec, optional
        Roles and kinds of the columns; the chosen masks are written into it.
    max_search_seconds : float, optional
        Stop the search (not the confirmation) after this many seconds. What it reaches depends
        on the machine's speed and load (a benchmark on a shared machine measured 14-25 settings
        in 300 s); for a reproducible search give ``max_search_points``.
    max_search_points : int, optional
        Stop the search (not the confirmation) before a step whose new settings would take the
        number of distinct mask settings measured by the search above this many (the origin, the
        ascent's raises, the diagonal and the coordinate search's levels all count; a setting
        measured twice counts once). The budget is counted in settings, so the search, and the
        chosen masks, are the same whatever the load (every candidate has its own seeds and pool
        entries). Recorded as ``"point limit"`` in ``settings["not_tried"]["budget_cut_offs"]``.
    max_cycles : int, default 10
        Cycles of the coordinate search at most (0: the greedy ascent alone).
    reference_params, reference_replicates
        For targets ``MEASURE<=cart`` (:class:`ReferenceTarget`): CART's parameters (e.g.
        ``{"min_samples_leaf": 20}``; default CART's defaults) and its replicate seeds
        (``seed .. seed + reference_replicates - 1``, ``m`` copies each; default 5). The
        figures, with their MC SE, are in ``settings["reference"]``.
    n_jobs : int, default 1
        Worker processes (forked after the fit, so they share the fitted
        model and the posterior pool) measuring the candidates of one search
        step, or the confirmation candidates, side by side. The results do not
        depend on it: every candidate has its own seeds and pool entries.
    holdout_share : float, optional
        Share of the rows held out (seeded by ``seed``) when a target names a measure
        that needs a holdout (:data:`synthmi.evaluation.targets.HOLDOUT_MEASURES`, e.g.
        ``membership_auc<=0.55``): the fit and every candidate use the other rows, the
        held-out ones are the non-members. Default 0.2 when such a target is asked.

    leaf_grid : sequence of int or None, default None
        Minimum leaf sizes tried for the quasi-identifiers the spec's ``models`` give a ``tree`` or
        ``cart`` model without a ``min_leaf`` (:func:`leaf_columns`), e.g. :data:`LEAF_GRID` (5, 10,
        20, 40); None or empty (the default): no leaf search. Opt-in because it does not always
        help: through ``benchmarks/tune_files.py`` (improper trees, seeds 0-2, the tree's donors'
        values and the battery's fuller regressions) Adult, fair and anes96 met CART's risk with a
        held-out overlap within MC error of CART's (Adult 0.928 vs 0.920), but NHANES' leaves of 20
        lost it (0.760 vs 0.816, 2.3 MC se), coarser leaves blurring the kept columns' relations to
        the QIs. Without it, an unmasked tree is CART's draw at CART's risk and masks have no room
        (Adult: no feasible setting).
        The leaf size is one more coordinate of the lattice, after the masks, ordered coarsest
        first (level 0 the largest leaves, the least risk: the search's monotonicity, risk growing
        with every coordinate, holds for it too). The greedy ascent of the masks is run once per
        leaf size, the size held, finest first, each from the masks where the previous one stopped
        (``settings["leaf_ascents"]``: where each started and why it stopped): a coarser leaf
        saves risk and the raises from there spend it. The diagonal and the coordinate search then
        run over the whole lattice, the leaf size included, from the best point of all. Why: spending
        the risk a coarser leaf saves takes several mask raises at once, a move the coordinate
        search, one coordinate at a time, does not make. Each size is a fit of its own (the partition is
        grown at fit time) with its own posterior pool, drawn with the same seed as the others,
        so candidates differ by their settings, not their seeds. The chosen size is written into
        the spec (``models[column]["min_leaf"]`` for each such column), so ``synthmi synthesize
        --spec`` fits the same trees; ``min_leaf`` of the result, the trace (``min_leaf`` per
        candidate) and the spec's tuning record name it.

        Why the leaf size: with no masks, a plug-in tree conditional on CART's partition is CART,
        and every mask adds risk on top of it, so at CART's risk masks alone have no room (issue 29,
        NHANES: no validated candidate at CART's risk). Coarser leaves lower the risk (a
        coarser leaf pools more donors, so a copy repeats any one record's values less often), and
        the masks can spend the risk they save. Why one common size for all tree columns rather
        than one per column: a single coordinate adds ``len(leaf_grid)`` levels to each cycle of the
        coordinate search, while one per column would multiply the lattice by ``len(leaf_grid)``
        per tree column (NHANES' five trees: 4^5 = 1024 times as many settings) inside the same
        point budget; and a column's leaf size and its mask act on the same quantity (how closely
        its copies follow the record's neighbours), so per column the mask is the finer knob.

    Returns
    -------
    TuneResult
        ``masks`` is None if no candidate met the targets at confirmation.
    """
    from ..diagnostics import enforce
    from ..models import DAMISynthesizer

    say = _progress(progress)
    t_start = time.perf_counter()
    targets = [parse_target(t) for t in targets]
    if not targets:
        raise InputError("tune needs at least one target such as 'expected_matches<=50'.")
    # m, m_search >= 2: the partial-synthesis rule needs the between-copy variance of the analyses
    for name, v, lo in (("m_search", m_search, 2), ("m", m, 2), ("replicates", replicates, 1), ("n_confirm", n_confirm, 1),
                        ("n_jobs", n_jobs, 1), ("max_cycles", max_cycles, 0),
                        ("reference_replicates", reference_replicates, 2),
                        *((("max_search_points", max_search_points, 1),) if max_search_points is not None else ())):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise InputError(f"The '{name}' parameter of tune must be an integer >= {lo}. Got {v!r} instead.")
    if leaf_grid is not None and (isinstance(leaf_grid, (str, bytes)) or any(
            isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 1 for v in leaf_grid)):
        raise InputError(f"The 'leaf_grid' parameter of tune must list integers >= 1 (minimum leaf sizes) or be "
                         f"None. Got {leaf_grid!r} instead.")
    analyses = [Analysis.coerce(a) for a in analyses]
    from ..evaluation.targets import HOLDOUT_MEASURES

    holdout_measures = {t.measure: HOLDOUT_MEASURES[t.measure] for t in targets if t.measure in HOLDOUT_MEASURES}
    holdout = None
    full_data = data
    if holdout_share is not None and not holdout_measures:
        # a holdout nobody measures would silently shrink the data the release is tuned on
        raise InputError(f"The 'holdout_share' parameter of tune is used only by targets measured on real "
                         f"non-members ({', '.join(HOLDOUT_MEASURES)}); none was given. Got {holdout_share!r} "
                         "with targets " + ", ".join(t.measure for t in targets) + ".")
    if holdout_measures:
        # membership targets: the fit and every candidate see the training rows only
        from ..evaluation.membership import holdout_positions, split_at

        holdout_share = 0.2 if holdout_share is None else float(holdout_share)
        full_data = data  # the validation holds out per seed, as synthesize --holdout-share does
        n_rows = len(data)
        data, holdout = split_at(data, holdout_positions(n_rows, holdout_share, seed))
        say(f"held out {len(holdout)} of {n_rows} rows (share {holdout_share:g}, seed {seed}) as the "
            f"non-members of {', '.join(holdout_measures)}; fitting on the other {len(data)}")
    max_table_s_pmse = float(check_scalar(max_table_s_pmse, "max_table_s_pmse", "tune", lower=0.0,
                                          lower_inclusive=False))
    if max_table_ratio is not None:
        max_table_ratio = float(check_scalar(max_table_ratio, "max_table_ratio", "tune", lower=0.0,
                                             lower_inclusive=False))
    params = dict(base_params or {})
    if "masks" in params:
        raise InputError("The 'base_params' of tune cannot set masks: tune chooses them.")
    params.setdefault("progressbar", False)
    fit_kw: dict[str, Any] = {"quasi_identifiers": quasi_identifiers, "keep": keep}
    if spec is not None:
        fit_kw["spec"] = spec
        if spec.masks:
            from dataclasses import replace

            fit_kw["spec"] = replace(spec, masks=None)  # tune chooses the masks
    with warnings.catch_warnings(record=True) as fit_warnings:
        warnings.simplefilter("always")
        base = DAMISynthesizer(**params).fit(data, **fit_kw)
    # a model that cannot keep its column's margin is said once (silenced, a new user saw only that no
    # setting met the table rule: anes96's income, Kolmogorov distance 0.06, one-way S_pMSE 6-20 unmasked)
    for text in dict.fromkeys(str(w.message) for w in fit_warnings if _MISFIT in str(w.message)):
        warnings.warn(f"tune: {text}", UserWarning, stacklevel=2)
    qi, keep = list(base.quasi_identifiers_), list(base.keep_)
    # the trees' minimum leaf size, one coordinate of the search (level 0 the coarsest: the least risk);
    # each size is its own fit (the partition is grown at fit time); bases[i] is the fit at leaves[i]
    # (found without a grid too: what tune advises when no setting is feasible depends on it)
    leaf_able = leaf_columns(base, params, fit_kw.get("spec"))
    leaf_cols = leaf_able if leaf_grid else []
    if leaf_grid and not leaf_cols:
        # a grid with no tree to apply it to was silently ignored (tune --qi ... --models tree --leaf-grid)
        raise InputError("The 'leaf_grid' parameter of tune searches the minimum leaf size of the quasi-identifiers "
                         "whose spec \"models\" give a 'tree' or 'cart' without a 'min_leaf'; there are none here "
                         "(no spec, models given as a parameter or chosen by 'auto', or every leaf size set). From the "
                         "command line give a --spec ('synthmi spec' drafts one) and --models tree, or the spec's "
                         "\"models\".")
    leaves = sorted({int(v) for v in leaf_grid}, reverse=True) if leaf_cols else []
    bases = {0: base}
    if leaves:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fit's warnings were said once, above
            bases = {i: DAMISynthesizer(**params).fit(data, **{**fit_kw, "spec": spec_with_leaf(fit_kw["spec"],
                                                                                                 leaf_cols, lf)})
                     for i, lf in enumerate(leaves)}
    if secrets is not None or link_aux is not None:
        used = {"inference": secrets is not None, "linkability": link_aux is not None}
        unused = [opt for opt, name in (("secrets", "inference"), ("link_aux", "linkability"))
                  if used[name] and name not in holdout_measures]
        if unused:
            raise InputError(f"The '{unused[0]}' parameter of tune is used by the "
                             f"{'inference' if unused[0] == 'secrets' else 'linkability'} target only; no such "
                             "target was given.")
        for name in ("inference", "linkability"):
            if name in holdout_measures and used[name]:
                holdout_measures[name] = AttackTarget(name, tuple(qi), tuple(secrets) if secrets else None,
                                                      (tuple(link_aux[0]), tuple(link_aux[1])) if link_aux else None)
    df = data[qi + keep]
    bat = _battery_of(battery, base.spec_, df, qi, keep, analyses)
    objective = "battery_ci_overlap" if bat is not None else "mean_ci_overlap"
    kinds = {c: ("continuous" if base.schema_[c].kind == "continuous" else "categorical") for c in qi}
    # DA-MI refuses a normal mask on a transformed column (the mask acts on the raw scale, the regression
    # on the transformed one) and any mask on a column with missing values or point masses: such a QI
    # stays unmasked instead of ending the search at its first raise
    transforms = base._transforms()
    unmaskable = {c: ("its transform cannot carry a normal mask"
                      if kinds[c] == "continuous" and transforms.get(c) is not None
                      else "it has missing values or point masses")
                  for c in qi
                  if (kinds[c] == "continuous" and transforms.get(c) is not None)
                  or c in getattr(base, "parts_", {}) or c in getattr(base, "na_level_columns_", [])}
    # a column the spec's "models" give to 'cart' has no likelihood to combine with a mask (DA-MI refuses it)
    unmaskable.update({cond.column: "its model is 'cart' (no likelihood to combine with a mask)"
                       for cond in getattr(base, "conditionals_", []) if cond.family == "cart"
                       and cond.column in qi and cond.column not in unmaskable})
    if unmaskable:
        warnings.warn("tune leaves " + "; ".join(f"'{c}' unmasked: {why}" for c, why in unmaskable.items())
                      + " (DA-MI cannot combine them with a mask); the other quasi-identifiers are searched.",
                      UserWarning, stacklevel=2)
    _warn_grid_scale(df, [c for c in qi if kinds[c] == "continuous" and c not in unmaskable], continuous_grid)
    # one posterior pool for every search and confirmation candidate: confirming copies of
    # replicate r take entries r*m ... r*m + m - 1 (seed seed +
    # replicates + r); the search copies take the m_search entries after them (seed + 2 *
    # replicates). The two sets of copies are disjoint, so the confirmed risk and utility are
    # not measured on the copies that made a candidate look feasible and useful. The chosen
    # masks are then validated by the route a user takes (:func:`validate_spec`: the written
    # spec, refitted with seed + r and sampled with seed + r, r < replicates, exactly as
    # ``synthmi synthesize --spec OUT --method dami --m M --seed SEED+r``): seeds no search or
    # confirmation copy used, so the confirmed figures (the best of n_confirm candidates on the
    # copies that chose among them: a winner's curse) are not what is reported.
    n_pool = m * replicates + m_search
    pool, pool_diag, checks = {}, {}, []
    for i, b in bases.items():  # one pool per leaf size, the same seed: the sizes differ by their trees only
        pool[i] = b._posterior_draws(n_pool, np.random.default_rng([int(seed), 0x70CE]))
        pool_diag[i] = getattr(b, "diagnostics_", None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # enforce's warning speaks of released copies; tune says its own below
            checks.append(enforce(pool_diag[i], owner="DAMISynthesizer (tune)",
                                  accept=bool(params.get("accept_diagnostics", False)),
                                  rhat_max=params.get("rhat_max", RHAT_MAX), ess_min=params.get("ess_min", ESS_MIN)))
    check = next((c for c in checks if not c["passed"]), checks[0])
    if not check["passed"]:
        warnings.warn("tune: the posterior sampler failed its convergence check for "
                      + ", ".join(f"'{b}' ({f['problem']})" for b, f in check["failures"].items())
                      + "; searching anyway (accept_diagnostics=True). The chosen masks inherit the flag.",
                      RuntimeWarning, stacklevel=2)
    fit_s = time.perf_counter() - t_start
    say(f"fitted once and drew {n_pool} posterior parameter sets in {fit_s:.1f} s"
        + (f" (and once per minimum leaf size {', '.join(map(str, leaves))} of the trees of "
           f"{', '.join(leaf_cols)})" if leaves else ""))
    subgroups = None
    if k0 is not None:
        from ..evaluation.subgroups import risk_subgroups

        subgroups = risk_subgroups(df, qi, k0, subgroup_tolerance).labels
    # the analyses with the fitted spec's kinds, as 'synthmi analyse' fits them on the release
    ev = dict(analyses=analyses, quasi_identifiers=qi, tolerance=tolerance, target=target, subgroups=subgroups,
              rule="partial", battery=bat, max_table_s_pmse=max_table_s_pmse, spec=fit_kw.get("spec"))
    reference = None
    caps = table_caps(max_table_s_pmse, None, {})
    caps_search = None
    if any(isinstance(t, ReferenceTarget) for t in targets):
        # "at CART's risk": CART's figures over replicate seeds, then each such target holds its mean and spread
        from dataclasses import replace as _replace

        ref_seeds = [int(seed) + r for r in range(int(reference_replicates))]
        ref = reference_figures(df, _spec_on(base.spec_, qi, keep), reference_params, m, ref_seeds, ev,
                                None if holdout is None else holdout[qi + keep], holdout_measures)
        R = len(ref)
        resolved = []
        for t in targets:
            if isinstance(t, ReferenceTarget):
                v = ref[t.measure].to_numpy(dtype=float)
                sd = float(np.std(v, ddof=1)) if R > 1 else 0.0
                t = _replace(t, value=float(v.mean()), mean=float(v.mean()), sd=sd, se=sd / np.sqrt(R), m=int(m))
            resolved.append(t)
        targets = resolved
        figs = [c for c in ("mean_ci_overlap", "battery_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse",
                            "expected_matches", "true_match_rate", *[t.measure for t in targets]) if c in ref]
        reference = {"method": "cart", "params": jsonable(dict(reference_params or {})), "m": int(m), "seeds": ref_seeds,
                     "rule": f"a candidate is at CART's risk when its mean exceeds CART's by at most {REFERENCE_Z:g} x "
                             "sqrt(SE_cart^2 + SE_candidate^2) (MC SEs over replicate seeds; a single search replicate "
                             "takes CART's replicate SD scaled to its copies)",
                     "mean": {c: float(ref[c].mean()) for c in dict.fromkeys(figs)},
                     "se": {c: float(ref[c].std(ddof=1) / np.sqrt(R)) if R > 1 else float("nan")
                            for c in dict.fromkeys(figs)}}
        caps = table_caps(max_table_s_pmse, max_table_ratio, reference["mean"])
        reference["table_caps"] = caps
        if max_table_ratio is not None and int(m_search) != int(m):
            # the search measures m_search copies: the worst of the tables' means over fewer copies is larger
            # (each table's mean is noisier), so its bound is CART's worst on the same footing (m_search copies,
            # the same seeds; tables only, no holdout): fair's religious table 2.32 at 3 copies vs 2.13 at 5
            ref_s = reference_figures(df, _spec_on(base.spec_, qi, keep), reference_params, m_search, ref_seeds, ev)
            caps_search = table_caps(max_table_s_pmse, max_table_ratio,
                                     {k: float(ref_s[k].mean()) for k in _TABLE_FIGURES if k in ref_s})
            reference["table_caps_search"] = caps_search
        say("CART (" + (json.dumps(reference["params"]) if reference["params"] else "default") + f", {R} seeds x {m} "
            "copies): " + "; ".join(f"{c} {reference['mean'][c]:.4g} +- {reference['se'][c]:.2g}"
                                    for c in dict.fromkeys(figs)))
    coords = _coordinates({c: k for c, k in kinds.items() if c not in unmaskable}, continuous_grid, alpha_grid)
    trace: list[dict[str, Any]] = []
    seen: dict[Any, dict[str, Any]] = {}

    def masks_at(x: tuple[int, ...]) -> dict[str, Any]:
        return {c: dict(levels[i]) for (c, levels), i in zip(coords, x) if i > 0}

    def leaf_at(x: tuple[int, ...]) -> int:
        """The leaf level of a lattice point (its last coordinate, after the masks'), 0 without one."""
        return int(x[len(coords)]) if leaves else 0

    def spec_at(x: tuple[int, ...]):
        """The release spec of a lattice point before its masks: with its leaf size in the trees' models."""
        rel = _release_spec(base, analyses)
        return spec_with_leaf(rel, leaf_cols, leaves[leaf_at(x)]) if leaves else rel

    def risk_ratio(row) -> float:
        return max(float(row[t.measure]) / t.value if t.value > 0 else float(row[t.measure] > 0) for t in targets)

    _TUNE_STATE.clear()
    _TUNE_STATE.update(base=bases, pool=pool, pool_diagnostics=pool_diag, df=df, ev=ev, holdout_measures=holdout_measures,
                       holdout=None if holdout is None else holdout[qi + keep])
    executor = None
    if int(n_jobs) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        executor = ProcessPoolExecutor(int(n_jobs), mp_context=multiprocessing.get_context("fork"))

    def run_many(xs: list[tuple[int, ...]], stage: str, mm: int, reps: int) -> list[dict[str, Any]]:
        todo = [x for x in dict.fromkeys(xs) if (x, mm, reps, stage == "validate") not in seen]
        if stage == "search" and max_search_points is not None:
            done = {tuple(r["levels"]) for r in trace if r["stage"] == "search"}
            if len(done | set(todo)) > int(max_search_points):
                # the whole step or none of it: a move chosen among part of its raises would depend on
                # where the budget fell inside it
                raise SearchBudgetExhausted
        # confirming copies: pool entries r*m ..., seeds seed + replicates + r; search copies: the
        # entries after them and seed + 2 * replicates (disjoint from every confirming and validating copy)
        start, seed0 = {"confirm": (0, int(seed) + replicates),
                        "search": (m * replicates, int(seed) + 2 * replicates)}[stage]
        args = [(masks_at(x), mm, reps, 0 if stage == "search" else 1, start, seed0, leaf_at(x)) for x in todo]
        if executor is not None and len(todo) > 1:
            results = list(executor.map(_measure_candidate, *zip(*args)))
        else:
            results = [_measure_candidate(*a) for a in args]
        for x, rows in zip(todo, results):
            record(x, stage, mm, reps, rows)
        return [seen[(x, mm, reps, stage == "validate")] for x in xs]

    def run(x: tuple[int, ...], stage: str, mm: int, reps: int) -> dict[str, Any]:
        return run_many([x], stage, mm, reps)[0]

    def record(x: tuple[int, ...], stage: str, mm: int, reps: int, rows: list[dict[str, float]]) -> None:
        key = (x, mm, reps, stage == "validate")
        masks = masks_at(x)
        rep = pd.DataFrame(rows)
        row: dict[str, Any] = {c: float(rep[c].mean()) for c in rep.columns}
        if reps > 1:
            row.update({f"{c}_se": float(rep[c].std(ddof=1) / np.sqrt(reps)) for c in rep.columns})
        meets = all(t.met(row) for t in targets)
        # the table rule on the mean over replicates (a wrecked margin is infeasible whatever its overlap)
        table_ok = bat is None or not table_violations(row, caps_search if stage == "search" and caps_search else caps)
        row.update(stage=stage, masks=json.dumps(masks, sort_keys=True), levels=list(x),
                   min_leaf=leaves[leaf_at(x)] if leaves else None, meets_targets=meets,
                   table_ok=table_ok, objective=float(row[objective]), feasible=meets and table_ok,
                   seconds=time.perf_counter() - t_start)
        row["risk_ratio"] = risk_ratio(row)
        trace.append(row)
        seen[key] = row
        # the whole setting (a cut one made candidates that differ in the last QI's mask look alike)
        say(f"[{stage:>7}] " + (f"min_leaf {leaves[leaf_at(x)]:<3} " if leaves else "")
            + f"{json.dumps(masks, sort_keys=True):<100} overlap {row['mean_ci_overlap']:.3f} "
            + (f"battery {row['battery_ci_overlap']:.3f} worst S_pMSE {row['worst_one_way_s_pmse']:.3g}/"
               f"{row['worst_two_way_s_pmse']:.3g} " if bat is not None else "")
            + " ".join(f"{t.measure} {row[t.measure]:.4g}" for t in targets) + (" ok" if row["feasible"] else ""))

    # (2) greedy ascent from all masks off to the risk boundary
    deadline = None if max_search_seconds is None else t_start + float(max_search_seconds)
    try:
        n_masks = [len(levels) for _, levels in coords]
        n_levels = n_masks + ([len(leaves)] if leaves else [])
        leaf_ascents = []
        if not leaves:
            _, stopped = greedy_ascent(n_levels, lambda x: run(x, "search", m_search, 1),
                                       deadline=deadline, evaluate_many=lambda xs: run_many(xs, "search", m_search, 1))
        else:
            # one ascent of the masks per leaf size, the leaf held, finest first, each from the masks where
            # the previous (finer) one stopped: coarsening the leaves saves risk, and the raises from there
            # spend it, as a person coarsens the leaves and then strengthens the masks. The coordinate
            # search alone (one coordinate at a time) does not make that move of several coordinates
            # (NHANES, one ascent over the whole lattice: min_leaf 10 was tried only with masks whose 7.9
            # expected matches left most of CART's 21.7 unspent). Chained, not each from no masks: a
            # coarse leaf's ascent from none ran up every grid (fair: 45 settings at min_leaf 40 alone)
            end = tuple(0 for _ in n_masks)
            for lv in reversed(range(len(leaves))):
                path, why = greedy_ascent(n_masks, lambda xm, lv=lv: run(tuple(xm) + (lv,), "search", m_search, 1),
                                          deadline=deadline, evaluate_many=lambda xs, lv=lv: run_many(
                                              [tuple(xm) + (lv,) for xm in xs], "search", m_search, 1), start=end)
                leaf_ascents.append({"min_leaf": leaves[lv], "start": masks_at(end), "stopped_by": why})
                end = path[-1] if path else end
                if why in ("time limit", "point limit"):
                    break
            whys = [a["stopped_by"] for a in leaf_ascents]
            stopped = next((w for w in whys if w in ("time limit", "point limit")), None) or (
                "origin infeasible" if all(w == "origin infeasible" for w in whys)
                else "; ".join(f"min_leaf {a['min_leaf']}: {a['stopped_by']}" for a in leaf_ascents))
        # (2b) cyclic coordinate search from the best point so far: every QI revisited, every level of
        # its mask (none and the weakest included) tried, until a full cycle makes no move
        cycles, coord_stopped, diagonal = 0, "not run: " + stopped, "not measured: " + stopped
        if n_levels and stopped not in ("origin infeasible", "time limit", "point limit"):
            # the diagonal too (every QI at its k-th level: one weak mask for all, as a person sets one by
            # hand), so that the cycles can start from a uniform setting the ascent never passed
            # (the leaf size held at the best point's so far: the diagonal is one weak mask for all QIs)
            best_leaf = leaf_at(tuple(max((r for r in trace if r["stage"] == "search"), key=_rank)["levels"]))
            try:
                run_many([tuple(min(k, n - 1) for n in n_masks) + ((best_leaf,) if leaves else ())
                          for k in range(1, max(n_masks, default=1))], "search", m_search, 1)
                diagonal = "measured"
            except SearchBudgetExhausted:
                diagonal = "not measured (point limit)"
            start = tuple(max((r for r in trace if r["stage"] == "search"), key=_rank)["levels"])
            _, coord_stopped, cycles = coordinate_search(
                n_levels, lambda x: run(x, "search", m_search, 1), start, deadline=deadline,
                evaluate_many=lambda xs: run_many(xs, "search", m_search, 1), max_cycles=max_cycles)
        # (3) confirm the most useful feasible points with m copies x replicates
        pts = sorted([r for r in trace if r["feasible"] and r["stage"] == "search"],
                     key=lambda r: (-r["objective"], r["risk_ratio"]))
        chosen, ranked = None, []
        for k in range(0, len(pts), n_confirm):
            conf = run_many([tuple(r["levels"]) for r in pts[k:k + n_confirm]], "confirm", m, replicates)
            # the confirmed feasible ones, most useful first (ties: the earlier, as max() took it)
            ranked = sorted([r for r in conf if r["feasible"]], key=lambda r: (r["objective"], -r["risk_ratio"]),
                            reverse=True)
            if ranked:
                chosen = ranked[0]
                break
        validated, validation, infeasible = None, None, None
        if chosen is None and bat is not None:
            infeasible = _infeasibility(trace, caps_search or caps, targets)
            if infeasible.get("masks") is not None:
                # which tables broke the rule, named, on the closest setting's own search copies
                infeasible["tables"] = _measure_tables(infeasible["masks"], m_search, m * replicates,
                                                       int(seed) + 2 * replicates, caps_search or caps,
                                                       leaves.index(infeasible["min_leaf"]) if leaves else 0)
                # the QIs of those tables that no mask can move (the search never varies them): their
                # tables are their models' alone (NHANES: education and marital_status, missing values)
                named = {v for t in infeasible["tables"] for v in t["table"].split(":")}
                infeasible["unmaskable"] = {c: why for c, why in unmaskable.items() if c in named}
        if chosen is not None:
            # (4) the chosen masks by the user's route (validate_spec: the written spec, refitted and
            # sampled with seeds seed + r, as synthesize --spec --seed does), measured as analyse does
            from dataclasses import replace

            val_seeds = [int(seed) + r for r in range(replicates)]
            val_params = dict(params)
            if not check["passed"]:
                val_params["accept_diagnostics"] = True  # flagged above; the chosen masks inherit it
            # the confirmed candidates in order until one is feasible on the user's route too (targets and
            # table rule on the validated figures); if none is, the most useful confirmed one, flagged
            # (fair in tune_files: the first choice's validated worst one-way S_pMSE 2.77 > its bound 2.69)
            tried, first, picked = [], None, None
            for cand in ranked:
                vrows = validate_spec(full_data, replace(spec_at(tuple(cand["levels"])),
                                                         masks=json.loads(cand["masks"])),
                                      analyses, m, val_seeds, val_params, battery=bat, tolerance=tolerance,
                                      target=target, k0=k0, subgroup_tolerance=subgroup_tolerance,
                                      max_table_s_pmse=max_table_s_pmse,
                                      holdout_share=holdout_share if holdout_measures else None,
                                      holdout_measures=holdout_measures)
                record(tuple(cand["levels"]), "validate", m, replicates,
                       [{k: v for k, v in r.items() if k != "seed"} for r in vrows])
                v = seen[(tuple(cand["levels"]), m, replicates, True)]
                tried.append({"masks": json.loads(cand["masks"]), "feasible": bool(v["feasible"]),
                              **({"min_leaf": cand["min_leaf"]} if leaves else {})})
                first = first or (cand, v, vrows)
                if v["feasible"]:
                    picked = (cand, v, vrows)
                    break
            chosen, validated, vrows = picked or first
            validation = {"route": "synthmi synthesize --spec OUT --method dami --m M --seed SEED (with the "
                                   "--param given to tune), then synthmi analyse",
                          "m": int(m), "seeds": val_seeds,
                          "tried": tried,
                          "replicates": [{k: v for k, v in r.items() if not k.startswith("_")} for r in vrows]}
    finally:
        if executor is not None:
            executor.shutdown()
        _TUNE_STATE.clear()
    wall = time.perf_counter() - t_start
    rel = spec_at(tuple(chosen["levels"])) if chosen else _release_spec(base, analyses)
    return TuneResult(
        masks=json.loads(chosen["masks"]) if chosen else None,
        confirmed={k: v for k, v in chosen.items() if k != "levels"} if chosen else None,
        trace=pd.DataFrame(trace), targets=targets, wall_seconds=wall,
        settings={"method": "dami", "predictive": base.predictive, "quasi_identifiers": qi, "keep": keep,
                  "analyses": [a.__dict__ for a in analyses], "m_search": m_search, "m": m,
                  "replicates": replicates, "n_confirm": n_confirm, "seed": seed,
                  "tolerance": jsonable(tolerance), "target": target,
                  "continuous_grid": [list(c) for c in continuous_grid], "alpha_grid": list(alpha_grid),
                  "fit_seconds": fit_s, "posterior_pool": n_pool, "search_stopped_by": stopped,
                  "coordinate_search": {"stopped_by": coord_stopped, "cycles": cycles, "max_cycles": int(max_cycles),
                                        "diagonal": diagonal},
                  "not_tried": _not_tried(coords, unmaskable, trace, stopped, coord_stopped, max_search_seconds,
                                          max_search_points, leaves),
                  "leaf_grid": leaves or None, "leaf_columns": leaf_cols or None,
                  "leaf_searchable": leaf_able,
                  # each QI's model family ("normal", "tree", "cart", ...): the advice on an infeasible
                  # search depends on whether the QIs already are trees
                  "qi_models": {cd.column: cd.family for cd in getattr(base, "conditionals_", [])
                                if cd.column in qi},
                  "leaf_ascents": leaf_ascents or None,
                  "min_leaf": chosen["min_leaf"] if chosen and leaves else None,
                  "max_search_seconds": max_search_seconds, "max_search_points": max_search_points,
                  "search_points": sum(r["stage"] == "search" for r in trace), "n_jobs": int(n_jobs),
                  "diagnostics_check": jsonable(check), "base_params": jsonable(dict(base_params or {})),
                  "holdout_share": holdout_share if holdout_measures else None,
                  "objective": objective, "battery": bat.to_dict() if bat is not None else None,
                  "max_table_s_pmse": max_table_s_pmse, "max_table_ratio": max_table_ratio,
                  "table_caps": caps, "table_caps_search": caps_search, "infeasible": jsonable(infeasible),
                  "secrets": list(secrets) if secrets else None,
                  "link_aux": [list(link_aux[0]), list(link_aux[1])] if link_aux else None, "validation": jsonable(validation),
                  "reference": jsonable(reference),
                  "versus_reference": jsonable(versus_reference(validated or chosen or {}, reference))
                  if chosen is not None else None},
        spec=rel,
        validated={k: v for k, v in validated.items() if k != "levels"} if validated else None,
        min_leaf=chosen["min_leaf"] if chosen and leaves else None,
    )


__all__ += ["pareto_front", "reference_points", "table_caps", "table_violations", "DEFAULT_MAX_TABLE_RATIO",
            "AttackTarget"]
