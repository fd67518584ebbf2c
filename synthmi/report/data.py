"""What the disclosure review report shows: aggregates only, and their readings.

:class:`ReportData` is filled by :func:`synthmi.workflow.evaluate_release` (the
one step that reads the original) and rendered by :mod:`synthmi.report.html`;
nothing here runs a measure or fits a model. It holds coefficient tables,
S_pMSE values, risk summaries, risk values I_i (probabilities, not data
values) and provenance (package versions, seeds, SHA-256 hashes of the
inputs). No row or cell value of the original is stored, so a ``ReportData``
can be rendered and shared.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ReportData", "SUBGROUP_ORDER", "pmse_reading"]

#: the risk subgroups in the order the report lists them
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
        :func:`synthmi.workflow.tuning.frontier`), plus the releases and references.
    no_alignment : DataFrame
        Per fully synthetic release (rule ``full`` or copies of another row count):
        risk measures that need no row alignment -- distance to closest record
        against a holdout (or leave-one-out) baseline, replicated uniques (repU) and
        DiSCO of the target (:mod:`synthmi.evaluation.dcr`,
        :func:`synthmi.evaluation.attribute_disclosure`).
    attack_risks : DataFrame
        One row per release and per reference release (``method``), one column per attack
        measure (``distance_auc``, ``domias_tpr_at_fpr_0.01``, ...) with ``_ci_low`` /
        ``_ci_high`` (95%); empty without a holdout. Further attacks are further columns.
    attack_notes : dict
        Attack -> what the intruder is assumed to know (plain language).
    battery : DataFrame
        Per release and criterion of the battery (:mod:`synthmi.evaluation.battery`:
        the declared and generic analyses' CI overlap, every one- and two-way
        table's S_pMSE, the overall S_pMSE): ``method``, ``criterion``, ``name``,
        ``measure``, ``value``. Aggregates only.
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
    attack_risks: pd.DataFrame = field(default_factory=pd.DataFrame)
    attack_notes: dict[str, str] = field(default_factory=dict)
    battery: pd.DataFrame = field(default_factory=pd.DataFrame)


#: S_pMSE under the null is about chi2_k / k (Snoke et al. 2018), sd sqrt(2 / k); values
#: more than this many null sds away from 1 are flagged in the report.
PMSE_FLAG_SDS = 3.0


def pmse_reading(s_pmse: float, k: float | None,
                 worst_table: tuple[str, float, float] | None = None) -> tuple[str, bool]:
    """Plain-language reading of an S_pMSE and whether it is flagged.

    Below ``1 - 3 sd`` the copies are closer to the original than a draw from
    a fitted model would be (little was changed: a disclosure concern); above
    ``1 + 3 sd`` the propensity model tells them apart (a utility concern).
    ``sd = sqrt(2 / k)`` with k the propensity model's parameters; without k
    the band is 0.5 to 2.

    ``worst_table`` = (table, its S_pMSE, the bound it exceeds) when the
    release's worst one- or two-way table breaks the table rule of ``tune``
    (:func:`synthmi.evaluation.battery.table_feasible`, decided by
    :func:`synthmi.workflow.evaluate_release`): the reading then names that
    table and is flagged, whatever the overall S_pMSE says. A logit propensity
    model on all columns can miss a margin the copies get badly wrong (a
    kernel-smoothed column whose one-way table S_pMSE is 21.8 beside an overall
    S_pMSE inside the band), so the overall figure alone never reads
    "consistent" over a failed table.
    """
    if worst_table is not None:
        name, value, bound = worst_table
        overall = "" if s_pmse is None or not np.isfinite(s_pmse) else f"; overall S_pMSE {s_pmse:.3g}"
        return (f"the {name} has S_pMSE {value:.3g}, far above 1 (> {bound:g}, the table rule of 'synthmi tune'): "
                f"the copies miss that table{overall}"), True
    if s_pmse is None or not np.isfinite(s_pmse):
        return "not computed", False
    sd = np.sqrt(2.0 / k) if k else None
    lo, hi = (1 - PMSE_FLAG_SDS * sd, 1 + PMSE_FLAG_SDS * sd) if sd else (0.5, 2.0)
    if s_pmse < lo:
        return f"far below 1 (< {lo:.2f}): copies nearly identical to the original", True
    if s_pmse > hi:
        return f"far above 1 (> {hi:.2f}): copies differ from the original in ways the propensity model detects", True
    return f"within {lo:.2f} to {hi:.2f}: consistent with copies drawn from a fitted model", False
