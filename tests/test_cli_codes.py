"""Agency files through the CLI: whole-number columns with missing values, integer-coded
categories, missing-value markers (issue 17, item 3)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.synthetic import SyntheticData


def _agency_frame(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """Age, a 1/2-coded sex, a region coded 1..5, a count with missing values (skip
    pattern), hours missing for the over-65s, an income."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 80, n)
    kids = rng.poisson(1.2, n).astype(float)
    kids[rng.random(n) < 0.15] = np.nan
    hours = np.where(age > 65, np.nan, rng.integers(10, 60, n).astype(float))
    income = np.round(np.exp(rng.normal(10, 0.5, n)))
    return pd.DataFrame({"age": age, "sex": rng.integers(1, 3, n), "kids": kids, "hours": hours,
                         "income": income, "region": rng.integers(1, 6, n)})


@pytest.fixture(scope="module")
def agency_csv(tmp_path_factory):
    """The frame written as an agency writes it: whole numbers without '.0', missing empty."""
    path = tmp_path_factory.mktemp("agency") / "survey.csv"
    df = _agency_frame()
    df.astype({c: "Int64" for c in ("kids", "hours", "income")}).to_csv(path, index=False)
    return path


def _column_text(path, column: str) -> list[str]:
    import csv

    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [r[column] for r in rows]


# ---- whole-number columns with missing values stay whole numbers -------------------------
def test_to_dir_writes_whole_number_floats_as_integers(tmp_path):
    a = pd.DataFrame({"kids": [1.0, np.nan, 3.0], "x": [0.5, 1.0, np.nan], "big": [1e300, 2.0, np.nan],
                      "w": [1234.0, 20.0, 3.0]})
    b = pd.DataFrame({"kids": [4.0, 2.0, 0.0], "x": [1.0, 2.0, 3.0], "big": [1.0, 2.0, 3.0],
                      "w": [1.0, 2.0, 3.0]})
    syn = SyntheticData(copies=[a, b], method="cart", params={}, seed=1, quasi_identifiers=["kids"])
    syn.to_dir(tmp_path)
    # missing in one copy: written as integers in every copy
    assert _column_text(tmp_path / "copy_01.csv", "kids") == ["1", "", "3"]
    assert _column_text(tmp_path / "copy_02.csv", "kids") == ["4", "2", "0"]
    # a column fractional in one copy keeps the float form in every copy
    assert _column_text(tmp_path / "copy_02.csv", "x") == ["1.0", "2.0", "3.0"]
    # beyond 2**53 a float is no integer we can vouch for
    assert _column_text(tmp_path / "copy_01.csv", "big")[0] == "1e+300"
    # a complete float column (a weight written 1234.0) keeps its float form: a plain
    # read_csv of a copy gives the dtype a plain read_csv of the original gives
    assert _column_text(tmp_path / "copy_01.csv", "w") == ["1234.0", "20.0", "3.0"]
    back = SyntheticData.from_dir(tmp_path)
    for orig, read in zip((a, b), back.copies):
        pd.testing.assert_frame_equal(read, orig)
    # the copies in memory are untouched
    assert a["kids"].dtype == np.float64


@pytest.mark.parametrize("method,extra", [
    ("cart", []),
    ("dpsyn", ["--param", "epsilon=1", "--param", "theta_scale=0.2", "--param", "theta_min=0"]),
])
def test_integer_columns_with_missing_values_come_back_as_integers(agency_csv, tmp_path, method, extra):
    out = tmp_path / method
    if method == "dpsyn":
        domain = {"columns": {
            "age": {"kind": "integer", "bounds": [18, 80]}, "sex": {"kind": "integer", "bounds": [1, 2]},
            "kids": {"kind": "integer", "bounds": [0, 9]}, "hours": {"kind": "integer", "bounds": [0, 99]},
            "income": {"kind": "continuous", "bounds": [0, 500000]}, "region": {"kind": "integer", "bounds": [1, 5]}}}
        (tmp_path / "domain.json").write_text(json.dumps(domain))
        extra = extra + ["--domain", str(tmp_path / "domain.json")]
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex,kids", "--keep", "hours,income",
               "--method", method, "--m", "2", "--seed", "3", "--out", str(out), "--quiet", *extra])
    assert rc == 0
    for column in ("age", "sex", "kids", "hours"):
        cells = _column_text(out / "copy_01.csv", column)
        assert all(c == "" or c.lstrip("-").isdigit() for c in cells), (column, sorted(set(cells))[:5])
    if method == "cart":
        # missing values kept: the count is synthesized with its missingness, hours released unchanged
        assert "" in _column_text(out / "copy_01.csv", "kids")
        assert _column_text(out / "copy_01.csv", "hours") == _column_text(agency_csv, "hours")

