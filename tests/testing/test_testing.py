"""synthmi.testing: the contract battery passes a correct toy synthesizer and FAILS a
deliberately broken one with the check that names the broken promise (a battery that
cannot fail proves nothing). The shipped synthesizers run it in tests/testing/test_common.py.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.models.base import Synthesizer
from synthmi.privacy import DPSynSynthesizer
from synthmi.testing import CHECKS, SynthesizerCheckFailed, check_synthesizer


class _Permute(Synthesizer):
    """A correct toy: each copy is the quasi-identifier rows in a random order (a record's
    key is some other record's: agreement with the original at chance level)."""

    method = "permute-test"
    _parameter_constraints = {"scale": [float, int]}
    _confidential_attributes = ("X_",)

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def _fit(self, X, Z):
        self.X_ = X.reset_index(drop=True)

    def _needs_records_to_sample(self):
        return True

    def _sample(self, m, rng):
        return [self.X_.iloc[rng.permutation(len(self.X_))].reset_index(drop=True) for _ in range(m)]


class _ReturnsOriginal(_Permute):
    def _sample(self, m, rng):
        return [self.X_.copy() for _ in range(m)]


class _ReturnsOriginalPastTheGuard(_ReturnsOriginal):
    """Switches the package's release guard off: the battery must see the original itself."""

    def sample(self, m=1, random_state=None, *, allow_unmodified=False):
        return super().sample(m, random_state, allow_unmodified=True)


class _MutatesInput(_Permute):
    def fit(self, df, *args, **kwargs):
        if isinstance(df, pd.DataFrame):
            df.loc[df.index[0], "z"] = 0.0  # "cleans" the caller's frame in place
        return super().fit(df, *args, **kwargs)


class _IgnoresSeed(_Permute):
    def _sample(self, m, rng):
        fresh = np.random.default_rng()  # operating-system entropy, whatever the caller's seed
        return [self.X_.iloc[fresh.permutation(len(self.X_))].reset_index(drop=True) for _ in range(m)]


class _ConvertsParameter(_Permute):
    def __init__(self, scale: float = 1):
        self.scale = float(scale)  # scikit-learn: store, never convert, in __init__


class _LeaksCount(DPSynSynthesizer):
    """A DP synthesizer that publishes its private row count with the release."""

    def fit(self, df, *args, **kwargs):
        super().fit(df, *args, **kwargs)
        self.n_rows_ = len(df)
        return self

    def _published_params(self):
        return {**super()._published_params(), "n_rows": self.n_rows_}


def _failed(synth, **kw) -> dict[str, str]:
    report = check_synthesizer(synth, raise_on_failure=False, **kw)
    return {r.name: r.message for r in report.failed}


def test_a_correct_synthesizer_passes_every_check():
    report = check_synthesizer(_Permute())
    assert report.passed
    # not applicable (with the reason) is not a silent pass: only the DP check is
    assert {r.name: r.status for r in report.results if r.status != "passed"} == {
        "check_dp_neighbour": "not applicable"}
    assert list(CHECKS) == [r.name for r in report.results]


def test_returning_the_original_fails_the_release_guard_check():
    failed = _failed(_ReturnsOriginal())
    assert "release guard refused" in failed["check_not_the_original"]


def test_returning_the_original_past_the_guard_is_seen_by_the_battery():
    failed = _failed(_ReturnsOriginalPastTheGuard())
    assert "is the original: 100% of records keep their own ['x', 'c'] key" in failed["check_not_the_original"]
    assert "the seed is ignored" in failed["check_different_seeds"]


def test_mutating_the_input_fails_the_input_check():
    failed = _failed(_MutatesInput())
    assert "modified the input frame" in failed["check_input_not_mutated"]
    # (what the shared fit saw is the changed frame: its kept column is not the input's; counts only)
    assert failed["check_sample_output"] == "kept column 'z' of copy 1 is not the input's (1 records differ)"


def test_ignoring_the_seed_fails_the_same_seed_check():
    failed = _failed(_IgnoresSeed())
    assert set(failed) >= {"check_same_seed", "check_pickle_round_trip", "check_save_load"}
    assert "sampled twice with one seed" in failed["check_same_seed"]


def test_converting_a_parameter_in_init_fails_the_params_check():
    failed = _failed(_ConvertsParameter(scale=2.5))
    assert set(failed) == {"check_params_stored"}
    assert "parameter 'scale' is stored as 1.0, its default is 1" in failed["check_params_stored"]


def test_a_dp_synthesizer_publishing_its_row_count_fails_the_neighbour_check():
    ok = check_synthesizer(DPSynSynthesizer(epsilon=4.0, n_iter=5), checks=["check_dp_neighbour"])
    assert ok.status("check_dp_neighbour") == "passed"
    failed = _failed(_LeaksCount(epsilon=4.0, n_iter=5), checks=["check_dp_neighbour"])
    # the neighbour (D minus one record) differs in metadata.json's params and the public view
    assert "differs" in failed["check_dp_neighbour"] and "n_rows" in failed["check_dp_neighbour"]


def test_failure_raises_naming_each_failed_check():
    with pytest.raises(SynthesizerCheckFailed, match=r"_MutatesInput fails \d+ contract check\(s\): .*check_input_not_mutated"):
        check_synthesizer(_MutatesInput())


def test_subset_and_skips_are_recorded_never_silent():
    report = check_synthesizer(_Permute, checks=["check_params_stored", "check_same_seed"],
                               skip={"check_same_seed": "sampler under repair (issue 99)"})
    assert [(r.name, r.status, r.message) for r in report.results] == [
        ("check_params_stored", "passed", ""), ("check_same_seed", "skipped", "sampler under repair (issue 99)")]
    assert "skipped  check_same_seed: sampler under repair (issue 99)" in str(report)
    with pytest.raises(ValueError, match="The 'skip' parameter of check_synthesizer must be a mapping of check name"):
        check_synthesizer(_Permute(), skip={"check_same_seed": ""})
    with pytest.raises(ValueError, match=r"The 'checks' parameter of check_synthesizer must be names from .*"
                                         r"Got \['check_nope'\] instead"):
        check_synthesizer(_Permute(), checks=["check_nope"])
    with pytest.raises(ValueError, match="The 'synth' parameter of check_synthesizer must be a Synthesizer"):
        check_synthesizer(pd.DataFrame())


class _NoConstraints(Synthesizer):
    """A new method's first draft: no parameters declared, none validated (a permutation)."""

    method = "no-constraints-test"
    _confidential_attributes = ("X_",)

    def __init__(self):
        pass

    def _fit(self, X, Z):
        self.X_ = X.reset_index(drop=True)

    def _needs_records_to_sample(self):
        return True

    def _sample(self, m, rng):
        return [self.X_.iloc[rng.permutation(len(self.X_))].reset_index(drop=True) for _ in range(m)]


class _UndeclaredRecords(_Permute):
    """Holds the records in X_ but does not declare them confidential (nor that sample reads them)."""

    _confidential_attributes = ()

    def _needs_records_to_sample(self):
        return False


def test_bad_input_is_not_applicable_without_declared_constraints():
    """Without _parameter_constraints the parameter part of check_bad_input cannot fail: the
    battery says so ("not applicable", with the reason) instead of "passed" (the original
    code reported passed)."""
    report = check_synthesizer(_NoConstraints(), checks=["check_params_stored", "check_bad_input"])
    assert report.status("check_params_stored") == "passed"  # no parameters, none declared: consistent
    res = next(r for r in report.results if r.name == "check_bad_input")
    assert res.status == "not applicable"
    assert "declares no parameter constraints" in res.message and "_parameter_constraints" in res.message
    # with a declared constraint the check runs and passes (the base fit validates it)
    assert check_synthesizer(_Permute(), checks=["check_bad_input"]).status("check_bad_input") == "passed"


def test_undeclared_confidential_attribute_fails_the_pickle_check_saying_what_to_declare():
    failed = _failed(_UndeclaredRecords(), checks=["check_pickle_round_trip"])
    msg = failed["check_pickle_round_trip"]
    assert "the default pickle holds" in msg and "_confidential_attributes" in msg
    assert "_needs_records_to_sample" in msg
