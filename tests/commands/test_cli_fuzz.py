"""Fuzzing the command line with messy CSVs (issue 30).

Random small files with repeated or odd column names (case, spaces, commas, accents, Python
keywords), UTF-8 or Latin-1 text, random missing-value markers and column types go through
``synthesize --method cart``, ``utility`` and ``disclosure``. Whatever the file:

* the exit code is 0 with valid outputs, or 1 with a one-line error naming a file, a column
  or an option; never a Python traceback;
* no file appears that the user did not name (the copies and metadata.json in --out, the
  --out JSON and its visibly derived .records.csv);
* no value of a column the user did not release reaches any output, and the copies hold
  exactly the released columns.

Deterministic (``derandomize=True``) and small, so CI sees the same examples every run.
"""
from __future__ import annotations

import csv
import io
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from synthmi.cli import main

NAMES = ["age", "Age", "age ", "sex", "income, household", "x y", "class", "région", "wt", "age"]
MARKERS = ["", "NA", "?", ".", "-9"]
KINDS = ["int", "float", "text", "binary"]


@st.composite
def messy_csv(draw):
    n = draw(st.integers(25, 45))
    k = draw(st.integers(2, 4))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=k, max_size=k))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=k, max_size=k))
    marker = draw(st.sampled_from(MARKERS))
    miss_rate = draw(st.sampled_from([0.0, 0.1]))
    encoding = draw(st.sampled_from(["utf-8", "latin-1"]))
    give_encoding = draw(st.booleans())
    seed = draw(st.integers(0, 10_000))
    n_qi = draw(st.integers(1, min(2, k)))
    keep_mode = draw(st.sampled_from(["first", "rest", "default"]))
    return dict(n=n, names=names, kinds=kinds, marker=marker, miss_rate=miss_rate, encoding=encoding,
                give_encoding=give_encoding, seed=seed, n_qi=n_qi, keep_mode=keep_mode)


def _cells(kind: str, n: int, rng: np.random.Generator) -> list[str]:
    if kind == "int":
        return [str(v) for v in rng.integers(18, 80, n)]
    if kind == "float":
        return [f"{v:.1f}" for v in rng.normal(40, 8, n)]
    if kind == "binary":
        return [str(v) for v in rng.integers(0, 2, n)]
    return [str(v) for v in rng.choice(["José", "Zoë", "Ann", "Bo"], n)]


def _write(case: dict, path: Path) -> tuple[list[list[str]], list[str]]:
    rng = np.random.default_rng(case["seed"])
    n = case["n"]
    cols = [_cells(kind, n, rng) for kind in case["kinds"]]
    for c in cols:
        for i in np.flatnonzero(rng.random(n) < case["miss_rate"]):
            c[i] = case["marker"]
    # a column the user never releases: its values are distinctive tokens
    secret = [f"SECRET{rng.integers(10**6):06d}" for _ in range(n)]
    header = list(case["names"]) + ["secret"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for i in range(n):
        w.writerow([c[i] for c in cols] + [secret[i]])
    path.write_bytes(buf.getvalue().encode(case["encoding"]))
    return cols, secret


def _option_list(names: list[str]) -> str:
    return ",".join(f'"{c}"' if "," in c else c for c in names)


def _check_outcome(rc: int, err: str, names: list[str]) -> None:
    assert "Traceback" not in err, err
    assert rc in (0, 1), (rc, err)
    if rc == 1:
        last = err.strip().splitlines()[-1]
        assert re.match(r"synthmi( [a-z-]+)+: error: ", last), err  # the verb's prefix, as argparse's
        # names a file, a column or an option
        assert ("file" in last or "'--" in last or "--" in last
                or any(f"'{c}'" in last or f"'{c.strip()}'" in last for c in names)), last


@pytest.mark.slow
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=messy_csv())
def test_messy_csv_never_leaks_or_crashes(case, tmp_path_factory, capsys):
    tmp = tmp_path_factory.mktemp("fuzz")
    data = tmp / "in.csv"
    _, secret = _write(case, data)
    names = case["names"]
    qi = list(dict.fromkeys(names[: case["n_qi"]]))
    rest = [c for c in dict.fromkeys(names) if c not in qi]
    # "default": no --keep, so every other column is kept, the identifier-like secret too
    keep = {"first": rest[:1], "rest": rest, "default": None}[case["keep_mode"]]
    out = tmp / "syn"
    argv = ["synthesize", "--data", str(data), "--qi", _option_list(qi), "--method", "cart", "--m", "2",
            "--seed", "1", "--out", str(out), "--quiet"]
    if keep is not None:
        argv += ["--keep", _option_list(keep)]
    if case["marker"] not in ("", "NA"):
        argv += ["--na-values", case["marker"]]
    if case["give_encoding"]:
        argv += ["--encoding", case["encoding"]]
    before = {p for p in tmp.rglob("*")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(argv)
    err = capsys.readouterr().err
    _check_outcome(rc, err, names)
    created = {p for p in tmp.rglob("*")} - before
    if rc == 1:
        assert not [p for p in created if p.is_file()], created
        return
    files = {p.relative_to(tmp).as_posix() for p in created if p.is_file()}
    assert files == {"syn/copy_01.csv", "syn/copy_02.csv", "syn/metadata.json"}, files
    released = qi + (keep if keep is not None else rest + ["secret"])
    # copies are written in the input's --encoding (kept columns byte-identical), recorded in metadata
    enc = json.loads((out / "metadata.json").read_text())["source"].get("copies_encoding") or "utf-8"
    for f in ("copy_01.csv", "copy_02.csv"):
        copy = pd.read_csv(out / f, dtype=str, keep_default_na=False, encoding=enc)
        assert sorted(copy.columns) == sorted(released)
    blob = "".join((out / f).read_text(encoding=enc) for f in ("copy_01.csv", "copy_02.csv")) + (
        out / "metadata.json").read_text(encoding="utf-8")
    assert not any(s in blob for s in secret)  # the never-released column leaks nowhere
    assert str(tmp) not in (out / "metadata.json").read_text()  # no local path in a shared file

    # evaluation verbs on the same files
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["utility", "--original", str(data), "--synthetic", str(out), "--quiet"])
    err = capsys.readouterr().err
    _check_outcome(rc, err, names)
    risk = tmp / "risk.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["disclosure", "--original", str(data), "--synthetic", str(out), "--qi", _option_list(qi),
                   "--out", str(risk), "--quiet"])
    captured = capsys.readouterr()
    _check_outcome(rc, captured.err, names)
    new = {p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file()} - files
    new -= {p.relative_to(tmp).as_posix() for p in before if p.is_file()}
    assert new <= {"risk.json", "risk.records.csv"}, new
    if rc == 0:
        summary = json.loads(risk.read_text())
        text = json.dumps({k: v for k, v in summary.items() if k != "records_csv"})
        assert str(tmp) not in text and not any(s in text for s in secret)
        assert not any(s in (tmp / "risk.records.csv").read_text() for s in secret)
