"""Issue 30: one test per row of the issue's table, through the command line.

Each of these failed on the code before the issue (run against it with PYTHONPATH pointing at
that checkout): the original released, a duplicated column renamed and leaked, reading faults
in pandas' words, a wrong bound, hints missing, Python warnings with source lines, local paths
in shared outputs, a slow failing call, kept columns re-spelt.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from _frames import wage_frame
from synthmi.cli import main


_frame = wage_frame


@pytest.fixture()
def csv(tmp_path):
    path = tmp_path / "wage.csv"
    _frame().to_csv(path, index=False)
    return path


def _err(capsys) -> str:
    return capsys.readouterr().err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert lines and re.match(r"synthmi( [a-z-]+)+: error: ", lines[-1]) and "Traceback" not in err, err
    return lines[-1]


# row 1: risk-dami without --mask on a complete file released the input as "synthetic" copies
@pytest.mark.slow
def test_row1_risk_dami_without_masks_on_complete_data_is_not_released(csv, tmp_path, capsys):
    out = tmp_path / "syn"
    rc = main(["synthesize", "--data", str(csv), "--qi", "age,sex,edu", "--method", "risk-dami", "--m", "2",
               "--param", "n_iter=10", "--accept-diagnostics", "--seed", "1", "--out", str(out), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "--mask" in err and "--allow-unmodified" in err
    assert not out.exists() or not list(out.glob("copy_*.csv"))
    # the explicit choice: written, and recorded as such (an imputation release of the original)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rc = main(["synthesize", "--data", str(csv), "--qi", "age,sex,edu", "--method", "risk-dami", "--m", "2",
                   "--param", "n_iter=10", "--accept-diagnostics", "--seed", "1", "--out", str(out), "--quiet",
                   "--allow-unmodified"])
    assert rc == 0
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["structure"]["unmodified"]["allowed"] is True and meta["source"]["allow_unmodified"] is True


# row 2: two columns named 'age' were read as age and age.1; age.1 released unchanged
def test_row2_duplicate_column_names_are_refused_not_renamed(tmp_path, capsys):
    df = _frame()
    path = tmp_path / "dup.csv"
    lines = ["age,sex,edu,age,y"] + [f"{a},{s},{e},{a},{y}" for a, s, e, y in zip(df.age, df.sex, df.edu, df.y)]
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "syn"
    rc = main(["synthesize", "--data", str(path), "--qi", "age,sex", "--method", "cart", "--m", "2",
               "--out", str(out), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'age' (2 times)" in err and "rename or remove" in err and "age.1" not in err
    assert not out.exists() or not list(out.iterdir())
    # names that differ only by case or spaces, too
    path2 = tmp_path / "case.csv"
    _frame().rename(columns={"hours": "Age "}).to_csv(path2, index=False)
    rc = main(["synthesize", "--data", str(path2), "--qi", "age,sex", "--method", "cart", "--m", "2",
               "--out", str(tmp_path / "syn2"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'age' and 'Age '" in err and "differ only by case or spaces" in err


# row 3: a Latin-1 file: "'utf-8' codec can't decode byte 0xe9 in position 18", no file, no option
def test_row3_latin1_file_names_file_option_and_encoding(tmp_path, capsys):
    df = _frame()
    df["town"] = np.where(np.arange(len(df)) % 2 == 0, "José", "Zoë")
    path = tmp_path / "latin.csv"
    path.write_bytes(df.to_csv(index=False).encode("latin-1"))
    rc = main(["synthesize", "--data", str(path), "--qi", "age,sex", "--keep", "town,y", "--method", "cart",
               "--m", "2", "--out", str(tmp_path / "syn"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'--data' file" in err and str(path) in err and "--encoding cp1252" in err
    assert "codec can't decode" not in err
    out = tmp_path / "syn2"
    assert main(["synthesize", "--data", str(path), "--qi", "age,sex", "--keep", "town,y", "--method", "cart",
                 "--m", "2", "--encoding", "cp1252", "--out", str(out), "--quiet"]) == 0
    # the copies are written in the input's encoding (kept columns byte-identical, item 6)
    assert set(pd.read_csv(out / "copy_01.csv", encoding="cp1252")["town"]) == {"José", "Zoë"}
    # the evaluation verbs read the original with the encoding recorded with the copies
    assert main(["utility", "--original", str(path), "--synthetic", str(out), "--quiet"]) == 0


# row 4: an empty file: "No columns to parse from file"
@pytest.mark.parametrize("content, words", [("", "is empty"), ("age,sex\n", "has a header line but no data rows")])
def test_row4_empty_or_header_only_file(tmp_path, capsys, content, words):
    path = tmp_path / "empty.csv"
    path.write_text(content)
    rc = main(["synthesize", "--data", str(path), "--qi", "age", "--method", "cart", "--m", "2",
               "--out", str(tmp_path / "syn"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and words in err and "'--data' file" in err and "No columns to parse" not in err


# row 5: --m 0 said ">= 1", then --m 1 failed with ">= 2"
@pytest.mark.parametrize("method", ["cart", "risk-dami"])
def test_row5_first_bound_is_the_real_one(csv, tmp_path, capsys, method):
    rc = main(["synthesize", "--data", str(csv), "--qi", "age,sex", "--method", method, "--m", "0",
               "--out", str(tmp_path / "syn"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'--m' option must be >= 2" in err and "Got --m 0" in err


# row 6: a kept column entirely missing, a constant QI: a clear error but no hint
def test_row6_empty_kept_column_and_constant_qi_say_what_to_drop(tmp_path, capsys):
    df = _frame()
    df["blank"] = np.nan
    df["country"] = "NZ"
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    rc = main(["synthesize", "--data", str(path), "--qi", "age,sex", "--keep", "blank,y", "--method", "cart",
               "--m", "2", "--out", str(tmp_path / "a"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'blank'" in err and "entirely missing" in err and "Drop it from --keep" in err
    rc = main(["synthesize", "--data", str(path), "--qi", "age,country", "--keep", "y", "--method", "cart",
               "--m", "2", "--out", str(tmp_path / "b"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'country'" in err and "constant" in err and "Drop it from --qi" in err


# row 7: `make demo` printed a Python UserWarning with base.py:312 and the source line
def test_row7_library_warnings_are_one_line_messages(monkeypatch, capsys):
    from synthmi.workflow import demo

    def _demo(out, m=5, seed=2026, progress=False, **kw):
        # a real library warning raised inside a fit (DA-MI without masks), as the demo's fits raise theirs
        from synthmi.models.dami import DAMISynthesizer

        DAMISynthesizer(progressbar=False).fit(_frame(40), ["age"], keep=["sex"])
        raise RuntimeError("stop after the fit")

    monkeypatch.setattr(demo, "run_demo", _demo)
    rc = main(["demo", "--out", "unused-demo-dir", "--quiet"])
    err = _err(capsys)
    warn = [line for line in err.splitlines() if "warning" in line.lower()]
    assert rc == 1 and warn, err
    assert warn[0].startswith("synthmi demo: warning: method 'dami' has no masks")
    assert ".py:" not in err and "UserWarning" not in err and "self._fit" not in err
    # --debug keeps Python's own form
    with pytest.raises(RuntimeError):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            main(["demo", "--out", "unused-demo-dir", "--quiet", "--debug"])
    assert any("has no masks" in str(w.message) for w in caught)


# row 8: report and metadata.json held the local path of the confidential input
@pytest.mark.slow
def test_row8_no_local_path_in_report_or_metadata(csv, tmp_path, capsys):
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--method", "cart",
                 "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    meta = (out / "metadata.json").read_text()
    assert str(tmp_path) not in meta and json.loads(meta)["source"]["data"] == "wage.csv"
    html = tmp_path / "report.html"
    assert main(["report", "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex",
                 "--analysis", "y ~ age + sex", "--family", "logit", "--out", str(html), "--quiet",
                 "--no-references"]) == 0
    text = html.read_text()
    assert str(tmp_path) not in text and "wage.csv" in text
    risk = tmp_path / "risk.json"
    assert main(["disclosure", "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex",
                 "--out", str(risk), "--quiet"]) == 0
    assert str(tmp_path) not in json.dumps({k: v for k, v in json.loads(risk.read_text()).items()
                                            if k != "records_csv"})


# row 9: any failing call paid for heavy imports before the error (PyMC then; scikit-learn and the
# copula's numba on the code before this issue: 2.2 s CPU for a typo in --qi, 0.66 s after)
@pytest.mark.slow
@pytest.mark.parametrize("method, heavy", [
    ("cart", ("pymc", "pytensor", "dask", "matplotlib", "sklearn", "numba", "scipy.stats")),
    ("dami", ("pymc", "pytensor", "dask", "matplotlib", "sklearn")),
])
def test_row9_a_failing_call_answers_before_heavy_imports(csv, tmp_path, method, heavy):
    code = ("import sys; from synthmi.cli import main; "
            f"rc = main(['synthesize', '--data', {str(csv)!r}, '--qi', 'zz', '--method', {method!r}, '--m', '2', "
            f"'--out', {str(tmp_path / 'syn')!r}, '--quiet']); "
            f"print(rc, sorted(m for m in {heavy!r} if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.stdout.strip() == "1 []", res.stdout + res.stderr
    assert "'--qi' option names columns not in the data: ['zz']" in res.stderr


def test_row9_help_and_the_cli_import_nothing_heavy(tmp_path):
    code = ("import sys; from synthmi.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pymc', 'pytensor', 'dask', 'matplotlib', 'sklearn', 'numba', 'scipy') "
            "if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.stdout.strip().splitlines()[-1] == "[]", res.stdout + res.stderr


# row 10: kept columns "released unchanged" in value but not in text (40.0 written 40)
def test_row10_kept_columns_keep_their_text(tmp_path, capsys):
    df = _frame()
    path = tmp_path / "d.csv"
    text = df.to_csv(index=False).splitlines()
    # hours as the agency writes it: whole numbers with a decimal point, a trailing zero, a gap
    hours = [f"{h:.2f}" if i % 3 else f"{round(h)}.0" for i, h in enumerate(df["hours"])]
    hours[5] = ""
    rows = [text[0]] + [",".join(line.split(",")[:3] + [hours[i]] + line.split(",")[4:])
                        for i, line in enumerate(text[1:])]
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(path), "--qi", "age,sex", "--keep", "hours,y", "--method", "cart",
                 "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    for f in sorted(out.glob("copy_*.csv")):
        copy = pd.read_csv(f, dtype=str, keep_default_na=False)
        assert list(copy["hours"]) == list(raw["hours"])  # a diff of the kept column is empty
        assert list(copy["y"]) == list(raw["y"])
    # read back, the values are the original's
    from synthmi.synthetic import SyntheticData

    syn = SyntheticData.from_dir(out)
    np.testing.assert_array_equal(syn.copies[0]["hours"].to_numpy(dtype=float),
                                  pd.read_csv(path)["hours"].to_numpy(dtype=float))


# ---- item 2: the other reading faults, in the user's words --------------------------------------
def _xlsx_bytes() -> bytes:
    import zipfile
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
    return buf.getvalue()


@pytest.mark.parametrize("name, content, words", [
    ("book.xlsx", "xlsx", "is an Excel workbook (.xlsx) or a zip archive, not a CSV text file"),
    ("data.csv", b"PAR1\x15\x04\x15\x00\x00PAR1", "is a Parquet file, not a CSV text file"),
    ("data.csv.gz", b"age,sex\n1,F\n", "is named .gz but is not gzip-compressed"),
    ("folder", None, "is a directory; give a CSV file"),
])
def test_files_that_are_not_csv_are_named(tmp_path, capsys, name, content, words):
    path = tmp_path / name
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(_xlsx_bytes() if content == "xlsx" else content)
    rc = main(["synthesize", "--data", str(path), "--qi", "age", "--method", "cart", "--m", "2",
               "--out", str(tmp_path / "syn"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'--data' file" in err and words in err


def test_gzip_with_a_csv_suffix_is_read_as_gzip(tmp_path, capsys):
    import gzip

    path = tmp_path / "data.csv"  # gzip-compressed, named .csv
    path.write_bytes(gzip.compress(_frame().to_csv(index=False).encode()))
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(path), "--qi", "age,sex", "--keep", "hours,y", "--method", "cart",
                 "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    raw = pd.read_csv(path, compression="gzip", dtype=str)
    assert list(pd.read_csv(out / "copy_01.csv", dtype=str)["hours"]) == list(raw["hours"])


def test_unknown_encoding_names_the_option(csv, tmp_path, capsys):
    rc = main(["synthesize", "--data", str(csv), "--qi", "age", "--method", "cart", "--m", "2", "--encoding",
               "klingon", "--out", str(tmp_path / "syn"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'--encoding' option names an unknown encoding, 'klingon'" in err


# ---- item 1: a column under two roles --------------------------------------------------------------
def test_target_that_is_also_a_quasi_identifier_is_refused(csv, tmp_path, capsys):
    out = tmp_path / "syn"
    assert main(["synthesize", "--data", str(csv), "--qi", "age,sex", "--keep", "hours,y", "--method", "cart",
                 "--m", "2", "--seed", "1", "--out", str(out), "--quiet"]) == 0
    rc = main(["disclosure", "--original", str(csv), "--synthetic", str(out), "--qi", "age,sex", "--target", "sex",
               "--out", str(tmp_path / "risk.json"), "--quiet"])
    err = _one_line_error(_err(capsys))
    assert rc == 1 and "'--target' column 'sex' is also in --qi" in err
    assert not (tmp_path / "risk.json").exists()


# ---- item 3: no oversubscribed BLAS ------------------------------------------------------------------
def test_verbs_run_with_one_blas_thread_unless_the_user_says(tmp_path):
    import os

    code = ("import os, numpy, threadpoolctl; from synthmi.cli import _one_blas_thread\n"
            "with _one_blas_thread():\n"
            "    inside = sorted({i['num_threads'] for i in threadpoolctl.threadpool_info()}), "
            "os.environ.get('OPENBLAS_NUM_THREADS')\n"
            "print(inside, os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                             "MKL_NUM_THREADS")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert res.stdout.strip() == "([1], '1') None", res.stdout + res.stderr
    # a user's own setting is left alone
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "OPENBLAS_NUM_THREADS": "2"}, cwd=tmp_path, timeout=120)
    assert res.stdout.strip().endswith("'2') 2"), res.stdout + res.stderr
