"""Reviewing a Dask release from the command line: ``synthesize --engine dask`` writes
``copy_XX/part.NNNNN.parquet`` and metadata.json; ``disclosure``, ``utility`` and ``analyse``
read that directory (and a Parquet ``--original``) and give the figures they give on the same
copies written as a CSV release with a CSV original.
"""
import json
import shutil
import warnings

import pandas as pd
import pytest

pytest.importorskip("dask.dataframe")

from synthmi.cli import main  # noqa: E402
from synthmi.data import load_adult  # noqa: E402
from synthmi.synthetic import SyntheticData  # noqa: E402

COLS = ["age", "sex", "education", "income"]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A DA-MI Dask release of 400 Adult rows (Parquet in, Parquet copies out), and the same
    copies, read independently with pandas, written as a CSV release beside a CSV original."""
    d = tmp_path_factory.mktemp("dask_review")
    small = load_adult()[COLS].iloc[:400].reset_index(drop=True)
    small.to_parquet(d / "in.parquet", index=False)
    small.to_csv(d / "in.csv", index=False)
    out = d / "d_dami"
    args = ["synthesize", "--data", str(d / "in.parquet"), "--engine", "dask", "--qi", "age,sex",
            "--keep", "education,income", "--method", "dami", "--mask", "age:K=3,sigma=3", "--m", "2",
            "--seed", "1", "--param", "draws=60", "--accept-diagnostics", "--out", str(out), "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert main(args) == 0
    meta = json.loads((out / "metadata.json").read_text())
    copies = [pd.read_parquet(out / f"copy_{i:02d}").reset_index(drop=True) for i in (1, 2)]
    SyntheticData(copies=copies, method=meta["method"], quasi_identifiers=meta["quasi_identifiers"],
                  rule=meta["rule"], spec=meta["spec"], fingerprint=meta["fingerprint"]).to_dir(d / "d_csv")
    return d, out, meta, copies


def test_dask_metadata_records_what_the_review_reads(release):
    d, out, meta, copies = release
    # the keys of SyntheticData.metadata the review reads, with a count-only fingerprint (no pass for an HMAC)
    assert meta["engine"] == "dask" and meta["rule"] == "partial" and meta["structure"] == {}
    assert meta["fingerprint"] == {"columns": sorted(COLS), "n_rows": 400, "hmac": None}
    assert meta["spec"]["columns"]["age"]["role"] == "quasi_identifier"
    assert meta["spec"]["columns"]["income"]["role"] == "keep"
    assert {"python", "pandas", "numpy"} <= set(meta["versions"])
    assert set(meta["dtypes"]) == set(COLS) and meta["dtypes"]["sex"]["dtype"] == "category"
    assert meta["params"]["masks"]["age"]["K"] == 3  # masks recorded as their to_dict, not a repr
    syn = SyntheticData.from_dir(out)
    assert syn.m == 2 and syn.rule == "partial" and syn.quasi_identifiers == ["age", "sex"]
    for got, ref in zip(syn.copies, copies):
        # same rows in the same (original record) order; levels restored as recorded
        assert list(got["sex"].cat.categories) == meta["dtypes"]["sex"]["categories"]
        pd.testing.assert_frame_equal(got.astype({c: object for c in COLS[1:]}),
                                      ref.astype({c: object for c in COLS[1:]}), check_exact=True)


def _run(verb, original, synthetic, out, *extra):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([verb, "--original", str(original), "--synthetic", str(synthetic), "--out", str(out),
                     "--quiet", *extra]) == 0
    return json.loads(out.read_text())


def test_review_verbs_give_the_csv_release_figures(release):
    d, out, meta, copies = release
    pq = _run("disclosure", d / "in.parquet", out, d / "dis_pq.json")
    cs = _run("disclosure", d / "in.csv", d / "d_csv", d / "dis_csv.json")
    # the same copies and the same original: the same matches, figure for figure (no randomness)
    assert pq["per_copy"] == cs["per_copy"]
    assert len(pq["per_copy"]) == 2 and pq["per_copy"][0]["expected_matches"] > 0
    assert pd.read_csv(d / "dis_pq.records.csv").equals(pd.read_csv(d / "dis_csv.records.csv"))
    pq = _run("utility", d / "in.parquet", out, d / "ut_pq.json", "--seed", "3")
    cs = _run("utility", d / "in.csv", d / "d_csv", d / "ut_csv.json", "--seed", "3")
    assert pq["pmse"]["summary"]["rows"] == cs["pmse"]["summary"]["rows"]
    assert pq["pmse"]["mean_pmse"] == cs["pmse"]["mean_pmse"] > 0
    pq = _run("analyse", d / "in.parquet", out, d / "an_pq.json", "--formula", "income ~ age + sex")
    cs = _run("analyse", d / "in.csv", d / "d_csv", d / "an_csv.json", "--formula", "income ~ age + sex")
    pq.pop("original", None), cs.pop("original", None)
    assert pq == cs


def test_incomplete_parquet_release_and_wrong_original_fail_in_one_line(release, tmp_path, capsys):
    d, out, meta, copies = release
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    shutil.rmtree(broken / "copy_02")
    capsys.readouterr()
    assert main(["disclosure", "--original", str(d / "in.parquet"), "--synthetic", str(broken),
                 "--out", str(tmp_path / "r.json"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'--synthetic'" in err and "copy_02" in err and "is missing" in err
    assert not (tmp_path / "r.json").exists()
    # a Parquet original that is not the data the copies were made from: the row count is checked
    pd.read_parquet(d / "in.parquet").iloc[:399].to_parquet(tmp_path / "short.parquet", index=False)
    assert main(["utility", "--original", str(tmp_path / "short.parquet"), "--synthetic", str(out),
                 "--out", str(tmp_path / "u.json"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'--original'" in err and "399 rows" in err and "400" in err
    # a file named .parquet that is not Parquet: refused naming --original, its content never quoted
    (tmp_path / "fake.parquet").write_text("secret,1\n")
    assert main(["utility", "--original", str(tmp_path / "fake.parquet"), "--synthetic", str(out),
                 "--out", str(tmp_path / "u.json"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'--original'" in err and "secret" not in err
