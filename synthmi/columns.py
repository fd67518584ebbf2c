"""The facts of one column, stored once: :class:`ColumnSpec`.

A column's kind (:mod:`synthmi.kinds`), its levels (categorical kinds) or bounds
(numeric kinds), each either *declared* public by the data holder or inferred
from the data (then confidential), its point masses, the ``other`` level that
out-of-domain values map to, whether it may hold missing values, a free-text
note, and the role it plays in a release. The checks of those facts live here
too: :meth:`ColumnSpec.declare` (a declared public domain, the one a
differentially private release relies on), :meth:`ColumnSpec.conform` (data into
the declared domain) and :meth:`ColumnSpec.dtype` (the dtype the declaration
decides).

Every other description of a column is a view of a :class:`ColumnSpec` and
holds nothing else: the :class:`~synthmi.spec.ReleaseSpec` maps names to them;
a :class:`~synthmi.domain.ColumnDomain` (public domains, DP code) shows a
declared one in the domain JSON spelling; a :class:`~synthmi.schema.Variable`
(models) shows one in the model's spelling. This module sits below all three
(layer 1, above only :mod:`synthmi.kinds` and the base layer).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ._json import plain
from .kinds import CATEGORICAL_KINDS, DOMAIN_KINDS, KINDS, ORDERED_KINDS, domain_kind
from .errors import InputError

__all__ = ["ColumnSpec", "DomainError", "ROLES"]

#: column roles; the first four are released, ``excluded`` is dropped
ROLES = ("quasi_identifier", "keep", "outcome", "weight", "excluded")


def _err(where: str, expected: str, got: Any) -> InputError:
    return InputError(f"{where} must be {expected}. Got {got!r} instead.")


class DomainError(InputError):
    """A public domain is malformed, missing a column, or the data fall outside it."""


_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def level_key(v: Any) -> str:
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
        return level_key(float(t))
    return t




@dataclass(frozen=True)
class ColumnSpec:
    """One column of a release spec: the one store of a column's facts (a
    :class:`~synthmi.domain.ColumnDomain` and a :class:`~synthmi.schema.Variable`
    are views of one).

    Parameters
    ----------
    name : str
    role : one of :data:`ROLES`
    kind : one of :data:`KINDS`
    levels : tuple, optional
        Ordered levels of a categorical column.
    bounds : (lower, upper), optional
        Range of a numeric column.
    point_masses : tuple, optional
        Values of a numeric column with a probability mass (e.g. 0 income).
    declared : bool
        ``True``: the levels / bounds are public (declared by the data holder);
        ``False``: they were inferred from the data and are confidential.
    other : level, optional
        A declared level that out-of-domain values of a categorical column map to
        (differentially private releases; see :class:`synthmi.domain.ColumnDomain`).
    missing : bool
        Whether the column may hold missing values (default ``True``); ``False``
        declares it complete.
    note : str
        Free text (a public domain's ``description``); not compared.
    """

    name: str
    role: str = "keep"
    kind: str = "continuous"
    levels: tuple | None = None
    bounds: tuple[float, float] | None = None
    point_masses: tuple | None = None
    declared: bool = False
    other: Any = None
    missing: bool = True
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        where = f"The spec of column '{self.name}'"
        if self.role not in ROLES:
            raise _err(f"{where}: 'role'", f"one of {list(ROLES)}", self.role)
        if self.kind not in KINDS:
            raise _err(f"{where}: 'kind'", f"one of {list(KINDS)}", self.kind)
        if self.levels is not None:
            object.__setattr__(self, "levels", tuple(self.levels))
            if self.kind not in CATEGORICAL_KINDS:
                raise InputError(f"{where} gives levels, but its kind '{self.kind}' is numeric; use bounds instead.")
            if len(set(map(repr, self.levels))) != len(self.levels):
                raise InputError(f"{where} lists a level twice: {list(self.levels)}.")
            if self.kind == "binary" and len(self.levels) != 2:
                raise InputError(f"{where} is binary, so it needs exactly 2 levels. Got {len(self.levels)}.")
        if self.bounds is not None:
            try:
                lo, hi = (float(self.bounds[0]), float(self.bounds[1]))
            except (TypeError, ValueError, IndexError):
                raise _err(f"{where}: 'bounds'", "a pair [lower, upper] of numbers", self.bounds) from None
            if self.kind in CATEGORICAL_KINDS:
                raise InputError(f"{where} gives bounds, but its kind '{self.kind}' is categorical; use levels instead.")
            if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
                raise _err(f"{where}: 'bounds'", "finite with lower <= upper", self.bounds)
            object.__setattr__(self, "bounds", (lo, hi))
        if self.point_masses is not None:
            object.__setattr__(self, "point_masses", tuple(float(v) for v in self.point_masses))
        if not isinstance(self.declared, (bool, np.bool_)):
            raise _err(f"{where}: 'declared'", "true or false", self.declared)
        if not isinstance(self.missing, (bool, np.bool_)):
            raise _err(f"{where}: 'missing'", "true or false", self.missing)
        if self.other is not None and (self.levels is None or self.other not in self.levels):
            raise InputError(f"{where} names an 'other' level that is not one of its levels.")

    @property
    def is_categorical(self) -> bool:
        return self.kind in CATEGORICAL_KINDS

    @property
    def released(self) -> bool:
        return self.role != "excluded"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"role": self.role, "kind": self.kind}
        if self.levels is not None:
            d["levels"] = [plain(v) for v in self.levels]
        if self.bounds is not None:
            d["bounds"] = [_num(v) for v in self.bounds]
        if self.point_masses is not None:
            d["point_masses"] = [_num(v) for v in self.point_masses]
        if self.levels is not None or self.bounds is not None:
            d["declared"] = bool(self.declared)
        if self.other is not None:
            d["other"] = plain(self.other)
        if not self.missing:
            d["missing"] = False
        if self.note:
            d["note"] = self.note
        return d

    @classmethod
    def from_domain(cls, name: str, domain: Any, role: str = "keep",
                    ordered: bool | None = None) -> "ColumnSpec":
        """The declared column a :class:`~synthmi.domain.ColumnDomain` shows, named ``name``
        and with ``role`` (a domain is a view of a declared column, so this is that column).

        ``ordered`` (a discrete column, not binary): ordinal when true, nominal when
        false, instead of the domain's kind.
        """
        column = domain.column
        kind = column.kind
        if ordered is not None and column.is_categorical and kind != "binary":
            kind = "ordinal" if ordered else "nominal"
        if (name, role, kind) == (column.name, column.role, column.kind):
            return column
        return replace(column, name=name, role=role, kind=kind)

    @classmethod
    def declare(cls, name: str, kind: str, levels: Any = None, bounds: Any = None, point_masses: Any = (),
                other: Any = None, missing: Any = True, note: str = "", role: str = "keep") -> "ColumnSpec":
        """A column whose levels or bounds are declared public, checked as a public domain.

        The checks a differentially private release relies on (all raise
        :class:`DomainError`, naming the column, never a value of the data): a
        categorical kind has a non-empty list of distinct ``levels`` (distinct by their
        text form, :func:`level_key`), no missing value among them, exactly two for
        ``binary``, and an ``other`` that is one of them; a numeric kind has finite
        ``bounds`` ``[lower, upper]`` (whole numbers with lower <= upper for
        ``integer``, lower < upper for ``continuous``) and ``point_masses`` inside
        them; ``missing`` is true or false. Levels become JSON values, ``other`` the
        level it matches, bounds and point masses floats (point masses sorted, once).

        Messages spell the kind as the public-domain format does
        (:func:`synthmi.kinds.domain_kind`).
        """
        where = f"column '{name}'" if name else "a column"
        if kind not in KINDS:
            raise DomainError(f"The domain of {where} has kind {domain_kind(kind)!r}; it must be one of "
                              f"{', '.join(DOMAIN_KINDS)}.")
        spelt = domain_kind(kind)
        if not isinstance(missing, (bool, np.bool_)):
            raise DomainError(f"The domain of {where} must give 'missing' as true or false. Got {missing!r} instead.")
        pm_out: tuple | None = None
        if kind in CATEGORICAL_KINDS:
            if bounds is not None or point_masses:
                raise DomainError(f"The domain of {where} is {spelt}: it takes 'levels', not 'bounds' or 'point_masses'.")
            if levels is None or isinstance(levels, (str, bytes)) or len(tuple(levels)) == 0:
                raise DomainError(f"The domain of {where} is {spelt} and needs a non-empty list of 'levels'.")
            levels = tuple(plain(v) for v in levels)
            for v in levels:
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    raise DomainError(
                        f"The domain of {where} lists a missing value as a level; use \"missing\": true instead."
                    )
            keys = [level_key(v) for v in levels]
            if len(set(keys)) != len(keys):
                raise DomainError(f"The domain of {where} lists a level twice (levels must be distinct).")
            if kind == "binary" and len(levels) != 2:
                raise DomainError(f"The domain of {where} is binary and must list exactly 2 levels. Got {len(levels)} instead.")
            if other is not None:
                if level_key(other) not in keys:
                    raise DomainError(f"The domain of {where} declares an 'other' level that is not one of its 'levels'.")
                other = levels[keys.index(level_key(other))]
        else:
            if levels is not None:
                raise DomainError(f"The domain of {where} is {spelt}: it takes 'bounds', not 'levels'.")
            if other is not None:
                raise DomainError(f"The domain of {where} is {spelt}: 'other' is for discrete kinds only.")
            b = bounds
            try:
                lo, hi = (float(b[0]), float(b[1]))
                if len(b) != 2:
                    raise InputError
            except (TypeError, ValueError, IndexError):
                raise DomainError(
                    f"The domain of {where} is {spelt} and needs 'bounds' [lower, upper] of numbers. Got {b!r} instead."
                ) from None
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise DomainError(f"The domain of {where} must have finite 'bounds'. Got {list(b)!r} instead.")
            if kind == "integer":
                if not (lo.is_integer() and hi.is_integer()) or hi < lo:
                    raise DomainError(
                        f"The domain of {where} is integer and needs whole-number 'bounds' with lower <= upper. "
                        f"Got {list(b)!r} instead."
                    )
            elif not hi > lo:
                raise DomainError(f"The domain of {where} needs 'bounds' with lower < upper. Got {list(b)!r} instead.")
            bounds = (lo, hi)
            try:
                pm = tuple(sorted({float(v) for v in (point_masses or ())}))
            except (TypeError, ValueError):
                raise DomainError(f"The domain of {where} must give 'point_masses' as a list of numbers.") from None
            for v in pm:
                if not (lo <= v <= hi) or (kind == "integer" and not v.is_integer()):
                    raise DomainError(
                        f"The domain of {where} has a point mass {v:g} outside its bounds"
                        + (" or not a whole number." if kind == "integer" else ".")
                    )
            pm_out = pm or None
        return cls(name, role, kind, levels=levels, bounds=bounds, point_masses=pm_out, declared=True,
                   other=other, missing=bool(missing), note=str(note or ""))

    def public(self) -> "ColumnSpec":
        """This column as a public domain: itself, checked by :meth:`declare` (a new
        column only when the checks normalise a value, e.g. sort the point masses).

        Only declared levels and bounds are public: a column whose levels or bounds
        were inferred from the data (``declared`` false) is refused.
        """
        if not self.declared or (self.levels is None and self.bounds is None):
            raise DomainError(f"Column '{self.name}' has no declared public domain (its levels or bounds were "
                              "not declared public).")
        checked = ColumnSpec.declare(self.name, self.kind, self.levels, self.bounds, self.point_masses or (),
                                     self.other, self.missing, self.note, self.role)
        same = checked == self and checked.point_masses == self.point_masses and checked.note == self.note
        return self if same else checked

    @property
    def ordered(self) -> bool:
        """Whether the values have a public order (ordinal and numeric kinds)."""
        return self.kind in ORDERED_KINDS

    def dtype(self, ordered: bool | None = None) -> Any:
        """The pandas dtype a DP release gives this column, decided by the declaration only.

        A CSV reader makes an integer column ``int64`` without a missing value and
        ``float64`` with one, and takes categories from the values it saw; a release whose
        dtypes followed the input would show whether one record is missing or holds a
        rare level (issue 25). So: a categorical kind is a Categorical over the declared
        levels (ordered for the ordinal kind, or as ``ordered`` says); an integer kind
        declared ``"missing": false`` is ``int64``; every other numeric kind is
        ``float64`` (it may hold missing values).
        """
        if self.is_categorical:
            return pd.CategoricalDtype(list(self.levels), ordered=self.kind == "ordinal" if ordered is None else bool(ordered))
        if self.kind == "integer" and not self.missing:
            return np.dtype(np.int64)
        return np.dtype(float)

    def conform(self, values: pd.Series, out_of_domain: str = "error") -> pd.Series:
        """``values`` in the declared domain, with the declared dtype (a new Series).

        Categorical kinds become a Categorical over ``levels`` (matched on text form);
        numeric kinds become :meth:`dtype` (``int64`` for an integer kind declared
        complete, else float). A value outside the domain (an undeclared level,
        a number outside ``bounds``, a fraction in an integer column) raises a
        :class:`DomainError` naming the column only -- never the value or how many
        -- unless ``out_of_domain="other"`` and the column declares an ``other``
        level, to which such values are then mapped. Missing values are kept as
        missing unless the domain says ``"missing": false``. Only a declared
        column conforms data (inferred levels and bounds are confidential).
        """
        if out_of_domain not in ("error", "other"):
            raise DomainError(f"The 'out_of_domain' option must be 'error' or 'other'. Got {out_of_domain!r} instead.")
        name = self.name or str(values.name)
        if not self.declared or (self.levels is None and self.bounds is None):
            raise DomainError(f"Column '{name}' has no declared public domain to conform its values to.")
        isna = values.isna().to_numpy()
        if isna.any() and not self.missing:
            raise DomainError(
                f"Column '{name}' has missing values but its declared domain says \"missing\": false."
            )
        if self.is_categorical:
            keys = {level_key(v): i for i, v in enumerate(self.levels)}
            # Match each distinct value once (text forms), then map all values by index.
            raw = pd.Index(values.astype(object).to_numpy())
            uniq = pd.Index(pd.unique(raw[~isna]))
            ucodes = np.array([keys.get(level_key(v), -2) for v in uniq], dtype=np.int64)
            pos = uniq.get_indexer(raw)
            codes = np.where(isna, -1, ucodes[np.clip(pos, 0, None)] if uniq.size else -1).astype(np.int64)
            bad = codes == -2
            if bad.any():
                if out_of_domain == "other" and self.other is not None:
                    codes[bad] = keys[level_key(self.other)]
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

    @classmethod
    def from_dict(cls, name: str, d: Mapping[str, Any]) -> "ColumnSpec":
        if not isinstance(d, Mapping):
            raise _err(f"The spec of column '{name}'", "an object with 'role' and 'kind'", d)
        unknown = sorted(set(d) - {"role", "kind", "levels", "bounds", "point_masses", "declared", "other",
                                   "missing", "note"})
        if unknown:
            raise InputError(
                f"The spec of column '{name}' has unknown keys {unknown}; allowed: role, kind, levels, bounds, "
                "point_masses, declared, other, missing, note."
            )
        return cls(
            name=name,
            role=d.get("role", "keep"),
            kind=d.get("kind", "continuous"),
            levels=d.get("levels"),
            bounds=None if d.get("bounds") is None else tuple(d["bounds"]),
            point_masses=d.get("point_masses"),
            declared=d.get("declared", False),
            other=d.get("other"),
            missing=d.get("missing", True),
            note=str(d.get("note") or ""),
        )



def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)
