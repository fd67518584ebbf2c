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
is the way back): each :class:`ColumnDomain` shows one declared
:class:`~synthmi.columns.ColumnSpec`, which holds the column's facts and their
checks (:meth:`~synthmi.columns.ColumnSpec.declare`), so a domain read from JSON
and the spec built from it share the same column objects. Kinds are those of
:mod:`synthmi.kinds`, with ``nominal`` spelt
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
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from ._json import dumps
from .columns import ColumnSpec, DomainError, level_key  # noqa: F401 (DomainError, level_key: public here too)
from .errors import InputNotFound
from .kinds import CATEGORICAL_KINDS, DOMAIN_KINDS, domain_kind, spec_kind

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


class ColumnDomain:
    """The declared public domain of one column (see the module docstring): a view of one
    declared :class:`~synthmi.columns.ColumnSpec`, which holds the facts and their checks.

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
    description : str
        Free text (not compared).
    """

    __slots__ = ("_column",)

    def __init__(self, kind: str, levels: Any = None, bounds: Any = None, point_masses: Any = (),
                 other: Any = None, missing: bool = True, name: str = "", description: str = "") -> None:
        if kind not in KINDS:
            where = f"column '{name}'" if name else "a column"
            raise DomainError(f"The domain of {where} has kind {kind!r}; it must be one of {', '.join(KINDS)}.")
        column = ColumnSpec.declare(name, spec_kind(kind), levels, bounds, point_masses, other, missing,
                                    description)
        object.__setattr__(self, "_column", column)

    @classmethod
    def view(cls, column: ColumnSpec) -> "ColumnDomain":
        """The domain view of a declared ``column`` (checked by :meth:`ColumnSpec.public`)."""
        out = object.__new__(cls)
        object.__setattr__(out, "_column", column.public())
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"A ColumnDomain is a view of a column's declaration and cannot be changed ('{name}').")

    def __reduce__(self):
        return (ColumnDomain.view, (self._column,))

    # ------------------------------------------------------------------ the view
    @property
    def column(self) -> ColumnSpec:
        """The :class:`~synthmi.columns.ColumnSpec` this view shows."""
        return self._column

    @property
    def kind(self) -> str:
        """The column's kind in the domain spelling (``nominal`` -> ``categorical``)."""
        return domain_kind(self._column.kind)

    @property
    def levels(self) -> tuple | None:
        return self._column.levels

    @property
    def bounds(self) -> tuple[float, float] | None:
        return self._column.bounds

    @property
    def point_masses(self) -> tuple[float, ...]:
        return self._column.point_masses or ()

    @property
    def other(self) -> Any:
        return self._column.other

    @property
    def missing(self) -> bool:
        return self._column.missing

    @property
    def name(self) -> str:
        return self._column.name

    @property
    def description(self) -> str:
        return self._column.note

    def _key(self) -> tuple:
        return (self.kind, self.levels, self.bounds, self.point_masses, self.other, self.missing, self.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ColumnDomain) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"ColumnDomain(kind={self.kind!r}, levels={self.levels!r}, bounds={self.bounds!r}, "
                f"point_masses={self.point_masses!r}, other={self.other!r}, missing={self.missing!r}, "
                f"name={self.name!r})")

    # ------------------------------------------------------------------ properties
    @property
    def is_discrete(self) -> bool:
        return self._column.is_categorical

    @property
    def ordered(self) -> bool:
        """Whether the values have a public order (ordinal and numeric kinds)."""
        return self._column.ordered

    def dtype(self, ordered: bool | None = None) -> Any:
        """The pandas dtype a DP release gives this column (:meth:`ColumnSpec.dtype`)."""
        return self._column.dtype(ordered)

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
        """``values`` in the declared domain, with the declared dtype (a new Series); see
        :meth:`synthmi.columns.ColumnSpec.conform`."""
        return self._column.conform(values, out_of_domain)


class PublicDomain:
    """Declared public domains of a set of columns, with where they come from: a view of
    declared :class:`~synthmi.columns.ColumnSpec` objects (those of a
    :class:`~synthmi.spec.ReleaseSpec` for :meth:`ReleaseSpec.public_domain`), one
    :class:`ColumnDomain` view per column.

    Parameters
    ----------
    columns : mapping
        Column name -> :class:`ColumnDomain`, a declared
        :class:`~synthmi.columns.ColumnSpec`, or its JSON form (a dict).
    source : str
        Where the declared values come from (documentation, codebook, ...).
    """

    def __init__(self, columns: Mapping[str, ColumnDomain | Mapping[str, Any]] | None = None, source: str = "") -> None:
        cols: dict[str, ColumnDomain] = {}
        for name, d in (columns or {}).items():
            name = str(name)
            if isinstance(d, ColumnDomain):
                cd = d if d.name == name else ColumnDomain.view(replace(d.column, name=name))
            elif isinstance(d, ColumnSpec):
                cd = ColumnDomain.view(d if d.name == name else replace(d, name=name))
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
        text = dumps(self.to_dict(), indent=2)
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
                raise InputNotFound(f"The public domain file '{p}' does not exist.", path=p,
                                    parameter="path_or_text", owner="PublicDomain.from_json")
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
