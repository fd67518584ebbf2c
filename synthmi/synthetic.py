"""The object every synthesizer returns: M synthetic copies plus their provenance."""
from __future__ import annotations

import functools
import json
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .provenance import check_original
from ._json import dumps as json_dumps, jsonable
from .errors import InputError, OutputExists, ParameterError

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
                "categories": [jsonable(x) for x in dt.categories],
                "ordered": bool(dt.ordered),
            }
        else:
            spec[c] = {"dtype": str(dt)}
    return spec


def whole_number_columns(copies: list[pd.DataFrame], integer: Any = ()) -> list[str]:
    """Float columns to write as integers: whole numbers in every copy, and either missing
    in some copy or named in ``integer`` (columns a release declared of kind integer).

    A whole-number column with missing values (a count, a 1/2 code) is float64 in pandas
    only because of its missing values, so a CSV writer would print ``3.0``; it is written
    as ``3`` (missing stays empty), which any reader takes back as the same float column.
    A complete float column of whole numbers (a weight written ``1234.0``) keeps its float
    form, so a plain ``read_csv`` of a copy gives the original's dtype; a DP release's
    declared integer columns (float after conforming to the domain) are integers.
    Values of magnitude 2**53 and above, where a float no longer holds every integer,
    keep the float form.
    """
    if not copies:
        return []
    integer = set(integer)
    out = []
    for c in copies[0].columns:
        if not all(c in d.columns and pd.api.types.is_float_dtype(d[c].dtype) for d in copies):
            continue
        ok, missing = True, False
        for d in copies:
            x = d[c].to_numpy(dtype=float, na_value=np.nan)
            nan = np.isnan(x)
            missing = missing or bool(nan.any())
            x = x[~nan]
            if not (np.all(np.isfinite(x)) and np.all(np.abs(x) < 2.0**53) and np.all(np.mod(x, 1.0) == 0.0)):
                ok = False
                break
        if ok and (missing or c in integer):
            out.append(c)
    return out


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
    rule : {"partial", "full", "rubin", "nested"}
        The combining rule the method's copies need (Reiter 2003 partial
        synthesis, Raghunathan, Reiter & Rubin 2003 full synthesis, Rubin 1987
        multiple imputation, Reiter 2004 nested); every consumer uses it unless
        told otherwise. Default: ``structure["rule"]``, else nested for m x r
        copies, full for DPSyn, else partial.
    spec : ReleaseSpec or None
        The release spec the synthesizer was fitted with.
    fingerprint : dict or None
        Row count and column set of the original (plus a keyed HMAC when
        ``SYNTHMI_PROVENANCE_KEY`` is set; see :mod:`synthmi.provenance`);
        ``original_fingerprint`` is the same dict under its earlier name.
    diagnostics_check : dict or None
        The release's convergence check (:func:`synthmi.diagnostics.enforce`):
        ``passed``, thresholds, and with ``accepted: True`` the failures the
        user chose to release anyway. ``None`` when no check ran.
    """

    copies: list[pd.DataFrame]
    method: str
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    quasi_identifiers: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=package_versions)
    diagnostics: Any = None
    structure: dict[str, Any] = field(default_factory=dict)
    rule: str | None = None
    spec: Any = None
    fingerprint: dict[str, Any] | None = None
    diagnostics_check: dict[str, Any] | None = None
    original_fingerprint: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.rule is None:
            # older releases recorded no rule: their layout decides (DPSyn's copies are fully synthetic)
            self.rule = self.structure.get("rule") or (
                "nested" if "r" in self.structure and "m" in self.structure
                else "full" if self.method == "dpsyn" else "partial"
            )
        # the combining rules live with combine(); a release records a rule's name, not an alias
        from .evaluation.combining import RULES

        names = list(dict.fromkeys(RULES.values()))
        if self.rule not in names:
            raise InputError(f"The 'rule' of SyntheticData must be one of {names}. Got {self.rule!r} instead.")
        if self.spec is not None and not hasattr(self.spec, "to_dict"):
            from .spec import as_spec

            self.spec = as_spec(self.spec)
        # one fingerprint under two names (original_fingerprint: the earlier name)
        if self.fingerprint is None:
            self.fingerprint = self.original_fingerprint
        self.original_fingerprint = self.fingerprint

    def check_original(self, original: pd.DataFrame, name: str = "original", rows: bool = True) -> None:
        """Refuse to evaluate the copies against data other than their original.

        Compares the row count, the column set and (with ``SYNTHMI_PROVENANCE_KEY``)
        the keyed HMAC recorded at synthesis with ``original`` (see
        :mod:`synthmi.provenance`); the error names what differs (counts and column
        names, never values). Copies without a fingerprint are not checked.
        ``rows=False`` checks the columns only (an analysis may compare the copies
        with a subset of the original's rows, e.g. its complete cases).
        """
        check_original(original, self.fingerprint, name, rows=rows)

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
            f"quasi_identifiers={self.quasi_identifiers}, rule={self.rule!r}, seed={self.seed})"
        )

    def metadata(self, source: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Everything about the copies except the data, as JSON-ready values.

        ``source``: where the copies came from, as the caller read it (the command line's
        input file's base name, kept columns, encoding, missing-value markers, ...), recorded
        under ``"source"``; :meth:`from_dir` reads ``source.copies_encoding`` back.
        """
        diag = self.diagnostics
        if diag is not None and not isinstance(diag, dict):
            diag = diagnostics_summary(diag)
        out = {
            "method": self.method,
            "params": jsonable(_masks_described(self.params)),
            "seed": self.seed,
            "m": self.m,
            "quasi_identifiers": list(self.quasi_identifiers),
            "versions": self.versions,
            "structure": jsonable(self.structure),
            "diagnostics": jsonable(diag),
            "diagnostics_check": jsonable(self.diagnostics_check),
            "dtypes": dtype_spec(self.copies[0]) if self.copies else {},
            "rule": self.rule,
            "spec": None if self.spec is None else self.spec.to_dict(),
            "fingerprint": jsonable(self.fingerprint),
        }
        if "privacy" in self.structure:
            # A differentially private release records no seed at all (issue 11): its
            # structure says only whether a user seed was given.
            out.pop("seed")
        if source is not None:
            out["source"] = jsonable(dict(source))
        return out

    def to_dir(self, path: str | Path, source: Mapping[str, Any] | None = None) -> Path:
        """Write ``copy_01.csv`` ... ``copy_MM.csv`` and ``metadata.json`` to ``path``.

        The one writer of ``metadata.json`` (:meth:`metadata`, with ``source``): callers
        pass what they add instead of rewriting the file.
        """
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        width = max(2, len(str(self.m)))
        domain = (self.structure or {}).get("domain") or {}
        declared = [c for c, d in (domain.get("columns", domain) or {}).items()
                    if isinstance(d, dict) and d.get("kind") == "integer"]
        whole = whole_number_columns(self.copies, declared)
        for j, c in enumerate(self.copies, start=1):
            if whole:
                # written as integers ("3", not "3.0"; a missing value stays empty); read
                # back, the recorded dtype restores the copy exactly
                c = c.assign(**{k: c[k].astype("Int64") for k in whole})
            c.to_csv(path / f"copy_{j:0{width}d}.csv", index=False)
        (path / "metadata.json").write_text(json_dumps(self.metadata(source), indent=2, sort_keys=True))
        return path

    @classmethod
    def from_dir(cls, path: str | Path, name: str = "path") -> "SyntheticData":
        """Read copies written by :meth:`to_dir` (dtypes restored from metadata; in the text
        encoding ``metadata.json`` records under ``source.copies_encoding``, the input's
        encoding the command line writes them in, else UTF-8), or by
        :meth:`PartitionedSyntheticData.to_parquet` (``copy_XX/part.NNNNN.parquet``, recognised
        from ``"engine": "dask"`` in ``metadata.json`` or the layout) as pandas frames, in
        memory: review a release too large for memory with the measures on
        ``PartitionedSyntheticData.copies`` (Dask frames) instead. ``name``: how errors about
        the directory name it (the command line passes ``'--synthetic'``)."""
        path = Path(path)
        meta_file = path / "metadata.json"
        files = sorted(path.glob("copy_*.csv"))
        meta = json.loads(meta_file.read_text()) if meta_file.exists() else {}
        if not files and (meta.get("engine") == "dask" or any(path.glob("copy_*/part.*.parquet"))):
            copies = _read_parquet_copies(path, meta, name)
        elif not files:
            raise InputError(f"No synthetic copies (copy_*.csv) found in directory '{path}'.")
        else:
            encoding = (meta.get("source") or {}).get("copies_encoding") or None
            copies = []
            for f in files:
                df = pd.read_csv(f, encoding=encoding)
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
            rule=meta.get("rule"),
            spec=meta.get("spec"),
            fingerprint=meta.get("fingerprint") or meta.get("original_fingerprint"),
            diagnostics_check=meta.get("diagnostics_check"),
        )

    def analyse(
        self,
        formula: str | None = None,
        original: pd.DataFrame | None = None,
        family: str | None = None,
        rule: str | None = None,
        **kw,
    ):
        """Shortcut for :func:`synthmi.evaluation.analyse` on these copies.

        ``rule`` defaults to the rule recorded with the copies; ``formula`` and
        ``family`` to the spec's first analysis. ``original`` is checked against
        the recorded fingerprint (its columns; all of it when the row counts agree).
        """
        from .evaluation.analysis import analyse

        if original is None:
            raise ParameterError("The 'original' parameter of SyntheticData.analyse is required.", parameter='original')
        if formula is None:
            analyses = self.spec.analyses if self.spec is not None else []
            if not analyses:
                raise ParameterError(
                    "The 'formula' parameter of SyntheticData.analyse is required: the copies' spec lists no analyses.", parameter='formula'
                )
            formula = analyses[0]["formula"]
            family = family or analyses[0]["family"]
        # an analysis may use a subset of the rows (complete cases): rows are checked
        # by the evaluation verbs, which read the whole original
        self.check_original(original, rows=False)
        if self.copies:
            # an original may hold more columns than were released
            cols = list(self.copies[0].columns)
            if all(c in original.columns for c in cols):
                original = original[cols]
        return analyse(formula, family=family or "probit", original=original, synthetic=self,
                       rule=rule or self.rule, **kw)


