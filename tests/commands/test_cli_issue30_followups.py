"""Issue 30 follow-ups from a new-user trial on statsmodels files, through the command line.

Each failed on main before this change (run against it with PYTHONPATH pointing at that
checkout): ``--debug`` printed library warnings in the one-line form, an all-missing column of
the default keep was blamed on a '--keep' option the user never gave, copies of a Latin-1 file
were written as UTF-8 (a kept column's bytes differed), and a convergence failure printed its
class name ("DiagnosticsFailed: ...").
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from _frames import wage_frame
from synthmi.cli import main

QI = "age,sex,edu"


@pytest.fixture()
def csv(tmp_path):
    path = tmp_path / "wage.csv"
    wage_frame().to_csv(path, index=False)
    return path


# ---- --debug shows library warnings in Python's full form ----------------------------------------
@pytest.fixture()
def warning_fit(monkeypatch):
    """CART's fit issues one library warning (any library warning goes the same way)."""
    from synthmi.models.cart import CartSynthesizer

    fit = CartSynthesizer.fit

    def _fit(self, *a, **k):
        warnings.warn("probe: a library warning", UserWarning)
        return fit(self, *a, **k)

    monkeypatch.setattr(CartSynthesizer, "fit", _fit)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["none", "before", "after"])
def test_debug_shows_warnings_in_python_form(where, warning_fit, csv, tmp_path, capsys):
    args = ["synthesize", "--data", str(csv), "--qi", QI, "--keep", "hours,y", "--method", "cart", "--m", "2",
            "--seed", "1", "--out", str(tmp_path / "o"), "--quiet"]
    args = {"none": args, "before": ["--debug", *args], "after": [*args, "--debug"]}[where]
    assert main(args) == 0
    err = capsys.readouterr().err
    if where == "none":
        assert "synthmi synthesize: warning: probe: a library warning" in err
        assert "UserWarning" not in err and ".py:" not in err
    else:  # category, source file and line, as warnings.formatwarning writes them
        assert "test_cli_issue30_followups.py:" in err and "UserWarning: probe: a library warning" in err
        assert "synthmi synthesize: warning: probe" not in err


# ---- an all-missing column in the default keep ----------------------------------------------------------
def test_all_missing_column_of_the_default_keep_is_not_blamed_on_keep(tmp_path, capsys):
    df = wage_frame()
    df["allna"] = np.nan
    path = tmp_path / "allna.csv"
    df.to_csv(path, index=False)
    rc = main(["synthesize", "--data", str(path), "--qi", "age,edu", "--method", "cart", "--m", "2",
               "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "The '--keep' option" not in line
    assert "Without '--keep', every column not in --qi is kept; the default keep includes 'allna'" in line
    assert "entirely missing" in line and "Pass --keep naming the columns to release, without 'allna'" in line
    # with --keep naming it, the option is named as before
    rc = main(["synthesize", "--data", str(path), "--qi", "age,edu", "--keep", "hours,allna", "--method", "cart",
               "--m", "2", "--out", str(tmp_path / "o2"), "--quiet"])
    assert rc == 1 and "The '--keep' option names 'allna'" in capsys.readouterr().err


# ---- copies in the input's encoding: a kept column byte-identical ----------------------------------------
def _column_bytes(path, j: int) -> list[bytes]:
    return [line.split(b",")[j] for line in path.read_bytes().splitlines()]


def test_latin1_copies_keep_kept_columns_byte_identical(tmp_path, capsys):
    df = wage_frame()
    df["town"] = np.resize(["José", "Zoë", "Málaga", "Ørsted"], len(df))
    df["hours"] = df["hours"].map(lambda v: f"{v:.2f}")  # '40.50': re-spelt '40.5' by a CSV writer
    path = tmp_path / "latin.csv"
    df.to_csv(path, index=False, encoding="latin-1")
    out = tmp_path / "o"
    assert main(["synthesize", "--data", str(path), "--encoding", "latin-1", "--qi", QI, "--keep", "hours,y,town",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0, \
        capsys.readouterr().err
    header = path.read_bytes().splitlines()[0].split(b",")
    for f in sorted(out.glob("copy_*.csv")):
        cheader = f.read_bytes().splitlines()[0].split(b",")
        for c in (b"town", b"hours", b"y"):
            assert _column_bytes(f, cheader.index(c)) == _column_bytes(path, header.index(c)), (f.name, c)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["source"]["copies_encoding"] == "latin-1" and meta["source"]["encoding"] == "latin-1"
    # and the evaluation verbs read them back as text, not mojibake
    from synthmi.synthetic import SyntheticData

    syn = SyntheticData.from_dir(out)
    assert set(syn.copies[0]["town"]) == {"José", "Zoë", "Málaga", "Ørsted"}
    assert main(["utility", "--original", str(path), "--synthetic", str(out), "--quiet"]) == 0, \
        capsys.readouterr().err


# ---- a convergence failure in the user's words ---------------------------------------------------------
def test_diagnostics_failure_is_one_line_without_the_class_name(csv, tmp_path, capsys, monkeypatch):
    from synthmi.diagnostics import DiagnosticsFailed
    from synthmi.models.cart import CartSynthesizer

    failures = pd.DataFrame({"r_hat": [1.2], "ess_bulk": [12.0], "problem": ["R-hat 1.2 > 1.01"]}, index=["age"])

    def _sample(self, *a, **k):
        raise DiagnosticsFailed(failures, 1.01, 100.0, "CartSynthesizer")

    monkeypatch.setattr(CartSynthesizer, "sample", _sample)
    rc = main(["synthesize", "--data", str(csv), "--qi", QI, "--keep", "hours,y", "--method", "cart", "--m", "2",
               "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    errors = [x for x in err.strip().splitlines() if "error" in x]
    assert rc == 1 and len(errors) == 1 and "Traceback" not in err, err
    assert errors[0].startswith("synthmi synthesize: error: The posterior sampler of ") and "DiagnosticsFailed" not in err
    assert "'age' (R-hat 1.2 > 1.01)" in errors[0] and "--accept-diagnostics" in errors[0]
