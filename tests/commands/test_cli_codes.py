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


@pytest.mark.slow
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


# ---- integer-coded categories: a warning, and --categorical ------------------------------
def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "only a few whole numbers" in line]


@pytest.mark.slow
def test_coded_columns_warn_once_naming_the_columns_and_the_option(agency_csv, tmp_path, capsys):
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex,region", "--keep", "income",
               "--method", "rubin", "--m", "2", "--seed", "1", "--out", str(tmp_path / "r"), "--quiet"])
    assert rc == 0
    lines = _warnings(capsys.readouterr().err)
    assert len(lines) == 1
    assert "'sex', 'region' hold only a few whole numbers" in lines[0]
    assert "--categorical sex,region" in lines[0]
    # a number with many values (age), a 0/1 column or a declared one is not named
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex", "--keep", "income,region",
               "--categorical", "sex", "--method", "rubin", "--m", "2", "--seed", "1",
               "--out", str(tmp_path / "r2"), "--quiet"])
    assert rc == 0
    lines = _warnings(capsys.readouterr().err)
    assert len(lines) == 1 and "'region' holds" in lines[0] and "'sex'" not in lines[0]
    assert "'age'" not in lines[0] and "'income'" not in lines[0]


def test_cart_keeps_codes_without_a_warning(agency_csv, tmp_path, capsys):
    # cart draws observed values: a code stays a code, so nothing to warn about
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex,region", "--keep", "income",
               "--method", "cart", "--m", "2", "--seed", "1", "--out", str(tmp_path / "c"), "--quiet"])
    assert rc == 0
    assert _warnings(capsys.readouterr().err) == []


def test_categorical_option_declares_the_kind(agency_csv, tmp_path, capsys):
    out = tmp_path / "r"
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex,region", "--keep", "income",
               "--categorical", "sex,region", "--method", "rubin", "--m", "2", "--seed", "1",
               "--out", str(out), "--quiet"])
    assert rc == 0
    assert _warnings(capsys.readouterr().err) == []
    spec = json.loads((out / "metadata.json").read_text())["spec"]["columns"]
    assert spec["sex"]["kind"] == "binary" and spec["region"]["kind"] == "nominal"
    for copy in SyntheticData.from_dir(out).copies:
        assert set(copy["region"]) <= {1, 2, 3, 4, 5} and set(copy["sex"]) <= {1, 2}
        assert copy["region"].dtype == np.int64
    # the same through a drafted spec
    spec_file = tmp_path / "spec.json"
    assert main(["spec", "--data", str(agency_csv), "--qi", "age,sex,region", "--keep", "income",
                 "--categorical", "sex,region", "--out", str(spec_file)]) == 0
    drafted = json.loads(spec_file.read_text())["columns"]
    assert drafted["sex"]["kind"] == "binary" and drafted["region"]["kind"] == "nominal"
    assert drafted["region"]["levels"] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("argv,message", [
    (["--categorical", "nope"], "The '--categorical' option names columns not in the data: ['nope']"),
    (["--categorical", "kids"], "The '--categorical' option names columns that are not released"),
    (["--method", "dpsyn", "--categorical", "sex"], "The '--categorical' option is not for method 'dpsyn'"),
])
def test_categorical_option_errors(agency_csv, tmp_path, capsys, argv, message):
    base = ["synthesize", "--data", str(agency_csv), "--qi", "age,sex", "--keep", "income", "--method", "rubin",
            "--m", "2", "--out", str(tmp_path / "x"), "--quiet"]
    # later options win in argparse: the method given in argv replaces rubin
    assert main(base + argv) == 1
    err = capsys.readouterr().err
    assert message in err, err


# ---- missing-value markers: --na-values, the spec's na_values, recorded in metadata.json ---
@pytest.fixture(scope="module")
def coded_csv(tmp_path_factory):
    """The agency file with missing kids coded '?' and missing hours coded -9."""
    df = _agency_frame().astype({c: "Int64" for c in ("kids", "hours", "income")}).astype(object)
    df["kids"] = df["kids"].where(df["kids"].notna(), "?")
    df["hours"] = df["hours"].where(df["hours"].notna(), -9)
    path = tmp_path_factory.mktemp("coded") / "coded.csv"
    df.to_csv(path, index=False)
    return path


