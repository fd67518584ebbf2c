"""Synthesizers: ``fit(df, quasi_identifiers=...)`` then ``sample(m, random_state=...)``.

The names below are imported on first use (PEP 562): ``import synthmi.models.cart`` loads
the CART synthesizer without the copula (numba) or PyMC, so a command line that fails
validation answers before any heavy import (issue 30).
"""
from __future__ import annotations

import importlib

#: public name -> (module, attribute)
_LAZY = {
    "Synthesizer": ("base", "Synthesizer"),
    "CartSynthesizer": ("cart", "CartSynthesizer"),
    "RubinSynthesizer": ("rubin", "RubinSynthesizer"),
    "DAMISynthesizer": ("dami", "DAMISynthesizer"),
    "NormalMasking": ("masking", "NormalMasking"),
    "LinearCategoricalMasking": ("masking", "LinearCategoricalMasking"),
    "TransitionMasking": ("masking", "TransitionMasking"),
    "GaussianCopulaImputer": ("copula", "GaussianCopulaImputer"),
    "GaussianCopula": ("copula", "GaussianCopula"),
    "RiskTargetedSynthesizer": ("risk_targeted", "RiskTargetedSynthesizer"),
    "save_synthesizer": ("persist", "save"),
    "load_synthesizer": ("persist", "load"),
    "load_posterior": ("persist", "load_posterior"),
}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
