"""Synthesizers: ``fit(df, quasi_identifiers=...)`` then ``sample(m, random_state=...)``."""
from .base import Synthesizer
from .cart import CartSynthesizer
from .copula import GaussianCopula, GaussianCopulaImputer
from .dami import DAMISynthesizer
from .masking import LinearCategoricalMasking, NormalMasking, TransitionMasking
from .persist import load as load_synthesizer
from .persist import load_posterior
from .persist import save as save_synthesizer
from .risk_targeted import RiskTargetedSynthesizer
from .rubin import RubinSynthesizer

__all__ = [
    "Synthesizer",
    "CartSynthesizer",
    "RubinSynthesizer",
    "DAMISynthesizer",
    "NormalMasking",
    "LinearCategoricalMasking",
    "TransitionMasking",
    "GaussianCopulaImputer",
    "GaussianCopula",
    "RiskTargetedSynthesizer",
    "save_synthesizer",
    "load_synthesizer",
    "load_posterior",
]
