"""Gather the numbers of a disclosure review: the one step that reads the original.

:func:`evaluate_release` runs the evaluation layer (pMSE, the analysis model
with combining rules, re-identification risk, risk subgroups) for each
released set of synthetic copies and keeps only aggregates in a
:class:`ReportData`: coefficient tables, S_pMSE values, risk summaries, risk
values I_i (which are probabilities, not data values) and provenance (package
versions, seeds, SHA-256 hashes of the inputs). No row or cell value of the
original is stored, so a ``ReportData`` can be rendered and shared.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validate import check_columns_exist, check_dataframe, check_scalar, param_error
# digests live in synthmi.provenance (below report/ and evaluation/); re-exported here
from ..provenance import NOT_RECORDED, PROVENANCE_KEY_ENV, confidential_digest, frame_sha256  # noqa: F401
from ..synthetic import SyntheticData, package_versions, recorded_weights

__all__ = ["ReportData", "evaluate_release", "frame_sha256", "file_sha256", "formula_variables", "git_state"]

SUBGROUP_ORDER = ["low", "medium", "high"]


@dataclass
class ReportData:
    """Everything the report shows; aggregates only.

    Attributes
    ----------
    summary : DataFrame
        One row per method: ``method``, ``M``, ``S_pMSE``, ``mean_ci_overlap``,
        ``mean_std_diff``, ``expected_matches``, ``true_match_rate`` (and
        ``share_above_threshold``).
    per_variable : DataFrame
        One-way S_pMSE, index = variable, one column per method.
    coefficients : DataFrame
        ``AnalysisResults.to_frame()`` of every method stacked, with ``method``
        and ``term`` columns.
    risk_by_subgroup : DataFrame
        Per method and original risk subgroup: records, expected correct
        matches, mean I_i, true-match rate, share above threshold.
    individual_risk : dict
        Method -> I_i per original record (probabilities in [0, 1]).
    subgroup_labels : list of str
        Risk subgroup of each original record, same order as the I_i.
    settings, provenance : dict
    releases : dict
        Method -> plain-language description (:func:`describe_release`):
        verbatim and synthesized columns, method, masks, rule, share of QI
        values left unchanged per column, sampler diagnostics and their flags.
    references : DataFrame
        Summary rows of the original released as is and of an independent
        release (each QI permuted on its own), same columns as ``summary``.
    pmse_two_way : dict
        Method -> square DataFrame of two-way table S_pMSE (variables x variables).
    attribute : DataFrame
        Attribute disclosure of ``target`` per method and reference (DiSCO etc.).
    impossible : DataFrame
        Per method and QI: synthetic values outside the original's observed
        range, non-whole values where the original has whole numbers, and
        categories the original lacks (counts over all copies; no bounds shown).
    frontier : DataFrame
        Points of a risk-utility frontier to draw (benchmarks/frontier.py or
        :func:`synthmi.tuning.frontier`), plus the releases and references.
    no_alignment : DataFrame
        Per fully synthetic release (rule ``full`` or copies of another row count):
        risk measures that need no row alignment -- distance to closest record
        against a holdout (or leave-one-out) baseline, replicated uniques (repU) and
        DiSCO of the target (:mod:`synthmi.evaluation.dcr`,
        :func:`synthmi.evaluation.attribute_disclosure`).
    """

    summary: pd.DataFrame
    per_variable: pd.DataFrame
    coefficients: pd.DataFrame
    risk_by_subgroup: pd.DataFrame
    individual_risk: dict[str, np.ndarray]
    subgroup_labels: list[str] | None
    settings: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    releases: dict[str, dict[str, Any]] = field(default_factory=dict)
    references: pd.DataFrame = field(default_factory=pd.DataFrame)
    pmse_two_way: dict[str, pd.DataFrame] = field(default_factory=dict)
    attribute: pd.DataFrame = field(default_factory=pd.DataFrame)
    impossible: pd.DataFrame = field(default_factory=pd.DataFrame)
    frontier: pd.DataFrame = field(default_factory=pd.DataFrame)
    no_alignment: pd.DataFrame = field(default_factory=pd.DataFrame)


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_state() -> dict[str, Any]:
    """Commit of the checkout and whether synthmi/ had uncommitted changes (None outside git)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return {"commit": None}
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "synthmi"], cwd=root, capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}
    if head.returncode != 0:
        return {"commit": None}
    return {"commit": head.stdout.strip(), "synthmi_modified": sorted(line[3:] for line in dirty.stdout.splitlines())}


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


#: S_pMSE under the null is about chi2_k / k (Snoke et al. 2018), sd sqrt(2 / k); values
#: more than this many null sds away from 1 are flagged in the report.
PMSE_FLAG_SDS = 3.0
DIAGNOSTIC_LIMITS = {"max_r_hat": 1.05, "min_ess_bulk": 100.0}


