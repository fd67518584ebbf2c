"""Bad-input messages a new user met on statsmodels' ``fair`` data (issue 27, C-I): each is one
line naming the option and what was wrong, never a data value. Each test failed before the fix."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from synthmi.cli import main


def _fair_like(n=200, seed=0) -> pd.DataFrame:
    """A small file shaped like statsmodels' fair data, with a constant column."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 60, n).astype(float),
        "educ": rng.choice([9, 12, 14, 16, 20], n),
        "affair": rng.integers(0, 2, n),
        "religious": rng.integers(1, 5, n),
        "const": np.full(n, 5),
    })


@pytest.fixture()
def fair_csv(tmp_path):
    path = tmp_path / "f.csv"
    _fair_like().to_csv(path, index=False)
    return path


def _error_line(capsys) -> str:
    """The one error line (the last line of stderr); the message must not spill onto more lines."""
    err = capsys.readouterr().err
    last = err.rstrip("\n").splitlines()[-1]
    assert re.match(r"synthmi( [a-z-]+)+: error: ", last), err  # the verb's prefix, as argparse's
    return last


def _synth(data, out, *extra):
    return main(["synthesize", "--data", str(data), "--m", "2", "--seed", "1", "--out", str(out), "--quiet", *extra])


# ---------------------------------------------------------------- C: --engine dask given a CSV
def test_dask_engine_on_a_csv_names_data_option_and_file_type(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--engine", "dask", "--method", "rubin", "--qi", "age")
    line = _error_line(capsys)
    assert rc == 1
    assert "'--data' option of --engine dask takes a Parquet file or a directory" in line
    assert "'f.csv', a '.csv' file" in line and "--engine pandas" in line
    # not pyarrow's text (it quotes the local path and the reader's internals)
    assert "magic bytes" not in line and "read_parquet" not in line and str(tmp_path) not in line


# ---------------------------------------------------------------- D: --mask
def test_mask_on_a_misspelt_column_is_named_before_its_keys(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "dami", "--qi", "age,educ", "--mask", "agee:K=3")
    line = _error_line(capsys)
    assert rc == 1 and "The '--mask' option names column 'agee', which is not in the data" in line
    assert "Available columns: ['age', 'educ', 'affair', 'religious', 'const']" in line
    assert "sigma_e" not in line and "NormalMasking" not in line


def test_mask_on_a_column_that_is_not_synthesized(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "dami", "--qi", "age,educ", "--keep", "religious",
                "--mask", "religious:K=2,sigma=1")
    line = _error_line(capsys)
    assert rc == 1 and "names column 'religious', which is not a quasi-identifier" in line and "--qi" in line


def test_mask_without_noise_level_speaks_the_cli_key(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "dami", "--qi", "age,educ", "--mask", "age:K=3")
    line = _error_line(capsys)
    assert rc == 1 and "The '--mask' option for column 'age' (in 'age:K=3') needs the noise level" in line
    assert "sigma=" in line and "sigma_e" not in line and "NormalMasking" not in line


def test_mask_unknown_key_is_named_with_the_accepted_keys(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "dami", "--qi", "age,educ", "--mask", "age:K=3,sigma=3,foo=1")
    line = _error_line(capsys)
    assert rc == 1 and "has an unknown key 'foo'" in line and "accepted keys: K with sigma" in line
    assert "mixes" not in line and "sigma_e'" not in line


@pytest.mark.parametrize("mask", ["age:K=0", "age:K=0,sigma=2", "age:K=-1,sigma=2"])
def test_mask_K_below_one_is_refused(tmp_path, fair_csv, capsys, mask):
    # K is the number of noisy copies W_k = X + e_k (the seeds' DA-MI masking model); K = 0 made
    # no copy and was recorded silently as {'K': 0, 'sigma_e': None}
    out = tmp_path / "o"
    rc = _synth(fair_csv, out, "--method", "dami", "--qi", "age,educ", "--mask", mask)
    line = _error_line(capsys)
    assert rc == 1 and f"The '--mask' value of 'K' for column 'age' (in {mask!r}) must be >= 1" in line
    assert not out.exists()


# ---------------------------------------------------------------- E: constant columns, one rule
def test_constant_qi_advice_does_not_send_it_to_keep_and_the_advice_works(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "cart", "--qi", "const,age")
    line = _error_line(capsys)
    assert rc == 1 and "The '--qi' option names 'const', which is constant" in line
    assert "released unchanged with --keep" not in line and "neither --qi nor --keep takes such a column" in line
    assert "pass --keep naming the columns to release, without 'const'" in line
    # following the advice runs
    assert _synth(fair_csv, tmp_path / "ok", "--method", "cart", "--qi", "age", "--keep", "educ,affair") == 0
    assert list(pd.read_csv(tmp_path / "ok" / "copy_01.csv").columns) == ["age", "educ", "affair"]


def test_constant_keep_column_refused_with_the_same_rule(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "cart", "--qi", "age", "--keep", "const,educ")
    line = _error_line(capsys)
    assert rc == 1 and "The '--keep' option names 'const', which is constant" in line
    assert "neither --qi nor --keep takes such a column" in line and "Drop it from --keep." in line
    # and an explicit --keep without it: the --qi message does not ask for --keep again
    rc = _synth(fair_csv, tmp_path / "o2", "--method", "cart", "--qi", "const,age", "--keep", "educ")
    line = _error_line(capsys)
    assert rc == 1 and line.endswith("Drop it from --qi. (run with --debug for a traceback)")


@pytest.mark.parametrize("roles, message", [
    (["--qi", "age", "--keep", "const,educ"], "The '--keep' option names 'const', which is constant"),
    (["--qi", "const,age", "--keep", "educ"], "The '--qi' option names 'const', which is constant"),
    (["--qi", "age"], "Without '--keep', every column not in --qi is kept; the default keep includes 'const', "
                      "which is constant"),
])
def test_spec_refuses_a_constant_released_column(tmp_path, fair_csv, capsys, roles, message):
    """'synthmi spec' drafted a constant column silently (a constant kept column became a nominal column of
    one level; 'synthesize' then refused it); it is refused as synthesize refuses it, naming the column."""
    out = tmp_path / "s.json"
    rc = main(["spec", "--data", str(fair_csv), *roles, "--out", str(out), "--quiet"])
    line = _error_line(capsys)
    assert rc == 1 and message in line and not out.exists()
    # leaving it out of the released columns drafts the spec
    assert main(["spec", "--data", str(fair_csv), "--qi", "age", "--keep", "educ,affair", "--out", str(out)]) == 0


@pytest.mark.parametrize("role, word", [("keep", "kept"), ("outcome", "outcome"), ("quasi_identifier",
                                                                                    "quasi-identifier")])
def test_tune_spec_names_the_role_of_a_constant_column(tmp_path, fair_csv, capsys, role, word):
    """A constant column given its role by the --spec: the error names the column and that role (it said only
    "Column 'const' of the data is constant")."""
    import json

    from synthmi.spec import ReleaseSpec

    d = ReleaseSpec.draft(_fair_like(), ["age"], ["educ", "affair"]).to_dict()
    d["columns"]["const"] = {"role": role, "kind": "integer", "bounds": [5, 5], "declared": False}
    (tmp_path / "s.json").write_text(json.dumps(d))
    rc = main(["tune", "--data", str(fair_csv), "--spec", str(tmp_path / "s.json"), "--analysis", "affair ~ age",
               "--family", "logit", "--target", "expected_matches<=10", "--out", str(tmp_path / "t.json")])
    line = _error_line(capsys)
    assert rc == 1 and f"The '--spec' file releases 'const' ({word}), which is constant" in line
    assert 'Give it the role "excluded" in the spec.' in line and not (tmp_path / "t.json").exists()


# ---------------------------------------------------------------- H: disclosure column options checked first
@pytest.fixture()
def release(tmp_path, fair_csv):
    out = tmp_path / "syn"
    assert _synth(fair_csv, out, "--method", "cart", "--qi", "age,educ", "--keep", "affair,religious") == 0
    return out


@pytest.mark.parametrize("option, value, message", [
    ("--target", "religous", "The '--target' option names a column not in the release: 'religous'. Available columns:"),
    ("--qi", "age,educc", "The '--qi' option names columns not in the release: ['educc']. Available columns:"),
    ("--by", "relig", "The '--by' option names a column not in the original: 'relig'. Available columns:"),
])
def test_disclosure_validates_columns_before_matching(tmp_path, fair_csv, release, capsys, option, value, message):
    capsys.readouterr()
    qi = value if option == "--qi" else "age,educ"
    args = ["disclosure", "--original", str(fair_csv), "--synthetic", str(release), "--qi", qi,
            "--out", str(tmp_path / "r.json")]
    rc = main(args + ([] if option == "--qi" else [option, value]))
    err = capsys.readouterr().err
    assert rc == 1 and message in err.splitlines()[-1]
    # refused before any work: no matching line was printed, no file written
    assert "matching" not in err and "matched" not in err and not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------- I: dpsyn's undeclared domain
def test_dpsyn_missing_domain_offers_levels_and_bounds_neutrally(tmp_path, fair_csv, capsys):
    out = tmp_path / "dp"
    rc = _synth(fair_csv, out, "--method", "dpsyn", "--qi", "age,affair", "--keep", "educ")
    line = _error_line(capsys)
    assert rc == 1 and "Columns ['age', 'educ', 'affair'] have no declared public domain" in line
    assert "--levels COLUMN=A,B,..." in line and "--bounds COLUMN=LO:HI" in line
    # no form chosen from the private dtypes: the binary 'affair' was told --bounds affair=LO:HI
    assert "--bounds affair" not in line and "--levels affair" not in line and not out.exists()


def test_dpsyn_levels_option_declares_categorical_columns(tmp_path, fair_csv, capsys):
    out = tmp_path / "dp"
    rc = _synth(fair_csv, out, "--method", "dpsyn", "--qi", "age,affair", "--keep", "religious",
                "--levels", "affair=0,1", "--levels", "religious=1,2,3,4", "--bounds", "age=18:60")
    assert rc == 0, capsys.readouterr().err
    copy = pd.read_csv(out / "copy_01.csv")
    assert set(copy["affair"]) <= {0, 1} and set(copy["religious"]) <= {1, 2, 3, 4}


@pytest.mark.parametrize("args, message", [
    (["--levels", "affair"], "The '--levels' option takes COLUMN=A,B,..."),
    (["--levels", "affair=0,1", "--bounds", "affair=0:1"], "both declare column 'affair'"),
])
def test_levels_option_bad_input(tmp_path, fair_csv, capsys, args, message):
    rc = _synth(fair_csv, tmp_path / "dp", "--method", "dpsyn", "--qi", "age,affair", *args)
    assert rc == 1 and message in _error_line(capsys)


def test_levels_option_is_for_dp_methods(tmp_path, fair_csv, capsys):
    rc = _synth(fair_csv, tmp_path / "o", "--method", "cart", "--qi", "age,affair", "--keep", "educ",
                "--levels", "affair=0,1")
    assert rc == 1 and "The '--levels' option is for" in _error_line(capsys)
