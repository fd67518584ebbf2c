"""CLI polish: the verbs are listed with examples; errors are one line unless --debug."""
from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from synthmi import commands
from synthmi.cli import build_parser, main

VERBS = sorted(i.name for i in pkgutil.iter_modules(commands.__path__) if not i.name.startswith("_"))


def test_top_level_help_lists_every_verb_and_examples(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "synthmi demo" in out and "synthmi report" in out
    for verb in VERBS:
        assert f"\n    {verb}" in out, verb
    assert {"demo", "report"} <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_each_verb_help_has_examples(verb, capsys):
    with pytest.raises(SystemExit) as e:
        main([verb, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"synthmi {verb}" in out


def test_no_verb_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "VERB" in capsys.readouterr().out


def test_errors_are_one_line_without_traceback(tmp_path, capsys):
    rc = main(["demo", "--m", "1", "--out", str(tmp_path / "d"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("\n") == 1 and err.startswith("synthmi demo: error: ") and "Traceback" not in err
    assert "'--m'" in err and "--debug" in err


@pytest.mark.parametrize("argv", [["--debug", "demo"], ["demo", "--debug"]])
def test_debug_shows_the_exception(tmp_path, argv):
    argv = argv + ["--m", "1", "--out", str(tmp_path / "d"), "--quiet"]
    with pytest.raises(ValueError, match="'--m' option"):
        main(argv)


def test_unexpected_exceptions_are_one_line_too(monkeypatch, capsys):
    parser = build_parser()
    args = parser.parse_args(["demo", "--quiet"])

    def boom(_args):
        raise RuntimeError("disk\nfull")

    monkeypatch.setattr("synthmi.cli.build_parser", lambda: _Fixed(parser, args, boom))
    assert main(["demo"]) == 1
    err = capsys.readouterr().err
    assert err == "synthmi demo: error: RuntimeError: disk full (run with --debug for a traceback)\n"


class _Fixed:
    """A parser stand-in returning preset args whose verb raises."""

    def __init__(self, parser, args, func):
        self.parser, self.args = parser, args
        self.args.func = func

    def parse_args(self, argv):
        return self.args

    def print_help(self):  # pragma: no cover
        self.parser.print_help()


@pytest.mark.slow
def test_console_script_runs_as_a_process():
    proc = subprocess.run([sys.executable, "-m", "synthmi.cli", "report", "--original", "/nonexistent.csv",
                           "--synthetic", "/nonexistent", "--out", "/tmp/x.html"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_utility_and_analyse_verbs_run_on_written_copies(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    from synthmi.models.cart import CartSynthesizer

    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame({
        "age": rng.normal(40, 10, n).round(),
        "sex": pd.Categorical(rng.choice(["F", "M"], n), categories=["F", "M"]),
        "y": pd.Categorical(rng.choice(["no", "yes"], n), categories=["no", "yes"]),
    })
    src = tmp_path / "orig.csv"
    df.to_csv(src, index=False)
    CartSynthesizer().fit(df, quasi_identifiers=["age", "sex"]).sample(3, random_state=2).to_dir(tmp_path / "syn")
    assert main(["utility", "--original", str(src), "--synthetic", str(tmp_path / "syn"), "--tables", "1,2",
                 "--out", str(tmp_path / "u.csv")]) == 0
    out = capsys.readouterr().out
    assert "mean S_pMSE" in out and "age:sex" in out
    assert pd.read_csv(tmp_path / "u.csv")["way"].tolist().count(2) == 3
    assert main(["analyse", "--original", str(src), "--synthetic", str(tmp_path / "syn"), "--formula", "y ~ age + sex",
                 "--family", "logit", "--out", str(tmp_path / "a.csv")]) == 0
    out = capsys.readouterr().out
    assert "mean CI overlap" in out
    assert {"est_orig", "ci_overlap"} <= set(pd.read_csv(tmp_path / "a.csv").columns)


@pytest.mark.parametrize("argv, needle", [
    (["report", "--original", "adult"], "--synthetic"),
    (["nosuchverb"], "invalid choice"),
    (["demo", "--m", "x"], "invalid int value"),
])
def test_usage_errors_are_one_line(argv, needle, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "usage:" not in err


@pytest.mark.slow
def test_quiet_prints_one_summary_line_per_step_in_every_verb(tmp_path, capsys):
    """With --quiet each verb that reads data still ends each step with one line on stderr
    (the card: progress through fit, draws and evaluation; one summary line per step with
    --quiet); lines within a step (per copy, per column) are left out."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(4)
    n = 200
    df = pd.DataFrame({"age": rng.integers(20, 70, n).astype(float), "sex": rng.choice(["F", "M"], n),
                       "y": rng.integers(0, 2, n)})
    src = tmp_path / "orig.csv"
    df.to_csv(src, index=False)
    syn = str(tmp_path / "syn")
    o = str(src)
    runs = {
        "synthesize": (["synthesize", "--data", o, "--qi", "age,sex", "--method", "cart", "--m", "3", "--seed", "1",
                        "--out", syn], ["fitted in", "drew 3 copies", "wrote 3 copies"]),
        "utility": (["utility", "--original", o, "--synthetic", syn, "--tables", "1,2"],
                    ["pMSE (logit) of 3 copies in", "one/two-way tables of 3 copies in"]),
        "analyse": (["analyse", "--original", o, "--synthetic", syn, "--formula", "y ~ age + sex", "--family", "logit"],
                    ["fitted the original and 3 copies"]),
        "disclosure": (["disclosure", "--original", o, "--synthetic", syn, "--qi", "age,sex", "--target", "y",
                        "--out", str(tmp_path / "d.json")],
                       # without a holdout the attacks that need one are said to be missing, not skipped silently
                       ["matched 200 targets against 3 copies in", "attribute disclosure of 'y' in",
                        "no membership inference and no singling-out", "wrote"]),
        "subgroups": (["subgroups", "--data", o, "--qi", "age,sex", "--k0", "3", "--out", str(tmp_path / "s.json")],
                      ["labelled 200 records (k0 = 3) in", "wrote"]),
        "report": (["report", "--original", o, "--synthetic", syn, "--qi", "age,sex", "--analysis", "y ~ age + sex",
                    "--family", "logit", "--out", str(tmp_path / "r.html")], ["evaluated 1 release", "wrote"]),
        "spec": (["spec", "--data", o, "--qi", "age,sex", "--out", str(tmp_path / "spec.json")],
                 ["drafted a spec of 3 columns"]),
        "dp bayes": (["dp", "bayes", "--n", "50", "--k", "20", "--eps", "1", "--out", str(tmp_path / "dp.json")],
                     ["wrote"]),
    }
    for i, (verb, (argv, expected)) in enumerate(runs.items()):
        # --quiet before the verb and after it
        assert main(["--quiet", *argv] if i % 2 else [*argv, "--quiet"]) == 0, verb
        err = [line for line in capsys.readouterr().err.splitlines() if "warning" not in line]
        assert len(err) == len(expected), (verb, err)
        for line, want in zip(err, expected):
            assert line.startswith(f"synthmi {verb}: ") and want in line, (verb, err)


@pytest.mark.slow
def test_python_dash_m_synthmi_runs_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "synthmi", "dp", "sigma", "--eps", "1", "--delta", "1e-5",
                           "--marginals", "3"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert proc.returncode == 0, proc.stderr
    float(proc.stdout)


def test_utility_disclosure_subgroups_out_format_follows_the_extension(tmp_path, capsys):
    """``--out util.json`` used to receive CSV (json.load failed) while ``disclosure --out``
    wrote JSON: now .json is the result's to_dict() as strict JSON, .csv its table, and any
    other extension is refused before anything is computed or written."""
    import json

    import numpy as np
    import pandas as pd

    from synthmi.synthetic import SyntheticData

    rng = np.random.default_rng(3)
    n = 120
    df = pd.DataFrame({"age": rng.integers(20, 70, n).astype(float), "sex": rng.choice(["F", "M"], n),
                       "y": rng.integers(0, 2, n)})
    copies = [df.assign(age=df["age"].sample(frac=1.0, random_state=j).to_numpy()) for j in range(2)]
    src, syn = tmp_path / "orig.csv", tmp_path / "syn"
    df.to_csv(src, index=False)
    SyntheticData(copies=copies, method="test", quasi_identifiers=["age", "sex"]).to_dir(syn)
    o, s = str(src), str(syn)

    def strict(path):
        return json.loads(path.read_text(), parse_constant=lambda t: pytest.fail(f"non-JSON token {t}"))

    # utility: .json holds the pMSE's and the tables' to_dict(); .csv the per-table S_pMSE as before
    assert main(["utility", "--original", o, "--synthetic", s, "--tables", "1", "--out", str(tmp_path / "u.json"),
                 "--quiet"]) == 0
    d = strict(tmp_path / "u.json")
    assert set(d) == {"pmse", "utility_tables"} and "summary" in d["pmse"]
    assert {r["variables"] for r in d["utility_tables"]["tables"]} == {"age", "sex", "y"}
    assert main(["utility", "--original", o, "--synthetic", s, "--tables", "1", "--out", str(tmp_path / "u.csv"),
                 "--quiet"]) == 0
    tab = pd.read_csv(tmp_path / "u.csv")
    assert list(tab.columns[:6]) == ["variables", "way", "df", "pmse", "s_pmse", "released_unchanged"]
    # analyse: the same rule
    assert main(["analyse", "--original", o, "--synthetic", s, "--formula", "y ~ age", "--family", "logit",
                 "--out", str(tmp_path / "a.json"), "--quiet"]) == 0
    assert "summary" in strict(tmp_path / "a.json")
    # disclosure / subgroups: .csv is the summary table (the per-record CSV beside it as before)
    assert main(["disclosure", "--original", o, "--synthetic", s, "--qi", "age,sex", "--out",
                 str(tmp_path / "r.csv"), "--quiet"]) == 0
    summ = pd.read_csv(tmp_path / "r.csv")
    assert summ["group"].tolist() == ["all"] and "mean_risk" in summ.columns
    assert (tmp_path / "r.records.csv").exists()
    capsys.readouterr()
    # any other extension: one error naming --out, nothing written
    for argv in (["utility", "--original", o, "--synthetic", s],
                 ["analyse", "--original", o, "--synthetic", s, "--formula", "y ~ age", "--family", "logit"],
                 ["disclosure", "--original", o, "--synthetic", s, "--qi", "age,sex"],
                 ["subgroups", "--data", o, "--qi", "age,sex", "--k0", "3"]):
        assert main([*argv, "--out", str(tmp_path / "x.txt"), "--quiet"]) == 1
        err = capsys.readouterr().err
        assert "The '--out' option must name a .json file" in err and "x.txt" in err, err
        assert not list(tmp_path.glob("x.*"))


@pytest.mark.parametrize("verb, usage, runtime", [
    (["synthesize"], ["--no-such-option"], ["--qi", "nosuch", "--method", "cart", "--m", "2", "--quiet"]),
    (["dp", "sigma"], ["--eps", "1", "--no-such-option"], ["--eps", "-1", "--delta", "1e-5", "--marginals", "3"]),
])
def test_usage_and_runtime_errors_of_a_verb_share_its_prefix(tmp_path, capsys, verb, usage, runtime):
    """argparse printed 'synthmi synthesize: error: ...' for a usage error and the handler 'synthmi: error:
    ...' for a refused value (new-user review); both now carry the verb, as argparse's does."""
    prefix = "synthmi " + " ".join(verb) + ": error: "
    with pytest.raises(SystemExit) as exc:
        main([*verb, *usage])
    assert exc.value.code == 2
    usage_err = capsys.readouterr().err
    csv = tmp_path / "d.csv"
    csv.write_text("age,sex\n30,F\n40,M\n50,F\n", encoding="utf-8")
    data = ["--data", str(csv), "--out", str(tmp_path / "syn")] if verb == ["synthesize"] else []
    assert main([*verb, *data, *runtime]) == 1
    runtime_err = capsys.readouterr().err
    for err in (usage_err, runtime_err):
        assert err.startswith(prefix) and err.count("\n") == 1, err
    assert "nosuch" in runtime_err or "'--eps'" in runtime_err
