"""``synthmi tune`` with a spec whose continuous quasi-identifier has a transform.

A new user's trial (nu1, statsmodels' ``fair_pt``): the spec's ``models`` gave age ``{"transform":
"rank"}`` (the remedy DA-MI's own warning suggests for a misfitting normal model); ``tune`` fitted,
searched for 30 s and then died on its first normal mask for age ("Column 'age' has the 'rank'
transform and a normal mask ... Drop one of the two"), writing nothing. DA-MI cannot combine a
normal mask with a transform, so tune leaves such a column unmasked, says so, and searches the rest.
"""
from __future__ import annotations

import json

from _frames import wage_frame
from synthmi.cli import main


def test_tune_leaves_a_transformed_column_unmasked(tmp_path, capsys):
    wage_frame(200, seed=5).to_csv(tmp_path / "w.csv", index=False)
    assert main(["spec", "--data", str(tmp_path / "w.csv"), "--qi", "hours,sex", "--keep", "age,edu,y",
                 "--analysis", "hours ~ age + sex", "--family", "gaussian", "--out", str(tmp_path / "s.json"),
                 "--quiet"]) == 0
    spec = json.loads((tmp_path / "s.json").read_text())
    assert spec["columns"]["hours"]["kind"] == "continuous"
    spec["models"] = {"hours": {"transform": "rank"}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    capsys.readouterr()
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"), "--tol", "hours=1",
               "--target", "expected_matches<=1000", "--continuous-grid", "1:5", "--alpha-grid", "2",
               "--m-search", "2", "--m", "2", "--replicates", "1", "--n-confirm", "1", "--jobs", "1",
               "--max-table-s-pmse", "1000", "--out", str(tmp_path / "t.json"), "--trace", str(tmp_path / "tr.json")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "'hours'" in err and "transform" in err and "unmasked" in err
    tuned = json.loads((tmp_path / "t.json").read_text())
    assert "hours" not in (tuned.get("masks") or {})
    assert tuned["models"] == {"hours": {"transform": "rank"}}  # the user's model is kept
    trace = json.loads((tmp_path / "tr.json").read_text())
    tried = [json.loads(c["masks"]) for c in trace["trace"]]
    assert tried and all("hours" not in m for m in tried)
    assert any("sex" in m for m in tried)  # the other QI was searched


def test_tune_progress_shows_every_mask(tmp_path, capsys):
    # nu1's trial on fair_pt (4 masked QIs): the progress line cut the masks' JSON at 100 characters,
    # so candidates that differed only in the last QI's mask printed as the same setting with
    # different figures ('... "occupation": {"alpha": 1.0' four times, S_pMSE 71.2 / 71 / 52.5)
    wage_frame(200, seed=6).to_csv(tmp_path / "w.csv", index=False)
    rc = main(["tune", "--data", str(tmp_path / "w.csv"), "--qi", "age,hours,sex,edu", "--keep", "y",
               "--analysis", "y ~ age + sex", "--family", "logit", "--tol", "age=1", "--tol", "hours=1",
               "--target", "expected_matches<=1000", "--continuous-grid", "1:5", "--alpha-grid", "2",
               "--m-search", "2", "--m", "2", "--replicates", "1", "--n-confirm", "1", "--jobs", "1",
               "--max-table-s-pmse", "1000", "--out", str(tmp_path / "t.json")])
    err = capsys.readouterr().err
    assert rc == 0, err
    lines = [ln.split("] ", 1)[1] for ln in err.splitlines() if ln.startswith("synthmi tune: [")]
    assert lines
    decoder = json.JSONDecoder()
    shown = [decoder.raw_decode(ln)[0] for ln in lines]  # each line starts with the whole masks' JSON
    assert max(len(m) for m in shown) == 4  # the last raise masks all four QIs, and the line says so
