"""Neighbour check for DP releases: D and a neighbour D' must give the same release
apart from its noised content.

Differential privacy bounds how much *any* published output can change when one
record is added, removed or substituted. A release path that prints a count, lists
the levels it saw, records a seed or orders columns by frequency publishes
something that no mechanism noised, and the guarantee is void (issue 11). This
helper runs a release twice -- on ``D`` and on a neighbour ``D'`` made by one
:class:`Case` -- with identical public inputs (arguments, domain file, file names),
each with fresh OS randomness, and asserts that everything except the declared
noised content is identical: exit status, stdout and stderr text (timings masked),
the set and number of files, every JSON file (metadata.json included) apart from
the declared noised keys, the header (column order) of every data file, and the
error text when both fail.

Adding a method is one :class:`Case`: how to call it on the command line, how to
call it from Python (write its outputs into a directory, return its printed text),
the neighbour relation it guarantees, and which keys / text spans are noised.
:func:`synthmi.testing.check_synthesizer` runs it on every differentially private
synthesizer (``check_dp_neighbour``); the test suite adds a command-line runner
(it lives above this layer). Moved here from the tests (issue 27) so that a new
method gets the check for free.
"""
from __future__ import annotations

import fnmatch
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

# Wall-clock times are not data; mask them before comparing logs.
_TIMING = re.compile(r"\d+(\.\d+)? s\b")

# DPSyn: the noised values of a numeric column's report line (DPSyn summary, CLI stderr): the words
# around them are fixed, so a flag or a missing range must not change anything else.
CONTINUOUS_SPANS = [r"(?<=release range )(?:\[[^\]]*\]|none)", r"(?<=release mean )[^;\s]+",
                    r"(?<=noisy mean )\S+", r"(?<=\(se )[^)]*",
                    r"(?<=beyond the noise: )(?:YES|not detectable|no|n/a)",
                    r"(?<=share outside the range )\S+", r"(?<=truncated: )(?:YES|not detectable|no|n/a)",
                    r"(?<=share in empty cells inside the range )\S+"]


@dataclass
class Release:
    """Everything a release made visible: exit status, text and files."""

    returncode: int
    stdout: str
    stderr: str
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class Case:
    """One DP release path under the neighbour test.

    Parameters
    ----------
    name : str
    cli : callable (data_csv, out_dir) -> argv, or None
        Command-line arguments for ``synthmi`` (outputs written under ``out_dir``).
    python : callable (DataFrame, out_dir) -> str, or None
        Runs the Python API, writes its outputs under ``out_dir`` and returns the
        text it would show (repr, summary, ...).
    neighbour : callable (DataFrame) -> DataFrame
        D -> D' under the method's neighbour relation.
    noised_json : dict
        File name pattern -> dotted keys whose values are noise (``*`` matches any key).
    noised_text : list of regex
        Spans of stdout/stderr that carry noised values (replaced before comparing).
    data_files : str
        Pattern of data files (synthetic copies) whose content is noised: only their
        header is compared.
    noised_files : tuple of str
        Patterns of binary files that are all noise (a pickled model): only their
        presence is compared; their public parts are compared through a JSON view the
        case writes beside them.
    """

    name: str
    cli: Callable[[Path, Path], list[str]] | None
    python: Callable[[pd.DataFrame, Path], str] | None
    neighbour: Callable[[pd.DataFrame], pd.DataFrame]
    noised_json: dict[str, list[str]] = field(default_factory=dict)
    noised_text: list[str] = field(default_factory=list)
    data_files: str = "copy_*.csv"
    noised_files: tuple[str, ...] = ()


