"""Bundled data, schema, validation messages, SyntheticData and the synthesizer contract."""
import numpy as np
import pandas as pd
import pytest

from synthmi import Schema, SyntheticData
from synthmi._validate import NotFittedError, check_delta, check_epsilon
from synthmi.data import load_adult, load_adult_discretized, load_nhanes
from synthmi.models.base import Synthesizer


# --------------------------------------------------------------------------- data
def test_adult_loader_dtypes_and_counts():
    a = load_adult()
    assert a.shape == (48842, 16)
    assert a["age"].dtype == float and a["hours_per_week"].dtype == float
    for c in ("workclass", "education", "race", "sex", "income", "native_country"):
        assert isinstance(a[c].dtype, pd.CategoricalDtype), c
    # missing values documented in shared/data/README.md
    assert a["workclass"].isna().sum() == 2799
    assert a["occupation"].isna().sum() == 2809
    assert a["native_country"].isna().sum() == 857
    assert a["income"].value_counts()[">50K"] == 11687  # the test file's "." stripped
    assert a["education"].cat.ordered


def test_adult_source_coding():
    r = load_adult(recode=True)
    assert list(r["race"].cat.categories) == ["white", "non-white"]
    assert r["race"].value_counts()["white"] == 41762
    assert list(r["education"].cat.categories) == ["<HS", "HS", ">HS"]
    counts = r["education"].value_counts()
    # <HS = Preschool..12th, HS = HS-grad (15,784), >HS = the rest
    assert (counts["<HS"], counts["HS"], counts[">HS"]) == (6408, 15784, 26650)
    assert list(r["sex"].cat.categories) == ["Female", "Male"]


def test_nhanes_loader():
    n = load_nhanes()
    assert n.shape == (5265, 13)
    assert n.index.name == "respondent_id"
    assert n["income_poverty_ratio"].isna().sum() == 697
    assert n["bmi"].isna().sum() == 90
    assert n["education"].isna().sum() == 12  # 2 missing + 10 "Don't Know"
    r = load_nhanes(recode=True)
    assert set(r["diabetes"].cat.categories) == {"no", "yes"}
    assert r["diabetes"].value_counts()["yes"] == 836
    assert set(r["race_ethnicity"].cat.categories) == {"white", "non-white"}


def test_discretized_adult():
    df, domain = load_adult_discretized()
    assert df.shape == (48842, 14) and len(domain) == 14
    for c, d in domain.items():
        assert df[c].min() >= 0 and df[c].max() < d


# --------------------------------------------------------------------------- schema
def test_schema_inference_and_overrides():
    r = load_adult(recode=True)
    s = Schema.infer(r[["age", "sex", "race", "education", "workclass"]])
    assert [s.kind(c) for c in s.columns] == ["continuous", "binary", "binary", "ordinal", "nominal"]
    assert s.categorical() == ["sex", "race", "education", "workclass"]
    codes = s.codes(r["education"].iloc[:5])
    back = s.from_codes("education", codes, r["education"].iloc[:5])
    assert list(back) == list(r["education"].iloc[:5])
    s2 = Schema.infer(pd.DataFrame({"x": [0.0, 1.0, 1.0], "y": [1.0, 2.0, 3.0]}), {"y": "nominal"})
    assert s2.kind("x") == "binary" and s2.kind("y") == "nominal"
    assert Schema.from_dict(s.to_dict()).to_dict() == s.to_dict()
    with pytest.raises(ValueError, match="must be one of"):
        Schema.infer(r[["age"]], {"age": "fancy"})
    with pytest.raises(ValueError, match="cannot be binary"):
        Schema.infer(r[["education"]], {"education": "binary"})


def test_validation_messages_in_sklearn_form():
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of LaplaceMechanism must be > 0.0. Got -1 instead."):
        check_epsilon(-1, "LaplaceMechanism")
    with pytest.raises(ValueError, match=r"'delta' parameter of X must be in the open interval \(0, 1\). Got 1.0"):
        check_delta(1.0, "X")


# --------------------------------------------------------------------------- contract
class _Bootstrap(Synthesizer):
    """Resamples the quasi-identifier rows: exercises the base contract only."""

    method = "bootstrap-test"

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def _check_params(self):
        if self.scale <= 0:
            raise ValueError(f"The 'scale' parameter of _Bootstrap must be > 0. Got {self.scale!r} instead.")

    def _fit(self, X, Z):
        self.X_ = X.reset_index(drop=True)

    def _sample(self, m, rng):
        return [self.X_.iloc[rng.integers(0, len(self.X_), len(self.X_))].reset_index(drop=True) for _ in range(m)]


