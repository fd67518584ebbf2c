"""Evaluation: utility, disclosure risk, combining rules, coherence.

Reads DataFrames only — it never imports ``synthmi.models`` — so it can judge
copies made by any tool (synthpop, SDV, ...). Identity risk, risk subgroups,
attribute disclosure, the utility tables and pMSE take pandas or Dask frames:
each is written once against :mod:`synthmi.engine` (a pandas frame is the
one-partition case) and never imports Dask itself.
"""
from .analysis import AnalysisResults, analyse
from .attribute_disclosure import AttributeDisclosureResult, attribute_disclosure
from .ci_overlap import ci_overlap
from ._attack import AttackResult
from .coherence import CoherenceResult, demographic_coherence, wasserstein_1
from .combining import CombineResult, combine
from .membership import MembershipResult, membership_inference
from .inference_risk import inference_risk
from .linkability import linkability_risk
from .marginals import MarginalTVDResult, marginal_tvd, total_variation
from .pmse import PMSEResult, UtilityTablesResult, pmse, utility_tables
from .risk import RiskResult, reidentification_risk
from .singling_out import singling_out_risk
from .standardized_difference import standardized_difference
from .subgroups import RiskSubgroups, risk_subgroups

__all__ = [
    "AnalysisResults",
    "analyse",
    "AttributeDisclosureResult",
    "attribute_disclosure",
    "ci_overlap",
    "CombineResult",
    "combine",
    "PMSEResult",
    "pmse",
    "utility_tables",
    "UtilityTablesResult",
    "standardized_difference",
    "MembershipResult",
    "membership_inference",
    "RiskResult",
    "reidentification_risk",
    "RiskSubgroups",
    "risk_subgroups",
    "AttackResult",
    "singling_out_risk",
    "linkability_risk",
    "inference_risk",
    "CoherenceResult",
    "demographic_coherence",
    "wasserstein_1",
    "MarginalTVDResult",
    "marginal_tvd",
    "total_variation",
]