def test_load_dataset_reads_markers_as_missing(coded_csv):
    from synthmi.data import load_dataset

    plain = load_dataset(str(coded_csv))
    assert isinstance(plain["kids"].dtype, pd.CategoricalDtype) and "?" in plain["kids"].cat.categories
    assert (plain["hours"] == -9).sum() > 0
    read = load_dataset(str(coded_csv), na_values=["?", "-9"])
    truth = _agency_frame()
    pd.testing.assert_series_equal(read["kids"], truth["kids"])
    pd.testing.assert_series_equal(read["hours"], truth["hours"])


def test_na_values_option_is_used_recorded_and_reused(coded_csv, tmp_path, capsys):
    import argparse

    from synthmi.commands._common import load_release

    out = tmp_path / "syn"
    rc = main(["synthesize", "--data", str(coded_csv), "--qi", "age,sex,kids", "--keep", "hours,income",
               "--na-values", "?,-9", "--method", "cart", "--m", "2", "--seed", "4", "--out", str(out), "--quiet"])
    assert rc == 0
    assert "missing value" not in capsys.readouterr().err
    assert json.loads((out / "metadata.json").read_text())["source"]["na_values"] == ["?", "-9"]
    truth = _agency_frame()
    for copy in SyntheticData.from_dir(out).copies:
        assert copy["kids"].dtype == np.float64 and copy["kids"].isna().any()
        pd.testing.assert_series_equal(copy["hours"], truth["hours"])  # kept: released unchanged, -9 now missing
    # the evaluation verbs read the original with the recorded markers unless told otherwise
    args = argparse.Namespace(synthetic=str(out), original=str(coded_csv), sep=",", na_values=None, spec=None)
    original, _, _ = load_release(args)
    pd.testing.assert_series_equal(original["hours"], truth["hours"])
    assert main(["analyse", "--original", str(coded_csv), "--synthetic", str(out), "--formula", "hours ~ age",
                 "--family", "gaussian", "--quiet"]) == 0


def test_spec_carries_na_values(coded_csv, tmp_path, capsys):
    from synthmi.spec import ReleaseSpec

    spec_file = tmp_path / "spec.json"
    assert main(["spec", "--data", str(coded_csv), "--qi", "age,sex,kids", "--keep", "hours,income",
                 "--na-values", "?,-9", "--out", str(spec_file)]) == 0
    spec = ReleaseSpec.load(spec_file)
    assert spec.na_values == ["?", "-9"] and spec.kind("kids") == "integer"
    assert spec.with_roles(["age", "sex"]).na_values == ["?", "-9"]
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(coded_csv), "--spec", str(spec_file), "--method", "cart", "--m", "2",
                 "--seed", "4", "--out", str(out), "--quiet"]) == 0
    assert SyntheticData.from_dir(out).copies[0]["kids"].dtype == np.float64
    with pytest.raises(ValueError, match="The 'na_values' of the spec must be a list"):
        ReleaseSpec.from_dict({"columns": {}, "na_values": "?"})


def test_a_marker_read_as_a_category_is_named(coded_csv, tmp_path, capsys):
    rc = main(["synthesize", "--data", str(coded_csv), "--qi", "age,sex,kids", "--keep", "hours", "--method",
               "cart", "--m", "2", "--seed", "4", "--out", str(tmp_path / "x"), "--quiet"])
    assert rc == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "missing value" in ln]
    assert len(lines) == 1 and "'kids' holds the value '?'" in lines[0] and "--na-values '?'" in lines[0]