def pmse_reading(s_pmse: float, k: float | None) -> tuple[str, bool]:
    """Plain-language reading of an S_pMSE and whether it is flagged.

    Below ``1 - 3 sd`` the copies are closer to the original than a draw from
    a fitted model would be (little was changed: a disclosure concern); above
    ``1 + 3 sd`` the propensity model tells them apart (a utility concern).
    ``sd = sqrt(2 / k)`` with k the propensity model's parameters; without k
    the band is 0.5 to 2.
    """
    if s_pmse is None or not np.isfinite(s_pmse):
        return "not computed", False
    sd = np.sqrt(2.0 / k) if k else None
    lo, hi = (1 - PMSE_FLAG_SDS * sd, 1 + PMSE_FLAG_SDS * sd) if sd else (0.5, 2.0)
    if s_pmse < lo:
        return f"far below 1 (< {lo:.2f}): copies nearly identical to the original", True
    if s_pmse > hi:
        return f"far above 1 (> {hi:.2f}): copies differ from the original in ways the propensity model detects", True
    return f"within {lo:.2f} to {hi:.2f}: consistent with copies drawn from a fitted model", False


def _diag_flags(diag: Any) -> dict[str, Any]:
    """max r_hat / min ESS / divergences found anywhere in a release's diagnostics, and failures."""
    found: dict[str, float] = {}

    def walk(d):
        if isinstance(d, dict):
            for k, v in d.items():
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