def remove_record(i: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """Add/remove-one neighbour: D minus its record at position ``i``."""
    return lambda df: df.drop(index=df.index[i]).reset_index(drop=True)


def substitute_record(i: int, column: str, value) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """Substitution neighbour: record ``i`` gets ``value`` in ``column``."""

    def f(df: pd.DataFrame) -> pd.DataFrame:
        out = df.copy()
        out.loc[out.index[i], column] = value
        return out

    return f


def _files(out: Path) -> dict[str, bytes]:
    if not out.exists():
        return {}
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def run_python(case: Case, data: pd.DataFrame, workdir: Path) -> Release:
    """Run the case's Python API; warnings and an error message become its stderr."""
    out = workdir / "out"
    out.mkdir(parents=True, exist_ok=True)
    rc, shown, err = 0, "", ""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            shown = case.python(data, out)
        except Exception as exc:  # the error text is part of what a release shows
            rc, err = 1, f"{type(exc).__name__}: {exc}"
    err = "\n".join([str(w.message) for w in caught] + ([err] if err else []))
    return Release(rc, shown, err, _files(out))


def _drop(obj, keys: list[str]):
    for key in keys:
        _drop_path(obj, key.split("."))
    return obj


def _drop_path(obj, parts: list[str]) -> None:
    if not isinstance(obj, dict) or not parts:
        return
    head, rest = parts[0], parts[1:]
    names = [k for k in obj if fnmatch.fnmatchcase(k, head)]
    for k in names:
        if rest:
            _drop_path(obj[k], rest)
        else:
            obj[k] = "<noised>"


def _differences(a, b, prefix: str = "") -> list[str]:
    """Dotted paths where two JSON values differ (for the failure message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{prefix}{k} (only in one)")
            else:
                out += _differences(a[k], b[k], f"{prefix}{k}.")
        return out
    return [] if a == b else [f"{prefix.rstrip('.')}: {a!r:.80} vs {b!r:.80}"]


def _normalise(text: str, case: Case) -> str:
    text = _TIMING.sub("<t> s", text)
    for pattern in case.noised_text:
        text = re.sub(pattern, "<noised>", text)
    return text


def assert_alike(a: Release, b: Release, case: Case) -> None:
    """Everything but the declared noised content of two releases is identical."""
    where = f"[{case.name}]"
    assert a.returncode == b.returncode, f"{where} one release failed and the other did not:\n{a.stderr}\n---\n{b.stderr}"
    assert _normalise(a.stdout, case) == _normalise(b.stdout, case), f"{where} stdout differs"
    assert _normalise(a.stderr, case) == _normalise(b.stderr, case), f"{where} stderr / log / error text differs"
    assert sorted(a.files) == sorted(b.files), f"{where} different files: {sorted(a.files)} vs {sorted(b.files)}"
    for name in a.files:
        if any(fnmatch.fnmatchcase(name, pat) for pat in case.noised_files):
            continue
        if fnmatch.fnmatchcase(name, case.data_files):
            ha = a.files[name].split(b"\n", 1)[0]
            hb = b.files[name].split(b"\n", 1)[0]
            assert ha == hb, f"{where} {name}: column order differs"
        elif name.endswith(".json"):
            keys = [k for pat, ks in case.noised_json.items() if fnmatch.fnmatchcase(name, pat) for k in ks]
            ja, jb = (_drop(json.loads(x.files[name]), keys) for x in (a, b))
            assert ja == jb, f"{where} {name} differs beyond its noised keys at {_differences(ja, jb)}"
        else:
            assert a.files[name] == b.files[name], f"{where} {name} differs"


def check_neighbours(case: Case, data: pd.DataFrame, tmp_path: Path,
                     runner: Callable[[Case, pd.DataFrame, Path], Release] = run_python) -> tuple[Release, Release]:
    """Run the release on D and on its neighbour through ``runner`` (default :func:`run_python`;
    the test suite adds a command-line runner) and compare."""
    d1 = case.neighbour(data)
    assert len(d1) in (len(data), len(data) - 1), "a neighbour adds, removes or substitutes one record"
    a = runner(case, data, tmp_path / "D")
    b = runner(case, d1, tmp_path / "D_prime")
    assert_alike(a, b, case)
    return a, b
