"""Errors never quote data (issue 27 review): a message and a ``ParameterError.got``
describe a frame, series or array by type and size, never by its values.

The data hold distinctive values (123456.789, 987654.321 and the label
"zz-secret-label") that cannot appear in a message by chance: each test asserts
they are absent from ``str(exc)`` and from every field of the error.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from synthmi._validate import check_scalar, param_error
from synthmi.errors import SynthmiError, describe
from synthmi.evaluation.attribute_disclosure import attribute_disclosure
from synthmi.evaluation.risk import reidentification_risk

SECRETS = ("123456.789", "123456.79", "987654.321", "987654.32", "zz-secret-label")


def _frame(n: int = 8) -> pd.DataFrame:
    return pd.DataFrame({
        "age": np.r_[123456.789, 987654.321, np.arange(n - 2, dtype=float)],
        "sex": ["zz-secret-label"] + ["F", "M"] * ((n - 1) // 2) + ["F"] * ((n - 1) % 2),
        "y": np.r_[123456.789, np.arange(n - 1, dtype=float)],
    })


def _assert_no_data(exc: BaseException) -> None:
    texts = [str(exc)] + [str(v) for v in vars(exc).values() if v is not None]
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"data value {secret} in the error: {text}"


def _bad_by_values(df: pd.DataFrame):
    return [df["age"], df["age"].tolist(), df["age"].to_numpy(), df["sex"], df[["age"]]]


@pytest.mark.parametrize("measure", ["risk", "attribute"])
@pytest.mark.parametrize("which", range(5))
def test_bad_by_on_dask_is_described_not_quoted(measure, which):
    df = _frame()
    o, c = dd.from_pandas(df, npartitions=2), dd.from_pandas(df.copy(), npartitions=2)
    by = _bad_by_values(df)[which]
    with pytest.raises(SynthmiError) as e:
        if measure == "risk":
            reidentification_risk(o, [c, c], ["age", "sex"], by=by)
        else:
            attribute_disclosure(o, [c, c], ["sex"], target="y", by=by)
    assert getattr(e.value, "parameter", None) == "by"
    assert type(by).__name__ in str(e.value)  # the type is named
    _assert_no_data(e.value)


@pytest.mark.parametrize("measure", ["risk", "attribute"])
def test_bad_by_on_pandas_is_described_not_quoted(measure):
    df = _frame()
    bads = [df["age"].iloc[::-1].reset_index(drop=True).set_axis(range(10, 18)),  # another index
            df["age"].to_numpy()[:-1], df["age"], "age"]  # wrong length, float labels (Series, column)
    for by in bads:
        with pytest.raises(SynthmiError) as e:
            if measure == "risk":
                reidentification_risk(df, [df, df], ["age", "sex"], by=by)
            else:
                attribute_disclosure(df, [df, df], ["sex"], target="y", by=by)
        _assert_no_data(e.value)


def test_a_data_object_passed_as_a_scalar_parameter_is_described():
    df = _frame()
    for value in (df["age"], df, df["age"].to_numpy(), [df["age"]], {"a": df["age"].to_numpy()},
                  dd.from_pandas(df, npartitions=1)):
        with pytest.raises(SynthmiError) as e:
            check_scalar(value, "threshold", "reidentification_risk", lower=0.0)
        _assert_no_data(e.value)
        assert e.value.got.startswith(("a ", "an ")), e.value.got
    # values the caller wrote are still echoed, as scikit-learn does
    assert param_error("epsilon", "LaplaceMechanism", "> 0", -1).got == "-1"
    assert describe(np.float64(-1.5)) == repr(np.float64(-1.5)) and describe([1, 2]) == "[1, 2]"
    assert describe(df["age"]) == "a Series of length 8" and describe(df) == "a DataFrame of shape (8, 3)"
