"""synthmi.privacy."""

# DP core (issue 6): samplers, accountant, mechanisms, private Beta-posterior inference, audit.
from .accountant import PrivacyAccountant, dpsyn_sigma, rdp_to_dp_improved, rdp_to_dp_simple  # noqa: E402
from .audit import AuditResult, audit_privacy_loss  # noqa: E402
from .discrete import sample_discrete_gaussian, sample_discrete_laplace  # noqa: E402
from .dpsyn import DPSynSynthesizer  # noqa: E402
from .dp_bayes import PrivateBetaPosterior, PrivatePosteriorResult  # noqa: E402
from .hellinger import hellinger_beta  # noqa: E402
from .kmeans import DPKMeans  # noqa: E402
from .mechanisms import (  # noqa: E402
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    exponential_mechanism,
)
