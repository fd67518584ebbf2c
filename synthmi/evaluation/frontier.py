"""The risk-utility frontier (R-U confidentiality map) of candidate releases.

Duncan, Keller-McNulty and Stokes (2001, "Disclosure risk vs. data utility:
the R-U confidentiality map") plot each candidate release of a data set as a
point (R, U): disclosure risk against data utility. A release is worth
considering only if no other candidate has at least its utility at no more
risk on every risk measure, i.e. if it lies on the non-dominated frontier.

This module evaluates releases that have already been made (lists of copies)
and never imports :mod:`synthmi.models` (data flow is one way); the driver
that fits synthesizers across tuning settings is :mod:`synthmi.workflow.tuning`.

Measures of one release of M copies (:func:`evaluate_release`):

utility
    ``mean_ci_overlap``: mean over the coefficients (intercepts excluded) of
    every declared analysis of the CI overlap of Karr et al. (2006) between
    the original's interval and the combined synthetic one
    (:func:`~synthmi.evaluation.analyse`, combining rule ``rule``);
    ``mean_std_diff``; ``s_pmse``: the logit S_pMSE (Snoke et al. 2018,
    :func:`~synthmi.evaluation.pmse`) averaged over the first
    ``pmse_copies`` copies. S_pMSE near 1 is the null of a copy drawn from the
    correct model; far below 1 means the copies are nearly the original
    (a near-copy is not more *useful*, it is riskier), far above 1 that they
    miss structure. So S_pMSE is not a lower-is-better utility: as a utility
    it is read as its distance from 1 on the log scale,
    ``s_pmse_log_distance`` :math:`= |\\log S_{pMSE}|` (0 is best; 0.5 and 2
    are equally far), and :func:`pareto_front` ranks ``utility="s_pmse"`` by
    that distance.
identity risk
    :func:`~synthmi.evaluation.reidentification_risk`: ``expected_matches``
    (sum of I_i), ``true_match_rate``, ``share_above_threshold``,
    ``mean_risk``, and ``high_risk_mean_risk`` (mean I_i in the "high"
    risk subgroup when ``subgroups`` are given).
attribute risk
    :func:`~synthmi.evaluation.attribute_disclosure` of ``target``:
    ``disco``, ``dcap``, ``attribute_risk_mean``, ``repU``.
battery
    with a :class:`~synthmi.evaluation.battery.Battery` (``battery=``), its
    figures (:func:`~synthmi.evaluation.battery.measure_battery`):
    ``battery_ci_overlap`` (mean over the declared and generic analyses),
    ``declared_ci_overlap``, ``generic_ci_overlap``, ``worst_one_way_s_pmse``,
    ``worst_two_way_s_pmse``, ``overall_s_pmse`` (then also ``s_pmse``), and
    ``table_feasible`` (1.0 when the worst table S_pMSE is within
    ``max_table_s_pmse``, else 0.0).
masking
    ``unchanged_<qi>``: share of records whose released QI equals the
    original (row-aligned copies; NaN otherwise).

Monte Carlo error: a setting is synthesized ``R`` times with independent
seeds; :func:`summarise` reports the mean over replicates and its standard
error ``sd / sqrt(R)`` for every measure.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .._validate import param_error
from ..results import Result
from .analysis import analyse
from .attribute_disclosure import attribute_disclosure
from .battery import DEFAULT_MAX_TABLE_S_PMSE, Battery, measure_battery, table_feasible
from .pmse import pmse
from .risk import reidentification_risk
from ..errors import InputError

__all__ = [
    "Analysis",
    "evaluate_release",
    "summarise",
    "pareto_front",
    "s_pmse_log_distance",
    "RISK_MEASURES",
    "UTILITY_MEASURES",
    "HIGHER_IS_BETTER",
]

#: Risk measures (lower is safer) a frontier or a tuning target may use.
RISK_MEASURES = (
    "expected_matches", "true_match_rate", "share_above_threshold", "mean_risk", "high_risk_mean_risk",
    "disco", "dcap", "attribute_risk_mean", "repU",
)
#: Utility measures; ``mean_ci_overlap`` is higher-is-better, the others lower, except
#: ``s_pmse``, whose best value is 1 (ranked by ``s_pmse_log_distance`` = |log S_pMSE|).
UTILITY_MEASURES = ("mean_ci_overlap", "mean_std_diff", "s_pmse", "s_pmse_log_distance", "battery_ci_overlap",
                    "declared_ci_overlap", "generic_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse",
                    "overall_s_pmse")
HIGHER_IS_BETTER = {"mean_ci_overlap", "battery_ci_overlap", "declared_ci_overlap", "generic_ci_overlap"}


def s_pmse_log_distance(s_pmse: Any) -> Any:
    r"""Distance of S_pMSE from its null value 1, :math:`|\log S_{pMSE}|` (NaN for S_pMSE <= 0 or NaN).

    S_pMSE = 1 is what copies drawn from the correct model give (Snoke et al.
    2018, Section 3); below 1 the copies are closer to the original than such
    draws (near-copies, a disclosure risk), above 1 they miss structure. The
    log makes a ratio below 1 count as much as its reciprocal above 1.
    """
    v = np.asarray(s_pmse, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(v > 0, np.abs(np.log(np.where(v > 0, v, 1.0))), np.nan)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class Analysis:
    """One declared analysis: ``formula`` and GLM ``family`` (as in :func:`analyse`)."""

    formula: str
    family: str = "probit"

    @classmethod
    def coerce(cls, a: Any) -> "Analysis":
        if isinstance(a, Analysis):
            return a
        if isinstance(a, str):
            return cls(a)
        if isinstance(a, Mapping) and "formula" in a:
            return cls(str(a["formula"]), str(a.get("family", "probit")))
        if isinstance(a, (tuple, list)) and len(a) == 2:
            return cls(str(a[0]), str(a[1]))
        raise param_error("analyses", "evaluate_release", "formulas, (formula, family) pairs or dicts", a)


def _unchanged(original: pd.DataFrame, copies: list[pd.DataFrame], qis: Sequence[str]) -> dict[str, float]:
    out = {}
    for c in qis:
        shares = []
        for cp in copies:
            if len(cp) != len(original):
                shares = []
                break
            a = original[c].to_numpy(dtype=object)
            b = cp[c].to_numpy(dtype=object)
            same = (a == b) | (pd.isna(original[c]).to_numpy() & pd.isna(cp[c]).to_numpy())
            shares.append(float(np.mean(same)))
        out[f"unchanged_{c}"] = float(np.mean(shares)) if shares else np.nan
    return out


def evaluate_release(
    original: pd.DataFrame,
    copies: Any,
    analyses: Iterable[Any],
    quasi_identifiers: Sequence[str],
    tolerance: Any = None,
    target: str | None = None,
    subgroups: Any = None,
    rule: str | None = None,
    threshold: float = 0.5,
    pmse_copies: int = 1,
    pmse_variables: Sequence[str] | None = None,
    battery: Battery | None = None,
    max_table_s_pmse: float = DEFAULT_MAX_TABLE_S_PMSE,
    spec: Any = None,
) -> dict[str, float]:
    """Utility and risk of one release (M copies); see the module docstring.

    Parameters
    ----------
    original : DataFrame
    copies : list of DataFrame or SyntheticData
    analyses : iterable
        Formulas (probit), ``(formula, family)`` pairs, dicts or :class:`Analysis`.
    quasi_identifiers : list of str
    tolerance : None, number or dict
        Intruder's closeness on continuous QIs (:func:`reidentification_risk`).
    target : str, optional
        Sensitive column for attribute disclosure (skipped if None).
    subgroups : Series, optional
        Risk-subgroup labels aligned with ``original`` (``high_risk_mean_risk``).
    rule : str or None
        Combining rule for the analyses (``"partial"`` for partially synthetic
        copies; ``"nested"`` / ``"rubin"`` as the release requires). ``None``: the
        rule the release recorded (``full`` for DPSyn), else ``"partial"``.
    pmse_copies : int, default 1
        Copies whose S_pMSE is averaged (0 skips S_pMSE, which costs about a
        second per copy on Adult).
    pmse_variables : list of str, optional
        Columns of the propensity model (default: all; with a ``battery``, its columns).
    battery : Battery, optional
        Also measure the battery (:mod:`synthmi.evaluation.battery`); ``s_pmse`` and
        the battery's ``overall_s_pmse`` are then one propensity fit, on the battery's
        columns, or on ``pmse_variables`` when given (the full model costs ~10x more on Adult).
    max_table_s_pmse : float
        The table-feasibility bound (``table_feasible``).
    spec : ReleaseSpec, dict or path, optional
        The analyses are fitted with the spec's column kinds (:func:`synthmi.spec.spec_frames`), as
        ``synthmi analyse`` fits them on a release: a numeric code declared categorical is a factor.

    Returns
    -------
    dict
        One float per measure (NaN where not computed).
    """
    from .._validate import check_copies

    if rule is None:
        rule = getattr(copies, "rule", None) or (getattr(copies, "structure", None) or {}).get("rule") or "partial"
    copies = check_copies(copies, "copies")
    analyses = [Analysis.coerce(a) for a in analyses]
    out: dict[str, float] = {"M": float(len(copies))}
    overlaps, stds = [], []
    for a in analyses:
        # with the spec's kinds, as 'synthmi analyse' fits it (a code declared categorical is a factor there)
        f = analyse(a.formula, family=a.family, original=original, synthetic=copies, rule=rule, spec=spec).to_frame()
        # terms not estimable from a copy (a level absent from it) are left out, as in analyse's means
        keep = [t for t in f.index if t != "Intercept" and bool(f.loc[t].get("estimable", True))]
        f = f.loc[keep]
        overlaps += list(f["ci_overlap"])
        stds += list(f["std_diff"])
    out["mean_ci_overlap"] = float(np.mean(overlaps)) if overlaps else np.nan
    out["mean_std_diff"] = float(np.mean(stds)) if stds else np.nan
    # one propensity fit: the battery's overall S_pMSE (its columns) unless pmse_variables narrow it
    own_pmse = pmse_copies > 0 and (battery is None or pmse_variables is not None)
    if battery is not None:
        out.update(measure_battery(original, copies, battery, rule=rule, pmse_copies=0 if own_pmse else pmse_copies))
        out["table_feasible"] = float(table_feasible(out, max_table_s_pmse))
        out["s_pmse"] = out["overall_s_pmse"]
    if own_pmse:
        vars_ = list(pmse_variables) if pmse_variables is not None else None
        res = pmse(original, copies[: int(pmse_copies)], method="logit", variables=vars_)
        out["s_pmse"] = float(res.mean_s_pmse)
        if battery is not None:
            out["overall_s_pmse"] = out["s_pmse"]
    elif battery is None:
        out["s_pmse"] = np.nan
    out["s_pmse_log_distance"] = s_pmse_log_distance(out["s_pmse"])
    rr = reidentification_risk(original, copies, list(quasi_identifiers), tolerance=tolerance, threshold=threshold,
                               by=subgroups)
    s = rr.figures
    for k in ("expected_matches", "true_match_rate", "share_above_threshold", "mean_risk"):
        out[k] = float(s[k])
    out["high_risk_mean_risk"] = (
        float(rr.by_group.loc["high", "mean_risk"])
        if rr.by_group is not None and "high" in rr.by_group.index else np.nan
    )
    if target is not None:
        ad = attribute_disclosure(original, copies, list(quasi_identifiers), target, tolerance=tolerance,
                                  threshold=threshold).figures
        out["disco"] = float(ad["DiSCO"])
        out["dcap"] = float(ad["DCAP"])
        out["attribute_risk_mean"] = float(ad["attribute_risk_mean"])
        out["repU"] = float(ad["repU"])
    else:
        out.update({"disco": np.nan, "dcap": np.nan, "attribute_risk_mean": np.nan, "repU": np.nan})
    out.update(_unchanged(original, copies, quasi_identifiers))
    return out


def summarise(replicates: pd.DataFrame, by: Sequence[str] = ("method", "setting")) -> pd.DataFrame:
    """Mean and Monte Carlo standard error over replicates.

    ``replicates`` has one row per (setting, replicate) with numeric measure
    columns; returns one row per ``by`` group with ``<measure>`` (mean),
    ``<measure>_se`` (sd / sqrt(R), NaN for R = 1) and ``replicates`` (R).
    Non-numeric columns other than ``by`` keep their first value.
    """
    by = list(by)
    num = [c for c in replicates.columns if c not in by and c != "replicate"
           and pd.api.types.is_numeric_dtype(replicates[c])]
    other = [c for c in replicates.columns if c not in by and c not in num and c != "replicate"]
    g = replicates.groupby(by, sort=False, dropna=False)
    mean = g[num].mean()
    n = g.size()
    se = g[num].std(ddof=1).div(np.sqrt(n), axis=0)
    se.columns = [f"{c}_se" for c in se.columns]
    parts = [mean, se]
    if other:
        parts.insert(0, g[other].first())
    out = pd.concat(parts, axis=1)
    out["replicates"] = n
    cols = other + [x for c in num for x in (c, f"{c}_se")] + ["replicates"]
    return out[cols].reset_index()


def pareto_front(points: pd.DataFrame, risks: Sequence[str], utility: str = "mean_ci_overlap") -> pd.Series:
    """Boolean Series: is each point non-dominated?

    Point a dominates b when a's utility is at least b's and each of a's
    ``risks`` is at most b's, with at least one strict inequality
    (``utility`` is maximised if in :data:`HIGHER_IS_BETTER`, else
    minimised; ``"s_pmse"`` is ranked by its distance from 1,
    :func:`s_pmse_log_distance`, so copies nearly identical to the original
    (S_pMSE far below 1) are not rewarded). Rows with a missing value in a
    used column are never on the front. O(P^2) in the number of points P (a
    frontier has tens to hundreds).
    """
    cols = [utility, *risks]
    missing = [c for c in cols if c not in points.columns]
    if missing:
        raise param_error("risks", "pareto_front", f"columns of the points table {list(points.columns)}", missing)
    sign = np.array([-1.0 if utility in HIGHER_IS_BETTER else 1.0] + [1.0] * len(risks))
    V = points[cols].to_numpy(dtype=float) * sign  # every column now lower-is-better
    if utility == "s_pmse":
        V[:, 0] = s_pmse_log_distance(V[:, 0])
    ok = np.isfinite(V).all(axis=1)
    front = ok.copy()
    for i in np.flatnonzero(ok):
        le = (V[ok] <= V[i]).all(axis=1)
        lt = (V[ok] < V[i]).any(axis=1)
        if (le & lt).any():
            front[i] = False
    return pd.Series(front, index=points.index, name="on_front")


@dataclass
class Target:
    """A tuning constraint ``measure <= value`` (or ``>=`` for utilities)."""

    measure: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> "Target":
        t = text.replace(" ", "")
        for op in ("<=", ">="):
            if op in t:
                name, val = t.split(op, 1)
                from .targets import HOLDOUT_MEASURES  # measures that need a holdout (one table to extend)

                known = RISK_MEASURES + UTILITY_MEASURES + tuple(HOLDOUT_MEASURES)
                if name not in known:
                    raise InputError(
                        f"The target {text!r} names an unknown measure {name!r}; use one of {list(known)}."
                    )
                try:
                    v = float(val)
                except ValueError:
                    raise InputError(f"The target {text!r} must end in a number. Got {val!r} instead.") from None
                return cls(name, op, v)
        raise InputError(f"A target reads MEASURE<=VALUE or MEASURE>=VALUE, e.g. 'expected_matches<=50'. Got {text!r}.")

    def met(self, row: Mapping[str, Any], se_mult: float = 0.0) -> bool:
        """Whether ``row`` meets the target; with ``se_mult`` > 0 the mean plus
        (for <=) that many standard errors must meet it."""
        v = float(row.get(self.measure, np.nan))
        se = float(row.get(f"{self.measure}_se", 0.0) or 0.0)
        if not np.isfinite(v):
            return False
        se = se if np.isfinite(se) else 0.0
        return v + se_mult * se <= self.value if self.op == "<=" else v - se_mult * se >= self.value

    def __str__(self) -> str:
        return f"{self.measure}{self.op}{self.value:g}"


__all__ += ["Target"]


@dataclass
class FrontierResult(Result):
    """Replicates and summaries of a frontier run (see :func:`synthmi.workflow.tuning.frontier`).

    :meth:`summary` and :meth:`to_frame` show ``points`` (one row per method and
    setting: mean and standard error of each measure over the replicates)."""

    replicates: pd.DataFrame
    points: pd.DataFrame
    references: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def front(self, risks: Sequence[str] = ("expected_matches", "true_match_rate"),
              utility: str = "mean_ci_overlap") -> pd.DataFrame:
        mask = pareto_front(self.points, risks, utility)
        return self.points[mask.to_numpy()]

    _summary_title = "Risk-utility frontier"

    def _summary_rows(self) -> pd.DataFrame:
        return self.points

    def _dict_extra(self) -> dict[str, Any]:
        return {"references": self.references, "settings": self.settings}


__all__ += ["FrontierResult"]
