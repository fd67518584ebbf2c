"""``synthmi report --frontier`` with a frontier of other quasi-identifiers.

A new user's trial (nu1): the report of a ``fair_pt`` release (QIs sex, age, education, occupation) took
``--frontier benchmarks/results/frontier_adult.csv`` (Adult's QIs age, sex, race, education) without a
word and drew Adult's settings behind it as "other tuning settings of each method on these data". The
frontier CSV names its quasi-identifiers (its ``unchanged_<QI>`` columns); a frontier of other ones is
now refused, naming both sets.
"""
from __future__ import annotations

import pandas as pd
import pytest

from _frames import wage_frame
from synthmi.cli import main


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep_frontier")
    wage_frame(150, seed=9).to_csv(d / "w.csv", index=False)
    assert main(["synthesize", "--data", str(d / "w.csv"), "--qi", "hours,sex", "--keep", "age,edu,y",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(d / "syn"), "--quiet"]) == 0
    return d


def _frontier(path, qis):
    row = {"method": "cart", "setting": "min leaf 5", "mean_ci_overlap": 0.9, "mean_ci_overlap_se": 0.01,
           "expected_matches": 3.0, "expected_matches_se": 0.1, "true_match_rate": 0.01, "true_match_rate_se": 0.0}
    for q in qis:
        row[f"unchanged_{q}"], row[f"unchanged_{q}_se"] = 0.5, 0.01
    pd.DataFrame([row]).to_csv(path, index=False)


def _report(release, frontier, out):
    return main(["report", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "hours,sex", "--tol", "hours=1", "--analysis", "hours ~ age + sex", "--family", "gaussian",
                 "--frontier", str(frontier), "--out", str(out), "--quiet"])


def test_frontier_of_other_quasi_identifiers_is_refused(release, tmp_path, capsys):
    _frontier(tmp_path / "f.csv", ["age", "sex", "race", "education"])
    assert _report(release, tmp_path / "f.csv", tmp_path / "r.html") == 1
    err = capsys.readouterr().err
    assert "'--frontier' file was measured with the quasi-identifiers ['age', 'education', 'race', 'sex']" in err
    assert "['hours', 'sex']" in err
    assert not (tmp_path / "r.html").exists()


def test_frontier_of_the_same_quasi_identifiers_is_drawn(release, tmp_path):
    _frontier(tmp_path / "f.csv", ["sex", "hours"])
    assert _report(release, tmp_path / "f.csv", tmp_path / "r.html") == 0
    assert "frontier:" in (tmp_path / "r.html").read_text()
