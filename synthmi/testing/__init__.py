"""Test kit shipped with the package: the synthesizer contract battery
(:func:`check_synthesizer`) and the DP neighbour check it uses (:mod:`.neighbour`).

A new synthesizer gets the whole contract with one call, as scikit-learn's
``check_estimator`` gives an estimator::

    from synthmi.testing import check_synthesizer
    check_synthesizer(MySynthesizer(n_iter=50))   # raises naming each failed check

Layer: orchestration (above the models and privacy modules it exercises); imported by
tests only, never by the library.
"""
from .checks import (
    CHECKS,
    CheckReport,
    CheckResult,
    SynthesizerCheckFailed,
    check_synthesizer,
    contract_data,
    contract_fit_params,
)

__all__ = ["CHECKS", "CheckReport", "CheckResult", "SynthesizerCheckFailed", "check_synthesizer",
           "contract_data", "contract_fit_params"]
