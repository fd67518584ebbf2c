"""Public domains: the levels and bounds of each column, declared, never read from data.

A differentially private release may publish only what its mechanisms noised
and what was public before the data were seen. The set of levels of a column
and the range of a number are *not* public when they are read from the data:
a level held by one person appears or vanishes with that person, and so does a
maximum (issue 11). DP code in synthmi therefore takes levels and bounds only
from a :class:`PublicDomain`, declared by the user (a JSON file, ``--domain`` on
the command line, ``domain=`` in Python), shipped with the bundled data sets
(built from their public documentation), or from documented public defaults
(a ``bool`` dtype has the levels ``False``/``True``).

The JSON format::

    {"columns": {
        "sex":          {"kind": "categorical", "levels": ["Female", "Male"], "other": null},
        "education":    {"kind": "ordinal", "levels": ["<HS", "HS", ">HS"]},
        "income":       {"kind": "binary", "levels": ["<=50K", ">50K"]},
        "age":          {"kind": "integer", "bounds": [17, 90]},
        "capital_gain": {"kind": "continuous", "bounds": [0, 100000], "point_masses": [0]}},
     "source": "where these public values come from"}

A domain is the view of a release spec's declared columns
(:meth:`synthmi.spec.ReleaseSpec.public_domain`; :meth:`ReleaseSpec.from_public_domain`
is the way back). Kinds are those of :mod:`synthmi.kinds`, with ``nominal`` spelt
``categorical`` in this format:

``categorical``
    Unordered levels (``levels``, non-empty, distinct). ``other`` may name one of
    them as the level that out-of-domain values (or pooled rare levels) map to.
``ordinal``
    Like ``categorical`` but the order of ``levels`` is meaningful.
``binary``
    Exactly two levels (e.g. ``[0, 1]`` or ``["no", "yes"]``).
``integer``
    Whole numbers in ``bounds = [lower, upper]`` (both inclusive, integers);
    optional ``point_masses``: values with their own bin (e.g. 0 for an income).
``continuous``
    Real numbers in ``bounds = [lower, upper]`` (lower < upper); optional
    ``point_masses``.

Every column may also say ``"missing": false`` (no missing values are allowed;
a missing value is then an error) -- the default ``true`` lets a release carry
a public "missing" level.

Matching values to levels: a value matches a level when they are equal, or when
their text forms agree (``1``, ``1.0`` and ``"1"`` all match the level ``"1"`` or
``1``), so a CSV read with numbers or text matches the same declaration.
Errors about data never show a value, a count or a minimum/maximum: they name
the column only.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from .kinds import CATEGORICAL_KINDS, DOMAIN_KINDS, NUMERIC_KINDS, ORDERED_KINDS, domain_kind

__all__ = [
    "KINDS",
    "ColumnDomain",
    "DomainError",
    "PublicDomain",
    "as_public_domain",
]

#: the kinds of synthmi.kinds as the domain JSON format spells them ("categorical" = nominal)
KINDS = DOMAIN_KINDS
DISCRETE_KINDS = tuple(domain_kind(k) for k in CATEGORICAL_KINDS)
_KEYS = {"kind", "levels", "bounds", "point_masses", "other", "missing", "description"}


class DomainError(ValueError):
    """A public domain is malformed, missing a column, or the data fall outside it."""


_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _level_key(v: Any) -> str:
    """Canonical text of a level or value: 1, 1.0, "1", "01" and "1.0" share the key "1";
    True, "True" and "TRUE" share "True".

    The key is a function of the one value alone, so a value gets the same key whatever
    a CSV reader made of its column: the reader guesses the column's type from all of
    its (private) values -- "01" stays text beside one "DK" and becomes the number 1
    without it, "TRUE" becomes the bool True unless one record holds "?" -- and a key
    that followed that guess would let one record change how every other record
    conforms (issue 25).
    """
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return str(int(f)) if math.isfinite(f) and f.is_integer() else str(f)
    t = str(v).strip()
    if t.lower() in ("true", "false"):
        return t.capitalize()
    if _NUMBER_TEXT.fullmatch(t):
        if re.fullmatch(r"[+-]?\d+", t):
            return str(int(t))
        return _level_key(float(t))
    return t


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


@dataclass(frozen=True)
class ColumnDomain:
    """The declared public domain of one column (see the module docstring).

    Parameters
    ----------
    kind : {"categorical", "ordinal", "binary", "integer", "continuous"}
        The kinds of :mod:`synthmi.kinds`, with ``nominal`` spelt ``categorical``.
    levels : sequence, optional
        The levels of a discrete column (required for the discrete kinds, not
        allowed for the numeric ones).
    bounds : (lower, upper), optional
        Inclusive public bounds of a numeric column (required for numeric kinds).
    point_masses : sequence of numbers
        Values of a numeric column that get their own bin (within ``bounds``).
    other : level or None
        A declared level that out-of-domain values and pooled rare levels map to
        (discrete kinds only; must be one of ``levels``).
    missing : bool
        Whether missing values are allowed (a public "missing" level).
    name : str
        The column's name (used in messages).
    """

    kind: str
    levels: tuple | None = None
    bounds: tuple[float, float] | None = None
    point_masses: tuple[float, ...] = ()
    other: Any = None
    missing: bool = True
    name: str = ""
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        where = f"column '{self.name}'" if self.name else "a column"
        if self.kind not in KINDS:
            raise DomainError(f"The domain of {where} has kind {self.kind!r}; it must be one of {', '.join(KINDS)}.")
        if not isinstance(self.missing, (bool, np.bool_)):
            raise DomainError(f"The domain of {where} must give 'missing' as true or false. Got {self.missing!r} instead.")
        if self.kind in DISCRETE_KINDS:
            if self.bounds is not None or self.point_masses:
                raise DomainError(f"The domain of {where} is {self.kind}: it takes 'levels', not 'bounds' or 'point_masses'.")
            if self.levels is None or isinstance(self.levels, (str, bytes)) or len(tuple(self.levels)) == 0:
                raise DomainError(f"The domain of {where} is {self.kind} and needs a non-empty list of 'levels'.")
            levels = tuple(_jsonable(v) for v in self.levels)
            for v in levels:
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    raise DomainError(
                        f"The domain of {where} lists a missing value as a level; use \"missing\": true instead."
                    )
            keys = [_level_key(v) for v in levels]
            if len(set(keys)) != len(keys):
                raise DomainError(f"The domain of {where} lists a level twice (levels must be distinct).")
            if self.kind == "binary" and len(levels) != 2:
                raise DomainError(f"The domain of {where} is binary and must list exactly 2 levels. Got {len(levels)} instead.")
            object.__setattr__(self, "levels", levels)
            if self.other is not None:
                if _level_key(self.other) not in keys:
                    raise DomainError(f"The domain of {where} declares an 'other' level that is not one of its 'levels'.")
                object.__setattr__(self, "other", levels[keys.index(_level_key(self.other))])
        else:
            if self.levels is not None:
                raise DomainError(f"The domain of {where} is {self.kind}: it takes 'bounds', not 'levels'.")
            if self.other is not None:
                raise DomainError(f"The domain of {where} is {self.kind}: 'other' is for discrete kinds only.")
            b = self.bounds
            try:
                lo, hi = (float(b[0]), float(b[1]))
                if len(b) != 2:
                    raise ValueError
            except (TypeError, ValueError, IndexError):
                raise DomainError(
                    f"The domain of {where} is {self.kind} and needs 'bounds' [lower, upper] of numbers. Got {b!r} instead."
                ) from None
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise DomainError(f"The domain of {where} must have finite 'bounds'. Got {list(b)!r} instead.")
            if self.kind == "integer":
                if not (lo.is_integer() and hi.is_integer()) or hi < lo:
                    raise DomainError(
                        f"The domain of {where} is integer and needs whole-number 'bounds' with lower <= upper. "
                        f"Got {list(b)!r} instead."
                    )
            elif not hi > lo:
                raise DomainError(f"The domain of {where} needs 'bounds' with lower < upper. Got {list(b)!r} instead.")
            object.__setattr__(self, "bounds", (lo, hi))
            try:
                pm = tuple(sorted({float(v) for v in self.point_masses}))
            except (TypeError, ValueError):
                raise DomainError(f"The domain of {where} must give 'point_masses' as a list of numbers.") from None
            for v in pm:
                if not (lo <= v <= hi) or (self.kind == "integer" and not v.is_integer()):
                    raise DomainError(
                        f"The domain of {where} has a point mass {v:g} outside its bounds"
                        + (" or not a whole number." if self.kind == "integer" else ".")
                    )
            object.__setattr__(self, "point_masses", pm)

    # ------------------------------------------------------------------ properties
    @property
    def is_discrete(self) -> bool:
        return self.kind in DISCRETE_KINDS

    @property
    def ordered(self) -> bool:
        """Whether the values have a public order (ordinal and numeric kinds)."""
        return self.kind in ORDERED_KINDS

    def dtype(self, ordered: bool | None = None) -> Any:
        """The pandas dtype a DP release gives this column, decided by the declaration only.

        A CSV reader makes an integer column ``int64`` without a missing value and
        ``float64`` with one, and takes categories from the values it saw; a release whose
        dtypes followed the input would show whether one record is missing or holds a
        rare level (issue 25). So: a discrete kind is a Categorical over the declared
        levels (ordered for the ordinal kind, or as ``ordered`` says); an integer kind
        declared ``"missing": false`` is ``int64``; every other numeric kind is
        ``float64`` (it may hold missing values).
        """
        if self.is_discrete:
            return pd.CategoricalDtype(list(self.levels), ordered=self.kind == "ordinal" if ordered is None else bool(ordered))
        if self.kind == "integer" and not self.missing:
            return np.dtype(np.int64)
        return np.dtype(float)

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.is_discrete:
            out["levels"] = list(self.levels)
            if self.other is not None:
                out["other"] = self.other
        else:
            lo, hi = self.bounds
            if self.kind == "integer":
                out["bounds"] = [int(lo), int(hi)]
                if self.point_masses:
                    out["point_masses"] = [int(v) for v in self.point_masses]
            else:
                out["bounds"] = [lo, hi]
                if self.point_masses:
                    out["point_masses"] = list(self.point_masses)
        if not self.missing:
            out["missing"] = False
        if self.description:
            out["description"] = self.description
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], name: str = "") -> "ColumnDomain":
        where = f"column '{name}'" if name else "a column"
        if not isinstance(d, Mapping):
            raise DomainError(f"The domain of {where} must be a JSON object with a 'kind'. Got {type(d).__name__} instead.")
        unknown = sorted(set(d) - _KEYS)
        if unknown:
            raise DomainError(f"The domain of {where} has unknown keys {unknown}; allowed: {sorted(_KEYS)}.")
        if "kind" not in d:
            raise DomainError(f"The domain of {where} needs a 'kind' (one of {', '.join(KINDS)}).")
        return cls(
            kind=d["kind"],
            levels=None if d.get("levels") is None else tuple(d["levels"]),
            bounds=None if d.get("bounds") is None else tuple(d["bounds"]),
            point_masses=tuple(d.get("point_masses") or ()),
            other=d.get("other"),
            missing=d.get("missing", True),
            name=name,
            description=str(d.get("description", "")),
        )

    # ------------------------------------------------------------------ data
    def conform(self, values: pd.Series, out_of_domain: str = "error") -> pd.Series:
        """``values`` in the declared domain, with the declared dtype (a new Series).

        Discrete kinds become a Categorical over ``levels`` (matched on text form);
        numeric kinds become :meth:`dtype` (``int64`` for an integer kind declared
        complete, else float). A value outside the domain (an undeclared level,
        a number outside ``bounds``, a fraction in an integer column) raises a
        :class:`DomainError` naming the column only -- never the value or how many
        -- unless ``out_of_domain="other"`` and the column declares an ``other``
        level, to which such values are then mapped. Missing values are kept as
        missing unless the domain says ``"missing": false``.
        """
        if out_of_domain not in ("error", "other"):
            raise DomainError(f"The 'out_of_domain' option must be 'error' or 'other'. Got {out_of_domain!r} instead.")
        name = self.name or str(values.name)
        isna = values.isna().to_numpy()
        if isna.any() and not self.missing:
            raise DomainError(
                f"Column '{name}' has missing values but its declared domain says \"missing\": false."
            )
        if self.is_discrete:
            keys = {_level_key(v): i for i, v in enumerate(self.levels)}
            # Match each distinct value once (text forms), then map all values by index.
            raw = pd.Index(values.astype(object).to_numpy())
            uniq = pd.Index(pd.unique(raw[~isna]))
            ucodes = np.array([keys.get(_level_key(v), -2) for v in uniq], dtype=np.int64)
            pos = uniq.get_indexer(raw)
            codes = np.where(isna, -1, ucodes[np.clip(pos, 0, None)] if uniq.size else -1).astype(np.int64)
            bad = codes == -2
            if bad.any():
                if out_of_domain == "other" and self.other is not None:
                    codes[bad] = keys[_level_key(self.other)]
                else:
                    hint = (
                        " or map such values to its declared 'other' level (out_of_domain='other', --map-other)"
                        if self.other is not None
                        else " or declare an 'other' level and map such values to it"
                    )
                    raise DomainError(
                        f"Column '{name}' has values outside its declared public domain. Add the level to the "
                        f"domain's 'levels'{hint}."
                    )
            cat = pd.Categorical.from_codes(codes, dtype=self.dtype())
            return pd.Series(cat, index=values.index, name=values.name)
        try:
            x = pd.to_numeric(values, errors="raise").astype(float)
        except (TypeError, ValueError):
            raise DomainError(f"Column '{name}' is declared {self.kind} but holds values that are not numbers.") from None
        arr = x.to_numpy()
        ok = np.isnan(arr) | ((arr >= self.bounds[0]) & (arr <= self.bounds[1]))
        if self.kind == "integer":
            ok &= np.isnan(arr) | (np.floor(arr) == arr)
        if not ok.all():
            what = "whole numbers within" if self.kind == "integer" else "values within"
            raise DomainError(
                f"Column '{name}' has values outside its declared public domain ({what} its declared bounds). "
                f"Widen the declared 'bounds' or clean the column beforehand by a rule that does not depend on the data."
            )
        return pd.Series(arr, index=values.index, name=values.name).astype(self.dtype())


class PublicDomain:
    """Declared public domains of a set of columns, with where they come from.

    Parameters
    ----------
    columns : mapping
        Column name -> :class:`ColumnDomain` or its JSON form (a dict).
    source : str
        Where the declared values come from (documentation, codebook, ...).
    """

    def __init__(self, columns: Mapping[str, ColumnDomain | Mapping[str, Any]] | None = None, source: str = "") -> None:
        cols: dict[str, ColumnDomain] = {}
        for name, d in (columns or {}).items():
            name = str(name)
            if isinstance(d, ColumnDomain):
                cd = d if d.name == name else ColumnDomain(**{**_fields(d), "name": name})
            else:
                cd = ColumnDomain.from_dict(d, name=name)
            cols[name] = cd
        self._columns = cols
        self.source = str(source or "")

    # ------------------------------------------------------------------ mapping protocol
    @property
    def columns(self) -> dict[str, ColumnDomain]:
        return dict(self._columns)

    def __contains__(self, name: object) -> bool:
        return name in self._columns

    def __getitem__(self, name: str) -> ColumnDomain:
        return self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PublicDomain) and self._columns == other._columns

    def __repr__(self) -> str:
        return f"PublicDomain({len(self)} columns: {', '.join(self._columns)})"

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return {"columns": {c: d.to_dict() for c, d in self._columns.items()}, "source": self.source}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "PublicDomain":
        if not isinstance(d, Mapping) or "columns" not in d or not isinstance(d["columns"], Mapping):
            raise DomainError(
                "A public domain must be a JSON object with a 'columns' object (column -> {\"kind\": ...}) "
                "and optionally a 'source' string."
            )
        unknown = sorted(set(d) - {"columns", "source"})
        if unknown:
            raise DomainError(f"A public domain has unknown top-level keys {unknown}; allowed: ['columns', 'source'].")
        return cls(d["columns"], source=d.get("source", ""))

    def to_json(self, path: str | Path | None = None) -> str:
        text = json.dumps(self.to_dict(), indent=2)
        if path is not None:
            Path(path).write_text(text + "\n")
        return text

    @classmethod
    def from_json(cls, path_or_text: str | Path) -> "PublicDomain":
        """Read a domain from a JSON file (or from JSON text starting with ``{``)."""
        text = str(path_or_text)
        if not text.lstrip().startswith("{"):
            p = Path(path_or_text)
            if not p.is_file():
                raise FileNotFoundError(f"The public domain file '{p}' does not exist.")
            text = p.read_text()
            where = f"'{p}'"
        else:
            where = "the JSON text"
        try:
            d = json.loads(text)
        except json.JSONDecodeError as e:
            raise DomainError(f"The public domain in {where} is not valid JSON ({e.msg} at line {e.lineno}).") from None
        return cls.from_dict(d)

    @classmethod
    def from_legacy(
        cls,
        domain: Mapping[str, Any] | None = None,
        bounds: Mapping[str, Any] | None = None,
        ordinal: Sequence[str] | None = None,
        integer: Iterable[str] = (),
        source: str = "declared in Python",
    ) -> "PublicDomain":
        """The older Python forms: ``domain={col: size or [levels]}``, ``bounds={col: (lo, hi)}``.

        A size ``d`` declares the integer codes ``0..d-1`` (ordinal); a list of
        levels is ordinal when its values are increasing numbers (or the column is
        in ``ordinal``), else categorical. A bounds pair declares a continuous
        column (integer if the column is in ``integer``).
        """
        cols: dict[str, ColumnDomain] = {}
        ordinal_set = None if ordinal is None else set(ordinal)
        integer = set(integer)
        for c, d in (domain or {}).items():
            if isinstance(d, (ColumnDomain, Mapping)):
                cols[c] = d if isinstance(d, ColumnDomain) else ColumnDomain.from_dict(d, name=c)
                continue
            if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
                if d < 1:
                    raise DomainError(f"The domain of column '{c}' must be a positive size or a list of levels. Got {d!r} instead.")
                levels, ordered = list(range(int(d))), True
            else:
                if isinstance(d, (str, bytes)) or not isinstance(d, Iterable):
                    raise DomainError(f"The domain of column '{c}' must be a positive size or a list of levels. Got {d!r} instead.")
                levels = list(d)
                numeric = bool(levels) and all(
                    isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in levels
                )
                ordered = bool(numeric and all(a < b for a, b in zip(levels, levels[1:])))
            if ordinal_set is not None:
                ordered = c in ordinal_set
            cols[c] = ColumnDomain("ordinal" if ordered else "categorical", levels=tuple(levels), name=c)
        for c, b in (bounds or {}).items():
            if c in cols:
                raise DomainError(f"Column '{c}' is given both a domain and bounds; declare it once.")
            try:
                lo, hi = float(b[0]), float(b[1])
            except (TypeError, ValueError, IndexError):
                raise DomainError(f"The bounds of column '{c}' must be a pair (lower, upper) of numbers. Got {b!r} instead.") from None
            if c in integer:
                cols[c] = ColumnDomain("integer", bounds=(math.ceil(lo), math.floor(hi)), name=c)
            else:
                cols[c] = ColumnDomain("continuous", bounds=(lo, hi), name=c)
        return cls(cols, source=source)

    # ------------------------------------------------------------------ operations
    def select(self, names: Iterable[str]) -> "PublicDomain":
        """The domains of ``names`` only (each must be declared)."""
        names = list(names)
        self.require(names)
        return PublicDomain({c: self._columns[c] for c in names}, source=self.source)

    def merged(self, other: "PublicDomain | None") -> "PublicDomain":
        """This domain with ``other``'s declarations added (``other`` wins on a shared column)."""
        if other is None:
            return self
        cols = dict(self._columns)
        cols.update(other._columns)
        src = "; ".join(s for s in (self.source, other.source) if s)
        return PublicDomain(cols, source=src)

    def require(self, names: Iterable[str], flag: str = "--domain", parameter: str = "domain") -> None:
        """Refuse, with one error naming the columns and how to declare them, if any is undeclared."""
        missing = [c for c in names if c not in self._columns]
        if missing:
            which = f"Column '{missing[0]}' has" if len(missing) == 1 else f"Columns {missing} have"
            raise DomainError(
                f"{which} no declared public domain. A differentially private release cannot read levels or "
                f"bounds from the data; declare them in a domain JSON file ({flag} domain.json on the command "
                f"line, {parameter}= in Python)."
            )

    def conform(self, df: pd.DataFrame, out_of_domain: str = "error") -> pd.DataFrame:
        """``df``'s declared columns in the declared domain and dtypes (a new frame; see
        :meth:`ColumnDomain.conform`). Every column of ``df`` must be declared."""
        self.require(df.columns)
        return pd.DataFrame({c: self._columns[c].conform(df[c], out_of_domain) for c in df.columns}, index=df.index)


def _fields(d: ColumnDomain) -> dict[str, Any]:
    return {
        "kind": d.kind, "levels": d.levels, "bounds": d.bounds, "point_masses": d.point_masses,
        "other": d.other, "missing": d.missing, "name": d.name, "description": d.description,
    }


def as_public_domain(domain: Any) -> PublicDomain | None:
    """``None``, a :class:`PublicDomain`, a path to its JSON, or its dict form -> PublicDomain."""
    if domain is None or isinstance(domain, PublicDomain):
        return domain
    if isinstance(domain, (str, Path)):
        return PublicDomain.from_json(domain)
    if isinstance(domain, Mapping) and "columns" in domain and isinstance(domain["columns"], Mapping):
        return PublicDomain.from_dict(domain)
    raise DomainError(
        "The 'domain' must be a PublicDomain, a path to a domain JSON file, or a dict {'columns': {...}, 'source': ...}. "
        f"Got {type(domain).__name__} instead."
    )