# ---- errors in command-line terms: masks that do not fit a column, a 1/2 response ----------
@pytest.mark.parametrize("method", ["dami", "risk-dami"])
def test_mask_of_the_wrong_kind_names_the_options(agency_csv, tmp_path, capsys, method):
    base = ["synthesize", "--data", str(agency_csv), "--qi", "age,sex,region", "--keep", "income", "--method", method,
            "--m", "2", "--seed", "1", "--quiet"]
    assert main(base + ["--mask", "sex:alpha=2", "--out", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "Column 'sex' is modelled as a number (continuous)" in err
    assert "--mask sex:K=3,sigma=5" in err and "--categorical sex" in err
    assert "Masking" not in err and "Synthesizer" not in err
    assert main(base + ["--categorical", "region", "--mask", "region:K=2,sigma=1", "--out", str(tmp_path / "b")]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "Column 'region' is categorical (nominal)" in err and "--mask region:alpha=2" in err
    assert "Masking" not in err and "Synthesizer" not in err


def test_probit_on_a_one_two_response_says_how_to_declare_it(agency_csv, tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex", "--keep", "income", "--method", "cart",
                 "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["analyse", "--original", str(agency_csv), "--synthetic", str(out), "--formula", "sex ~ age",
                 "--family", "probit"]) == 1
    err = capsys.readouterr().err
    assert "The response 'sex' of a probit model must be binary (--family probit)" in err
    assert "in the original it holds two numbers other than 0/1" in err and "--categorical sex" in err
    # declared binary in a spec, it is modelled as 1 = its second level
    spec = tmp_path / "spec.json"
    assert main(["spec", "--data", str(agency_csv), "--qi", "age,sex", "--keep", "income", "--categorical", "sex",
                 "--out", str(spec)]) == 0
    assert main(["analyse", "--original", str(agency_csv), "--synthetic", str(out), "--spec", str(spec),
                 "--formula", "sex ~ age", "--family", "probit"]) == 0


def test_class_names_become_method_names():
    from synthmi.commands.synthesize import method_terms

    assert method_terms("The posterior sampler of RiskTargetedSynthesizer did not converge") == (
        "The posterior sampler of method 'risk-dami' did not converge")
    assert method_terms("RubinSynthesizer.fit needs a spec") == "method 'rubin' needs a spec"
    assert method_terms("DAMISynthesizer and DPSynSynthesizer") == "method 'dami' and method 'dpsyn'"


# ---- progress: lines, not carriage returns, off a terminal; no raw ArviZ notice ------------
def test_progress_off_a_terminal_is_one_line_per_step(agency_csv, tmp_path, capsys):
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age,sex,kids", "--keep", "income",
               "--method", "cart", "--m", "2", "--seed", "1", "--out", str(tmp_path / "c")])
    assert rc == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    # the fit moves per column (kids has missing values: its which-part model comes first)
    for j, c in enumerate(["age", "sex", "kids_part", "kids"], start=1):
        assert f"fitting '{c}' ({j}/4)" in err, err

    from synthmi._progress import progress_bar

    bar = progress_bar(["a", "b"], desc="evaluating", enabled=True)
    for item in bar:
        bar.set_postfix_str(f"{item}: pMSE")
        bar.update()
    bar.close()
    assert capsys.readouterr().err.splitlines() == ["evaluating: a: pMSE", "evaluating: b: pMSE"]
    quiet = progress_bar(["a"], desc="evaluating", enabled=False)
    for item in quiet:
        quiet.set_postfix_str(item)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_no_arviz_refactor_notice_and_other_warnings_still_show(tmp_path):
    """ArviZ 0.23 warns of its refactor once a day (stamped in the user cache) unless arviz-base,
    -stats and -plots import; synthmi depends on the three, so even a fresh cache gets no notice,
    and synthmi filters no warning (another FutureWarning still shows)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONWARNINGS="default")
    code = "import synthmi, warnings; import arviz; warnings.warn('other FutureWarning', FutureWarning)"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "major refactor" not in run.stderr and "other FutureWarning" in run.stderr
    assert not (tmp_path / "cache" / "arviz").exists()


@pytest.mark.parametrize("method", ["rubin", "dami"])
def test_n_jobs_zero_is_refused_not_taken_as_one(agency_csv, tmp_path, capsys, method):
    rc = main(["synthesize", "--data", str(agency_csv), "--qi", "age", "--keep", "income", "--method", method,
               "--param", "n_jobs=0", "--m", "2", "--out", str(tmp_path / "x"), "--quiet"])
    assert rc == 1
    err = capsys.readouterr().err
    assert f"The 'n_jobs' parameter of method '{method}' must be a number of worker processes" in err
    assert "-1: all cores" in err and not (tmp_path / "x").exists()
