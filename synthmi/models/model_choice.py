r"""Per-column model choice by posterior predictive checks: ``models="auto"``.

The sequential synthesizers (:class:`~synthmi.models.rubin.RubinSynthesizer`,
:class:`~synthmi.models.dami.DAMISynthesizer`) take ``models="auto"`` (every
quasi-identifier chosen), or a ``models`` dict in which some columns are
``"auto"`` and the others are given as usual (a given model always wins), or the
same in the spec's ``models`` (``"models": "auto"``) and on the command line
(``synthesize --models auto``; with ``models="auto"`` the spec's own entries
for its columns still win). A column then gets the conditional whose
*release* reproduces the column's margin and its two-way tables with every other
released column.

The candidates
    One registry, :data:`CANDIDATES`, simplest first. Per model kind of the
    column: continuous: ``normal``; ``normal`` on the ``log``, ``log1p`` and
    ``rank`` scales (log needs positive values, log1p values above -1, as
    ``transforms`` does); the two-part model (``semicont``) with a normal or a
    rank value part, when the column has a point mass (the spec's declared
    ``point_masses`` of the column, else its most frequent value when it holds
    at least :data:`POINT_MASS_MIN_SHARE` of the rows; the value is then in the
    recorded model, as an observed bound is); ``cart``. Binary: ``logit``,
    ``cart``; nominal: ``multinomial``, ``cart``; ordinal: ``ordered``,
    ``multinomial``, ``cart``; every kind also ``tree`` (before ``cart``: the
    tree conditional of :mod:`synthmi.models.tree` has a likelihood, so it is
    valid for masked columns and as a predictor under the joint predictive; it
    refuses a two-part column, recorded as such). A new conditional (a method of
    :data:`synthmi.models.conditional.METHODS`) is offered by adding one
    :class:`Candidate` to :data:`CANDIDATES`; it is offered for the kinds both the entry and
    the method's own kinds in :mod:`~synthmi.models.conditional` allow, and an
    entry whose method is not (yet) in ``METHODS`` is skipped with that reason.

Few-valued numeric columns
    A continuous column with at most :data:`synthmi.models.tree.FEW_VALUES` distinct values
    (heaped or bracketed, e.g. statsmodels' fair: age 17.5, 22, ..., 42) is judged by the same
    rule, and the rule is what makes the choice reproduce its margin: its one-way table is one of
    the column's tables, so a candidate whose copies move mass between the support points (a
    normal model, snapped to the grid the values lie on) is out of the band of the best there.
    The ``tree`` candidate draws such a column from its donors' values (discrete leaves, no
    kernel: :mod:`synthmi.models.tree`), so it reproduces the margin and, having a likelihood,
    stays available when the column is masked (where ``cart``, transforms and two-part models are
    refused). Measured (``tests/models/test_tree_discrete.py``, 600 records, a normal mask on the
    bracketed column): one-way S_pMSE normal 14.4, tree 0.78, tree chosen; with the kernel
    (before discrete leaves) the tree's was 7.23.

Roles
    A candidate that the synthesizer would refuse for the column's role is not
    fitted, and the record says why: a masked column of DA-MI (a mask that is
    not null) is never ``cart`` (no likelihood to combine with the mask), never
    two-part (masks are defined for complete columns) and, under a normal mask,
    never transformed (the mask acts on the raw scale); under DA-MI's joint
    predictive with an active mask a ``cart`` column may not be a predictor of a
    later model (:func:`synthmi.models.predictive.check_joint`), and every later
    model uses it unless its ``predictors`` / ``predictor_matrix`` row leaves it
    out or its formula does not name it.

The check (what judges a candidate)
    The columns are chosen greedily in the visit sequence. For column
    :math:`X_j` and candidate :math:`k`, the synthesizer itself (same class and
    parameters, ``models`` = the models already chosen or given for the other
    columns, candidate :math:`k` for :math:`X_j`, the default model for the
    columns still to choose) is fitted to the check frame and draws
    :data:`CHECK_COPIES` copies, seeded (the same seed for every candidate of a
    column: common random numbers), so the check judges the posterior predictive
    as the release draws it, earlier columns synthetic, masks and joint
    predictive included. It is judged on the column's tables :math:`t`: its
    one-way table and its two-way tables with every other released column
    (weights excluded) but the auto columns still to choose (drawn by their
    default model at this step; the table is judged at their own step, when
    this column's choice is made), each table's S_pMSE averaged over the
    copies, continuous columns cut into :data:`N_BINS` groups at pooled
    quantiles, a point mass its own cell (:func:`synthmi.evaluation.utility_tables`, the battery's
    tables): :math:`S_{kt}`.

The rule (Monte Carlo error), :func:`apply_rule`
    For proper posterior-predictive copies from the correct model,
    :math:`M d\, S_{pMSE} \approx 2\chi^2_{Md}` (:mod:`synthmi.evaluation.battery`:
    Snoke et al. 2018, Theorem 1, with the factor 2 of proper copies), so a
    table with :math:`d` degrees of freedom averaged over :math:`M` copies has
    Monte Carlo standard deviation :math:`\sqrt{8/(Md)}`. Copies that are not
    proper (``cart`` draws donors from a tree fitted once: the plug-in case)
    have expectation 1, not 2, so they look better by up to
    :math:`\Delta = 1` (:data:`PROPER_GAP`) than a correct proper model. Per
    table, with :math:`m_t = \min_k S_{kt}` and :math:`d_t` the df of the best
    candidate's table, a candidate's excess is

    .. math:: e_k = \max_t \Bigl( S_{kt} - m_t - \Delta - z\sqrt{8/(M d_t)} \Bigr),
        \qquad z = 2\ (\text{:data:`MC_Z`}),

    and the choice is the *simplest* (first in :data:`CANDIDATES`) candidate
    with :math:`e_k \le 0`: on every table within the proper/plug-in gap and
    two null standard deviations of the best candidate there. A more flexible
    model must beat the simpler one by more than the check's own noise on
    some table. Per table, not on the worst table alone: a table no candidate
    can fix (the column with an earlier column drawn by a rigid model) would
    otherwise hide a wrecked margin (measured on statsmodels' fair file:
    every candidate's worst table was age x yrs_married, 99-125, while their
    one-way tables ranged 34-251). When no candidate is within on every table
    the smallest excess wins and the record says so (``within_band`` False).
    (Measured on a normal column drawn by its true normal model: worst table
    3.05 at d = 24, cart 1.61, band 1 + 0.82.) A candidate whose fit fails,
    or whose copies the release guard refuses as (nearly) the original, is
    recorded as such and not chosen; when none is left the fit fails with
    the reasons.

Cost
    One fit and :data:`CHECK_COPIES` copies per candidate of each auto column
    (with ``sampler="nuts"`` the candidates are fitted by the exact fast
    sampler, which draws the same posterior), on
    the check frame: the data, or when they have more than
    :data:`MAX_CHECK_ROWS` rows a seeded subsample of that many rows (the
    choice then judges the tables of the subsample; their S_pMSE has the same
    null distribution at any size). The final model is fitted once more on all
    rows. What was chosen and the figures that chose it are in the fitted
    synthesizer's ``model_choice_``, the release's ``structure["model_choice"]``
    (metadata.json) and, as concrete models, in the release's spec
    (``spec.models``), so ``synthesize --spec`` of that spec reproduces the
    models without checking again.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import InputError, SynthmiError
from ..evaluation.pmse import utility_tables
from ..evaluation.battery import DEFAULT_MAX_TABLE_S_PMSE
from ..kinds import MODEL_KINDS, model_kind
from .conditional import _METHOD_KINDS, METHODS, expand_models, parse_models, predictors_from_matrix, resolve_visit_sequence
from .masking import NormalMasking, make_masking

__all__ = ["AUTO", "Candidate", "CANDIDATES", "ModelChoice", "wants_auto", "choose_models", "apply_rule", "MAX_CHECK_ROWS",
           "CHECK_COPIES", "CHECK_SEED", "N_BINS", "MC_Z", "PROPER_GAP", "POINT_MASS_MIN_SHARE", "RULE"]

AUTO = "auto"
#: rows of the check frame; a larger file is checked on a seeded subsample of this many rows
MAX_CHECK_ROWS = 5000
#: copies drawn per candidate (the Monte Carlo sd of a table's S_pMSE falls as 1/sqrt(M))
CHECK_COPIES = 2
#: seed of the subsample and of the candidates' copies (the choice is deterministic)
CHECK_SEED = 29
#: groups of a continuous column in a table (the battery's default)
N_BINS = 5
#: null standard deviations of the best candidate's score within which a simpler candidate is taken
MC_Z = 2.0
#: the expectation of a table's S_pMSE for proper copies (2) minus that for plug-in copies (1): the
#: advantage cart's donor draws have over a correct proper model, allowed in the rule
PROPER_GAP = 1.0
#: smallest share of the rows a value must hold to be offered as a point mass (two-part model)
POINT_MASS_MIN_SHARE = 0.05

RULE = ("per column, in the visit sequence: the simplest candidate (registry order) whose S_pMSE on each of the "
        "column's tables (one-way, and two-way with every other released column but the auto columns still to "
        f"choose; mean over the copies) is within {PROPER_GAP:g} + {MC_Z:g} * sqrt(8 / (M d)) of the best candidate's "
        "on that table, d its df (1: proper copies have S_pMSE mean 2, plug-in copies such as cart's 1); if none, "
        "the smallest excess")


@dataclass(frozen=True)
class Candidate:
    """One conditional model ``models="auto"`` may choose (an entry of :data:`CANDIDATES`).

    ``method`` is a method of :data:`synthmi.models.conditional.METHODS`; ``kinds`` the model
    kinds it is offered for; ``transform`` / ``two_part`` the per-variable settings it adds;
    ``likelihood`` False for a model without one (``cart``), which DA-MI's joint predictive
    cannot combine with a mask nor use as a predictor of a parametric model.
    """

    name: str
    method: str
    kinds: tuple[str, ...]
    transform: str | None = None
    two_part: bool = False
    likelihood: bool = True

    def model(self, point_masses: Sequence[float] = ()) -> dict[str, Any]:
        """The ``models`` entry of this candidate."""
        d: dict[str, Any] = {"method": self.method}
        if self.transform is not None:
            d["transform"] = self.transform
        if self.two_part:
            d["semicont"] = [float(v) for v in point_masses]
        return d


#: The candidates, simplest first (the rule takes the first one within Monte Carlo error of the best).
CANDIDATES: tuple[Candidate, ...] = (
    Candidate("normal", "normal", ("continuous",)),
    Candidate("normal, log", "normal", ("continuous",), transform="log"),
    Candidate("normal, log1p", "normal", ("continuous",), transform="log1p"),
    Candidate("normal, rank", "normal", ("continuous",), transform="rank"),
    Candidate("two-part", "normal", ("continuous",), two_part=True),
    Candidate("two-part, rank", "normal", ("continuous",), transform="rank", two_part=True),
    Candidate("logit", "logit", ("binary",)),
    Candidate("ordered", "ordered", ("ordinal",)),
    Candidate("multinomial", "multinomial", ("nominal", "ordinal")),
    # a tree with a likelihood: valid for masked columns and as a predictor under the joint predictive
    Candidate("tree", "tree", MODEL_KINDS),
    Candidate("cart", "cart", MODEL_KINDS, likelihood=False),
)


def wants_auto(models: Any) -> bool:
    """Whether a ``models`` setting asks for a choice: ``"auto"``, or a dict with an ``"auto"`` entry."""
    if isinstance(models, str):
        return models == AUTO
    return isinstance(models, Mapping) and any(isinstance(v, str) and v == AUTO for v in models.values())


@dataclass
class ModelChoice:
    """What ``models="auto"`` chose and the figures that chose it.

    ``models``: the concrete ``models`` dict fitted (every quasi-identifier; given ones
    unchanged); ``columns``: per chosen column, ``chosen``, ``model``, ``within_band``,
    ``best_per_table`` and ``candidates`` (one dict per candidate: ``status`` checked / skipped /
    failed / refused, ``reason``, ``worst_s_pmse``, ``worst_table``, ``worst_df``,
    ``one_way_s_pmse``, ``excess`` and ``tables``: {table: [S_pMSE, df]});
    ``given``: columns whose model the user gave.
    """

    models: dict[str, Any]
    columns: dict[str, dict[str, Any]]
    given: list[str]
    check_rows: int
    rows: int
    copies: int = CHECK_COPIES
    seed: int = CHECK_SEED
    fits: int = 0
    rule: str = RULE
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "check_rows": int(self.check_rows), "rows": int(self.rows),
                "subsampled": bool(self.check_rows < self.rows), "copies": int(self.copies), "seed": int(self.seed),
                "n_bins": N_BINS, "candidate_fits": int(self.fits), "given": list(self.given),
                "models": self.models, "columns": self.columns}

    def to_frame(self) -> pd.DataFrame:
        """One row per (column, candidate): status, reason and figures; ``chosen`` marks the choice."""
        rows = []
        for col, info in self.columns.items():
            for cand in info["candidates"]:
                rows.append({"column": col, **cand, "chosen": cand["candidate"] == info["chosen"]})
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
def _point_masses(declared: Any, x: np.ndarray) -> list[float]:
    """The column's point masses: declared in the spec, else its most frequent value when that
    holds at least POINT_MASS_MIN_SHARE of the non-missing rows and at least three other values
    remain for the value model."""
    if declared:
        return [float(v) for v in declared]
    x = x[~np.isnan(x)]
    if x.size == 0:
        return []
    vals, counts = np.unique(x, return_counts=True)
    top = int(np.argmax(counts))
    if counts[top] >= POINT_MASS_MIN_SHARE * x.size and vals.size >= 4:
        return [float(vals[top])]
    return []


def _names(formula: str, column: str) -> bool:
    """Whether a formula names ``column`` (as a whole word or inside Q("...")."""
    return re.search(r"(?<![A-Za-z0-9_.])" + re.escape(column) + r"(?![A-Za-z0-9_])", formula) is not None


def _later_users(c: str, later: Sequence[str], given: Mapping[str, Any], pm_preds: Mapping[str, list[str]]) -> list[str]:
    """The later columns whose model would use ``c`` as a predictor (the default design uses every
    earlier quasi-identifier)."""
    out = []
    for k in later:
        vs = given.get(k)
        if vs is not None and vs.formula is not None:
            used = _names(vs.formula, c)
        elif vs is not None and vs.predictors is not None:
            used = c in vs.predictors
        elif k in pm_preds:
            used = c in pm_preds[k]
        else:
            used = True
        if used:
            out.append(k)
    return out


def _skip_reason(cand: Candidate, facts: dict[str, Any]) -> str | None:
    """Why ``cand`` is not fitted for a column (None: it is): not available, refused for the
    column's role (what the synthesizer would refuse), or not defined on the column's values."""
    if cand.method not in METHODS:
        return f"method {cand.method!r} is not available in this version"
    if facts["masked"]:
        if not cand.likelihood:
            return f"masked column: {cand.name} has no likelihood to combine with the masking evidence"
        if cand.two_part:
            return "masked column: DA-MI masks are defined for complete columns (no point masses)"
        if cand.transform is not None and facts["normal_mask"]:
            return "masked column with a normal mask, which acts on the raw scale (no transform)"
    if not cand.likelihood and facts["joint"] and facts["users"]:
        return (f"under DA-MI's joint predictive a {cand.name} column (no likelihood) cannot be a predictor of the "
                f"parametric models of {facts['users']} (later in the visit sequence)")
    if cand.transform == "log" and not facts["min"] > 0:
        return "the log scale needs positive values and the column has values <= 0"
    if cand.transform == "log1p" and not facts["min"] > -1:
        return "the log1p scale needs values above -1 and the column has values <= -1"
    if cand.two_part and not facts["point_masses"]:
        return f"no point mass (declared in the spec, or a value holding >= {POINT_MASS_MIN_SHARE:.0%} of the rows)"
    return None


def _column_tables(original: pd.DataFrame, copies: list[pd.DataFrame], c: str, variables: list[str],
                   spec: Any) -> dict[str, Any]:
    """The check's figures of column ``c``: its one-way table and its two-way tables."""
    tab = utility_tables(original[variables], [cp[variables] for cp in copies], variables=variables, ways=(1, 2),
                         n_bins=N_BINS, spec=spec).to_frame()
    mine = tab[[c in v.split(":") for v in tab["variables"]]]
    s = mine["s_pmse"].to_numpy(dtype=float)
    if not np.isfinite(s).any():
        return {"worst_s_pmse": float("nan"), "worst_table": None, "worst_df": float("nan"),
                "one_way_s_pmse": float("nan")}
    w = int(np.nanargmax(s))
    one = mine.loc[mine["way"] == 1, "s_pmse"]
    return {"worst_s_pmse": float(s[w]), "worst_table": str(mine["variables"].iloc[w]),
            "worst_df": float(mine["df"].iloc[w]), "one_way_s_pmse": float(one.iloc[0]) if len(one) else float("nan"),
            "tables": {str(v): [float(x), float(d)] for v, x, d in zip(mine["variables"], s, mine["df"])}}


def _band(df: float) -> float:
    """How far above the best candidate's S_pMSE on a table with ``df`` degrees of freedom a candidate
    may be: the proper/plug-in gap plus MC_Z null standard deviations."""
    return PROPER_GAP + MC_Z * float(np.sqrt(8.0 / (CHECK_COPIES * max(df, 1.0))))


def apply_rule(checked: Sequence[Mapping[str, Any]]) -> tuple[int, dict[str, float], list[float]]:
    """The documented rule on the checked candidates (registry order): index of the choice, the
    per-table best S_pMSE, and each candidate's excess (max over tables of S - best - band)."""
    tables = sorted({t for r in checked for t in r["tables"]})
    best: dict[str, float] = {}
    excess = [-np.inf] * len(checked)
    for t in tables:
        vals = [(r["tables"][t][0] if t in r["tables"] and np.isfinite(r["tables"][t][0]) else np.nan) for r in checked]
        if not np.isfinite(vals).any():
            continue
        k = int(np.nanargmin(vals))
        best[t] = float(vals[k])
        band = _band(checked[k]["tables"][t][1])
        for i, v in enumerate(vals):
            excess[i] = max(excess[i], (v if np.isfinite(v) else np.inf) - best[t] - band)
    ok = [i for i, e in enumerate(excess) if e <= 0]
    return (ok[0] if ok else int(np.argmin(excess))), best, [float(e) for e in excess]


def choose_models(synth: Any, df: pd.DataFrame, spec: Any, fit_params: Mapping[str, Any],
                  progress: Any = None) -> ModelChoice:
    """Choose the ``"auto"`` columns' models of ``synth`` (see the module docstring).

    ``synth`` is the unfitted-or-refitting synthesizer whose ``models`` (or its spec's) ask for
    the choice; ``df`` and ``spec`` what its ``fit`` was given; ``fit_params`` its other fit
    arguments (weights, semicont, rules), passed to every candidate fit.
    """
    from .base import UnmodifiedRelease

    owner = type(synth).__name__
    qi = list(spec.quasi_identifiers)
    setting = synth.models if synth.models is not None else spec.models
    if isinstance(setting, str):
        if setting != AUTO:
            raise InputError(f"The 'models' parameter of {owner} must be a dict or 'auto'. Got {setting!r} instead.")
        # "auto" chooses what is not given: the spec's own entries for its columns still win
        setting = expand_models(setting, qi, spec.models, words=(AUTO,))
    setting = {c: v for c, v in setting.items() if c in qi}  # a spec may carry other releases' models
    auto_cols = [c for c, v in setting.items() if isinstance(v, str) and v == AUTO]
    given_models = {c: v for c, v in setting.items() if c not in auto_cols}
    given = parse_models(given_models, qi, owner)
    # a column whose scale or point masses the flat parameters set is the user's too
    flat = set((getattr(synth, "transforms", None) or {})) | set((fit_params.get("semicont") or {}))
    auto_cols = [c for c in auto_cols if c not in flat]
    explicit = synth.visit_sequence is not None or synth.order is not None
    order = resolve_visit_sequence(synth.visit_sequence if explicit else spec.visit_sequence, synth.order, qi, owner)
    pm_preds = predictors_from_matrix(synth.predictor_matrix, qi, list(df.columns), owner)
    masks = dict((synth._from_spec("masks", "masks") if hasattr(synth, "masks") else None) or {})
    active = {c: make_masking(m, c) for c, m in masks.items() if c in qi}
    active = {c: m for c, m in active.items() if not m.is_null}
    joint = bool(active) and getattr(synth, "predictive", None) == "joint"
    weights = fit_params.get("weights")
    if weights is None:
        weights = next((c for c, v in spec.columns.items() if getattr(v, "role", None) == "weight"), None)
    variables = [c for c in spec.released if c in df.columns and c != weights]

    n = len(df)
    if n > MAX_CHECK_ROWS:
        rows = np.sort(np.random.default_rng(CHECK_SEED).choice(n, MAX_CHECK_ROWS, replace=False))
        check = df.iloc[rows]
    else:
        check = df
    params = dict(synth.get_params(deep=False))
    # the check judges the predictive; the convergence check belongs to the final fit, and NUTS
    # samples the posterior the exact fast sampler draws (test_rubin.py::test_fast_and_nuts_agree) at many times its cost
    params.update(accept_diagnostics=True, progressbar=False, sampler="fast" if params.get("sampler") == "nuts"
                  else params.get("sampler", "fast"))
    chosen: dict[str, Any] = dict(given_models)
    columns: dict[str, dict[str, Any]] = {}
    fits = 0
    for j, c in enumerate(order):
        if c not in auto_cols:
            continue
        kind = model_kind(spec.kind(c))
        x = df[c].to_numpy(dtype=float) if kind == "continuous" else None
        finite = x[~np.isnan(x)] if x is not None else None
        facts = {
            "min": float(finite.min()) if finite is not None and finite.size else float("nan"),
            "point_masses": _point_masses(getattr(spec.columns[c], "point_masses", None), x) if x is not None else [],
            "masked": c in active,
            "normal_mask": isinstance(active.get(c), NormalMasking),
            "joint": joint,
            "users": _later_users(c, order[j + 1:], given, pm_preds),
        }
        # tables with the auto columns still to choose are judged at their own step (they are drawn by
        # a default model here, whose misfit is no fault of this column's candidates)
        later_auto = {v for v in order[j + 1:] if v in auto_cols}
        judged = [v for v in variables if v not in later_auto]
        seed = int(np.random.SeedSequence([CHECK_SEED, j]).generate_state(1)[0])
        rows_out: list[dict[str, Any]] = []
        for cand in CANDIDATES:
            if kind not in cand.kinds or kind not in _METHOD_KINDS.get(cand.method, cand.kinds):
                continue
            model = cand.model(facts["point_masses"])
            row: dict[str, Any] = {"candidate": cand.name, "model": model}
            reason = _skip_reason(cand, facts)
            if reason is not None:
                rows_out.append({**row, "status": "skipped", "reason": reason})
                continue
            clone = type(synth)(**{**params, "models": {**chosen, c: model}})
            if progress is not None:
                progress(f"models='auto': column '{c}', candidate {cand.name}")
            fits += 1
            try:
                with warnings.catch_warnings():
                    # the candidates' own warnings (a normal model's misfit) are what the check measures
                    warnings.simplefilter("ignore")
                    release = clone.fit(check, spec, **fit_params).sample(CHECK_COPIES, random_state=seed)
            except UnmodifiedRelease:
                rows_out.append({**row, "status": "refused",
                                 "reason": "its copies are (nearly) the original (the release guard)"})
                continue
            except (SynthmiError, ValueError, np.linalg.LinAlgError) as err:
                rows_out.append({**row, "status": "failed", "reason": f"{type(err).__name__}: {err}"})
                continue
            rows_out.append({**row, "status": "checked", "reason": None,
                             **_column_tables(check, list(release.copies), c, judged, spec)})
        ok = [r for r in rows_out if r["status"] == "checked"]
        if not ok:
            why = "; ".join(f"{r['candidate']}: {r['reason']}" for r in rows_out)
            raise InputError(f"models='auto' found no model for column '{c}' whose release could be checked ({why}). "
                             f"Give its model in 'models'.")
        k, best, excess = apply_rule(ok)
        for r, e in zip(ok, excess):
            r["excess"] = e
        pick = ok[k]
        chosen[c] = pick["model"]
        within = excess[k] <= 0
        if progress is not None:
            progress(f"models='auto': column '{c}' -> {pick['candidate']} (one-way S_pMSE "
                     f"{pick['one_way_s_pmse']:.2f}, worst table {pick['worst_table']} {pick['worst_s_pmse']:.2f}"
                     + ("" if within else "; no candidate within Monte Carlo error of the best on every table") + ")")
        # the best of the candidates may still wreck a table: said, as tune would call it infeasible
        above = pick["worst_s_pmse"] > DEFAULT_MAX_TABLE_S_PMSE
        if above:
            warnings.warn(f"models='auto': no candidate reproduces the tables of column '{c}': the chosen "
                          f"{pick['candidate']} has worst table {pick['worst_table']} S_pMSE {pick['worst_s_pmse']:.1f}"
                          f" > {DEFAULT_MAX_TABLE_S_PMSE:g} (what tune calls infeasible). Check the copies with "
                          "'synthmi utility --tables 1,2'; a mask on the column limits the candidates (no cart, "
                          "no transform under a normal mask).", RuntimeWarning, stacklevel=2)
        columns[c] = {"chosen": pick["candidate"], "model": pick["model"], "within_band": bool(within),
                      "above_table_bound": bool(above), "best_per_table": best, "candidates": rows_out}
    models = {c: chosen[c] for c in order if c in chosen}
    return ModelChoice(models=models, columns=columns, given=[c for c in order if c not in columns],
                       check_rows=len(check), rows=n, fits=fits)


def spec_with_models(spec: Any, models: Mapping[str, Any]) -> Any:
    """The spec with the chosen models in its ``models`` (entries of other columns kept)."""
    old = spec.models if isinstance(spec.models, Mapping) else {}
    merged = {**{c: v for c, v in old.items() if not (isinstance(v, str) and v == AUTO)}, **dict(models)}
    return replace(spec, models=merged)
