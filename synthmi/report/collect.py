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
from ..synthetic import SyntheticData, package_versions

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
    """

    summary: pd.DataFrame
    per_variable: pd.DataFrame
    coefficients: pd.DataFrame
    risk_by_subgroup: pd.DataFrame
    individual_risk: dict[str, np.ndarray]
    subgroup_labels: list[str] | None
    settings: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)


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
        ``rule`` may map a release label to its rule; None (default): the rule
        each SyntheticData recorded (``partial`` for bare lists of copies).
        The analyst's model (see :func:`synthmi.evaluation.analyse`).
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

    from tqdm.auto import tqdm

    sub_kw = {} if tolerance is None else {"tolerance": tolerance}
    subgroups = risk_subgroups(original, qi, k0=k0, **sub_kw)
    labels_series = pd.Series(subgroups.labels, index=original.index).astype(str)
    labels = labels_series.to_numpy()

    summary_rows, coef_frames, per_var, risk_rows, individual = [], [], {}, [], {}
    rules: dict[str, str] = {}
    meta: dict[str, Any] = {}
    steps = tqdm(total=4 * len(synthetic), desc="evaluating", unit="step", disable=not progress, leave=False)
    for method, obj in synthetic.items():
        copies = _copies(obj)
        steps.set_postfix_str(f"{method}: pMSE")
        pm = pmse(original, copies, method=pmse_method, variables=pmse_variables, spec=spec)
        ut = utility_tables(original, copies, variables=pmse_variables, ways=(1,), spec=spec)
        # kept columns are released unchanged (S_pMSE 0): show the synthesized ones
        per_var[method] = ut.set_index("variables")["s_pmse"].reindex([v for v in pmse_variables if v in qi])
        steps.update()
        steps.set_postfix_str(f"{method}: analysis")
        rule_m = rule.get(method) if isinstance(rule, Mapping) else rule
        rules[method] = rule_m = rule_m or getattr(obj, "rule", None) or "partial"
        res = analyse(formula, family=family, original=original, synthetic=obj if hasattr(obj, "structure") else copies,
                      rule=rule_m, alpha=alpha, spec=spec)
        frame = res.to_frame()
        frame = frame.reset_index().rename(columns={frame.index.name or "index": "term"})
        frame.insert(0, "method", method)
        coef_frames.append(frame)
        steps.update()
        steps.set_postfix_str(f"{method}: risk")
        risk = reidentification_risk(original, copies, qi, threshold=risk_threshold, by=labels_series, spec=spec, **sub_kw)
        I = np.asarray(risk.individual, dtype=float)
        individual[method] = I
        risk_rows += _risk_by_subgroup(method, risk.by_group)
        steps.update()
        rs = risk.summary
        summary_rows.append({
            "method": method,
            "M": len(copies),
            "S_pMSE": pm.mean_s_pmse,
            "mean_ci_overlap": float(res.mean_ci_overlap),
            "mean_std_diff": float(res.mean_std_diff),
            "expected_matches": float(rs["expected_matches"]),
            "true_match_rate": float(rs["true_match_rate"]),
            "share_above_threshold": float(rs["share_above_threshold"]),
        })
        if isinstance(obj, SyntheticData):
            meta[method] = {"method": obj.method, "params": obj.metadata()["params"], "seed": obj.seed,
                            "quasi_identifiers": obj.quasi_identifiers, "versions_at_synthesis": obj.versions,
                            "diagnostics": obj.metadata()["diagnostics"]}
        else:
            meta[method] = {"copies": len(copies)}
        meta[method]["copies_sha256"] = [frame_sha256(c) for c in copies]
        steps.update()
    steps.close()

    per_variable = pd.DataFrame(per_var)
    per_variable.index.name = "variable"
    counts = {g: int((labels == g).sum()) for g in SUBGROUP_ORDER}
    settings = {
        "original": original_label,
        "n_records": int(len(original)),
        "quasi_identifiers": qi,
        "formula": formula,
        "family": family,
        "rule": next(iter(set(rules.values()))) if len(set(rules.values())) == 1 else rules,
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
        settings=settings,
        provenance=provenance,
    )
