"""``synthmi disclosure`` when a continuous quasi-identifier is matched exactly and nothing matches.

A new user's trial (nu1, statsmodels' ``randhie``): ``educdec`` (years of education, a few imputed
fractional values, so drafted continuous) was given no ``--tol``; DA-MI draws it on a continuous scale,
so no released record equalled any target and the release scored 0 expected matches, "no match: 1.0000"
-- zero risk by construction of the matching rule, printed without a word. The command now warns,
naming the continuous QIs matched exactly and the option that sets their closeness.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("exact")
    rng = np.random.default_rng(3)
    n = 300
    orig = pd.DataFrame({"sex": rng.choice(["F", "M"], n), "educ": np.round(rng.normal(12, 2, n), 3),
                         "y": rng.normal(size=n).round(3)})
    orig.to_csv(d / "o.csv", index=False)
    (d / "syn").mkdir()
    for j in range(2):
        c = orig.copy()
        c["educ"] = c["educ"] + rng.normal(0, 0.3, n)  # synthesized on a continuous scale
        c.to_csv(d / "syn" / f"copy_0{j + 1}.csv", index=False)
    return d


def _run(files, tmp_path, *extra):
    return main(["disclosure", "--original", str(files / "o.csv"), "--synthetic", str(files / "syn"),
                 "--qi", "sex,educ", *extra, "--out", str(tmp_path / "r.json"), "--quiet"])


def test_warns_when_exact_matching_of_a_continuous_qi_leaves_no_match(files, tmp_path, capsys):
    assert _run(files, tmp_path) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "'educ'" in captured.err and "--tol educ=" in captured.err
    assert "by construction" in captured.err


def test_no_warning_with_a_tolerance(files, tmp_path, capsys):
    assert _run(files, tmp_path, "--tol", "educ=1") == 0
    assert "warning:" not in capsys.readouterr().err


def test_key_tables_warn_on_exact_continuous_keys_and_group_with_ngroups_keys(files, tmp_path, capsys):
    """The key tables (DiSCO, repU, ...) compare keys exactly: with educ synthesized on a continuous scale they
    read 0 by construction (randhie DA-MI, new-user review). The command warns, naming the key; with
    --ngroups-keys 5 (synthpop's) educ is cut into 5 pooled-quantile groups, recorded in the JSON, and the
    key tables see shared keys (iS 1: every original group occurs in the copies)."""
    import json

    assert _run(files, tmp_path, "--tol", "educ=1", "--target", "y") == 0
    err = capsys.readouterr().err
    assert "key 'educ' occur nowhere in the original" in err and "--ngroups-keys" in err
    d = json.loads((tmp_path / "r.json").read_text())["attribute_disclosure"]
    assert d["summary"]["iS"] == 0.0 and d["settings"]["warnings"]
    assert _run(files, tmp_path, "--tol", "educ=1", "--target", "y", "--ngroups-keys", "5", "--overwrite") == 0
    assert "occur nowhere" not in capsys.readouterr().err
    d = json.loads((tmp_path / "r.json").read_text())["attribute_disclosure"]
    assert d["settings"]["key_groups"]["educ"]["groups"] == 5 and d["settings"]["warnings"] == []
    assert d["summary"]["iS"] == 1.0


@pytest.mark.parametrize("extra, needle", [(["--ngroups-keys", "1", "--target", "y"], "integer >= 2"),
                                           (["--ngroups-keys", "5"], "without --target")])
def test_ngroups_keys_bad_input_is_one_line(files, tmp_path, capsys, extra, needle):
    assert _run(files, tmp_path, *extra) != 0
    err = capsys.readouterr().err
    assert "'--ngroups-keys'" in err and needle in err and "Traceback" not in err
