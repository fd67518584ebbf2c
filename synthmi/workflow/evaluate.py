"""Evaluate releases for the disclosure review: the one step that reads the original.

:func:`evaluate_release` runs the evaluation layer (pMSE, the analysis model
with combining rules, re-identification risk, risk subgroups, attribute
disclosure, the no-alignment measures of fully synthetic releases) for each
released set of synthetic copies, plus two reference releases, and keeps only
aggregates in a :class:`~synthmi.report.data.ReportData` for
:mod:`synthmi.report` to format. It is orchestration (layer ``workflow`` in
:mod:`synthmi._layers`): it calls the measures below it and is called by the
command line and :func:`synthmi.workflow.demo.run_demo`.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validate import check_columns_exist, check_dataframe, check_scalar, param_error
from ..provenance import confidential_digest, frame_sha256, git_state
from ..report.data import SUBGROUP_ORDER, ReportData, pmse_reading
from ..evaluation.analysis import recorded_weights
from ..synthetic import SyntheticData, package_versions

__all__ = ["evaluate_release", "describe_release", "impossible_values", "formula_variables", "independent_release"]


def formula_variables(formula: str, columns: Iterable[str]) -> list[str]:
    """Columns of ``columns`` named in a patsy formula (in the frame's order)."""
    tokens = set(re.findall(r"[A-Za-z_][A-Za-z0-9_\.]*", formula))
    return [c for c in columns if c in tokens]


def _copies(obj: Any) -> list[pd.DataFrame]:
    if isinstance(obj, SyntheticData):
        return list(obj.copies)
    if isinstance(obj, pd.DataFrame):
        return [obj]
    return list(obj)


def _risk_by_subgroup(method: str, by_group: pd.DataFrame | None) -> list[dict[str, Any]]:
    rows = []
    if by_group is None:
        return rows
    index = {str(k): k for k in by_group.index}
    for g in SUBGROUP_ORDER:
        if g not in index:
            continue
        r = by_group.loc[index[g]]
        rows.append({
            "method": method,
            "subgroup": g,
            "records": int(r["n_records"]),
            "expected_matches": float(r["expected_matches"]),
            "mean_I_i": float(r["mean_risk"]),
            "true_match_rate": float(r["true_match_rate"]),
            "share_above_threshold": float(r["share_above_threshold"]),
        })
    return rows


#: sampler diagnostics beyond these are flagged in the report
DIAGNOSTIC_LIMITS = {"max_r_hat": 1.05, "min_ess_bulk": 100.0}


#: keys of a release's diagnostics that hold the history of a run, not its figures: the copula's
#: ``n_iter='auto'`` records every intermediate release check (``sampling.checks``), whose early
#: figures (R-hat 1.16 after the first 1,000 iterations) the final draws no longer have
_HISTORY_KEYS = frozenset({"checks"})


def _diag_flags(diag: Any) -> dict[str, Any]:
    """max r_hat / min ESS / divergences found anywhere in a release's diagnostics (but in the history of
    its intermediate checks, ``_HISTORY_KEYS``), and failures."""
    found: dict[str, float] = {}

    def walk(d):
        if isinstance(d, dict):
            for k, v in d.items():
                if k in _HISTORY_KEYS:
                    continue
                if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v):
                    if k in ("r_hat", "max_r_hat", "split_r_hat", "max_split_r_hat"):
                        found["max_r_hat"] = max(found.get("max_r_hat", -np.inf), float(v))
                    elif k in ("ess_bulk", "min_ess_bulk", "ess", "min_ess"):
                        found["min_ess_bulk"] = min(found.get("min_ess_bulk", np.inf), float(v))
                    elif k in ("divergences",):
                        found["divergences"] = found.get("divergences", 0) + float(v)
                else:
                    walk(v)
        elif isinstance(d, list):
            for v in d:
                walk(v)

    walk(diag)
    fails = []
    if found.get("max_r_hat", 0) > DIAGNOSTIC_LIMITS["max_r_hat"]:
        fails.append(f"max r_hat {found['max_r_hat']:.3f} > {DIAGNOSTIC_LIMITS['max_r_hat']}")
    if found.get("min_ess_bulk", np.inf) < DIAGNOSTIC_LIMITS["min_ess_bulk"]:
        fails.append(f"min ESS {found['min_ess_bulk']:.0f} < {DIAGNOSTIC_LIMITS['min_ess_bulk']:.0f}")
    if found.get("divergences", 0) > 0:
        fails.append(f"{found['divergences']:.0f} divergent transitions")
    return {**found, "failures": fails}


_HOW = {
    "dami": "DA-MI (Jiang et al. 2022): drawn from the posterior predictive of a model of the quasi-identifiers "
            "given the kept columns, conditioned on masked pseudo-copies W of each record's own values",
    "risk-dami": "risk-targeted DA-MI: a Gaussian copula of all columns, with masks that differ between low, "
                 "medium and high re-identification-risk records",
    "cart": "CART (synthpop): each quasi-identifier drawn from the leaf of a classification or regression tree "
            "grown on the original, given the kept columns and the earlier quasi-identifiers",
    "rubin": "norm+logit (Rubin 1993 MI): drawn from the posterior predictive of regression models "
             "(normal, logit, ordered or multinomial) given the kept columns",
    "dpsyn": "DPSyn: a differentially private fully synthetic release from noisy marginals",
}


