"""The holdout (issue 26): ``synthesize --holdout-share``, ``disclosure --holdout`` and membership inference."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from _frames import wage_frame
from synthmi.cli import main
from synthmi.commands._common import split_holdout


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("holdout")
    wage_frame(300, seed=3).to_csv(d / "w.csv", index=False)
    rc = main(["synthesize", "--data", str(d / "w.csv"), "--qi", "age,sex", "--keep", "edu,hours,y", "--method",
               "cart", "--m", "2", "--seed", "4", "--holdout-share", "0.2", "--out", str(d / "syn"), "--quiet"])
    assert rc == 0
    return d


def test_synthesize_records_positions_and_fits_on_the_rest(release):
    meta = json.loads((release / "syn" / "metadata.json").read_text())
    h = meta["source"]["holdout"]
    assert h["share"] == 0.2 and h["n_rows_original"] == 300 and len(h["positions"]) == 60
    assert all(isinstance(i, int) for i in h["positions"]) and h["positions"] == sorted(set(h["positions"]))
    assert meta["source"]["n_rows"] == 240 and meta["fingerprint"]["n_rows"] == 240
    # the copies are row-aligned with the training rows: the kept columns are theirs, verbatim
    train, held = split_holdout(pd.read_csv(release / "w.csv"), h)
    copy = pd.read_csv(release / "syn" / "copy_01.csv")
    assert len(copy) == len(train) == 240 and len(held) == 60
    pd.testing.assert_frame_equal(copy[["edu", "hours", "y"]], train[["edu", "hours", "y"]])


def test_same_seed_same_holdout(release, tmp_path):
    rc = main(["synthesize", "--data", str(release / "w.csv"), "--qi", "age,sex", "--keep", "edu,hours,y",
               "--method", "cart", "--m", "2", "--seed", "4", "--holdout-share", "0.2", "--out", str(tmp_path / "s"),
               "--quiet"])
    assert rc == 0
    a = json.loads((release / "syn" / "metadata.json").read_text())["source"]["holdout"]
    b = json.loads((tmp_path / "s" / "metadata.json").read_text())["source"]["holdout"]
    assert a == b


def test_disclosure_uses_the_recorded_holdout(release, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["disclosure", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "age,sex", "--out", str(out), "--quiet"]) == 0
    d = json.loads(out.read_text())
    mi = d["membership_inference"]
    assert mi["holdout"] == "the holdout recorded with the copies"
    for attack in ("distance", "domias"):
        f = mi[attack]
        assert 0.0 <= f["membership_auc_ci_low"] <= f["membership_auc"] <= f["membership_auc_ci_high"] <= 1.0
        assert {"membership_tpr_at_fpr_0.01", "membership_tpr_at_fpr_0.1", f"{attack}_auc"} <= set(f)
    assert "holdout" in d["dcr"]["baseline"]
    assert "Membership inference, distance attack" in capsys.readouterr().out
    csv = tmp_path / "r.csv"
    assert main(["disclosure", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "age,sex", "--out", str(csv), "--records", str(tmp_path / "rec.csv"), "--quiet"]) == 0
    table = pd.read_csv(csv)
    assert {"membership_distance", "membership_domias", "dcr"} <= set(table["measure"])
    assert len(pd.read_csv(tmp_path / "rec.csv")) == 240


def test_disclosure_with_a_holdout_file_and_without_one(tmp_path, capsys):
    full = wage_frame(300, seed=5)
    train, hold = full.iloc[:200].reset_index(drop=True), full.iloc[200:].reset_index(drop=True)
    train.to_csv(tmp_path / "t.csv", index=False)
    hold.to_parquet(tmp_path / "h.parquet")
    assert main(["synthesize", "--data", str(tmp_path / "t.csv"), "--qi", "age,sex", "--keep", "edu,hours,y",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(tmp_path / "syn"), "--quiet"]) == 0
    base = ["disclosure", "--original", str(tmp_path / "t.csv"), "--synthetic", str(tmp_path / "syn"), "--qi", "age,sex"]
    assert main([*base, "--holdout", str(tmp_path / "h.parquet"), "--out", str(tmp_path / "a.json"), "--quiet"]) == 0
    a = json.loads((tmp_path / "a.json").read_text())["membership_inference"]
    assert a["holdout"] == "--holdout" and a["distance"]["n_non_members"] == 100
    capsys.readouterr()
    # without a holdout: said in the output, not skipped silently
    assert main([*base, "--out", str(tmp_path / "b.json"), "--quiet"]) == 0
    b = json.loads((tmp_path / "b.json").read_text())["membership_inference"]
    assert b["holdout"] is None and "--holdout-share" in b["note"] and "--holdout FILE" in b["note"]
    io = capsys.readouterr()
    assert "membership inference needs a holdout" in io.out + io.err
    # a holdout lacking a column of the copies
    hold.drop(columns="hours").to_csv(tmp_path / "bad.csv", index=False)
    assert main([*base, "--holdout", str(tmp_path / "bad.csv"), "--out", str(tmp_path / "c.json"), "--quiet"]) == 1
    assert "'--holdout' file lacks columns of the copies: ['hours']" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--method", "cart", "--holdout-share", "1.5"], "must be a share in (0, 1)"),
    (["--method", "cart", "--holdout-share", "0"], "must be a share in (0, 1)"),
    (["--method", "dpsyn", "--holdout-share", "0.2"], "not available for the DP method 'dpsyn'"),
])
def test_holdout_share_bad_input(release, tmp_path, capsys, argv, message):
    rc = main(["synthesize", "--data", str(release / "w.csv"), "--qi", "age,sex", *argv, "--out",
               str(tmp_path / "x"), "--quiet"])
    assert rc == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # refused before anything is written


def test_disclosure_refuses_a_file_of_another_row_count(release, tmp_path, capsys):
    pd.read_csv(release / "w.csv").iloc[:250].to_csv(tmp_path / "short.csv", index=False)
    assert main(["disclosure", "--original", str(tmp_path / "short.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "age,sex", "--out", str(tmp_path / "r.json"), "--quiet"]) == 1
    assert "records a holdout drawn from 300 rows" in capsys.readouterr().err


def test_tune_holdout_share_bad_input(release, tmp_path, capsys):
    rc = main(["tune", "--data", str(release / "w.csv"), "--qi", "age,sex", "--keep", "edu,hours,y",
               "--analysis", "hours ~ age + sex", "--family", "gaussian", "--target", "membership_auc<=0.55",
               "--holdout-share", "2", "--out", str(tmp_path / "t.json")])
    assert rc == 1
    assert "'--holdout-share' option must be a share in (0, 1)" in capsys.readouterr().err


def test_report_reads_the_recorded_holdout(release, tmp_path):
    page = tmp_path / "r.html"
    assert main(["report", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "age,sex", "--analysis", "hours ~ age + sex", "--family", "gaussian", "--out", str(page),
                 "--quiet"]) == 0
    section = page.read_text().split("<section id='attacks'>", 1)[1].split("</section>", 1)[0]
    assert "distance: AUC" in section and "reference: original released as is" in section
    assert "reference: independent release" in section


def test_saved_model_keeps_the_holdout(release, tmp_path):
    # a model fitted with --holdout-share draws copies that record the same holdout (and read the
    # training rows of --original)
    base = ["synthesize", "--data", str(release / "w.csv"), "--qi", "age,sex", "--keep", "edu,hours,y",
            "--method", "rubin", "--m", "2", "--seed", "4", "--holdout-share", "0.2", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "a"), "--save-model", str(tmp_path / "model")]) == 0
    assert main(["synthesize", "--model", str(tmp_path / "model"), "--original", str(release / "w.csv"), "--m", "2",
                 "--seed", "5", "--out", str(tmp_path / "b"), "--quiet"]) == 0
    a = json.loads((tmp_path / "a" / "metadata.json").read_text())["source"]["holdout"]
    b = json.loads((tmp_path / "b" / "metadata.json").read_text())["source"]["holdout"]
    assert a == b
    train, _ = split_holdout(pd.read_csv(release / "w.csv"), b)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "b" / "copy_01.csv")[["edu", "hours", "y"]],
                                  train[["edu", "hours", "y"]])


def test_disclosure_refuses_the_training_rows_as_holdout(release, tmp_path, capsys):
    """Fail closed: giving the file the copies were made from (or a superset) as --holdout makes the
    'non-members' members, and the attack then reports guessing (AUC 0.5) for any release -- measured
    before this check: distance AUC 0.50 (0.69 against the true holdout) and DOMIAS 0.34 for a CART
    release whose kept columns are the training rows verbatim."""
    full = wage_frame(300, seed=5)
    full.iloc[:200].to_csv(tmp_path / "t.csv", index=False)
    assert main(["synthesize", "--data", str(tmp_path / "t.csv"), "--qi", "age,sex", "--keep", "edu,hours,y",
                 "--method", "cart", "--m", "2", "--seed", "1", "--out", str(tmp_path / "syn"), "--quiet"]) == 0
    base = ["disclosure", "--original", str(tmp_path / "t.csv"), "--synthetic", str(tmp_path / "syn"),
            "--qi", "age,sex", "--quiet"]
    capsys.readouterr()
    assert main([*base, "--holdout", str(tmp_path / "t.csv"), "--out", str(tmp_path / "a.json")]) == 1
    err = capsys.readouterr().err
    assert "'--holdout' option" in err and "100% of its records" in err and not (tmp_path / "a.json").exists()
    # the recorded release: the full input file given as --holdout holds its 240 training rows too
    assert main(["disclosure", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"),
                 "--qi", "age,sex", "--holdout", str(release / "w.csv"), "--out", str(tmp_path / "b.json"),
                 "--quiet"]) == 1
    assert "80% of its records" in capsys.readouterr().err


def test_report_takes_the_attack_options(release, tmp_path, capsys):
    """report --secret / --link-aux reach anonymeter's attacks (issue 26 follow-up): only the named secret is
    attacked; a column not in the release and the options without a holdout are refused by name."""
    page = tmp_path / "r.html"
    args = ["report", "--original", str(release / "w.csv"), "--synthetic", str(release / "syn"), "--qi", "age,sex",
            "--analysis", "hours ~ age + sex", "--family", "gaussian", "--quiet"]
    assert main(args + ["--out", str(page), "--secret", "hours", "--link-aux", "age:sex"]) == 0
    section = page.read_text().split("<section id='attacks'>", 1)[1].split("</section>", 1)[0]
    assert "inference[hours]" in section and "inference[edu]" not in section and "inference[y]" not in section
    assert main(args + ["--out", str(tmp_path / "r2.html"), "--secret", "nope"]) != 0
    assert "'--secret' / '--link-aux' options name columns not in the release: ['nope']" in capsys.readouterr().err
    w = pd.read_csv(release / "w.csv").iloc[:240]
    w.to_csv(tmp_path / "train.csv", index=False)
    from synthmi.synthetic import SyntheticData

    syn = SyntheticData.from_dir(release / "syn")
    # a release without a recorded holdout (the copies saved again, without the holdout record)
    bare = tmp_path / "bare"
    bare.mkdir()
    for i, c in enumerate(syn.copies):
        c.to_csv(bare / f"copy_{i + 1}.csv", index=False)
    assert main(["report", "--original", str(tmp_path / "train.csv"), "--synthetic", str(bare), "--qi", "age,sex",
                 "--analysis", "hours ~ age + sex", "--family", "gaussian", "--quiet", "--out",
                 str(tmp_path / "r3.html"), "--secret", "hours"]) != 0
    assert "there is none: give --holdout FILE" in capsys.readouterr().err