def _small():
    r = load_adult(recode=True).iloc[:300]
    return r[["age", "sex", "race", "education", "income", "hours_per_week"]].copy()


def test_contract_dtypes_roles_seeds_and_roundtrip(tmp_path):
    df = _small()
    before = df.copy(deep=True)
    syn = _Bootstrap().fit(df, quasi_identifiers=["age", "sex", "race", "education"]).sample(3, random_state=5)
    pd.testing.assert_frame_equal(df, before)  # input never mutated
    assert syn.m == 3 and syn.method == "bootstrap-test" and syn.seed == 5
    for c in syn.copies:
        assert list(c.columns) == list(df.columns)
        assert (c.dtypes == df.dtypes).all()
        pd.testing.assert_series_equal(c["income"], df["income"])  # Z released unchanged
        assert list(c["education"].cat.categories) == ["<HS", "HS", ">HS"]
    again = _Bootstrap().fit(df, quasi_identifiers=["age", "sex", "race", "education"]).sample(3, random_state=5)
    for a, b in zip(syn.copies, again.copies):
        pd.testing.assert_frame_equal(a, b)
    other = _Bootstrap().fit(df, quasi_identifiers=["age", "sex", "race", "education"]).sample(3, random_state=6)
    assert not syn.copies[0].equals(other.copies[0])
    syn.to_dir(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy_01.csv", "copy_02.csv", "copy_03.csv", "metadata.json"]
    back = SyntheticData.from_dir(tmp_path)
    for a, b in zip(syn.copies, back.copies):
        pd.testing.assert_frame_equal(a, b)
    assert back.params == {"scale": 1.0} and back.quasi_identifiers == ["age", "sex", "race", "education"]
    assert "pandas" in back.versions
    res = syn.analyse("income ~ age + sex", original=df, family="logit")
    assert res.M == 3 and res.rule == "partial"
    syn.rule = "rubin"  # a synthesizer records the rule its copies need
    assert syn.analyse("income ~ age + sex", original=df, family="logit").rule == "rubin"


def test_contract_bad_input():
    df = _small()
    s = _Bootstrap()
    with pytest.raises(NotFittedError, match="call 'fit'|Call 'fit'"):
        s.sample(2)
    with pytest.raises(ValueError, match="names columns not in 'df': \\['nope'\\]"):
        s.fit(df, quasi_identifiers=["nope"])
    with pytest.raises(ValueError, match="both as quasi-identifiers and as kept"):
        s.fit(df, quasi_identifiers=["age"], keep=["age", "income"])
    with pytest.raises(ValueError, match="Column 'hours_per_week' of 'df' is constant"):
        s.fit(df.assign(hours_per_week=40.0), quasi_identifiers=["age"])
    with pytest.raises(ValueError, match="Column 'age' of 'df' is entirely missing"):
        s.fit(df.assign(age=np.nan), quasi_identifiers=["age"])
    with pytest.raises(ValueError, match="has 2 missing values"):
        s.fit(df.assign(age=[np.nan, np.nan] + list(df["age"].iloc[2:])), quasi_identifiers=["age"])
    with pytest.raises(ValueError, match="at least 10 rows"):
        s.fit(df.iloc[3:9], quasi_identifiers=["age"])
    with pytest.raises(ValueError, match="'scale' parameter of _Bootstrap must be > 0"):
        _Bootstrap(scale=-1).fit(df, quasi_identifiers=["age"])
    s.fit(df, quasi_identifiers=["age"])
    with pytest.raises(ValueError, match="The 'm' parameter of _Bootstrap must be >= 1. Got 0 instead."):
        s.sample(0)
    with pytest.raises(ValueError, match="'m' parameter of _Bootstrap must be a whole number"):
        s.sample(2.5)
    with pytest.raises(TypeError, match="'df' parameter must be a pandas DataFrame"):
        s.fit([[1, 2]], quasi_identifiers=["age"])
    with pytest.raises(ValueError, match="no columns|0 rows"):
        s.fit(pd.DataFrame(), quasi_identifiers=["age"])