def _how(method: str, structure: Mapping[str, Any]) -> str:
    """How a release was drawn, in plain words: the method's sentence, and for the sequential
    synthesizers (rubin, dami) the conditional each column actually used and whether the copies
    were posterior draws (proper) or plug-in ones; ``_HOW`` alone described tree or plug-in
    copies as regressions' posterior predictive."""
    how = _HOW.get(method, f"method {method}")
    models = structure.get("models") if method in ("rubin", "dami") else None
    if isinstance(models, Mapping) and models:
        if method == "rubin":
            how = ("Rubin 1993 MI: each quasi-identifier drawn from a conditional model given the kept columns "
                   "and the earlier quasi-identifiers")
        used = ", ".join(f"{c} {m.get('method', '?') if isinstance(m, Mapping) else m}" for c, m in models.items())
        how += f" (models: {used})"
    if structure.get("proper") is False:
        how += ("; plug-in copies (proper=False, synthpop's proper = FALSE): every copy uses the posterior mean "
                "of the models' parameters, not a posterior draw of its own")
    return how


def release_masks(obj: Any) -> tuple[Any, str | None]:
    """(masks, where they were recorded: ``"params"``, ``"spec"`` or None) of one release. A release
    synthesized from a spec (e.g. one 'synthmi tune' wrote) carries its masks, and how they were tuned,
    in the spec, not in the parameters."""
    params = obj.metadata().get("params", {}) if isinstance(obj, SyntheticData) else {}
    masks = params.get("masks") if isinstance(params, dict) else None
    if masks:
        return masks, "params"
    spec_masks = getattr(getattr(obj, "spec", None), "masks", None)
    return (spec_masks, "spec") if spec_masks else (masks, None)


def describe_release(label: str, obj: Any, original: pd.DataFrame, copies: list[pd.DataFrame],
                     quasi_identifiers: Sequence[str], rule: str) -> dict[str, Any]:
    """Plain-language facts of one release (aggregates only)."""
    qi_meta = list(getattr(obj, "quasi_identifiers", None) or quasi_identifiers)
    synthesized = [c for c in copies[0].columns if c in qi_meta]
    verbatim = [c for c in copies[0].columns if c not in synthesized]
    method = getattr(obj, "method", None) or "unknown"
    params = obj.metadata().get("params", {}) if isinstance(obj, SyntheticData) else {}
    masks, _ = release_masks(obj)
    tuning = getattr(getattr(obj, "spec", None), "tuning", None)
    unchanged = {}
    aligned = all(len(c) == len(original) for c in copies)
    for c in synthesized:
        if not aligned or c not in original.columns:
            unchanged[c] = None
            continue
        a = original[c].to_numpy(dtype=object)
        na = pd.isna(original[c]).to_numpy()
        shares = [float(np.mean((a == cp[c].to_numpy(dtype=object)) | (na & pd.isna(cp[c]).to_numpy())))
                  for cp in copies]
        unchanged[c] = float(np.mean(shares))
    diag = obj.metadata().get("diagnostics") if isinstance(obj, SyntheticData) else None
    structure = getattr(obj, "structure", {}) or {}
    extra: dict[str, Any] = {}
    if structure.get("privacy"):
        # a DP release states its guarantee; its metadata never holds a seed
        extra["privacy"] = structure["privacy"]
        extra["suppressed_levels"] = (diag or {}).get("suppressed_levels") or {}
        extra["pooled_levels"] = (diag or {}).get("pooled_levels") or {}
        # release range and moved-mean / truncation flags of each numeric column (noisy counts only)
        extra["continuous"] = (diag or {}).get("continuous") or {}
    return {
        **extra,
        "label": label,
        "method": method,
        "how": _how(str(method), structure),
        "copies": len(copies),
        "synthesized": synthesized,
        "verbatim": verbatim,
        "masks": masks,
        **({"tuning": tuning} if tuning else {}),
        "params": {k: v for k, v in (params or {}).items() if k not in ("masks", "progressbar")},
        "unchanged_share": unchanged,
        "rule": rule,
        "diagnostics": _diag_flags(diag),
        "plug_in": structure.get("proper") is False,
        "seed": getattr(obj, "seed", None),
    }


def impossible_values(original: pd.DataFrame, copies: list[pd.DataFrame], columns: Sequence[str]) -> list[dict[str, Any]]:
    """Counts (over all copies) of synthetic values the original's columns cannot hold.

    Continuous: outside the observed [min, max] (the bounds are not reported),
    or not whole where every observed value is whole; categorical: a category
    the original lacks; any column: missing where the original has none.
    """
    rows = []
    for c in columns:
        o = original[c]
        n_out = n_frac = n_cat = n_na = 0
        num = pd.api.types.is_numeric_dtype(o) and not isinstance(o.dtype, pd.CategoricalDtype)
        if num:
            ov = o.dropna().to_numpy(dtype=float)
            lo, hi = (ov.min(), ov.max()) if len(ov) else (-np.inf, np.inf)
            whole = len(ov) > 0 and bool(np.all(np.mod(ov, 1.0) == 0))
        else:
            levels = set(o.dropna().astype(object))
        for cp in copies:
            s = cp[c]
            n_na += int(s.isna().sum()) if not o.isna().any() else 0
            if num:
                v = pd.to_numeric(s, errors="coerce").dropna().to_numpy(dtype=float)
                n_out += int(((v < lo) | (v > hi)).sum())
                if whole:
                    n_frac += int((np.mod(v, 1.0) != 0).sum())
            else:
                n_cat += int((~s.dropna().astype(object).isin(levels)).sum())
        total = n_out + n_frac + n_cat + n_na
        rows.append({"column": c, "outside observed range": n_out, "not whole": n_frac,
                     "unknown category": n_cat, "missing (none in original)": n_na, "impossible": total})
    return rows


