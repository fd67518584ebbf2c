"""The object every synthesizer returns: M synthetic copies plus their provenance."""
from __future__ import annotations

import functools
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .schema import _jsonable


def package_versions() -> dict[str, str]:
    """Versions of synthmi and the libraries whose behaviour shapes its output."""
    # reading package metadata costs ~30 ms; versions cannot change within a process
    return dict(_package_versions_cached())


@functools.lru_cache(maxsize=1)
def _package_versions_cached() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("synthmi", "numpy", "scipy", "pandas", "scikit-learn", "statsmodels", "pymc", "pytensor", "arviz"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:  # pragma: no cover - optional dependency absent
            pass
    return out


def dtype_spec(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """JSON description of each column's dtype, enough to restore it from CSV."""
    spec: dict[str, dict[str, Any]] = {}
    for c in df.columns:
        dt = df[c].dtype
        if isinstance(dt, pd.CategoricalDtype):
            spec[c] = {
                "dtype": "category",
                "categories": [_jsonable(x) for x in dt.categories],
                "ordered": bool(dt.ordered),
            }
        else:
            spec[c] = {"dtype": str(dt)}
    return spec


def apply_dtype_spec(df: pd.DataFrame, spec: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """Inverse of :func:`dtype_spec` for a frame read back from CSV."""
    out = {}
    # metadata.json is written with sorted keys: follow the CSV's column order.
    for c in df.columns:
        col = df[c]
        if c not in spec:
            out[c] = col
            continue
        s = spec[c]
        if s["dtype"] == "category":
            cats = s["categories"]
            # CSV turns numeric labels into numbers and text into str; match the stored labels.
            if cats and not isinstance(cats[0], str):
                col = pd.to_numeric(col)
            else:
                col = col.astype("string").astype(object).where(col.notna(), np.nan)
            out[c] = pd.Categorical(col, categories=cats, ordered=s["ordered"])
        else:
            out[c] = col.astype(s["dtype"]) if s["dtype"] != "object" else col
    return pd.DataFrame(out, index=df.index)


@dataclass
class SyntheticData:
    """M synthetic copies of a dataset and how they were made.

    Attributes
    ----------
    copies : list of DataFrame
        The copies, each with the original's columns, column order and dtypes.
    method : str
        Synthesizer name (``"rubin"``, ``"cart"``, ``"dami"``, ...).
    params : dict
        The synthesizer's tuning parameters, as passed.
    seed : int or None
        The ``random_state`` that produced the copies.
    quasi_identifiers : list of str
        Columns that were synthesized; the rest were released unchanged.
    versions : dict
        Package versions at synthesis time.
    diagnostics : arviz.InferenceData, dict or None
        MCMC diagnostics (r_hat, ESS, divergences) or a summary of the fast path.
    structure : dict
        Extra layout information, e.g. ``{"m": 5, "r": 4}`` for nested copies.
    diagnostics_check : dict or None
        The release's convergence check (:func:`synthmi.diagnostics.enforce`):
        ``passed``, thresholds, and with ``accepted: True`` the failures the
        user chose to release anyway. ``None`` when no check ran.
    original_fingerprint : dict or None
        What identifies the data the copies were made from, without its
        values: ``n_rows`` and ``columns`` (see :meth:`check_original`).
    """

    copies: list[pd.DataFrame]
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    quasi_identifiers: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=package_versions)
    diagnostics: Any = None
    structure: dict[str, Any] = field(default_factory=dict)
    diagnostics_check: dict[str, Any] | None = None
    original_fingerprint: dict[str, Any] | None = None

    @property
    def m(self) -> int:
        """Number of copies."""
        return len(self.copies)

    def __len__(self) -> int:
        return len(self.copies)

    def __iter__(self):
        return iter(self.copies)

    def __getitem__(self, i: int) -> pd.DataFrame:
        return self.copies[i]

    @property
    def unconverged(self) -> bool:
        """Whether the copies were released although the sampler failed its convergence check."""
        return bool(self.diagnostics_check) and not self.diagnostics_check.get("passed", True)

    def __repr__(self) -> str:
        shape = self.copies[0].shape if self.copies else (0, 0)
        return (
            f"SyntheticData(method={self.method!r}, m={self.m}, shape={shape}, "
            f"quasi_identifiers={self.quasi_identifiers}, seed={self.seed})"
        )

    def metadata(self) -> dict[str, Any]:
        """Everything about the copies except the data, as JSON-ready values."""
        diag = self.diagnostics
        if diag is not None and not isinstance(diag, dict):
            diag = diagnostics_summary(diag)
        out = {
            "method": self.method,
            "params": _to_json(self.params),
            "seed": self.seed,
            "m": self.m,
            "quasi_identifiers": list(self.quasi_identifiers),
            "versions": self.versions,
            "structure": _to_json(self.structure),
            "diagnostics": _to_json(diag),
            "diagnostics_check": _to_json(self.diagnostics_check),
            "original_fingerprint": _to_json(self.original_fingerprint),
            "dtypes": dtype_spec(self.copies[0]) if self.copies else {},
        }
        if "privacy" in self.structure:
            # A differentially private release records no seed at all (issue 11): its
            # structure says only whether a user seed was given.
            out.pop("seed")
        return out

    def to_dir(self, path: str | Path) -> Path:
        """Write ``copy_01.csv`` ... ``copy_MM.csv`` and ``metadata.json`` to ``path``."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        width = max(2, len(str(self.m)))
        for j, c in enumerate(self.copies, start=1):
            c.to_csv(path / f"copy_{j:0{width}d}.csv", index=False)
        (path / "metadata.json").write_text(json.dumps(self.metadata(), indent=2, sort_keys=True))
        return path

    @classmethod
    def from_dir(cls, path: str | Path) -> "SyntheticData":
        """Read copies written by :meth:`to_dir` (dtypes restored from metadata)."""
        path = Path(path)
        meta_file = path / "metadata.json"
        files = sorted(path.glob("copy_*.csv"))
        if not files:
            raise ValueError(f"No synthetic copies (copy_*.csv) found in directory '{path}'.")
        meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
        copies = []
        for f in files:
            df = pd.read_csv(f)
            if meta.get("dtypes"):
                df = apply_dtype_spec(df, meta["dtypes"])
            copies.append(df)
        return cls(
            copies=copies,
            method=meta.get("method", "unknown"),
            params=meta.get("params", {}),
            seed=meta.get("seed"),
            quasi_identifiers=meta.get("quasi_identifiers", []),
            versions=meta.get("versions", {}),
            diagnostics=meta.get("diagnostics"),
            structure=meta.get("structure", {}),
            diagnostics_check=meta.get("diagnostics_check"),
            original_fingerprint=meta.get("original_fingerprint"),
        )

    def check_original(self, original: pd.DataFrame, name: str = "original", rows: bool = True) -> None:
        """Refuse to evaluate the copies against data other than their original.

        Compares the row count and the column set recorded at synthesis
        (:attr:`original_fingerprint`) with ``original``; the error names what
        differs (counts and column names, never values). Copies without a
        fingerprint (older releases, other tools) are not checked. ``rows=False``
        checks the columns only (an analysis may compare the copies with a
        subset of the original's rows, e.g. its complete cases).
        """
        fp = self.original_fingerprint or {}
        problems = []
        n = fp.get("n_rows")
        if rows and n is not None and len(original) != int(n):
            problems.append(f"it has {len(original)} rows, the copies were made from {int(n)}")
        cols = fp.get("columns")
        if cols:
            missing = [c for c in cols if c not in original.columns]
            if missing:
                problems.append(f"it lacks the columns {missing} of the data the copies were made from")
        if problems:
            raise ValueError(
                f"The '{name}' data are not the data these copies were made from: {'; '.join(problems)}."
            )

    def analyse(self, formula: str, original: pd.DataFrame, family: str = "probit", rule: str | None = None, **kw):
        """Shortcut for :func:`synthmi.evaluation.analyse` on these copies."""
        from .evaluation.analysis import analyse

        self.check_original(original, rows=False)
        if rule is None:
            # the synthesizer records which rule its output needs (e.g. "rubin" for
            # imputed-only copies); otherwise nested copies -> Reiter 2004, else Reiter 2003
            rule = self.structure.get("rule") or (
                "nested" if "r" in self.structure and "m" in self.structure else "partial"
            )
        return analyse(formula, family=family, original=original, synthetic=self, rule=rule, **kw)


def diagnostics_summary(idata: Any) -> dict[str, Any]:
    """r_hat / ESS / divergences of an ArviZ InferenceData as a small dict."""
    import arviz as az

    out: dict[str, Any] = {}
    try:
        summ = az.summary(idata, kind="diagnostics")
        out["max_r_hat"] = float(np.nanmax(summ["r_hat"])) if "r_hat" in summ else None
        out["min_ess_bulk"] = float(np.nanmin(summ["ess_bulk"])) if "ess_bulk" in summ else None
        out["min_ess_tail"] = float(np.nanmin(summ["ess_tail"])) if "ess_tail" in summ else None
    except Exception as exc:  # diagnostics must never break saving the copies
        out["error"] = type(exc).__name__
    ss = getattr(idata, "sample_stats", None)
    if ss is not None and "diverging" in ss:
        out["divergences"] = int(ss["diverging"].sum())
    return out


def _to_json(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _to_json(obj.tolist())
    if isinstance(obj, (np.generic,)):
        return obj.item()
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return repr(obj)
