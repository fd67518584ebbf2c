"""The neighbour battery (issue 25): every path a user takes to a DP release, on D and on
D minus one record that holds (a) the only missing value of a column, (b) the only
instance of a declared level, (c) the maximum of a column, (d) a missing-value marker.

Everything that is not noise must be identical between the two runs: exit status,
stdout / stderr, file names, metadata.json, the saved spec.json and manifest.json, the
public parts of the pickled model (spec, dtypes, cells, thresholds, attribute names),
and the copies' column order and dtypes. Paths: the Python API on frames as
``pd.read_csv`` and ``synthmi.data.load_dataset`` return them (int64 vs float64 with a
missing value; Categoricals from the values seen), ``save()`` / ``load()``, the Dask
path, the command line with ``--domain``, ``--spec`` and ``--na-values``, ``dp bayes
--data`` (substitution neighbours: n is public there) and ``dp kmeans``.
The negative controls at the end show the battery sees a dtype or stderr leak.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synthmi.domain import PublicDomain
from synthmi.privacy import DPSynSynthesizer

from _neighbour import _TIMING, CONTINUOUS_SPANS, Case, check_neighbours, remove_record

DOMAIN = {
    "columns": {
        "region": {"kind": "categorical", "levels": ["North", "South", "East", "West", "Atlantis", "Other"],
                   "other": "Other"},
        "sex": {"kind": "binary", "levels": ["F", "M"], "missing": False},
        "age": {"kind": "integer", "bounds": [18, 90]},
        "income": {"kind": "continuous", "bounds": [0, 200000], "point_masses": [0], "missing": False},
        "hours": {"kind": "integer", "bounds": [0, 99], "missing": False},
        "status": {"kind": "categorical", "levels": ["employed", "unemployed", "retired", "other"], "other": "other"},
        "smoker": {"kind": "binary", "levels": [0, 1], "missing": False},
    },
    "source": "test survey documentation",
}
# The spec form of the same declaration (--spec): kinds, levels, bounds, all declared public.
SPEC = {
    "synthmi_spec": 1,
    "source": "test survey documentation",
    # the file's missing-value marker, declared in the spec (read as missing in every column)
    "na_values": ["?"],
    "columns": {
        "region": {"role": "quasi_identifier", "kind": "nominal", "declared": True,
                   "levels": DOMAIN["columns"]["region"]["levels"]},
        "sex": {"role": "quasi_identifier", "kind": "binary", "declared": True, "levels": ["F", "M"]},
        "age": {"role": "quasi_identifier", "kind": "integer", "declared": True, "bounds": [18, 90]},
        "income": {"role": "keep", "kind": "continuous", "declared": True, "bounds": [0, 200000], "point_masses": [0]},
        "hours": {"role": "keep", "kind": "integer", "declared": True, "bounds": [0, 99]},
        "status": {"role": "keep", "kind": "nominal", "declared": True,
                   "levels": ["employed", "unemployed", "retired", "other"]},
        "smoker": {"role": "keep", "kind": "binary", "declared": True, "levels": [0, 1]},
    },
}
# The record each neighbour removes, and what makes it special.
SPECIAL = {"missing": 0, "level": 1, "maximum": 2, "marker": 3}


def survey(n: int = 160, seed: int = 0) -> pd.DataFrame:
    """A small survey as a CSV holds it. Record 0 holds the only missing age, record 1 the
    only 'Atlantis' resident, record 2 the highest income, record 3 the marker '?' (in
    'status', and in 'age' for the --na-values path)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "region": rng.choice(["North", "South", "East", "West"], n, p=[0.4, 0.3, 0.2, 0.1]).astype(object),
        "sex": rng.choice(["F", "M"], n),
        "age": rng.integers(18, 80, n).astype(object),
        "income": np.where(rng.random(n) < 0.4, 0.0, np.round(np.minimum(rng.gamma(2.0, 15000.0, n), 150000.0), 2)),
        "hours": rng.integers(10, 61, n),
        "status": rng.choice(["employed", "unemployed", "retired"], n, p=[0.6, 0.1, 0.3]).astype(object),
        "smoker": (rng.random(n) < 0.3).astype(int),
    })
    df.loc[0, "age"] = np.nan
    df.loc[1, "region"] = "Atlantis"
    df.loc[2, "income"] = 199000.0
    df.loc[3, "status"] = "?"
    return df


