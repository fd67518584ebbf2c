"""``--tol COLUMN=PERCENT%`` on every verb that measures identity risk.

A new user's trial (nu1, statsmodels' ``randhie``): ``disclosure --tol income=5%`` worked (the README's
own example), but the same option to ``report`` answered "The '--tol' option takes COLUMN=NUMBER", and
``tune`` and ``frontier`` answered "could not convert string to float: '5%'". One parser now serves
every verb, so a relative tolerance means the same to all of them, and a bad value is one error naming
--tol and both accepted forms.
"""
from __future__ import annotations

import json

import pytest

from _frames import wage_frame
from synthmi.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("tolpct")
    wage_frame(150, seed=8).to_csv(d / "w.csv", index=False)
    assert main(["synthesize", "--data", str(d / "w.csv"), "--qi", "hours,sex", "--keep", "age,edu,y",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(d / "syn"), "--quiet"]) == 0
    return d


def _risk(path) -> float:
    return json.loads(path.read_text())["summary"]["expected_matches"]


def test_report_takes_a_relative_tolerance(files, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", "--original", str(files / "w.csv"), "--synthetic", str(files / "syn"), "--qi", "hours,sex",
                 "--tol", "hours=5%", "--analysis", "hours ~ age + sex", "--family", "gaussian",
                 "--out", str(page), "--quiet"]) == 0
    assert "5%" in page.read_text()


def test_frontier_takes_a_relative_tolerance_and_means_what_disclosure_means(files, tmp_path):
    out = tmp_path / "f.csv"
    assert main(["frontier", "--data", str(files / "w.csv"), "--qi", "hours,sex", "--keep", "age,edu,y",
                 "--analysis", "hours ~ age + sex", "--family", "gaussian", "--methods", "cart", "--leaves", "5",
                 "--m", "2", "--replicates", "1", "--tol", "hours=5%", "--out", str(out), "--quiet"]) == 0
    import pandas as pd

    pts = pd.read_csv(out)
    orig = pts[pts["setting"] == "original"]["expected_matches"].iloc[0]
    # the original released as is, matched within 5% of hours: the same figure disclosure gives for it
    (tmp_path / "o").mkdir()
    pd.read_csv(files / "w.csv").to_csv(tmp_path / "o" / "copy_01.csv", index=False)
    assert main(["disclosure", "--original", str(files / "w.csv"), "--synthetic", str(tmp_path / "o"),
                 "--qi", "hours,sex", "--tol", "hours=5%", "--out", str(tmp_path / "d.json"), "--quiet"]) == 0
    assert orig == pytest.approx(_risk(tmp_path / "d.json"), abs=5e-4)  # the CSV holds 3 decimals


@pytest.mark.parametrize("verb", ["report", "tune", "frontier"])
def test_bad_tolerance_is_one_error_naming_the_option(verb, files, tmp_path, capsys):
    common = {"report": ["--original", str(files / "w.csv"), "--synthetic", str(files / "syn")],
              "tune": ["--data", str(files / "w.csv"), "--target", "expected_matches<=5"],
              "frontier": ["--data", str(files / "w.csv")]}[verb]
    rc = main([verb, *common, "--qi", "hours,sex", "--analysis", "hours ~ age + sex", "--family", "gaussian",
               "--tol", "hours=abc", "--out", str(tmp_path / "x.out")])
    assert rc == 1
    err = capsys.readouterr().err
    assert "The '--tol' option takes COLUMN=NUMBER or COLUMN=PERCENT%" in err and "hours='abc'" in err