def evaluate_release(
    original: pd.DataFrame,
    synthetic: Mapping[str, Any],
    quasi_identifiers: Sequence[str],
    formula: str,
    family: str = "probit",
    rule: str | Mapping[str, str] | None = None,
    alpha: float = 0.05,
    tolerance: Mapping[str, float] | float | None = None,
    k0: int = 5,
    risk_threshold: float = 0.5,
    pmse_method: str = "logit",
    pmse_variables: Sequence[str] | None = None,
    original_label: str = "data",
    input_hashes: Mapping[str, str] | None = None,
    seeds: Mapping[str, Any] | None = None,
    progress: bool = False,
    original_is_public: bool = False,
    target: str | None = None,
    references: bool = True,
    frontier: pd.DataFrame | None = None,
    reference_seed: int = 0,
    holdout: pd.DataFrame | None = None,
    spec: Any = None,
    secrets: Sequence[str] | None = None,
    link_aux: tuple[Sequence[str], Sequence[str]] | None = None,
    ngroups_keys: int | None = None,
    ngroups_target: int | None = None,
) -> ReportData:
    """Evaluate one or more releases of synthetic copies against the original.

    Parameters
    ----------
    original : DataFrame
        The confidential data (read here, never stored in the result).
    synthetic : mapping
        Method label -> :class:`SyntheticData` or list of DataFrames.
    quasi_identifiers : list of str
        Columns the intruder knows (risk matching and risk subgroups).
    formula, family, rule, alpha
        The analyst's model (see :func:`synthmi.evaluation.analyse`). ``rule=None``:
        each release's recorded rule (``full`` for DPSyn), else ``nested`` for m x r
        copies, else ``partial``; a mapping gives the rule per release label.
    tolerance : dict or float, optional
        Closeness for continuous quasi-identifiers in matching and in the
        risk subgroups (default: the risk module's default).
    k0 : int
        Neighbours needed for the low-risk subgroup.
    risk_threshold : float
        I_i above this counts as a high-risk record in the summary.
    pmse_method : {"logit", "cart"}
    pmse_variables : list of str, optional
        Columns for pMSE (default: the quasi-identifiers and the formula's variables).
    target : str, optional
        Sensitive column for attribute disclosure (DiSCO, DCAP, TCAP, repU and
        the matching attribute risk; :func:`synthmi.evaluation.attribute_disclosure`).
    ngroups_keys : int >= 2, optional
        The attribute key tables cut each continuous quasi-identifier into this
        many pooled-quantile groups (synthpop's ``ngroups_keys``,
        :func:`~synthmi.evaluation.attribute_disclosure`); default exact keys, with
        a warning per release whose copies put a key off the original's values.
    ngroups_target : int >= 2, optional
        The same for a continuous ``target`` (synthpop's ``ngroups_target``); needs
        ``target``. Default: the target's exact values.
    references : bool, default True
        Add the original released as is and an independent release (each QI
        permuted on its own, as many copies as the first release, seeded by
        ``reference_seed``) as reference rows.
    frontier : DataFrame, optional
        Frontier points (``method``, ``setting``, measures and ``_se``) drawn
        behind this report's releases in the risk-utility map.
    holdout : DataFrame, optional
        Real records not used for the releases: the baseline of the distance to
        closest record of fully synthetic releases (else leave-one-out), and the
        non-members of membership inference (:func:`synthmi.evaluation.membership_inference`,
        distance attack and DOMIAS) of every release, in ``attack_risks`` with two
        reference rows: the original released as is, and an independent release
        (half of the holdout used as the release, the other half the non-members);
        the control set of anonymeter's singling-out (univariate and multivariate),
        linkability (the QIs split in halves) and inference risks (of ``target``, else the
        spec's kept and outcome columns, else the non-QI columns, from the QIs; see
        :func:`synthmi.evaluation.attack_risks.review_attacks`), further columns of
        ``attack_risks`` with what each assumes in ``attack_notes``. Without it ``attack_risks`` is empty and ``settings["membership_inference"]``
        says how to get one.
    secrets : list of str, optional
        The columns whose inference risk is measured (default: ``target``, else the spec's kept
        and outcome columns, else the non-QI columns).
    link_aux : pair of column lists, optional
        The intruder's two auxiliary data sets of the linkability attack (default: the QIs split
        in halves).

    Fully synthetic releases (recorded rule ``full``, or copies whose row count
    differs from the original's) get no record-by-record identity matching (their
    rows correspond to no original record); they get the no-alignment measures in
    ``no_alignment`` instead, and a DP release's guarantee is stated.
    """
    measures = _check_measures(
        original, synthetic, quasi_identifiers, formula, family, alpha, tolerance, k0, risk_threshold, pmse_method,
        pmse_variables, target, holdout, spec, secrets, link_aux, ngroups_keys, ngroups_target,
    )
    from .._progress import progress_bar

    steps = progress_bar(total=4 * len(synthetic), desc="evaluating", unit="step", enabled=progress, leave=False)
    evaluated = {method: _evaluate_one(measures, method, obj, _release_rule(method, obj, rule), steps)
                 for method, obj in synthetic.items()}
    steps.close()

    attack_risks, attack_notes = _attack_risks(measures, synthetic, references, reference_seed)
    ref_rows, ref_attr = [], []
    if references:
        ref_rows, ref_attr = _references(measures, rule if rule is not None else "partial",
                                         len(_copies(next(iter(synthetic.values())))), reference_seed)
    per_variable = pd.DataFrame({method: e.per_variable for method, e in evaluated.items()})
    per_variable.index.name = "variable"
    releases = {method: e.release for method, e in evaluated.items()}
    labels = measures.subgroup_labels.to_numpy()
    return ReportData(
        summary=pd.DataFrame([e.summary for e in evaluated.values()]),
        per_variable=per_variable,
        coefficients=pd.concat([e.coefficients for e in evaluated.values()], ignore_index=True),
        risk_by_subgroup=pd.DataFrame([row for e in evaluated.values() for row in e.risk_rows]),
        individual_risk={method: e.individual for method, e in evaluated.items() if e.individual is not None},
        subgroup_labels=list(labels),
        settings={**_settings(measures, rule, releases, original_label, labels), "target": target,
                  "ngroups_keys": measures.ngroups_keys, "ngroups_target": measures.ngroups_target,
                  "membership_inference": ("against the holdout" if holdout is not None else NO_HOLDOUT)},
        provenance=_provenance(original, original_is_public, input_hashes, seeds,
                               {method: e.meta for method, e in evaluated.items()}),
        releases=releases,
        references=pd.DataFrame(ref_rows),
        pmse_two_way={method: e.two_way for method, e in evaluated.items()},
        attribute=pd.DataFrame([e.attribute for e in evaluated.values() if e.attribute is not None] + ref_attr),
        impossible=pd.DataFrame([row for e in evaluated.values() for row in e.impossible]),
        frontier=frontier if frontier is not None else pd.DataFrame(),
        no_alignment=pd.DataFrame([e.no_alignment for e in evaluated.values() if e.no_alignment is not None]),
        attack_risks=attack_risks,
        attack_notes=attack_notes,
        battery=pd.concat([e.battery for e in evaluated.values()], ignore_index=True),
    )


