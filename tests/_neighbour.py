"""The neighbour check's command-line runner (the rest lives in :mod:`synthmi.testing.neighbour`,
which a package module below the command line cannot reach: it is re-exported here)."""
from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import pandas as pd

from synthmi.testing.neighbour import (  # noqa: F401  (re-exported for the tests)
    _TIMING,
    CONTINUOUS_SPANS,
    Case,
    Release,
    _files,
    assert_alike,
    remove_record,
    run_python,
    substitute_record,
)
from synthmi.testing.neighbour import check_neighbours as _check_neighbours


def run_cli(case: Case, data: pd.DataFrame, workdir: Path) -> Release:
    """Write ``data`` to ``workdir/data.csv`` and run the case's command line in-process."""
    from synthmi.cli import main

    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "data.csv"
    data.to_csv(path, index=False)
    out = workdir / "out"
    argv = case.cli(path, out)
    o, e = io.StringIO(), io.StringIO()
    # Python warnings the command does not print itself (e.g. a reader's DtypeWarning) reach a
    # user's terminal; under pytest they would be swallowed by its warning capture, so they are
    # recorded here and compared as part of stderr.
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = main(argv)
    for w in caught:
        e.write(f"{w.category.__name__}: {w.message}\n")
    # The data file's own path differs between the two runs only by directory; name
    # both runs' paths the same way so that a path echoed in the log compares equal.
    text = lambda s: s.replace(str(workdir), "<workdir>")  # noqa: E731
    files = {k: v.replace(str(workdir).encode(), b"<workdir>") for k, v in _files(out).items()}
    return Release(rc, text(o.getvalue()), text(e.getvalue()), files)


def check_neighbours(case: Case, data: pd.DataFrame, tmp_path: Path, via: str) -> tuple[Release, Release]:
    """Run the release on D and on its neighbour through ``via`` ("cli" or "python") and compare."""
    return _check_neighbours(case, data, tmp_path, {"cli": run_cli, "python": run_python}[via])