def with_age_marker(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    out.loc[SPECIAL["marker"], "age"] = "?"
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("declared")
    (d / "domain.json").write_text(json.dumps(DOMAIN))
    (d / "spec.json").write_text(json.dumps(SPEC))
    return {"domain": d / "domain.json", "spec": d / "spec.json"}


# ------------------------------------------------------------------ the public view of a model
def public_parts(model: DPSynSynthesizer) -> dict:
    """Everything a pickled DPSyn model holds that is not noise (the noisy tables are left out)."""
    return {
        "attributes": sorted(model.__dict__),
        "spec": model.spec_.to_dict(),
        "dtypes": {c: str(t) for c, t in model.dtypes_.items()},
        "categories": {c: [str(x) for x in t.categories] for c, t in model.dtypes_.items()
                       if isinstance(t, pd.CategoricalDtype)},
        "columns": list(model.columns_),
        "domain": model.domain_.to_dict(),
        "fingerprint": model.fingerprint_,
        "theta": {c: round(float(v), 9) for c, v in model.theta_.items()},
        "sigma": [round(float(model.sigma_unit_), 9)] + [round(float(v), 9) for v in model.sigma_one_way_],
        "cells": [[c.name, c.kind, str(c.dtype), int(c.size), bool(c.has_missing_level), bool(c.integer),
                   bool(c.ordered)] for c in model._columns],
        "params": {k: str(v) for k, v in model.public_params().items()},
        "out_of_domain": model.out_of_domain_,
        # the continuous-column report's values are noise (post-processing of noisy counts);
        # which columns and fields it holds is not
        "continuous": {c: sorted(e) for c, e in model.continuous_.items()},
        # every other attribute the pickle holds, unless it is listed as noise: a value stored
        # under a new name (e.g. the input's dtypes) is compared, not just its name
        "rest": {k: repr(v) for k, v in sorted(model.__dict__.items()) if k not in _NOISE_ATTRIBUTES | _IN_VIEW},
    }


# Attributes of a fitted DPSyn model that are functions of the noisy measurements only.
_NOISE_ATTRIBUTES = {"pooled_levels_", "suppressed_levels_", "suppressed_missing_", "selected_three_way_",
                     "selection_scores_", "n_estimate_", "max_levels_", "selected_", "_groups", "_weights",
                     "_coarse_sizes", "marginals_", "accountant_"}
# compared field by field above
_IN_VIEW = {"spec_", "dtypes_", "columns_", "domain_", "fingerprint_", "theta_", "sigma_unit_", "sigma_one_way_",
            "_columns", "out_of_domain_", "continuous_"}


def _release(model: DPSynSynthesizer, out: Path) -> str:
    """Copies + metadata, a saved model, and the public view of the model loaded back."""
    model.sample(2).to_dir(out / "syn")
    model.save(out / "model")
    loaded = DPSynSynthesizer.load(out / "model")
    (out / "model_public.json").write_text(json.dumps(public_parts(loaded), default=str))
    dtypes = {c: str(t) for c, t in loaded.sample(1).copies[0].dtypes.items()}
    (out / "copy_dtypes.json").write_text(json.dumps(dtypes))
    return repr(model) + "\n" + model.summary()


def _read_csv(df: pd.DataFrame, out: Path) -> pd.DataFrame:
    path = out.parent / "input.csv"
    df.to_csv(path, index=False)
    return pd.read_csv(path)


def _load_dataset(df: pd.DataFrame, out: Path) -> pd.DataFrame:
    from synthmi.data import load_dataset

    path = out.parent / "input.csv"
    df.to_csv(path, index=False)
    return load_dataset(str(path))


def _api(reader):
    def run(df, out):
        data = reader(df, out)
        model = DPSynSynthesizer(epsilon=1.0, delta=1e-9, bins=8).fit(
            data, domain=PublicDomain.from_dict(DOMAIN), out_of_domain="other")
        return _release(model, out)

    return run


def _api_spec(df, out):
    # the Python form of --spec: the file read with the spec's missing-value markers
    path = out.parent / "input.csv"
    df.to_csv(path, index=False)
    data = pd.read_csv(path, na_values=SPEC["na_values"])
    model = DPSynSynthesizer(epsilon=1.0, delta=1e-9, bins=8).fit(data, spec=SPEC)
    return _release(model, out)


def _api_kmeans(df, out):
    from synthmi.privacy import DPKMeans

    data = _read_csv(df, out)
    km = DPKMeans(n_clusters=2, epsilon=1.0, n_iter=3, clip_norm=2.0).fit(
        data[["income", "hours"]], domain=PublicDomain.from_dict(DOMAIN).select(["income", "hours"]))
    payload = {"shape": list(np.shape(km.cluster_centers_)), "privacy": km.privacy_statement(),
               "attributes": sorted(km.__dict__)}
    (out / "centres.json").write_text(json.dumps(payload))
    return repr(km)


def _dask(df, out):
    import dask.dataframe as dd

    data = dd.from_pandas(_read_csv(df, out), npartitions=2)
    model = DPSynSynthesizer(epsilon=1.0, delta=1e-9, bins=8).fit(
        data, domain=PublicDomain.from_dict(DOMAIN), out_of_domain="other")
    return _release(model, out)


_DPSYN_NOISED = dict(
    noised_json={"*metadata.json": ["diagnostics.n_two_way", "diagnostics.suppressed_levels",
                                    "diagnostics.suppressed_missing", "diagnostics.pooled_levels",
                                    "diagnostics.continuous.*.*"],
                 "model/manifest.json": ["sha256"]},
    noised_text=[r"noisy record count [\d.]+", *CONTINUOUS_SPANS,
                 r"levels in the joint marginals: .*", r"\d+ accounted releases",
                 r"two-way marginals measured: \d+; three-way: \d+",
                 r"rare levels: .*", r"(?<=missing values: )(?:kept in every column whose domain allows them\.|the noisy count .*)"],
    data_files="*copy_*.csv",
    noised_files=("model/synthesizer.pkl",),
)


def _cli_dpsyn(*extra):
    def argv(data, out):
        return ["synthesize", "--data", str(data), "--method", "dpsyn", "--param", "epsilon=1",
                "--param", "bins=8", "--map-other", "--m", "2", "--out", str(out), *extra]

    return argv


def _substitute_by(j: int):
    """Substitution neighbour for ``dp bayes`` (n public): record i takes record j's values."""

    def make(i: int):
        def f(df):
            out = df.copy()
            out.iloc[i] = df.iloc[j]
            return out

        return f

    return make


def path_cases(files) -> dict[str, tuple]:
    """name -> (via, case factory taking the special record, data transform)."""
    dom, spec = str(files["domain"]), str(files["spec"])
    qi = ["--qi", "region,sex,age", "--keep", "income,hours,status,smoker"]
    return {
        "api-read_csv": ("python", lambda i: Case("api-read_csv", None, _api(_read_csv), remove_record(i),
                                                  **_DPSYN_NOISED), None),
        "api-load_dataset": ("python", lambda i: Case("api-load_dataset", None, _api(_load_dataset),
                                                      remove_record(i), **_DPSYN_NOISED), None),
        "api-spec": ("python", lambda i: Case("api-spec", None, _api_spec, remove_record(i), **_DPSYN_NOISED),
                     None),
        "api-kmeans": ("python", lambda i: Case("api-kmeans", None, _api_kmeans, remove_record(i)), None),
        "api-dask": ("python", lambda i: Case("api-dask", None, _dask, remove_record(i), **_DPSYN_NOISED), None),
        "cli-domain": ("cli", lambda i: Case("cli-domain", _cli_dpsyn(*qi, "--domain", dom), None, remove_record(i),
                                             **_DPSYN_NOISED), None),
        "cli-spec": ("cli", lambda i: Case("cli-spec", _cli_dpsyn("--spec", spec), None, remove_record(i),
                                           **_DPSYN_NOISED), with_age_marker),
        # the marker '?' also in a numeric column, read as missing by --na-values
        "cli-na-values": ("cli", lambda i: Case("cli-na-values", _cli_dpsyn(*qi, "--domain", dom, "--na-values", "?"),
                                                None, remove_record(i), **_DPSYN_NOISED), with_age_marker),
        "cli-dp-bayes": ("cli", lambda i: Case(
            "cli-dp-bayes",
            lambda data, out: ["dp", "bayes", "--data", str(data), "--column", "smoker", "--domain", dom, "--eps", "1",
                               "--mechanism", "global", "--out", str(out / "posterior.json")],
            None, _substitute_by(10)(i), noised_json={"posterior.json": ["alpha", "beta", "mean"]},
            noised_text=[r"released: Beta\(.*"]), with_age_marker),
        "cli-kmeans": ("cli", lambda i: Case(
            "cli-kmeans",
            lambda data, out: ["dp", "kmeans", "--data", str(data), "--columns", "income,hours", "--k", "2",
                               "--eps", "1", "--iters", "3", "--domain", dom, "--out", str(out / "centres.json")],
            None, remove_record(i), noised_json={"centres.json": ["centres", "noisy_counts"]},
            noised_text=[r"centre \d+: .*"]), with_age_marker),
    }


PATHS = ["api-read_csv", "api-load_dataset", "api-spec", "api-kmeans", "api-dask", "cli-domain", "cli-spec", "cli-na-values",
         "cli-dp-bayes", "cli-kmeans"]


@pytest.mark.slow
@pytest.mark.parametrize("special", list(SPECIAL))
@pytest.mark.parametrize("path", PATHS)
def test_neighbours_differ_only_in_noise(path, special, tmp_path, files):
    via, make, transform = path_cases(files)[path]
    data = survey()
    if transform is not None:
        data = transform(data)
    a, b = check_neighbours(make(SPECIAL[special]), data, tmp_path, via)
    assert a.returncode == 0, a.stderr
    for r in (a, b):
        # no timings (they grow with n) and no row numbers anywhere a DP path speaks
        assert not _TIMING.search(r.stderr), r.stderr
        assert not re.search(r"\brow \d", r.stderr + r.stdout), r.stderr


# ------------------------------------------------------------------ direct checks of the breaks
def test_save_never_writes_the_seed(tmp_path):
    # break 3: save() wrote the user's seed into manifest.json
    df = survey()
    model = DPSynSynthesizer(epsilon=1.0, bins=8, random_state=987654).fit(
        df, domain=PublicDomain.from_dict(DOMAIN), out_of_domain="other")
    model.save(tmp_path / "m")
    for f in ("manifest.json", "spec.json", "synthesizer.pkl"):
        assert b"987654" not in (tmp_path / "m" / f).read_bytes(), f
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert "random_state" not in manifest["params"]


def test_dtypes_and_categories_of_the_input_decide_nothing():
    # breaks 1 and 2, stated directly: int64 vs float64, observed vs declared categories
    df = survey().drop(index=[0, 1]).reset_index(drop=True)
    df["age"] = df["age"].astype(np.int64)
    variants = [df, df.astype({"age": float, "hours": float}),
                df.astype({"region": "category", "status": "category"}),
                df.astype({"region": pd.CategoricalDtype(DOMAIN["columns"]["region"]["levels"], ordered=True)})]
    views = []
    for v in variants:
        m = DPSynSynthesizer(epsilon=1.0, bins=8).fit(v, domain=PublicDomain.from_dict(DOMAIN), out_of_domain="other")
        views.append(public_parts(m))
    assert all(v == views[0] for v in views[1:])
    assert views[0]["dtypes"]["age"] == "float64" and views[0]["dtypes"]["hours"] == "int64"
    assert views[0]["spec"]["columns"]["region"]["levels"] == DOMAIN["columns"]["region"]["levels"]


def test_dp_report_says_it_is_outside_the_guarantee():
    from synthmi.report.html import _privacy_html

    text = _privacy_html({"dpsyn": {"privacy": {"guarantee": "(1, 1e-09)-differential privacy"}}})
    assert "outside" in text and "reads the original records" in text


def test_dp_report_states_each_numeric_columns_range_and_flags():
    # issue 25 item 3: no unreported truncation -- the report carries the release's range and
    # the moved-mean / truncation flags that DPSyn computed from its noisy counts
    from synthmi.workflow.evaluate import describe_release
    from synthmi.report.html import _privacy_html

    df = survey()
    model = DPSynSynthesizer(epsilon=1.0, bins=8).fit(df, domain=PublicDomain.from_dict(DOMAIN), out_of_domain="other")
    syn = model.sample(2, random_state=0)
    summary = describe_release("dpsyn", syn, df, syn.copies, list(df.columns), "full")
    assert set(summary["continuous"]) == set(model.continuous_)
    text = _privacy_html({"dpsyn": summary})
    for c in model.continuous_:
        assert f"{c}: release range" in text and "truncated:" in text


# ------------------------------------------------------------------ negative controls
def test_battery_detects_dtype_and_stderr_leaks(tmp_path):
    """A release that records the reader's dtypes, or warns about a marker only when a
    record holds it, fails the battery (the battery can fail)."""

    def dtypes_recorded(df, out):
        (out / "meta.json").write_text(json.dumps({c: str(t) for c, t in _read_csv(df, out).dtypes.items()}))
        return ""

    def categories_recorded(df, out):
        data = _load_dataset(df, out)
        (out / "meta.json").write_text(json.dumps({"region": [str(x) for x in data["region"].cat.categories]}))
        return ""

    def marker_warned(df, out):
        import warnings

        if (df.astype(str) == "?").any().any():
            warnings.warn("'status' holds the value '?'")
        return ""

    for name, fn, special in (("dtype", dtypes_recorded, "missing"), ("categories", categories_recorded, "level"),
                              ("marker", marker_warned, "marker")):
        case = Case(name, None, fn, remove_record(SPECIAL[special]))
        with pytest.raises(AssertionError):
            check_neighbours(case, survey(), tmp_path / name, "python")


# ------------------------------------------------------------------ the reader's type guess (review of issue 25)
# A CSV reader guesses each column's type from all of its values: zero-padded codes stay text
# beside one "DK" answer and become the numbers 1, 2, 3 without it; "TRUE"/"FALSE" become
# bools unless one record holds "?". Matching on the reader's types made every record of D'
# fall outside the declared levels (an error, or the whole column 'other' with --map-other).
CODES = {"columns": {"region": {"kind": "categorical", "levels": ["01", "02", "03", "DK"]},
                     "flag": {"kind": "binary", "levels": ["FALSE", "TRUE"]},
                     "sex": {"kind": "binary", "levels": ["F", "M"], "missing": False}},
         "source": "codebook"}


def coded_survey(n: int = 120) -> pd.DataFrame:
    """Record 0 holds the only 'DK' region, record 1 the only '?' flag (read as missing)."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"region": rng.choice(["01", "02", "03"], n).astype(object),
                       "flag": rng.choice(["TRUE", "FALSE"], n).astype(object), "sex": rng.choice(["F", "M"], n)})
    df.loc[0, "region"] = "DK"
    df.loc[1, "flag"] = "?"
    return df


@pytest.mark.parametrize("i", [0, 1])
@pytest.mark.parametrize("via", ["cli", "python"])
def test_reader_type_guess_decides_nothing(via, i, tmp_path):
    (tmp_path / "codes.json").write_text(json.dumps(CODES))

    def argv(data, out):
        return ["synthesize", "--data", str(data), "--method", "dpsyn", "--param", "epsilon=1", "--qi",
                "region,flag,sex", "--keep", "", "--na-values", "?", "--domain", str(tmp_path / "codes.json"),
                "--m", "2", "--out", str(out)]

    def api(df, out):
        path = out.parent / "input.csv"
        df.to_csv(path, index=False)
        model = DPSynSynthesizer(epsilon=1.0).fit(pd.read_csv(path, na_values=["?"]), domain=CODES)
        return _release(model, out)

    case = Case("codes", argv if via == "cli" else None, api if via == "python" else None, remove_record(i),
                **_DPSYN_NOISED)
    a, _ = check_neighbours(case, coded_survey(), tmp_path, via)
    assert a.returncode == 0, a.stderr


def test_private_read_keeps_text_and_never_warns(tmp_path):
    # pandas reads a big file in chunks and warns "mixed types" when a later chunk holds one
    # text answer among numbers: on D only. The private read keeps every cell as text.
    import warnings

    from synthmi.data import load_dataset

    q = np.array(["1", "2", "3"] * 100_000, dtype=object)
    q[280_000] = "DK"
    path = tmp_path / "big.csv"
    pd.DataFrame({"q": q, "sex": "F"}).to_csv(path, index=False)  # (one column is read in one chunk)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = load_dataset(str(path), private=True)
    assert df["q"].map(type).eq(str).all()


def test_dask_reader_error_quotes_no_value(tmp_path):
    # dd.read_csv infers dtypes from the first block; a later block holding a text answer in
    # a column inferred int fails inside fit's compute, and dask's message quotes that value
    import dask.dataframe as dd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"q": rng.choice(["1", "2", "3"], 20000).astype(object), "sex": rng.choice(["F", "M"], 20000)})
    df.loc[19990, "q"] = "Refused-JSmith"
    df.to_csv(tmp_path / "d.csv", index=False)
    dom = {"columns": {"q": {"kind": "categorical", "levels": ["1", "2", "3", "other"], "other": "other"},
                       "sex": {"kind": "binary", "levels": ["F", "M"], "missing": False}}, "source": "codebook"}
    with pytest.raises(ValueError, match="withheld") as info:
        DPSynSynthesizer(epsilon=1.0).fit(dd.read_csv(tmp_path / "d.csv"), domain=dom, out_of_domain="other")
    assert "JSmith" not in str(info.value) and info.value.__cause__ is None and info.value.__suppress_context__
    # read as text, as the message says, the same file is released
    DPSynSynthesizer(epsilon=1.0).fit(dd.read_csv(tmp_path / "d.csv", dtype=str), domain=dom, out_of_domain="other")


def test_spec_kind_inferred_for_an_excluded_column_is_not_published():
    # `synthmi spec --data` infers 'binary' from 2 observed levels and 'nominal' from 3: a column
    # the release does not release kept that kind in spec_ / spec.json / metadata.json
    df = survey().drop(columns=["status"]).assign(note="x")
    views = []
    for kind in ("binary", "nominal"):
        spec = {"synthmi_spec": 1, "columns": {**{c: v for c, v in SPEC["columns"].items() if c != "status"},
                                               "note": {"role": "excluded", "kind": kind}}}
        m = DPSynSynthesizer(epsilon=1.0, bins=8).fit(df, spec=spec)
        views.append(m.spec_.to_dict())
    assert views[0] == views[1]