#: what the report and outputs say when no holdout was given (membership inference is not skipped silently)
NO_HOLDOUT = ("not computed: membership inference needs a holdout, real records of the population not used for "
              "the synthesis (synthesize with --holdout-share 0.2, or give --holdout FILE / holdout=)")

#: the membership inference columns of the attack-risk table: (attack, figure of MembershipResult)
MEMBERSHIP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("distance", "auc"), ("distance", "tpr_at_fpr_0.01"), ("domias", "auc"), ("domias", "tpr_at_fpr_0.01"))


def _membership_cells(train: pd.DataFrame, holdout: pd.DataFrame, copies: list[pd.DataFrame],
                      seed: int) -> dict[str, float]:
    """The attack-risk columns of one release: ``<attack>_<figure>`` with ``_ci_low`` / ``_ci_high``."""
    from ..evaluation.membership import membership_inference

    # the released columns the original has; a holdout lacking one was refused by _attack_risks
    # (membership_inference would refuse it too), so no column is dropped here
    cols = [c for c in copies[0].columns if c in train.columns]
    row: dict[str, float] = {}
    for attack in dict.fromkeys(a for a, _ in MEMBERSHIP_COLUMNS):
        f = membership_inference(train, holdout, copies, attack=attack, columns=cols, random_state=seed).figures
        for a, name in MEMBERSHIP_COLUMNS:
            if a == attack:
                for suffix in ("", "_ci_low", "_ci_high"):
                    row[f"{a}_{name}{suffix}"] = f[f"{a}_{name}{suffix}"]
    return row


def _anonymeter_cells(train: pd.DataFrame, control: pd.DataFrame, copies: list[pd.DataFrame], ms: "_Measures",
                      seed: int, notes: dict[str, str]) -> dict[str, float]:
    """anonymeter's risks of one release (:func:`synthmi.evaluation.attack_risks.review_attacks`, the holdout as
    control): a column per attack label (``singling_out[univariate]``, ``linkability[k=1]``,
    ``inference[<secret>]``, ...) with ``_ci_low`` / ``_ci_high``; fills ``notes`` with what each assumes."""
    from ..evaluation.attack_risks import review_attacks

    secrets = ms.secrets if ms.secrets is not None else ([ms.target] if ms.target is not None else None)
    row: dict[str, float] = {}
    for label, r in review_attacks(train, copies, control, quasi_identifiers=ms.qi, secrets=secrets,
                                   link_aux=ms.link_aux, spec=ms.spec, random_state=seed).items():
        f, k = r.figures, r.key
        row[label], row[f"{label}_ci_low"], row[f"{label}_ci_high"] = f[k], f[f"{k}_ci_low"], f[f"{k}_ci_high"]
        notes.setdefault(label, r.describe.rstrip("."))
    return row


def _attack_risks(ms: _Measures, synthetic: Mapping[str, Any], references: bool,
                  seed: int) -> tuple[pd.DataFrame, dict[str, str]]:
    """One row per release (and per reference release), one column per attack measure with its 95% CI.

    The references: the original released as is (its own rows as the copy), and an independent
    release -- real records of the population not used for synthesis: half of the holdout
    (seeded split) is the release and the other half the non-members, so no candidate is in
    the release. anonymeter's singling-out, linkability and inference risks are further columns,
    the holdout their control set (for the independent release: the other half, as its non-members).
    """
    from ..evaluation.attack_risks import control_size_note
    from ..evaluation.membership import ATTACKS

    if ms.holdout is None:
        return pd.DataFrame(), {}
    original, holdout = ms.original, ms.holdout
    # every compared column (a copy's column the original has) must be in the holdout: an attack on
    # fewer columns is weaker, and dropping one silently would understate the risk
    missing = list(dict.fromkeys(c for obj in synthetic.values() for c in _copies(obj)[0].columns
                                 if c in original.columns and c not in holdout.columns))
    if missing:
        raise param_error("holdout", "evaluate_release", f"real records with every column the copies release "
                          f"(it lacks {missing})", f"a frame with columns {list(holdout.columns)}")
    notes = {f"membership ({a})": ATTACKS[a] for a in dict.fromkeys(a for a, _ in MEMBERSHIP_COLUMNS)}
    rows = [{"method": method, **_membership_cells(original, holdout, _copies(obj), seed),
             **_anonymeter_cells(original, holdout, _copies(obj), ms, seed, notes)}
            for method, obj in synthetic.items()]
    if references:
        rows.append({"method": "reference: original released as is",
                     **_membership_cells(original, holdout, [original], seed),
                     **_anonymeter_cells(original, holdout, [original], ms, seed, notes)})
        if len(holdout) >= 8:
            perm = np.random.default_rng(seed).permutation(len(holdout))
            half = len(holdout) // 2
            release, rest = holdout.iloc[np.sort(perm[:half])], holdout.iloc[np.sort(perm[half:])]
            rows.append({"method": "reference: independent release",
                         **_membership_cells(original, rest, [release], seed),
                         **_anonymeter_cells(original, rest, [release], ms, seed, notes)})
        else:
            # too few real non-members to split into a release and its non-members: said, not skipped
            rows.append({"method": f"reference: independent release (not measured: a holdout of {len(holdout)} "
                                   "records cannot be halved into a release and non-members; 8 are needed)"})
    size = control_size_note(len(original), len(holdout))
    if size:
        notes["control size"] = size
    return pd.DataFrame(rows), notes


