"""``synthmi synthesize``: files, reproducibility, roles, dtypes, one-line errors."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.commands.synthesize import METHODS, build_masks, parse_mask, resolve_method
from synthmi.data import load_adult
from synthmi.models.masking import LinearCategoricalMasking, NormalMasking, TransitionMasking
from synthmi.synthetic import SyntheticData

QI = ["age", "sex", "race", "education"]
KEEP = ["income", "marital_status", "relationship", "hours_per_week", "capital_gain", "capital_loss"]


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory):
    df = load_adult(recode=True)[QI + KEEP].sample(2000, random_state=1).reset_index(drop=True)
    path = tmp_path_factory.mktemp("data") / "adult_small.csv"
    df.to_csv(path, index=False)
    return path


def _run(*argv: str) -> int:
    return main(["synthesize", *argv])


def _files(d):
    return {p.name: p.read_bytes() for p in sorted(d.glob("copy_*.csv"))}


@pytest.mark.slow
def test_writes_copies_and_metadata(adult_csv, tmp_path, capsys):
    out = tmp_path / "syn"
    rc = _run("--data", str(adult_csv), "--qi", ",".join(QI), "--method", "cart", "--m", "3", "--seed", "1", "--out", str(out))
    assert rc == 0
    assert sorted(_files(out)) == ["copy_01.csv", "copy_02.csv", "copy_03.csv"]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["method"] == "cart" and meta["seed"] == 1 and meta["m"] == 3
    assert meta["quasi_identifiers"] == QI
    assert meta["source"]["keep"] == KEEP
    err = capsys.readouterr().err
    assert "fitting method 'cart'" in err and "wrote 3 copies" in err


def test_quiet_prints_one_summary_line_per_step(adult_csv, tmp_path, capsys):
    rc = _run("--data", str(adult_csv), "--qi", "age,sex", "--method", "cart", "--m", "2", "--seed", "1",
              "--out", str(tmp_path / "q"), "--quiet")
    assert rc == 0
    lines = capsys.readouterr().err.splitlines()
    # fit, draw, write: one line each, nothing per copy or column
    assert len(lines) == 3
    assert "fitted in" in lines[0] and "drew 2 copies" in lines[1] and "wrote 2 copies" in lines[2]


@pytest.mark.parametrize("extra", [[], ["--param", "proper=true"]])
def test_same_seed_byte_identical_different_seed_differs(adult_csv, tmp_path, extra):
    args = ["--data", str(adult_csv), "--qi", ",".join(QI), "--method", "cart", "--m", "2", "--quiet", *extra]
    assert _run(*args, "--seed", "5", "--out", str(tmp_path / "a")) == 0
    assert _run(*args, "--seed", "5", "--out", str(tmp_path / "b")) == 0
    assert _run(*args, "--seed", "6", "--out", str(tmp_path / "c")) == 0
    a, b, c = (_files(tmp_path / k) for k in "abc")
    assert a == b
    assert all(a[k] != c[k] for k in a)


def test_z_identical_dtypes_and_levels_kept(adult_csv, tmp_path):
    out = tmp_path / "syn"
    assert _run("--data", str(adult_csv), "--qi", ",".join(QI), "--keep", ",".join(KEEP), "--method", "cart",
                "--m", "2", "--seed", "3", "--out", str(out), "--quiet") == 0
    from synthmi.data import load_dataset

    original = load_dataset(str(adult_csv))
    syn = SyntheticData.from_dir(out)
    for cp in syn.copies:
        assert list(cp.columns) == list(original.columns)
        pd.testing.assert_frame_equal(cp[KEEP], original[KEEP])
        assert cp.dtypes.equals(original.dtypes)
        for c in ("sex", "race", "education"):
            assert list(cp[c].cat.categories) == list(original[c].cat.categories)
        assert not cp["age"].equals(original["age"])


def test_only_named_columns_are_released(adult_csv, tmp_path):
    out = tmp_path / "syn"
    assert _run("--data", str(adult_csv), "--qi", "age,sex", "--keep", "income", "--method", "cart", "--m", "2",
                "--seed", "0", "--out", str(out), "--quiet") == 0
    cols = pd.read_csv(out / "copy_01.csv", nrows=1).columns.tolist()
    assert cols == ["age", "sex", "income"]


@pytest.mark.slow
def test_bundled_adult_default_keep(tmp_path):
    out = tmp_path / "syn"
    assert _run("--data", "adult", "--qi", ",".join(QI), "--method", "cart", "--m", "2", "--seed", "0",
                "--out", str(out), "--quiet") == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["source"]["keep"] == KEEP and meta["source"]["n_rows"] == 48842


def test_overwrite_guard(adult_csv, tmp_path, capsys):
    out = tmp_path / "syn"
    base = ["--data", str(adult_csv), "--qi", "age", "--method", "cart", "--seed", "0", "--out", str(out), "--quiet"]
    assert _run(*base, "--m", "3") == 0
    assert _run(*base, "--m", "2") == 1
    assert "already holds output (copy_01.csv, ...); add --overwrite" in capsys.readouterr().err
    assert _run(*base, "--m", "2", "--overwrite") == 0
    assert sorted(_files(out)) == ["copy_01.csv", "copy_02.csv"]  # stale copy_03 removed


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--qi", "age,agee"], "The '--qi' option names columns not in the data: ['agee']"),
        (["--qi", "age", "--keep", "incme"], "The '--keep' option names columns not in the data: ['incme']"),
        (["--qi", "age,sex", "--keep", "sex,income"], "Columns ['sex'] are in both --qi and --keep"),
        # issue 30: the first message states the real bound (every combining rule needs 2 copies)
        (["--qi", "age", "--m", "0"], "The '--m' option must be >= 2"),
        (["--qi", "age", "--method", "gan"], "The '--method' option must be one of"),
        (["--qi", "age", "--param", "min_samples_leaf=0"], "'min_samples_leaf' parameter of method 'cart' must be >= 1"),
        (["--qi", "age", "--param", "depth=3"], "'--param' option names 'depth', which is not a parameter of method 'cart'"),
        (["--qi", "age", "--mask", "age:K=3,sigma=5"], "The '--mask' option is for dami, risk-dami; method 'cart' takes no masks."),
        (["--qi", ""], "The '--qi' option must name at least one column."),
    ],
)
def test_bad_input_one_line_error(adult_csv, tmp_path, capsys, argv, message):
    base = ["--data", str(adult_csv), "--method", "cart", "--seed", "0", "--out", str(tmp_path / "x"), "--quiet"]
    rc = _run(*base, *argv)
    err = capsys.readouterr().err
    assert rc == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("synthmi synthesize: error: ")
    assert message in lines[0]
    assert not (tmp_path / "x").exists()


def test_kept_column_with_missing_values_is_released_unchanged(tmp_path):
    # Adult's workclass is missing for 2,799 records (not in the labour force): a kept
    # column, so the copies carry it exactly, missing values included
    from synthmi.data import load_dataset

    out = tmp_path / "x"
    rc = _run("--data", "adult", "--qi", "age,sex", "--keep", "workclass,hours_per_week", "--method", "cart",
              "--m", "2", "--seed", "2", "--out", str(out), "--quiet")
    assert rc == 0
    copy = SyntheticData.from_dir(out).copies[0]
    orig = load_dataset("adult")
    assert int(copy["workclass"].isna().sum()) == 2799
    pd.testing.assert_series_equal(copy["workclass"].astype(object), orig["workclass"].astype(object))


# ---- --mask parsing ----------------------------------------------------------
def test_parse_mask_values():
    assert parse_mask("age:K=3,sigma=5") == ("age", {"K": 3, "sigma": 5})
    assert parse_mask(" race : p=0.8") == ("race", {"p": 0.8})
    masks = build_masks(["age:K=3,sigma=5", "sex:alpha=2", "race:p=0.8", "bmi:K=2,reliability=0.9"])
    assert masks["age"] == NormalMasking(3, sigma_e=5.0)
    assert masks["sex"] == LinearCategoricalMasking(2.0)
    assert masks["race"] == TransitionMasking(p=0.8)
    assert masks["bmi"] == NormalMasking(2, reliability=0.9)


@pytest.mark.parametrize(
    "text, message",
    [
        ("age", "takes COLUMN:KEY=VALUE"),
        ("age:", "takes COLUMN:KEY=VALUE"),
        (":K=3", "takes COLUMN:KEY=VALUE"),
        ("age:K3", "for column 'age' takes KEY=VALUE pairs"),
        ("age:K=three,sigma=5", "value of 'K' for column 'age' must be a number"),
        ("age:K=3,K=4,sigma=1", "gives 'K' twice"),
        # the key the user typed, not the masking class's parameter (sigma_e of NormalMasking)
        ("age:K=2.5,sigma=5", "The '--mask' value of 'K' for column 'age' (in 'age:K=2.5,sigma=5') must be a whole number"),
        ("age:K=3,sigma=-1", "The '--mask' value of 'sigma' for column 'age' (in 'age:K=3,sigma=-1') must be > 0"),
        ("age:K=3,sigma_e=-1", "The '--mask' value of 'sigma_e' for column 'age' (in 'age:K=3,sigma_e=-1') must be > 0"),
        ("sex:alpha=-1", "The '--mask' value of 'alpha' for column 'sex' (in 'sex:alpha=-1') must be >= 0"),
        ("race:p=1.5", "The '--mask' value of 'p' for column 'race' (in 'race:p=1.5') must be <= 1"),
        ("age:K=3,alpha=1", "mixes keys of a continuous mask (K) and a categorical one (alpha)"),
        ("age:beta=3", "has an unknown key 'beta'; accepted keys: K with sigma"),
        ("age:K=3", "needs the noise level: add sigma=... (> 0) or reliability=..."),
        ("age:K=0", "The '--mask' value of 'K' for column 'age' (in 'age:K=0') must be >= 1"),
    ],
)
def test_malformed_mask(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        build_masks([text])


def test_mask_given_twice():
    with pytest.raises(ValueError, match="given twice for column 'age'"):
        build_masks(["age:K=1,sigma=1", "age:K=2,sigma=1"])



def test_registry_resolves_every_method():
    for name in METHODS:
        cls = resolve_method(name)
        assert hasattr(cls, "fit") and hasattr(cls, "sample")


# --accept-diagnostics: these tests check that masks and seeds reach the synthesizer; on this
# 2,000-row sample the sampler of sex given its alpha = 2 mask stays below the release thresholds
# (R-hat 1.08, bulk ESS 33; the fail-closed check itself is tested in test_cli_faults.py)
DAMI_ARGS = ["--method", "dami", "--mask", "age:K=3,sigma=3", "--mask", "sex:alpha=2", "--mask", "race:p=0.9",
             "--mask", "education:alpha=2", "--m", "2", "--quiet", "--accept-diagnostics"]


@pytest.mark.slow
def test_dami_masks_reach_the_synthesizer_and_seed_reproduces(adult_csv, tmp_path):
    args = ["--data", str(adult_csv), "--qi", ",".join(QI), *DAMI_ARGS]
    assert _run(*args, "--seed", "4", "--out", str(tmp_path / "a")) == 0
    assert _run(*args, "--seed", "4", "--out", str(tmp_path / "b")) == 0
    assert _run(*args, "--seed", "9", "--out", str(tmp_path / "c")) == 0
    a, b, c = (_files(tmp_path / k) for k in "abc")
    assert a == b
    assert all(a[k] != c[k] for k in a)
    meta = json.loads((tmp_path / "a" / "metadata.json").read_text())
    assert meta["method"] == "dami"
    assert meta["params"]["masks"]["age"] == {"type": "normal", "K": 3, "sigma_e": 3.0, "reliability": None}
    assert meta["params"]["masks"]["race"]["p"] == 0.9
    assert meta["params"]["random_state"] == 4  # fit-time W follows --seed
    from synthmi.data import load_dataset

    original = load_dataset(str(adult_csv))
    for cp in SyntheticData.from_dir(tmp_path / "a").copies:
        pd.testing.assert_frame_equal(cp[KEEP], original[KEEP])
        assert cp.dtypes.equals(original.dtypes)


def test_rubin_method_runs(adult_csv, tmp_path):
    out = tmp_path / "r"
    assert _run("--data", str(adult_csv), "--qi", "age,sex", "--keep", "income,hours_per_week", "--method", "rubin",
                "--m", "2", "--seed", "0", "--out", str(out), "--quiet") == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["method"] == "rubin" and meta["params"]["sampler"] == "fast"


def test_bad_mask_through_cli_is_one_line(adult_csv, tmp_path, capsys):
    rc = _run("--data", str(adult_csv), "--qi", "age", "--method", "dami", "--mask", "age:K=3,sigma=-5",
              "--out", str(tmp_path / "x"), "--quiet")
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(lines) == 1
    assert re.search(r"The '--mask' value of 'sigma' for column 'age' \(in 'age:K=3,sigma=-5'\) must be > 0(\.0)?\. "
                     r"Got -5 instead\.", lines[0])
    assert "NormalMasking" not in lines[0] and "sigma_e" not in lines[0]


def test_risk_group_masks():
    masks = build_masks(["age@low:K=3,sigma=2", "age@high:K=1,sigma=8"], groups=("low", "medium", "high"))
    assert masks == {"low": {"age": NormalMasking(3, sigma_e=2.0)}, "medium": {}, "high": {"age": NormalMasking(1, sigma_e=8.0)}}
    with pytest.raises(ValueError, match="names group 'top' for column 'age'; groups are one of low, medium, high"):
        build_masks(["age@top:K=1,sigma=1"], groups=("low", "medium", "high"))
    with pytest.raises(ValueError, match="either all name a risk group"):
        build_masks(["age@low:K=1,sigma=1", "sex:alpha=1"], groups=("low", "medium", "high"))
    with pytest.raises(ValueError, match="groups are not used by this method"):
        build_masks(["age@low:K=1,sigma=1"])


def test_risk_dami_through_cli(adult_csv, tmp_path):
    out = tmp_path / "rk"
    assert _run("--data", str(adult_csv), "--qi", "age,sex", "--keep", "income,hours_per_week", "--method", "risk-dami",
                "--mask", "age:K=2,sigma=3", "--param", "n_iter=60", "--m", "2", "--seed", "0",
                "--out", str(out), "--quiet", "--accept-diagnostics") == 0  # a 60-step chain, kept short for speed
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["method"] == "risk-dami" and meta["params"]["masks"]["age"]["sigma_e"] == 3.0
    assert meta["diagnostics_check"]["accepted"] is True  # ... and flagged as such
    assert len(_files(out)) == 2


def test_metadata_json_is_written_once_by_the_release(adult_csv, tmp_path, monkeypatch):
    # issue 27: the release container writes metadata.json alone; the command passes the source
    # block it adds (SyntheticData.to_dir(source=...)) instead of rewriting the model's file
    from pathlib import Path

    writes = []
    real = Path.write_text

    def counting(self, *args, **kwargs):
        if self.name == "metadata.json":
            writes.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", counting)
    out = tmp_path / "syn"
    assert _run("--data", str(adult_csv), "--qi", ",".join(QI), "--method", "cart", "--m", "2", "--seed", "1",
                "--out", str(out), "--quiet") == 0
    assert writes == [out / "metadata.json"]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["source"] == {"data": "adult_small.csv", "keep": KEEP, "columns": QI + KEEP, "n_rows": 2000}


def test_the_release_records_masks_and_source_itself(tmp_path):
    # the masks as their to_dict() (read back as dicts, not reprs) and the caller's source block,
    # written by SyntheticData without the command line
    copy = pd.DataFrame({"age": [30.0, 41.0], "sex": ["F", "M"]})
    masks = {"age": NormalMasking(K=2, sigma_e=3.0), "sex": LinearCategoricalMasking(alpha=2.0)}
    syn = SyntheticData(copies=[copy, copy], method="dami", params={"masks": masks, "proper": True}, seed=1)
    syn.to_dir(tmp_path, source={"data": "x.csv", "copies_encoding": "latin-1"})
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["params"] == {"masks": {"age": masks["age"].to_dict(), "sex": {"type": "linear", "alpha": 2.0}},
                              "proper": True}
    assert meta["source"] == {"data": "x.csv", "copies_encoding": "latin-1"}
    # per risk subgroup (risk-dami): {group: {column: mask}}
    nested = SyntheticData(copies=[copy], method="risk-dami", params={"masks": {"high": masks}}).metadata()
    assert nested["params"]["masks"]["high"]["sex"] == {"type": "linear", "alpha": 2.0}
    assert "source" not in syn.metadata()


def test_risk_dami_chains_run_in_parallel_processes_by_default():
    """Issue 28: the copula's chains ran in turn on the command line (n_jobs=1); the default is now one
    process per chain up to the cores (the fit is the same whatever n_jobs), an explicit value is kept
    and other methods are left alone."""
    from synthmi.commands.synthesize import _parallel_chains
    from synthmi.models.dami import DAMISynthesizer
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    cases = [({}, 2, 2), ({}, 1, 1), ({}, 8, 2), ({"chains": 4}, 8, 4), ({"chains": 3}, 2, 2),
             ({"n_jobs": 1}, 8, 1), ({}, None, 1)]
    for params, cpus, want in cases:
        p = dict(params)
        _parallel_chains("risk-dami", RiskTargetedSynthesizer, p, cpus)
        assert p["n_jobs"] == want, (params, cpus, p)
    p = {}
    _parallel_chains("dami", DAMISynthesizer, p, 8)
    assert p == {}


def test_allow_unmodified_help_quotes_the_guards_threshold(capsys):
    """The help said 0.5 after the guard moved to 0.9 (found by a new-user review): it reads the constant."""
    from synthmi.models.base import UNMODIFIED_MAX

    with pytest.raises(SystemExit):
        main(["synthesize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"beyond chance by more than {UNMODIFIED_MAX} (Cohen's kappa" in text
