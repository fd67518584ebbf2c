"""The report's sampler-diagnostics flags read a release's final figures, not the history of its checks.

A new-user review (2026-11-28) found a risk-dami release that passed its release check (max R-hat 1.011,
min ESS 138 over the final draws) reported as "sampler diagnostics failed (max r_hat 1.161 > 1.05; min
ESS 11 < 100)": the copula's n_iter='auto' records every intermediate check in
``diagnostics["sampling"]["checks"]``, and the flags took the first (after 1,000 iterations) as the result.
"""
from __future__ import annotations

from synthmi.workflow.evaluate import DIAGNOSTIC_LIMITS, _diag_flags


def _copula_like(final_rhat: float, final_ess: float) -> dict:
    # the shape of GaussianCopulaImputer's diagnostics after a continued run (metadata.json of the review's
    # release): final figures at the top and per quantity, the intermediate checks under sampling.checks
    return {
        "max_r_hat": final_rhat, "min_ess": final_ess, "min_ess_bulk": final_ess,
        "table": {"occupation": {"r_hat": final_rhat, "ess_bulk": final_ess},
                  "age": {"r_hat": 1.003, "ess_bulk": 1521.9}},
        "sampling": {"n_iter": "auto", "n_iter_run": 18972, "segments": [1000, 4000, 13972],
                     "checks": [{"n_iter": 1000, "max_r_hat": 1.1608, "min_ess_bulk": 10.79},
                                {"n_iter": 5000, "max_r_hat": 1.0198, "min_ess_bulk": 75.5},
                                {"n_iter": 18972, "max_r_hat": final_rhat, "min_ess_bulk": final_ess}]},
    }


def test_intermediate_checks_of_a_continued_run_are_not_the_release_figures():
    flags = _diag_flags(_copula_like(1.0114, 138.16))
    assert flags["failures"] == []
    assert flags["max_r_hat"] == 1.0114 and flags["min_ess_bulk"] == 138.16


def test_final_figures_beyond_the_limits_are_still_flagged():
    bad_rhat = DIAGNOSTIC_LIMITS["max_r_hat"] + 0.02
    bad_ess = DIAGNOSTIC_LIMITS["min_ess_bulk"] - 20
    flags = _diag_flags(_copula_like(bad_rhat, bad_ess))
    assert flags["max_r_hat"] == bad_rhat and flags["min_ess_bulk"] == bad_ess
    assert len(flags["failures"]) == 2
    # a failure anywhere else in the final figures (another model's column) is found as before
    flags = _diag_flags({"columns": {"race": {"r_hat": 1.2, "ess_bulk": 50.0}}, "sampling": {"checks": []}})
    assert flags["max_r_hat"] == 1.2 and len(flags["failures"]) == 2
