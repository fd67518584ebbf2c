"""The tree conditional (method 'tree', synthmi.models.tree) from the command line: the spec's ``models``
select it as they select any method, and DA-MI masks a tree column under the joint predictive."""
from __future__ import annotations

import json

from _frames import wage_frame
from synthmi.cli import main


def test_spec_models_select_the_tree_and_masks_combine_with_it(tmp_path, capsys):
    wage_frame(300, seed=3).to_csv(tmp_path / "w.csv", index=False)
    assert main(["spec", "--data", str(tmp_path / "w.csv"), "--qi", "hours,sex", "--keep", "age,edu,y",
                 "--out", str(tmp_path / "s.json"), "--quiet"]) == 0
    spec = json.loads((tmp_path / "s.json").read_text())
    spec["models"] = {"hours": "tree", "sex": {"method": "tree"}}
    (tmp_path / "s.json").write_text(json.dumps(spec))
    capsys.readouterr()
    rc = main(["synthesize", "--data", str(tmp_path / "w.csv"), "--spec", str(tmp_path / "s.json"),
               "--method", "dami", "--mask", "hours:K=1,sigma=5", "--mask", "sex:alpha=2", "--m", "2",
               "--seed", "4", "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    meta = json.loads((tmp_path / "o" / "metadata.json").read_text())
    text = json.dumps(meta)
    assert '"method": "tree"' in text and '"family": "tree"' in text
    assert '"gibbs"' in text  # the masked tree columns are drawn from the joint predictive