@dataclass
class _Measures:
    """The measures every release is judged by, checked once: the analyst's model, the intruder's
    quasi-identifiers and tolerance, and the original's risk subgroups."""

    original: pd.DataFrame
    qi: list[str]
    formula: str
    family: str
    alpha: float
    tolerance: Any
    k0: int
    risk_threshold: float
    pmse_method: str
    pmse_variables: list[str]
    target: str | None
    holdout: pd.DataFrame | None
    spec: Any
    subgroup_labels: pd.Series
    response: str | None
    secrets: list[str] | None = None
    link_aux: tuple[list[str], list[str]] | None = None
    ngroups_keys: int | None = None
    ngroups_target: int | None = None

    @property
    def ngroups_kw(self) -> dict[str, int | None]:
        """The grouping arguments of :func:`~synthmi.evaluation.attribute_disclosure`."""
        return {"ngroups_keys": self.ngroups_keys, "ngroups_target": self.ngroups_target}

    @property
    def tolerance_kw(self) -> dict[str, Any]:
        # no tolerance given: the risk module's own default
        return {} if self.tolerance is None else {"tolerance": self.tolerance}


@dataclass
class _Evaluated:
    """The aggregates of one release (one entry of each of :class:`ReportData`'s tables)."""

    summary: dict[str, Any]
    coefficients: pd.DataFrame
    per_variable: pd.Series
    two_way: pd.DataFrame
    release: dict[str, Any]
    meta: dict[str, Any]
    impossible: list[dict[str, Any]]
    attribute: dict[str, Any] | None
    risk_rows: list[dict[str, Any]]
    individual: np.ndarray | None
    no_alignment: dict[str, Any] | None
    battery: pd.DataFrame


def _check_measures(original, synthetic, quasi_identifiers, formula, family, alpha, tolerance, k0, risk_threshold,
                    pmse_method, pmse_variables, target, holdout, spec, secrets=None, link_aux=None,
                    ngroups_keys=None, ngroups_target=None) -> _Measures:
    """Check :func:`evaluate_release`'s arguments and split the original into risk subgroups."""
    from ..evaluation.subgroups import risk_subgroups
    from ..spec import resolve_quasi_identifiers

    owner = "evaluate_release"
    check_dataframe(original, "original")
    qi = resolve_quasi_identifiers(quasi_identifiers, spec, df=original, frame="original", owner=owner)
    if not synthetic:
        raise param_error("synthetic", owner, "a non-empty mapping of method -> copies", synthetic)
    k0 = check_scalar(k0, "k0", owner, kind="int", lower=1)
    risk_threshold = float(check_scalar(risk_threshold, "risk_threshold", owner, lower=0.0, upper=1.0))
    if pmse_variables is None:
        pmse_variables = list(dict.fromkeys(qi + formula_variables(formula, original.columns)))
    else:
        pmse_variables = check_columns_exist(original, pmse_variables, "pmse_variables", "original")
    sub_kw = {} if tolerance is None else {"tolerance": tolerance}
    subgroups = risk_subgroups(original, qi, k0=k0, **sub_kw)
    if target is not None:
        check_columns_exist(original, [target], "target", "original")
    if ngroups_keys is not None:
        ngroups_keys = int(check_scalar(ngroups_keys, "ngroups_keys", owner, kind="int", lower=2))
    if ngroups_target is not None:
        ngroups_target = int(check_scalar(ngroups_target, "ngroups_target", owner, kind="int", lower=2))
        if target is None:
            raise param_error("ngroups_target", owner, "None without a 'target' (it groups the target's values)",
                              ngroups_target)
        from ..evaluation.attribute_disclosure import check_ngroups_target

        ngroups_target = check_ngroups_target(ngroups_target, original, target, spec, owner)
    if secrets is not None:
        secrets = check_columns_exist(original, list(secrets), "secrets", "original")
    if link_aux is not None:
        if len(link_aux) != 2 or not all(len(side) for side in link_aux):
            raise param_error("link_aux", owner, "a pair of non-empty column lists", link_aux)
        link_aux = tuple(check_columns_exist(original, list(side), "link_aux", "original") for side in link_aux)
    return _Measures(
        original=original, qi=qi, formula=formula, family=family, alpha=alpha, tolerance=tolerance, k0=k0,
        risk_threshold=risk_threshold, pmse_method=pmse_method, pmse_variables=list(pmse_variables), target=target,
        holdout=holdout, spec=spec, secrets=secrets, link_aux=link_aux, ngroups_keys=ngroups_keys,
        ngroups_target=ngroups_target, subgroup_labels=pd.Series(subgroups.labels, index=original.index).astype(str),
        response=_response(formula, original.columns),
    )


