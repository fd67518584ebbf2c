"""``synthmi disclosure``: anonymeter's three risks against the holdout (issue 26 item 1)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from _frames import wage_frame
from synthmi.cli import main


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("attacks")
    wage_frame(300, seed=3).to_csv(d / "w.csv", index=False)
    assert main(["synthesize", "--data", str(d / "w.csv"), "--qi", "age,sex", "--keep", "edu,hours,y", "--method",
                 "cart", "--m", "2", "--seed", "4", "--holdout-share", "0.2", "--out", str(d / "syn"),
                 "--quiet"]) == 0
    return d


def _run(release, tmp_path, *extra):
    return main(["disclosure", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "age,sex", "--n-attacks", "60", *extra, "--quiet"])


def test_the_three_risks_with_the_recorded_holdout(release, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert _run(release, tmp_path, "--out", str(out)) == 0
    a = json.loads(out.read_text())["anonymeter"]
    assert a["control"] == "the holdout recorded with the copies"
    # defaults: both singling-out modes, the QIs split in halves, the spec's kept columns as secrets
    labels = {"singling_out[univariate]", "singling_out[multivariate]", "linkability[k=1]",
              "inference[edu]", "inference[hours]", "inference[y]"}
    assert labels <= set(a)
    assert a["linkability[k=1]"]["settings"]["aux_columns"] == [["age"], ["sex"]]
    assert a["inference[y]"]["settings"]["aux_columns"] == ["age", "sex"]  # the intruder knows the QIs
    for label in labels:
        f, key = a[label]["figures"], a[label]["key"]
        assert 0.0 <= f[key + "_ci_low"] <= f[key + "_ci_high"] <= 1.0 and 0.0 <= f[key] <= 1.0
        assert f["copies"] == 2 and f["n_attacks"] <= 60
    # 240 training rows against a 60-row control: the size correction is an extrapolation, and it is said
    assert "fitted extrapolation" in a["control_size_note"] and "60 records" in a["control_size_note"]
    printed = capsys.readouterr()
    assert "singling_out[multivariate] risk" in printed.out and "the intruder knows" in printed.out
    # the MC error is the per-copy mean's (sd / sqrt(M)), printed beside that mean, not beside the pooled risk
    assert "per-copy mean" in printed.out and "(between-copy MC error " in printed.out
    assert "fitted extrapolation" in printed.out + printed.err
    # the membership note: the kept columns (edu, hours, y here) are attacked too and expose members verbatim
    assert ("the attacks use every released column, the kept ones included" in printed.out
            and "not a flaw of the synthesizer" in printed.out)
    csv = tmp_path / "r.csv"
    assert _run(release, tmp_path, "--out", str(csv), "--records", str(tmp_path / "rec.csv")) == 0
    assert labels <= set(pd.read_csv(csv)["measure"])


def test_secret_and_link_aux_options(release, tmp_path):
    out = tmp_path / "r.json"
    assert _run(release, tmp_path, "--secret", "hours", "--secret", "edu", "--link-aux", "age,edu:sex",
                "--out", str(out)) == 0
    a = json.loads(out.read_text())["anonymeter"]
    assert {k for k in a if k.startswith("inference[")} == {"inference[hours]", "inference[edu]"}
    assert a["linkability[k=1]"]["settings"]["aux_columns"] == [["age", "edu"], ["sex"]]
    # --target is the default secret
    out2 = tmp_path / "r2.json"
    assert _run(release, tmp_path, "--target", "y", "--out", str(out2)) == 0
    a = json.loads(out2.read_text())["anonymeter"]
    assert {k for k in a if k.startswith("inference[")} == {"inference[y]"}


@pytest.mark.parametrize("extra, message", [
    (["--link-aux", "age,sex"], "'--link-aux' option must be two column lists split by ':'"),
    (["--link-aux", "age:"], "'--link-aux' option must be two column lists split by ':'"),
    (["--secret", "nope"], "name columns not in the release: ['nope']"),
    (["--n-attacks", "0"], "'--n-attacks' option must be >= 1"),
])
def test_bad_options(release, tmp_path, capsys, extra, message):
    assert _run(release, tmp_path, *extra, "--out", str(tmp_path / "x.json")) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_without_a_holdout_the_output_says_how_to_get_one(tmp_path, capsys):
    wage_frame(200, seed=5).to_csv(tmp_path / "t.csv", index=False)
    assert main(["synthesize", "--data", str(tmp_path / "t.csv"), "--qi", "age,sex", "--keep", "edu,hours,y",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(tmp_path / "syn"), "--quiet"]) == 0
    assert main(["disclosure", "--original", str(tmp_path / "t.csv"), "--synthetic", str(tmp_path / "syn"),
                 "--qi", "age,sex", "--out", str(tmp_path / "b.json")]) == 0
    a = json.loads((tmp_path / "b.json").read_text())["anonymeter"]
    assert a["control"] is None and "--holdout-share" in a["note"]
    io = capsys.readouterr()
    assert "no singling-out, linkability or inference risk" in io.out + io.err
    assert "Singling out, linkability and inference risks (anonymeter): not computed" in io.out
