"""Public domains (synthmi.domain): format, validation, conforming data, bundled files."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from synthmi.data import load_adult, load_adult_discretized, load_domain, load_nhanes
from synthmi.domain import ColumnDomain, DomainError, PublicDomain, as_public_domain

EXAMPLE = {
    "columns": {
        "sex": {"kind": "categorical", "levels": ["Female", "Male"], "other": None},
        "age": {"kind": "integer", "bounds": [17, 90]},
        "capital_gain": {"kind": "continuous", "bounds": [0, 100000], "point_masses": [0]},
        "income": {"kind": "binary", "levels": ["<=50K", ">50K"]},
        "edu": {"kind": "ordinal", "levels": ["<HS", "HS", ">HS"], "missing": False},
    },
    "source": "test",
}


def test_round_trip_json(tmp_path):
    d = PublicDomain.from_dict(EXAMPLE)
    path = tmp_path / "domain.json"
    d.to_json(path)
    back = PublicDomain.from_json(path)
    assert back == d
    assert back.source == "test"
    assert list(back) == ["sex", "age", "capital_gain", "income", "edu"]
    assert back["age"].bounds == (17.0, 90.0) and back["age"].kind == "integer"
    assert back["capital_gain"].point_masses == (0.0,)
    assert back["edu"].ordered and not back["sex"].ordered and back["age"].ordered
    assert not back["edu"].missing and back["sex"].missing
    # JSON text works too, and as_public_domain accepts all three forms
    assert PublicDomain.from_json(json.dumps(EXAMPLE)) == d
    assert as_public_domain(str(path)) == d and as_public_domain(EXAMPLE) == d and as_public_domain(d) is d


@pytest.mark.parametrize(
    "col, fragment",
    [
        ({"kind": "nominal", "levels": ["a"]}, "must be one of categorical"),
        ({"levels": ["a"]}, "needs a 'kind'"),
        ({"kind": "categorical"}, "non-empty list of 'levels'"),
        ({"kind": "categorical", "levels": []}, "non-empty list of 'levels'"),
        ({"kind": "categorical", "levels": ["a", "a"]}, "level twice"),
        ({"kind": "categorical", "levels": [1, "1"]}, "level twice"),
        ({"kind": "categorical", "levels": ["a", None]}, "missing value as a level"),
        ({"kind": "binary", "levels": ["a", "b", "c"]}, "exactly 2 levels"),
        ({"kind": "categorical", "levels": ["a"], "other": "z"}, "'other' level that is not one of"),
        ({"kind": "categorical", "levels": ["a"], "bounds": [0, 1]}, "not 'bounds'"),
        ({"kind": "integer", "levels": [1, 2]}, "not 'levels'"),
        ({"kind": "integer", "bounds": [0.5, 3]}, "whole-number 'bounds'"),
        ({"kind": "integer", "bounds": [3, 1]}, "whole-number 'bounds'"),
        ({"kind": "continuous", "bounds": [1, 1]}, "lower < upper"),
        ({"kind": "continuous", "bounds": [0, float("inf")]}, "finite"),
        ({"kind": "continuous"}, "needs 'bounds'"),
        ({"kind": "continuous", "bounds": [0, 1], "point_masses": [2]}, "point mass 2 outside"),
        ({"kind": "integer", "bounds": [0, 10], "point_masses": [0.5]}, "not a whole number"),
        ({"kind": "continuous", "bounds": [0, 1], "other": 0}, "discrete kinds only"),
        ({"kind": "continuous", "bounds": [0, 1], "missing": "no"}, "'missing' as true or false"),
        ({"kind": "continuous", "bounds": [0, 1], "lvls": 3}, "unknown keys ['lvls']"),
    ],
)
def test_malformed_column_is_one_clear_error(col, fragment):
    with pytest.raises(DomainError, match="column 'x'") as e:
        PublicDomain({"x": col})
    assert fragment in str(e.value)


def test_malformed_file_errors(tmp_path):
    with pytest.raises(DomainError, match="'columns' object"):
        PublicDomain.from_dict({"sex": {"kind": "binary", "levels": [0, 1]}})
    with pytest.raises(DomainError, match=r"unknown top-level keys \['extra'\]"):
        PublicDomain.from_dict({"columns": {}, "extra": 1})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DomainError, match="not valid JSON"):
        PublicDomain.from_json(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        PublicDomain.from_json(tmp_path / "none.json")
    with pytest.raises(DomainError, match="PublicDomain, a path"):
        as_public_domain(3)


def test_require_names_the_column_and_the_flag():
    d = PublicDomain.from_dict(EXAMPLE)
    d.require(["sex", "age"])
    with pytest.raises(DomainError) as e:
        d.require(["sex", "region"])
    msg = str(e.value)
    assert "Column 'region' has no declared public domain" in msg and "--domain" in msg and "domain=" in msg
    with pytest.raises(DomainError, match=r"Columns \['a', 'b'\] have no declared"):
        d.require(["a", "b"])


def test_conform_matches_text_forms_and_sets_declared_dtype():
    d = PublicDomain({"code": {"kind": "categorical", "levels": ["1", "2", "10"]},
                      "num": {"kind": "ordinal", "levels": [1, 2, 3]},
                      "x": {"kind": "continuous", "bounds": [0, 1]}})
    df = pd.DataFrame({"code": [1, 10, np.nan, 2], "num": ["3", "1", "2", "1"], "x": [0, 0.5, 1, np.nan]})
    before = df.copy()
    out = d.conform(df)
    pd.testing.assert_frame_equal(df, before)  # input not mutated
    assert list(out["code"].astype(object).fillna("NA")) == ["1", "10", "NA", "2"]
    assert list(out["code"].cat.categories) == ["1", "2", "10"] and not out["code"].cat.ordered
    assert list(out["num"]) == [3, 1, 2, 1] and out["num"].cat.ordered
    assert out["x"].dtype == float and np.isnan(out["x"].iloc[3])


def test_out_of_domain_error_names_column_only():
    d = PublicDomain({"country": {"kind": "categorical", "levels": ["US", "Other"], "other": "Other"}})
    df = pd.DataFrame({"country": ["US", "Holand-Netherlands", "US"]})
    with pytest.raises(DomainError) as e:
        d.conform(df)
    msg = str(e.value)
    assert "Column 'country' has values outside its declared public domain" in msg
    assert "Holand" not in msg and "1" not in msg and "2" not in msg
    out = d.conform(df, out_of_domain="other")
    assert list(out["country"]) == ["US", "Other", "US"]
    # without a declared 'other' level, asking for it still errors
    d2 = PublicDomain({"country": {"kind": "categorical", "levels": ["US"]}})
    with pytest.raises(DomainError, match="declare an 'other' level"):
        d2.conform(df, out_of_domain="other")
    with pytest.raises(DomainError, match="'error' or 'other'"):
        d.conform(df, out_of_domain="drop")


def test_numeric_out_of_domain_and_missing():
    d = PublicDomain({"age": {"kind": "integer", "bounds": [17, 90], "missing": False}})
    with pytest.raises(DomainError) as e:
        d.conform(pd.DataFrame({"age": [20.0, 95.0]}))
    assert "Column 'age'" in str(e.value) and "95" not in str(e.value) and "90" not in str(e.value)
    with pytest.raises(DomainError, match="Column 'age' has values outside"):
        d.conform(pd.DataFrame({"age": [20.5]}))
    with pytest.raises(DomainError) as e:
        d.conform(pd.DataFrame({"age": [20.0, np.nan, np.nan]}))
    assert "missing values" in str(e.value) and "2" not in str(e.value)
    with pytest.raises(DomainError, match="not numbers"):
        d.conform(pd.DataFrame({"age": ["old"]}))
    assert list(d.conform(pd.DataFrame({"age": [17, 90]}))["age"]) == [17.0, 90.0]


def test_legacy_forms():
    d = PublicDomain.from_legacy({"b": 4, "c": ["x", "y"], "h": [1.0, 2.0, 5.0]}, {"x": (0, 10)}, integer=["x"])
    assert d["b"].kind == "ordinal" and d["b"].levels == (0, 1, 2, 3)
    assert d["c"].kind == "categorical" and d["h"].kind == "ordinal"
    assert d["x"].kind == "integer" and d["x"].bounds == (0.0, 10.0)
    assert PublicDomain.from_legacy({"b": 4}, ordinal=[])["b"].kind == "categorical"
    with pytest.raises(DomainError, match="both a domain and bounds"):
        PublicDomain.from_legacy({"x": 3}, {"x": (0, 1)})
    with pytest.raises(DomainError, match="positive size"):
        PublicDomain.from_legacy({"x": 0})


def test_select_and_merge():
    d = PublicDomain.from_dict(EXAMPLE)
    s = d.select(["age", "sex"])
    assert list(s) == ["age", "sex"]
    m = d.merged(PublicDomain({"age": {"kind": "integer", "bounds": [0, 120]}}, source="user"))
    assert m["age"].bounds == (0.0, 120.0) and m["sex"] == d["sex"] and "user" in m.source
    assert isinstance(d["sex"], ColumnDomain)


def test_bundled_domains_cover_the_bundled_data():
    """Every bundled column is declared, its levels are the loader's categories, and the data conform."""
    for name, df in (("adult", load_adult()), ("nhanes", load_nhanes())):
        d = load_domain(name)
        assert set(d) == set(df.columns), name
        assert "documentation" in d.source or "codebook" in d.source
        for c in df.columns:
            if isinstance(df[c].dtype, pd.CategoricalDtype):
                assert list(df[c].cat.categories) == list(d[c].levels), (name, c)
        d.conform(df)  # raises if anything is outside
    for name, df in (("adult", load_adult(recode=True)), ("nhanes", load_nhanes(recode=True))):
        load_domain(name, recode=True).conform(df)
    df, sizes = load_adult_discretized()
    d = load_domain("adult_discretized")
    assert {c: len(d[c].levels) for c in d} == sizes
    d.conform(df)
    # the documented level held by a single Adult record is declared (public), so it
    # is in the loader's categories whether or not that record is present
    assert "Holand-Netherlands" in load_domain("adult")["native_country"].levels
    assert load_domain("adult")["capital_gain"].point_masses == (0.0, 99999.0)
    with pytest.raises(ValueError, match="'adult', 'nhanes' or 'adult_discretized'"):
        load_domain("census")


def test_level_key_is_a_function_of_the_value_alone():
    # review of issue 25: a CSV reader turns "01" into 1 and "TRUE" into True depending on the
    # other (private) values of the column, so the text and the parsed forms share one key
    from synthmi.domain import level_key

    assert {level_key(v) for v in ("01", "1", " 1 ", "1.0", "+1", 1, 1.0, np.int64(1), np.float64(1.0))} == {"1"}
    assert {level_key(v) for v in ("1.5", "1.50", "15e-1", 1.5)} == {"1.5"}
    assert {level_key(v) for v in ("TRUE", "True", "true", True, np.bool_(True))} == {"True"}
    assert level_key("1_000") == "1_000" and level_key("DK") == "DK" and level_key("inf") == "inf"
    with pytest.raises(DomainError, match="twice"):
        ColumnDomain("categorical", levels=("01", "1"), name="region")