def describe_release(label: str, obj: Any, original: pd.DataFrame, copies: list[pd.DataFrame],
                     quasi_identifiers: Sequence[str], rule: str) -> dict[str, Any]:
    """Plain-language facts of one release (aggregates only)."""
    qi_meta = list(getattr(obj, "quasi_identifiers", None) or quasi_identifiers)
    synthesized = [c for c in copies[0].columns if c in qi_meta]
    verbatim = [c for c in copies[0].columns if c not in synthesized]
    method = getattr(obj, "method", None) or "unknown"
    params = obj.metadata().get("params", {}) if isinstance(obj, SyntheticData) else {}
    masks = params.get("masks") if isinstance(params, dict) else None
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
        "how": _HOW.get(str(method), f"method {method}"),
        "copies": len(copies),
        "synthesized": synthesized,
        "verbatim": verbatim,
        "masks": masks,
        "params": {k: v for k, v in (params or {}).items() if k not in ("masks", "progressbar")},
        "unchanged_share": unchanged,
        "rule": rule,
        "diagnostics": _diag_flags(diag),
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
    references : bool, default True
        Add the original released as is and an independent release (each QI
        permuted on its own, as many copies as the first release, seeded by
        ``reference_seed``) as reference rows.
    frontier : DataFrame, optional
        Frontier points (``method``, ``setting``, measures and ``_se``) drawn
        behind this report's releases in the risk-utility map.
    holdout : DataFrame, optional
        Real records not used for the releases: the baseline of the distance to
        closest record of fully synthetic releases (else leave-one-out).

    Fully synthetic releases (recorded rule ``full``, or copies whose row count
    differs from the original's) get no record-by-record identity matching (their
    rows correspond to no original record); they get the no-alignment measures in
    ``no_alignment`` instead, and a DP release's guarantee is stated.
    """
    from ..evaluation.analysis import analyse
    from ..evaluation.pmse import pmse, utility_tables
    from ..evaluation.risk import reidentification_risk
    from ..evaluation.subgroups import risk_subgroups

    owner = "evaluate_release"
    check_dataframe(original, "original")
    qi = check_columns_exist(original, quasi_identifiers, "quasi_identifiers", "original")
    if not synthetic:
        raise param_error("synthetic", owner, "a non-empty mapping of method -> copies", synthetic)
    k0 = check_scalar(k0, "k0", owner, kind="int", lower=1)
    risk_threshold = float(check_scalar(risk_threshold, "risk_threshold", owner, lower=0.0, upper=1.0))
    if pmse_variables is None:
        pmse_variables = list(dict.fromkeys(qi + formula_variables(formula, original.columns)))
    else:
        pmse_variables = check_columns_exist(original, pmse_variables, "pmse_variables", "original")

    from .._progress import progress_bar

    sub_kw = {} if tolerance is None else {"tolerance": tolerance}
    subgroups = risk_subgroups(original, qi, k0=k0, **sub_kw)
    labels_series = pd.Series(subgroups.labels, index=original.index).astype(str)
    labels = labels_series.to_numpy()

    from ..evaluation.attribute_disclosure import attribute_disclosure

    if target is not None:
        check_columns_exist(original, [target], "target", "original")
    summary_rows, coef_frames, per_var, risk_rows, individual = [], [], {}, [], {}
    releases, two_way, attr_rows, impossible = {}, {}, [], []
    meta: dict[str, Any] = {}
    steps = progress_bar(total=4 * len(synthetic), desc="evaluating", unit="step", enabled=progress, leave=False)
    no_align_rows: list[dict[str, Any]] = []
    response = _response(formula, original.columns)
    for method, obj in synthetic.items():
        copies = _copies(obj)
        structure = getattr(obj, "structure", {}) or {}
        # a survey weight is released unchanged: left out of pMSE / tables, used by the analysis
        weight_col = recorded_weights(obj)
        pm_vars = [v for v in pmse_variables if v != weight_col]
        rel_rule = rule.get(method) if isinstance(rule, Mapping) else rule
        rel_rule = rel_rule or getattr(obj, "rule", None) or structure.get("rule") or (
            "nested" if {"m", "r"} <= set(structure) else "full" if getattr(obj, "method", None) == "dpsyn" else "partial")
        fully = rel_rule == "full" or any(len(c) != len(original) for c in copies)
        releases[method] = describe_release(method, obj, original, copies, qi, rel_rule)
        releases[method]["fully_synthetic"] = fully
        impossible += [{"method": method, **r} for r in impossible_values(original, copies, releases[method]["synthesized"])]
        steps.set_postfix_str(f"{method}: pMSE")
        pm = pmse(original, copies, method=pmse_method, variables=pm_vars, spec=spec)
        ut = utility_tables(original, copies, variables=pm_vars, ways=(1, 2), spec=spec)
        one = ut[ut["way"] == 1]
        # kept columns are released unchanged (S_pMSE 0): show the synthesized ones
        per_var[method] = one.set_index("variables")["s_pmse"].reindex([v for v in pm_vars if v in qi])
        two_way[method] = _square(ut[ut["way"] == 2], list(pm_vars))
        if target is not None:
            ad = attribute_disclosure(original, copies, qi, target, tolerance=tolerance, threshold=risk_threshold)
            attr_rows.append({"method": method, **_attr_row(ad.figures)})
        steps.update()
        steps.set_postfix_str(f"{method}: analysis")
        # the SyntheticData itself when there is one: nested copies need their m x r structure
        res = analyse(formula, family=family, original=original, synthetic=obj if isinstance(obj, SyntheticData) else copies,
                      rule=rel_rule, alpha=alpha, spec=spec, weights=weight_col if weight_col else False)
        frame = res.to_frame()
        frame = frame.reset_index().rename(columns={frame.index.name or "index": "term"})
        frame.insert(0, "method", method)
        coef_frames.append(frame)
        steps.update()
        steps.set_postfix_str(f"{method}: risk")
        if fully:
            # No row of a fully synthetic copy belongs to an original record: measures
            # that need no alignment instead of record-by-record identity matching.
            no_align_rows.append(_no_alignment_row(method, original, copies, qi, target or response, holdout,
                                                   tolerance, risk_threshold))
            rs = {"expected_matches": np.nan, "true_match_rate": np.nan, "share_above_threshold": np.nan}
        else:
            risk = reidentification_risk(original, copies, qi, threshold=risk_threshold, by=labels_series, spec=spec, **sub_kw)
            individual[method] = np.asarray(risk.individual, dtype=float)
            risk_rows += _risk_by_subgroup(method, risk.by_group)
            rs = risk.figures
        steps.update()
        k = float(np.mean(pm.k)) if getattr(pm, "k", None) is not None else None
        reading, flagged = pmse_reading(pm.mean_s_pmse, k)
        releases[method]["s_pmse_reading"] = reading
        releases[method]["s_pmse_flag"] = flagged
        summary_rows.append({
            "method": method,
            "M": len(copies),
            "rule": rel_rule,
            "S_pMSE": pm.mean_s_pmse,
            "mean_ci_overlap": float(res.mean_ci_overlap),
            "mean_std_diff": float(res.mean_std_diff),
            "expected_matches": float(rs["expected_matches"]),
            "true_match_rate": float(rs["true_match_rate"]),
            "share_above_threshold": float(rs["share_above_threshold"]),
        })
        if fully:
            # the no-alignment measures in the summary (NaN for the other releases)
            summary_rows[-1]["DCR closer than baseline 5%"] = no_align_rows[-1]["closer than baseline 5%"]
            if "repU" in no_align_rows[-1]:
                summary_rows[-1]["repU"] = no_align_rows[-1]["repU"]
        if isinstance(obj, SyntheticData):
            meta[method] = {"method": obj.method, "params": obj.metadata()["params"],
                            "quasi_identifiers": obj.quasi_identifiers, "versions_at_synthesis": obj.versions,
                            "diagnostics": obj.metadata()["diagnostics"],
                            "diagnostics_check": obj.diagnostics_check, "unconverged": obj.unconverged,
                            "unmodified": (obj.structure or {}).get("unmodified")}
            if "privacy" not in (obj.structure or {}):
                meta[method]["seed"] = obj.seed  # a DP release records no seed (issue 11)
        else:
            meta[method] = {"copies": len(copies)}
        meta[method]["weights"] = res.weights_note
        releases[method]["weights_note"] = res.weights_note
        meta[method]["copies_sha256"] = [frame_sha256(c) for c in copies]
        meta[method]["rule"] = rel_rule
        if res.separated:
            meta[method]["separated_copies"] = list(res.separated)
        steps.update()
    steps.close()

    per_variable = pd.DataFrame(per_var)
    per_variable.index.name = "variable"
    ref_rows = []
    if references:
        ref_rule = rule if rule is not None else "partial"
        ref_rows, ref_attr = _references(original, qi, formula, family, ref_rule, alpha, tolerance, risk_threshold,
                                         pmse_method, pmse_variables, target, len(_copies(next(iter(synthetic.values())))),
                                         reference_seed)
        attr_rows += ref_attr
    counts = {g: int((labels == g).sum()) for g in SUBGROUP_ORDER}
    settings = {
        "original": original_label,
        "n_records": int(len(original)),
        "quasi_identifiers": qi,
        "formula": formula,
        "family": family,
        "rule": rule if isinstance(rule, str) else ", ".join(f"{k}: {v['rule']}" for k, v in releases.items()),
        "alpha": alpha,
        "pmse_method": pmse_method,
        "pmse_variables": list(pmse_variables),
        "tolerance": tolerance if tolerance is not None else "risk module default",
        "k0": k0,
        "risk_threshold": risk_threshold,
        "risk_subgroup_counts_original": counts,
    }
    provenance = {
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
        "versions": package_versions(),
        "git": git_state(),
        # public data (the bundled sets) get a plain hash; confidential input only a keyed one
        "original_digest": ("sha256:" + frame_sha256(original)) if original_is_public else confidential_digest(original),
        **({"input_sha256": dict(input_hashes)} if input_hashes else {}),
        **({"seeds": dict(seeds)} if seeds else {}),
        "releases": meta,
    }
    return ReportData(
        summary=pd.DataFrame(summary_rows),
        per_variable=per_variable,
        coefficients=pd.concat(coef_frames, ignore_index=True),
        risk_by_subgroup=pd.DataFrame(risk_rows),
        individual_risk=individual,
        subgroup_labels=list(labels),
        settings={**settings, "target": target},
        provenance=provenance,
        releases=releases,
        references=pd.DataFrame(ref_rows),
        pmse_two_way=two_way,
        attribute=pd.DataFrame(attr_rows),
        impossible=pd.DataFrame(impossible),
        frontier=frontier if frontier is not None else pd.DataFrame(),
        no_alignment=pd.DataFrame(no_align_rows),
    )


def _response(formula: str, columns: Iterable[str]) -> str | None:
    """The analysis model's response if it is a column (the default target of attribute disclosure)."""
    lhs = formula.split("~", 1)[0].strip()
    return lhs if lhs in set(columns) else None