def _release_rule(method: str, obj: Any, rule: str | Mapping[str, str] | None) -> str:
    """The combining rule of one release: the user's (one, or per label), else the recorded one, else
    ``nested`` for m x r copies, ``full`` for DPSyn, ``partial`` otherwise."""
    structure = getattr(obj, "structure", {}) or {}
    chosen = rule.get(method) if isinstance(rule, Mapping) else rule
    return chosen or getattr(obj, "rule", None) or structure.get("rule") or (
        "nested" if {"m", "r"} <= set(structure) else "full" if getattr(obj, "method", None) == "dpsyn" else "partial")


def _evaluate_one(ms: _Measures, method: str, obj: Any, rel_rule: str, steps: Any) -> _Evaluated:
    """Utility, the analysis, identity (or no-alignment) risk and the description of one release."""
    from ..evaluation.analysis import analyse
    from ..evaluation.attribute_disclosure import attribute_disclosure
    from ..evaluation.pmse import pmse, utility_tables
    from ..evaluation.risk import reidentification_risk

    original, qi = ms.original, ms.qi
    copies = _copies(obj)
    # a survey weight is released unchanged: left out of pMSE / tables, used by the analysis
    weight_col = recorded_weights(obj)
    pm_vars = [v for v in ms.pmse_variables if v != weight_col]
    fully = rel_rule == "full" or any(len(c) != len(original) for c in copies)
    release = describe_release(method, obj, original, copies, qi, rel_rule)
    release["fully_synthetic"] = fully
    impossible = [{"method": method, **r} for r in impossible_values(original, copies, release["synthesized"])]

    steps.set_postfix_str(f"{method}: pMSE")
    pm = pmse(original, copies, method=ms.pmse_method, variables=pm_vars, spec=ms.spec)
    ut = utility_tables(original, copies, variables=pm_vars, ways=(1, 2), spec=ms.spec).to_frame()
    one = ut[ut["way"] == 1]
    # kept columns are released unchanged (S_pMSE 0): show the synthesized ones
    per_variable = one.set_index("variables")["s_pmse"].reindex([v for v in pm_vars if v in qi])
    two_way = _square(ut[ut["way"] == 2], list(pm_vars))
    attribute = None
    if ms.target is not None:
        ad = attribute_disclosure(original, copies, qi, ms.target, tolerance=ms.tolerance,
                                  threshold=ms.risk_threshold, **ms.ngroups_kw)
        attribute = {"method": method, **_attr_row(ad.figures)}
        # exact key tables of a key synthesized on a continuous scale read 0 by construction: say so
        release["attribute_warnings"] = list(ad.settings.get("warnings") or [])
    steps.update()

    steps.set_postfix_str(f"{method}: battery")
    bat_fig, bat_rows = _battery(ms, obj, copies, rel_rule)
    bat_rows.insert(0, "method", method)

    steps.set_postfix_str(f"{method}: analysis")
    # the SyntheticData itself when there is one: nested copies need their m x r structure
    res = analyse(ms.formula, family=ms.family, original=original,
                  synthetic=obj if isinstance(obj, SyntheticData) else copies, rule=rel_rule, alpha=ms.alpha,
                  spec=ms.spec, weights=weight_col if weight_col else False)
    coefficients = res.to_frame()
    coefficients = coefficients.reset_index().rename(columns={coefficients.index.name or "index": "term"})
    coefficients.insert(0, "method", method)
    steps.update()

    steps.set_postfix_str(f"{method}: risk")
    no_alignment, individual, risk_rows = None, None, []
    if fully:
        # No row of a fully synthetic copy belongs to an original record: measures
        # that need no alignment instead of record-by-record identity matching.
        no_alignment = _no_alignment_row(ms, method, copies)
        rs = {"expected_matches": np.nan, "true_match_rate": np.nan, "share_above_threshold": np.nan}
    else:
        risk = reidentification_risk(original, copies, qi, threshold=ms.risk_threshold, by=ms.subgroup_labels,
                                     spec=ms.spec, **ms.tolerance_kw)
        individual = np.asarray(risk.individual, dtype=float)
        risk_rows = _risk_by_subgroup(method, risk.by_group)
        rs = risk.figures
    steps.update()

    k = float(np.mean(pm.k)) if getattr(pm, "k", None) is not None else None
    release["s_pmse_reading"], release["s_pmse_flag"] = pmse_reading(pm.mean_s_pmse, k, _worst_table(bat_fig, bat_rows))
    summary = {
        "method": method,
        "M": len(copies),
        "rule": rel_rule,
        "S_pMSE": pm.mean_s_pmse,
        "mean_ci_overlap": float(res.mean_ci_overlap),
        "mean_std_diff": float(res.mean_std_diff),
        "expected_matches": float(rs["expected_matches"]),
        "true_match_rate": float(rs["true_match_rate"]),
        "share_above_threshold": float(rs["share_above_threshold"]),
        **{k: bat_fig[k] for k in ("battery_ci_overlap", "generic_ci_overlap", "worst_one_way_s_pmse",
                                   "worst_two_way_s_pmse")},
    }
    if fully:
        # the no-alignment measures in the summary (NaN for the other releases)
        summary["DCR closer than baseline 5%"] = no_alignment["closer than baseline 5%"]
        if "repU" in no_alignment:
            summary["repU"] = no_alignment["repU"]
    release["weights_note"] = res.weights_note
    meta = _release_meta(obj, copies, rel_rule, res)
    steps.update()
    return _Evaluated(summary=summary, coefficients=coefficients, per_variable=per_variable, two_way=two_way,
                      release=release, meta=meta, impossible=impossible, attribute=attribute, risk_rows=risk_rows,
                      individual=individual, no_alignment=no_alignment, battery=bat_rows)


