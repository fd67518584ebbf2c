"""Improper (plug-in) DA-MI / Rubin MI from the command line, as a new user reaches it: the spec's
``models`` give every quasi-identifier a tree and ``--param proper=false`` (the route every other
synthesizer parameter takes) turns the plug-in on; the release records it, the same seed gives the
same files, the input file is untouched, and ``utility`` / ``report`` read the copies. A refusal
names the columns and says where a command-line user gives the models (the spec's "models")."""
from __future__ import annotations

import json

import pytest

from _frames import wage_frame
from synthmi.cli import main


def _spec(tmp_path, capsys, models: dict | None) -> tuple[str, str]:
    data = tmp_path / "w.csv"
    wage_frame(300, seed=3).to_csv(data, index=False)
    assert main(["spec", "--data", str(data), "--qi", "hours,sex,edu", "--keep", "age,y",
                 "--analysis", "hours ~ age", "--family", "gaussian",
                 "--out", str(tmp_path / "s.json"), "--quiet"]) == 0
    spec = json.loads((tmp_path / "s.json").read_text())
    if models is not None:
        spec["models"] = models
    (tmp_path / "s.json").write_text(json.dumps(spec))
    capsys.readouterr()
    return str(data), str(tmp_path / "s.json")


def test_param_proper_false_gives_a_recorded_reproducible_plug_in_release(tmp_path, capsys):
    data, spec = _spec(tmp_path, capsys, {"hours": "tree", "sex": "tree", "edu": "tree"})
    before = (tmp_path / "w.csv").read_bytes()
    args = ["synthesize", "--data", data, "--spec", spec, "--method", "dami", "--mask", "sex:p=0.8",
            "--mask", "hours:K=1,sigma=5", "--param", "proper=false", "--m", "2", "--seed", "4", "--quiet"]
    for out in ("o1", "o2"):
        rc = main(args + ["--out", str(tmp_path / out)])
        assert rc == 0, capsys.readouterr().err
    for i in (1, 2):  # same seed -> identical files
        assert (tmp_path / "o1" / f"copy_0{i}.csv").read_bytes() == (tmp_path / "o2" / f"copy_0{i}.csv").read_bytes()
    assert (tmp_path / "w.csv").read_bytes() == before
    meta = json.loads((tmp_path / "o1" / "metadata.json").read_text())
    assert meta["params"]["proper"] is False and meta["structure"]["proper"] is False
    assert meta["diagnostics"]["sampler"] == "plug-in"
    assert main(["utility", "--original", data, "--synthetic", str(tmp_path / "o1"), "--spec", spec,
                 "--seed", "1", "--out", str(tmp_path / "u.json"), "--quiet"]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "u.json").read_text())
    assert main(["report", "--original", data, "--synthetic", f"improper={tmp_path / 'o1'}", "--spec", spec,
                 "--out", str(tmp_path / "r.html"), "--quiet"]) == 0, capsys.readouterr().err
    assert '&quot;proper&quot;: false' in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("models, named", [
    (None, "'hours': 'normal'"),                       # the spec names no models: the defaults are parametric
    ({"hours": "tree", "sex": "logit", "edu": "tree"}, "'sex': 'logit'"),
])
def test_refusal_names_the_columns_and_the_spec_route(tmp_path, capsys, models, named):
    data, spec = _spec(tmp_path, capsys, models)
    rc = main(["synthesize", "--data", data, "--spec", spec, "--method", "rubin", "--param", "proper=false",
               "--m", "2", "--seed", "4", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and not (tmp_path / "o").exists()
    assert "The 'proper' parameter of method 'rubin' can be False only" in err and named in err
    # what to do, in the user's terms: which columns need a tree, where the models go, or the other setting
    assert "'sex': 'tree'" in err and "the spec's \"models\"" in err and "keep proper=True" in err


def test_models_auto_refusal_says_where_the_models_go(tmp_path, capsys):
    data, spec = _spec(tmp_path, capsys, None)
    rc = main(["synthesize", "--data", data, "--spec", spec, "--method", "rubin", "--models", "auto",
               "--param", "proper=false", "--m", "2", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and not (tmp_path / "o").exists()
    assert "models='auto'" in err and "--models tree" in err and "the spec's \"models\"" in err


@pytest.mark.parametrize("whole", ["cli", "spec"])
def test_models_tree_for_every_qi_is_the_per_column_spec(tmp_path, capsys, whole):
    """``--models tree`` (or the spec's ``"models": "tree"``, synthpop's ``method = "cart"``) is the
    spec that names a tree for each quasi-identifier: same seed, byte-identical copies."""
    data, spec = _spec(tmp_path, capsys, {"hours": "tree", "sex": "tree", "edu": "tree"})
    args = ["synthesize", "--data", data, "--method", "dami", "--mask", "sex:p=0.8", "--mask", "hours:K=1,sigma=5",
            "--param", "proper=false", "--m", "2", "--seed", "4", "--quiet"]
    assert main(args + ["--spec", spec, "--out", str(tmp_path / "per_column")]) == 0, capsys.readouterr().err
    (tmp_path / "b").mkdir()
    if whole == "cli":
        _, plain = _spec(tmp_path / "b", capsys, None)
        extra = ["--spec", plain, "--models", "tree"]
    else:
        _, plain = _spec(tmp_path / "b", capsys, "tree")  # type: ignore[arg-type]
        extra = ["--spec", plain]
    assert main(args + extra + ["--out", str(tmp_path / "whole")]) == 0, capsys.readouterr().err
    for i in (1, 2):
        assert (tmp_path / "whole" / f"copy_0{i}.csv").read_bytes() == \
            (tmp_path / "per_column" / f"copy_0{i}.csv").read_bytes()
    meta = json.loads((tmp_path / "whole" / "metadata.json").read_text())
    assert {c: m["method"] for c, m in meta["structure"]["models"].items()} == dict.fromkeys(["hours", "sex", "edu"], "tree")


def test_spec_models_must_be_an_object_or_a_whole_setting_word(tmp_path, capsys):
    data, spec = _spec(tmp_path, capsys, "normal")  # type: ignore[arg-type]
    rc = main(["synthesize", "--data", data, "--spec", spec, "--method", "rubin", "--m", "2",
               "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and not (tmp_path / "o").exists()
    assert "'models' of the spec" in err and '"auto", "tree", "cart"' in err and "'normal'" in err


def test_synthesize_help_shows_the_improper_example_and_it_parses(capsys):
    import re
    import shlex

    from synthmi.cli import build_parser

    with pytest.raises(SystemExit):
        main(["synthesize", "--help"])
    out = capsys.readouterr().out
    lines = out.split("# improper DA-MI", 1)[1].splitlines()[1:]
    lines = [ln.strip() for ln in lines[:next(i for i, ln in enumerate(lines[1:], 1) if ln.strip().startswith("#"))]]
    command = re.sub(r"\\\s+", " ", " ".join(ln for ln in lines if not ln.startswith("#")))  # continued lines
    assert command.startswith("synthmi synthesize") and "--param proper=false" in command
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert args.param == ["proper=false"] and args.method == "dami" and args.spec == "spec.json"
    assert args.models == "tree"


def test_engine_dask_refuses_a_spec_instead_of_dropping_it(tmp_path, capsys):
    """Found trying proper=False on a Parquet file: the Dask path dropped the spec silently (its tree
    models, so the plug-in refusal asked for trees the spec already gave; its kinds; its roles, so an
    excluded column was released). Fail closed, naming the option."""
    pytest.importorskip("dask.dataframe")
    data, spec = _spec(tmp_path, capsys, {"hours": "tree", "sex": "tree", "edu": "tree"})
    s = json.loads((tmp_path / "s.json").read_text())
    s["columns"]["y"]["role"] = "excluded"
    (tmp_path / "s.json").write_text(json.dumps(s))
    import pandas as pd

    pd.read_csv(data).to_parquet(tmp_path / "w.parquet", index=False)
    rc = main(["synthesize", "--data", str(tmp_path / "w.parquet"), "--engine", "dask", "--spec", spec,
               "--method", "rubin", "--m", "2", "--seed", "4", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc != 0 and not (tmp_path / "o").exists(), err
    assert "The '--spec' option is not available with --engine dask" in err and "--engine pandas" in err


@pytest.mark.parametrize("word", ["tree", "auto"])
def test_a_whole_setting_word_fills_the_columns_the_spec_does_not_name(tmp_path, capsys, word):
    """``--models tree`` beside a spec naming a model for one column: the spec's entry wins for it and
    the word fills the others, as ``--models auto`` always did (the new-user review found ``tree``
    overriding the spec silently, and the metadata's spec contradicting its structure)."""
    data, spec = _spec(tmp_path, capsys, {"hours": "normal"})
    rc = main(["synthesize", "--data", data, "--spec", spec, "--method", "rubin", "--models", word,
               "--m", "2", "--seed", "4", "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 0, capsys.readouterr().err
    meta = json.loads((tmp_path / "o" / "metadata.json").read_text())
    used = {c: m["method"] for c, m in meta["structure"]["models"].items()}
    assert used["hours"] == "normal" and meta["spec"]["models"]["hours"] == "normal"
    if word == "tree":
        assert used == {"hours": "normal", "sex": "tree", "edu": "tree"}