def _no_alignment_row(method: str, original: pd.DataFrame, copies: list[pd.DataFrame], qi: Sequence[str],
                      target: str | None, holdout: pd.DataFrame | None, tolerance: Any, threshold: float) -> dict[str, Any]:
    """Distance to closest record vs its baseline, replicated uniques and DiSCO of one fully synthetic release."""
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
        ad = attribute_disclosure(original, copies, qi, target, threshold=threshold, **kw).figures
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


def _references(original, qi, formula, family, rule, alpha, tolerance, threshold, pmse_method, pmse_variables,
                target, m, seed) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Summary (and attribute) rows of the original released as is and of an independent release."""
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
                     **_attr_row(attribute_disclosure(original, [original], qi, target, threshold=threshold, **kw).figures)})
    rng = np.random.default_rng(seed)
    copies = []
    for _ in range(max(int(m), 2)):
        c = original.copy()
        for q in qi:
            vals = original[q].to_numpy()[rng.permutation(len(original))]
            c[q] = pd.Categorical(vals, categories=original[q].cat.categories, ordered=original[q].cat.ordered) \
                if isinstance(original[q].dtype, pd.CategoricalDtype) else vals
        copies.append(c)
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
                     **_attr_row(attribute_disclosure(original, copies, qi, target, threshold=threshold, **kw).figures)})
    return rows, attr