def _battery(ms: _Measures, obj: Any, copies: list[pd.DataFrame], rel_rule: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """The battery's figures and per-criterion rows of one release (:mod:`synthmi.evaluation.battery`),
    the report's analysis declared; the spec's roles and kinds, or ones drafted from the released columns."""
    from ..evaluation.battery import default_battery, measure_battery
    from ..spec import ReleaseSpec

    cols = [c for c in copies[0].columns if c in ms.original.columns]
    weight = recorded_weights(obj)
    spec = ms.spec if ms.spec is not None else ReleaseSpec.draft(ms.original[cols], [q for q in ms.qi if q in cols],
                                                                 [c for c in cols if c not in ms.qi])
    if weight and weight in spec.columns:
        spec = spec.with_weight(weight)
    bat = default_battery(spec, [(ms.formula, ms.family)])
    # the overall S_pMSE is the report's own pMSE (its variables and method): not fitted twice
    fig = measure_battery(ms.original, obj if isinstance(obj, SyntheticData) else copies, bat, rule=rel_rule,
                          pmse_copies=0, details=True)
    rows = pd.DataFrame([c for c in fig.pop("_criteria") if c["criterion"] != "overall"])
    return fig, rows


def _worst_table(bat_fig: Mapping[str, Any], bat_rows: pd.DataFrame) -> tuple[str, float, float] | None:
    """(table, S_pMSE, bound) of the release's worst one- or two-way table when it breaks the table rule
    ``tune`` uses (:func:`synthmi.evaluation.battery.table_feasible`, bound
    :data:`~synthmi.evaluation.battery.DEFAULT_MAX_TABLE_S_PMSE`; the battery section flags the same
    releases), else None: one rule for "far above 1" across tune, the battery section and the verdict."""
    from ..evaluation.battery import DEFAULT_MAX_TABLE_S_PMSE, table_feasible

    if table_feasible(bat_fig, DEFAULT_MAX_TABLE_S_PMSE):
        return None
    tab = bat_rows[bat_rows["criterion"].isin(["one-way table", "two-way table"])]
    vals = tab["value"].to_numpy(dtype=float)
    worst = tab.iloc[int(np.nanargmax(vals))]
    return f"{worst['criterion']} of {worst['name']}", float(worst["value"]), DEFAULT_MAX_TABLE_S_PMSE


def _release_meta(obj: Any, copies: list[pd.DataFrame], rel_rule: str, res: Any) -> dict[str, Any]:
    """The provenance of one release: its recorded metadata (a DP release has no seed), copy digests, rule."""
    if isinstance(obj, SyntheticData):
        params = obj.metadata()["params"]
        masks, source = release_masks(obj)
        if source == "spec":
            # the parameter was empty ("masks –"): the fit took the masks from the release's spec
            params = {**{k: v for k, v in params.items() if k != "masks"}, "masks (from the spec)": masks}
        meta = {"method": obj.method, "params": params,
                "quasi_identifiers": obj.quasi_identifiers, "versions_at_synthesis": obj.versions,
                "diagnostics": obj.metadata()["diagnostics"],
                "diagnostics_check": obj.diagnostics_check, "unconverged": obj.unconverged,
                "unmodified": (obj.structure or {}).get("unmodified")}
        if "privacy" not in (obj.structure or {}):
            meta["seed"] = obj.seed  # a DP release records no seed (issue 11)
    else:
        meta = {"copies": len(copies)}
    meta["weights"] = res.weights_note
    meta["copies_sha256"] = [frame_sha256(c) for c in copies]
    meta["rule"] = rel_rule
    if res.separated:
        meta["separated_copies"] = list(res.separated)
    return meta


def _settings(ms: _Measures, rule: Any, releases: Mapping[str, Mapping[str, Any]], original_label: str,
              labels: np.ndarray) -> dict[str, Any]:
    """The settings the report states (no data value)."""
    return {
        "original": original_label,
        "n_records": int(len(ms.original)),
        "quasi_identifiers": ms.qi,
        "formula": ms.formula,
        "family": ms.family,
        "rule": rule if isinstance(rule, str) else ", ".join(f"{k}: {v['rule']}" for k, v in releases.items()),
        "alpha": ms.alpha,
        "pmse_method": ms.pmse_method,
        "pmse_variables": list(ms.pmse_variables),
        "tolerance": ms.tolerance if ms.tolerance is not None else "risk module default",
        "k0": ms.k0,
        "risk_threshold": ms.risk_threshold,
        "risk_subgroup_counts_original": {g: int((labels == g).sum()) for g in SUBGROUP_ORDER},
    }


def _provenance(original: pd.DataFrame, original_is_public: bool, input_hashes: Mapping[str, str] | None,
                seeds: Mapping[str, Any] | None, meta: dict[str, Any]) -> dict[str, Any]:
    """Versions, commit, digests of the inputs and each release's metadata."""
    return {
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "versions": package_versions(),
        "git": git_state(),
        # public data (the bundled sets) get a plain hash; confidential input only a keyed one
        "original_digest": ("sha256:" + frame_sha256(original)) if original_is_public else confidential_digest(original),
        **({"input_sha256": dict(input_hashes)} if input_hashes else {}),
        **({"seeds": dict(seeds)} if seeds else {}),
        "releases": meta,
    }


def _response(formula: str, columns: Iterable[str]) -> str | None:
    """The analysis model's response if it is a column (the default target of attribute disclosure)."""
    lhs = formula.split("~", 1)[0].strip()
    return lhs if lhs in set(columns) else None


def _no_alignment_row(ms: _Measures, method: str, copies: list[pd.DataFrame]) -> dict[str, Any]:
    """Distance to closest record vs its baseline, replicated uniques and DiSCO of one fully synthetic release
    (of ``target``, else of the analysis model's response)."""
    original, qi, holdout, tolerance, threshold = ms.original, ms.qi, ms.holdout, ms.tolerance, ms.risk_threshold
    target = ms.target or ms.response
    from ..evaluation.attribute_disclosure import attribute_disclosure
    from ..evaluation.dcr import distance_to_closest_record

    cols = [c for c in copies[0].columns if c in original.columns]
    dcr = distance_to_closest_record(original, copies, columns=cols,
                                     holdout=None if holdout is None else holdout[cols]).figures
    row: dict[str, Any] = {
        "method": method,
        "DCR baseline": "holdout" if holdout is not None else "leave-one-out",
        "median DCR (synthetic)": dcr["median_dcr_synthetic"],
        "median DCR (baseline)": dcr["median_dcr_baseline"],
        "exact copies (synthetic)": dcr["share_exact_synthetic"],
        "exact copies (baseline)": dcr["share_exact_baseline"],
        "closer than baseline 5%": dcr["share_below_holdout_q05"],
    }
    if target is not None and target not in qi:
        kw = {} if tolerance is None else {"tolerance": tolerance}
        ad = attribute_disclosure(original, copies, qi, target, threshold=threshold, **ms.ngroups_kw,
                                  **kw).figures
        row.update({"target": target, "repU": ad.get("repU"), "DiSCO": ad.get("DiSCO"), "DCAP": ad.get("DCAP")})
    return row


def _square(two: pd.DataFrame, variables: list[str]) -> pd.DataFrame:
    """Two-way table S_pMSE as a symmetric variables x variables frame (NaN diagonal)."""
    m = pd.DataFrame(np.nan, index=variables, columns=variables)
    for name, v in zip(two["variables"], two["s_pmse"]):
        a, b = str(name).split(":", 1)
        if a in m.index and b in m.columns:
            m.loc[a, b] = m.loc[b, a] = float(v)
    return m


_ATTR_KEYS = {"DiSCO": "DiSCO", "DCAP": "DCAP", "TCAP": "TCAP", "repU": "repU",
              "attribute_risk_mean": "mean attribute risk A_i", "share_above_threshold": "share A_i > threshold"}


def _attr_row(summary: Mapping[str, Any]) -> dict[str, float]:
    return {label: float(summary[k]) if summary[k] is not None else np.nan for k, label in _ATTR_KEYS.items()}


def independent_release(original: pd.DataFrame, quasi_identifiers: Sequence[str], m: int, seed: int) -> list[pd.DataFrame]:
    """Reference release with no information linking a record's QIs to it or to each other:
    each QI column permuted independently across records (marginals kept)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(m):
        c = original.copy()
        for q in quasi_identifiers:
            c[q] = original[q].to_numpy()[rng.permutation(len(original))]
            if isinstance(original[q].dtype, pd.CategoricalDtype):
                c[q] = pd.Categorical(c[q], categories=original[q].cat.categories, ordered=original[q].cat.ordered)
        out.append(c)
    return out


def _references(ms: _Measures, rule: Any, m: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Summary (and attribute) rows of the original released as is and of an independent release
    (``max(m, 2)`` copies, each quasi-identifier permuted on its own with ``seed``)."""
    original, qi, formula, family, alpha = ms.original, ms.qi, ms.formula, ms.family, ms.alpha
    tolerance, threshold, target = ms.tolerance, ms.risk_threshold, ms.target
    pmse_method, pmse_variables = ms.pmse_method, ms.pmse_variables
    from ..evaluation.analysis import analyse
    from ..evaluation.attribute_disclosure import attribute_disclosure
    from ..evaluation.pmse import pmse
    from ..evaluation.risk import reidentification_risk

    kw = {} if tolerance is None else {"tolerance": tolerance}
    rr = reidentification_risk(original, [original], qi, threshold=threshold, **kw).figures
    rows = [{"method": "reference: original released as is", "M": 1, "S_pMSE": np.nan, "mean_ci_overlap": 1.0,
             "mean_std_diff": 0.0, "expected_matches": float(rr["expected_matches"]),
             "true_match_rate": float(rr["true_match_rate"]), "share_above_threshold": float(rr["share_above_threshold"])}]
    attr = []
    if target is not None:
        attr.append({"method": "reference: original released as is",
                     **_attr_row(attribute_disclosure(original, [original], qi, target, threshold=threshold,
                                                     **ms.ngroups_kw, **kw).figures)})
    copies = independent_release(original, qi, max(int(m), 2), seed)
    # the permuted copies are a partially synthetic release (no nests): the user's rule
    # when one rule was given, else partial
    ref_rule = rule if isinstance(rule, str) and rule != "nested" else "partial"
    res = analyse(formula, family=family, original=original, synthetic=copies, rule=ref_rule, alpha=alpha)
    ri = reidentification_risk(original, copies, qi, threshold=threshold, **kw).figures
    rows.append({"method": "reference: independent release", "M": len(copies),
                 "S_pMSE": pmse(original, copies, method=pmse_method, variables=pmse_variables).mean_s_pmse,
                 "mean_ci_overlap": float(res.mean_ci_overlap), "mean_std_diff": float(res.mean_std_diff),
                 "expected_matches": float(ri["expected_matches"]), "true_match_rate": float(ri["true_match_rate"]),
                 "share_above_threshold": float(ri["share_above_threshold"])})
    if target is not None:
        attr.append({"method": "reference: independent release",
                     **_attr_row(attribute_disclosure(original, copies, qi, target, threshold=threshold,
                                                     **ms.ngroups_kw, **kw).figures)})
    return rows, attr