@dataclass
class PartitionedSyntheticData:
    """M synthetic copies of a Dask DataFrame, drawn lazily partition by partition.

    What a synthesizer fitted on a dask DataFrame returns from ``sample`` (the
    in-memory counterpart is :class:`SyntheticData`). ``copy(i)`` is a lazy dask
    DataFrame of copy ``i`` (1-based, index = the original's); :meth:`to_parquet`
    writes all copies partition by partition, never gathering them.
    ``sample_partition(part, offset, copies)`` is the fitted model's own record-level
    sampler (copies drawn with record-keyed streams from global position ``offset``),
    so every partitioning gives the same copies. ``diagnostics_check`` is the record
    of the convergence check the copies passed (or, with ``accept_diagnostics=True``,
    failed and were accepted), written to ``metadata.json``.
    """

    m: int
    method: str
    params: dict
    seed: int | None
    quasi_identifiers: list[str]
    diagnostics: Any
    diagnostics_check: dict
    frame: Any  # synthmi.engine.Frame of the original
    sample_partition: Any
    meta: pd.DataFrame
    #: the combining rule the copies need and the fitted spec (public view), recorded in metadata.json
    rule: str = "partial"
    spec: Any = None
    #: read by synthmi.engine.copies_of (which cannot import this layer)
    is_partitioned = True

    def copy(self, i: int):
        if not 1 <= int(i) <= self.m:
            raise InputError(f"The copy number must be in 1..{self.m}. Got {i!r} instead.")
        return self.frame.from_partitions(_partition_copy, self.meta, self.sample_partition, int(i) - 1)

    @property
    def copies(self) -> list:
        return [self.copy(i) for i in range(1, self.m + 1)]

    def compute(self) -> list[pd.DataFrame]:
        """All copies as pandas frames (small data and tests only)."""
        from .engine import compute_many

        return compute_many(self.copies)

    def to_parquet(self, directory: str, source: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write ``directory/copy_XX/part.NNNNN.parquet`` for every copy and partition, and ``metadata.json``
        (the one writer of it; ``source``: where the data came from, recorded under ``"source"``).

        ``directory`` must not exist yet (nothing the user did not name is overwritten).
        """
        import os

        if os.path.exists(directory):
            raise OutputExists(f"The output directory '{directory}' already exists; give a new path.",
                               path=directory, parameter="directory", owner="to_parquet")
        os.makedirs(directory)
        for i in range(1, self.m + 1):
            os.makedirs(os.path.join(directory, f"copy_{i:02d}"))
        rows = self.frame.map_partitions(_write_partition, self.sample_partition, self.m, directory, with_index=True)
        n = int(sum(rows))
        meta = {
            "method": self.method, "m": self.m, "seed": self.seed, "params": jsonable(_masks_described(self.params)),
            "quasi_identifiers": self.quasi_identifiers, "n_records": n,
            "n_partitions": len(rows), "engine": "dask", "diagnostics": jsonable(self.diagnostics),
            "diagnostics_check": jsonable(self.diagnostics_check),
            "layout": "copy_XX/part.NNNNN.parquet, partition k of copy XX; index = original record labels",
            # the keys of SyntheticData.metadata the review reads (SyntheticData.from_dir)
            "rule": self.rule, "spec": None if self.spec is None else self.spec.to_dict(),
            "versions": package_versions(), "structure": {}, "dtypes": dtype_spec(self.meta),
            # row count and columns only: a keyed HMAC of the values would need another pass over the data
            "fingerprint": {"columns": sorted(map(str, self.meta.columns)), "n_rows": n, "hmac": None},
        }
        if source is not None:
            meta["source"] = dict(source)
        with open(os.path.join(directory, "metadata.json"), "w") as fh:
            fh.write(json_dumps(meta, indent=2, sort_keys=True))
        return meta


def _read_parquet_copies(path: Path, meta: Mapping[str, Any], name: str) -> list[pd.DataFrame]:
    """The copies of a Parquet release (:meth:`PartitionedSyntheticData.to_parquet`) as pandas
    frames: partitions concatenated in order (the original's record order), the index dropped as
    in a CSV release, dtypes restored from ``metadata.json``. Fails closed when a copy folder or a
    partition is missing or the row counts differ from those recorded."""
    m = meta.get("m")
    found = sorted(p for p in path.glob("copy_*") if p.is_dir())
    if m is None:
        m = len(found)
    width = max(2, len(str(m)))
    n_parts, n_rows = meta.get("n_partitions"), meta.get("n_records")
    copies = []
    for i in range(1, int(m) + 1):
        folder = path / f"copy_{i:0{width}d}"
        parts = sorted(folder.glob("part.*.parquet")) if folder.is_dir() else []
        if not parts or (n_parts is not None and len(parts) != int(n_parts)):
            got = "is missing" if not folder.is_dir() else f"holds {len(parts)} of the {n_parts} recorded partitions"
            raise InputError(f"The '{name}' directory '{path}' is not a whole Parquet release: its metadata.json "
                             f"records {m} copies, and the folder '{folder.name}' {got}.")
        df = pd.concat([pd.read_parquet(f) for f in parts]).reset_index(drop=True)
        if n_rows is not None and len(df) != int(n_rows):
            raise InputError(f"The '{name}' directory '{path}' is not a whole Parquet release: '{folder.name}' holds "
                             f"{len(df)} rows, metadata.json records {int(n_rows)}.")
        if meta.get("dtypes"):
            # partitions store their own category levels: restore the recorded ones from plain values
            df = apply_dtype_spec(df.astype({c: object for c in df.columns
                                             if isinstance(df[c].dtype, pd.CategoricalDtype)}), meta["dtypes"])
        copies.append(df)
    return copies


def _partition_copy(part: pd.DataFrame, offset: int, sample_partition, i: int) -> pd.DataFrame:
    return sample_partition(part, offset, [i])[0]


def _write_partition(part: pd.DataFrame, offset: int, k: int, sample_partition, m: int, directory: str) -> int:
    import os

    for i, f in enumerate(sample_partition(part, offset, list(range(m))), start=1):
        f.to_parquet(os.path.join(directory, f"copy_{i:02d}", f"part.{k:05d}.parquet"), index=True)
    return len(part)


def diagnostics_summary(idata: Any) -> dict[str, Any]:
    """r_hat / ESS / divergences of an ArviZ InferenceData as a small dict.

    ``max_r_hat`` and ``min_ess_bulk`` are the figures the release check
    applies (:func:`synthmi.diagnostics.diagnostics_table`: one chain is split
    in two, constant parameters left out), so what the metadata and the report
    show is what was checked; ``az.summary`` gave NaN for one chain and
    rounded values. ``min_ess_tail``: :func:`synthmi.diagnostics.ess_tail`.
    """
    from .diagnostics import diagnostics_table, ess_tail

    out: dict[str, Any] = {}
    try:
        tab = diagnostics_table(idata)
        r = tab["r_hat"].to_numpy(dtype=float) if len(tab) else np.empty(0)
        e = tab["ess_bulk"].to_numpy(dtype=float) if len(tab) else np.empty(0)
        # a block whose R-hat could not be computed (a chain that never moved) fails the check: NaN here too
        out["max_r_hat"] = (float("nan") if np.isnan(r).any() else float(r.max())) if r.size else None
        out["min_ess_bulk"] = float(np.nanmin(e)) if e.size and not np.isnan(e).all() else None
        tails = [ess_tail(v.values.reshape(v.shape[0], v.shape[1], -1)) for v in idata.posterior.data_vars.values()]
        tails = np.concatenate(tails) if tails else np.empty(0)
        out["min_ess_tail"] = float(np.nanmin(tails)) if tails.size and not np.isnan(tails).all() else None
    except Exception as exc:  # diagnostics must never break saving the copies
        out["error"] = type(exc).__name__
    ss = getattr(idata, "sample_stats", None)
    if ss is not None and "diverging" in ss:
        out["divergences"] = int(ss["diverging"].sum())
    return out


def _masks_described(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with the masking models of ``masks`` (one per column, or per risk subgroup and
    column) written as their ``to_dict()``, so the recorded masks read back as dicts, not reprs."""

    def described(m: Any) -> Any:
        if callable(getattr(m, "to_dict", None)):
            return m.to_dict()
        return {k: described(v) for k, v in m.items()} if isinstance(m, Mapping) else m

    out = dict(params)
    if out.get("masks"):
        out["masks"] = described(out["masks"])
    return out


