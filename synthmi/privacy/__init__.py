"""Differential privacy: exact discrete noise, mechanisms, the privacy accountant,
private Beta-posterior inference with its exact audit, DP k-means, DPSyn, and an
empirical lower bound on epsilon for these releases (:mod:`.empirical_audit`).

Stands beside :mod:`synthmi.models`: DPSyn is a synthesizer that lives with its
mechanisms.
"""
from .accountant import PrivacyAccountant, dpsyn_sigma, rdp_to_dp_improved, rdp_to_dp_simple
from .audit import AuditResult, audit_privacy_loss
from .discrete import sample_discrete_gaussian, sample_discrete_laplace
from .dp_bayes import PrivateBetaPosterior, PrivatePosteriorResult
from .dpsyn import DPSynSynthesizer
from .empirical_audit import EmpiricalAuditResult, empirical_privacy_audit, epsilon_lower_bound
from .hellinger import hellinger_beta
from .kmeans import DPKMeans
from .mechanisms import (
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    exponential_mechanism,
)

__all__ = [
    "AuditResult",
    "DPKMeans",
    "DPSynSynthesizer",
    "DiscreteLaplaceMechanism",
    "EmpiricalAuditResult",
    "ExponentialMechanism",
    "GaussianMechanism",
    "LaplaceMechanism",
    "PrivacyAccountant",
    "PrivateBetaPosterior",
    "PrivatePosteriorResult",
    "RandomizedResponse",
    "audit_privacy_loss",
    "dpsyn_sigma",
    "empirical_privacy_audit",
    "epsilon_lower_bound",
    "exponential_mechanism",
    "hellinger_beta",
    "rdp_to_dp_improved",
    "rdp_to_dp_simple",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]
