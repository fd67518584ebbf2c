"""``synthmi synthesize --models auto`` and a spec's ``"models": "auto"`` (synthmi.models.model_choice)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main


def _csv(path, n=800, seed=2):
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 2, n)
    inc = np.exp(rng.normal(1 + 0.5 * z, 0.8, n)).round(2)  # log-normal given z
    pd.DataFrame({"z": np.where(z == 1, "a", "b"), "inc": inc, "x": rng.normal(10 + z, 2, n).round(3)}).to_csv(
        path, index=False)


def test_synthesize_models_auto_records_the_choice(tmp_path, capsys):
    _csv(tmp_path / "d.csv")
    rc = main(["synthesize", "--data", str(tmp_path / "d.csv"), "--qi", "inc,x", "--keep", "z", "--method", "rubin",
               "--models", "auto", "--m", "2", "--seed", "1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "models='auto': column 'inc' ->" in err
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    mc = meta["structure"]["model_choice"]
    assert meta["params"]["models"] == "auto"
    assert mc["columns"]["inc"]["chosen"] != "normal"  # a log-normal column: normal fails its margin
    assert mc["columns"]["inc"]["candidates"][0]["candidate"] == "normal"
    assert meta["spec"]["models"] == mc["models"]  # the release's spec carries the chosen models


def test_spec_models_auto(tmp_path, capsys):
    _csv(tmp_path / "d.csv")
    assert main(["spec", "--data", str(tmp_path / "d.csv"), "--qi", "inc", "--keep", "z,x",
                 "--out", str(tmp_path / "s.json"), "--quiet"]) == 0
    spec = json.loads((tmp_path / "s.json").read_text())
    spec["models"] = "auto"
    (tmp_path / "s.json").write_text(json.dumps(spec))
    rc = main(["synthesize", "--data", str(tmp_path / "d.csv"), "--spec", str(tmp_path / "s.json"), "--method",
               "rubin", "--m", "2", "--seed", "1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 0, err
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert set(meta["structure"]["model_choice"]["columns"]) == {"inc"}


def test_models_option_needs_a_sequential_method(tmp_path, capsys):
    _csv(tmp_path / "d.csv")
    rc = main(["synthesize", "--data", str(tmp_path / "d.csv"), "--qi", "inc", "--keep", "z", "--method", "cart",
               "--models", "auto", "--out", str(tmp_path / "out")])
    assert rc != 0
    assert "'--models' option is for dami, rubin" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
