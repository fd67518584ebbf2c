"""The model's view of a release spec: the kind and levels of each column.

A :class:`Schema` maps each column to one of the four kinds a model works with
(:data:`synthmi.kinds.MODEL_KINDS`: the spec's ``integer`` is modelled as
``continuous``):

``continuous``
    real-valued (float or integer with many values);
``binary``
    two categories (pandas Categorical with 2 levels, bool, or a 0/1 numeric);
``nominal``
    unordered categories (unordered Categorical, object or string);
``ordinal``
    ordered categories (ordered Categorical).

It is the view :meth:`synthmi.spec.ReleaseSpec.schema` gives of a release spec
(the one description of the columns; :meth:`ReleaseSpec.from_schema` is the way
back), or, for the ``schema=`` shortcut, inferred from dtypes and overridden per
column. The kinds come from :mod:`synthmi.kinds`, the one vocabulary. A
:class:`Variable` holds nothing but one :class:`~synthmi.columns.ColumnSpec`
(the one store of a column's facts, shared with the spec it is a view of).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ._json import plain
from .columns import ColumnSpec
from .kinds import CATEGORICAL_KINDS, MODEL_KINDS, model_kind
from .errors import ColumnError, InputError, ParameterError

#: the kinds a :class:`Variable` may have (the model's spelling of synthmi.kinds.KINDS)
KINDS = MODEL_KINDS


class Variable:
    """One column as a model sees it: its kind (:data:`KINDS`) and, for categorical kinds,
    its ordered levels (``categories``).

    A view of one :class:`~synthmi.columns.ColumnSpec`, which holds the facts: the
    spec's ``integer`` shows as ``continuous`` here (:func:`synthmi.kinds.model_kind`).
    """

    __slots__ = ("_column",)

    def __init__(self, name: str, kind: str, categories: tuple | None = None) -> None:
        # the one vocabulary (synthmi.kinds): a misspelt kind is refused here, not
        # treated as "not continuous" by whichever model reads it first
        if kind not in KINDS:
            raise InputError(f"The kind of column '{name}' must be one of {list(KINDS)}. Got {kind!r} instead.")
        levels = None if categories is None or kind not in CATEGORICAL_KINDS else tuple(categories)
        object.__setattr__(self, "_column", ColumnSpec(name, kind=kind, levels=levels))

    @classmethod
    def view(cls, column: ColumnSpec) -> "Variable":
        """The model's view of ``column``."""
        out = object.__new__(cls)
        object.__setattr__(out, "_column", column)
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"A Variable is a view of a column's description and cannot be changed ('{name}').")

    def __reduce__(self):
        return (Variable.view, (self._column,))

    @property
    def column(self) -> ColumnSpec:
        """The :class:`~synthmi.columns.ColumnSpec` this view shows."""
        return self._column

    @property
    def name(self) -> str:
        return self._column.name

    @property
    def kind(self) -> str:
        return model_kind(self._column.kind)

    @property
    def categories(self) -> tuple | None:
        return self._column.levels if self._column.is_categorical else None

    def _key(self) -> tuple:
        return (self.name, self.kind, self.categories)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Variable) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Variable(name={self.name!r}, kind={self.kind!r}, categories={self.categories!r})"

    @property
    def is_categorical(self) -> bool:
        return self.kind in CATEGORICAL_KINDS

    @property
    def n_levels(self) -> int:
        return 0 if self.categories is None else len(self.categories)


def _infer_variable(name: str, s: pd.Series) -> Variable:
    dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        cats = tuple(dtype.categories)
        if dtype.ordered and len(cats) > 2:
            return Variable(name, "ordinal", cats)
        return Variable(name, "binary" if len(cats) == 2 else "nominal", cats)
    if pd.api.types.is_bool_dtype(dtype):
        return Variable(name, "binary", (False, True))
    if pd.api.types.is_numeric_dtype(dtype):
        obs = s.dropna().unique()
        if len(obs) <= 2 and set(np.asarray(obs, dtype=float)).issubset({0.0, 1.0}):
            return Variable(name, "binary", (0, 1))
        return Variable(name, "continuous")
    # object / string: nominal with sorted observed levels
    cats = tuple(sorted(s.dropna().unique().tolist(), key=str))
    return Variable(name, "binary" if len(cats) == 2 else "nominal", cats)


@dataclass
class Schema:
    """Column kinds for a DataFrame.

    Parameters
    ----------
    variables : dict
        Column name -> :class:`Variable`, in column order.
    """

    variables: dict[str, Variable] = field(default_factory=dict)

    @classmethod
    def infer(cls, df: pd.DataFrame, overrides: Mapping[str, str] | None = None) -> "Schema":
        """Infer kinds from dtypes; ``overrides`` maps column -> kind."""
        overrides = dict(overrides or {})
        unknown = [c for c in overrides if c not in df.columns]
        if unknown:
            raise ParameterError(f"The 'overrides' parameter of Schema names columns not in the data: {unknown}.", parameter='overrides', owner='Schema')
        out: dict[str, Variable] = {}
        for c in df.columns:
            v = _infer_variable(c, df[c])
            if c in overrides:
                kind = overrides[c]
                if kind not in KINDS:
                    raise InputError(
                        f"The kind given for column '{c}' must be one of {KINDS}. Got {kind!r} instead."
                    )
                if kind == "continuous":
                    if not pd.api.types.is_numeric_dtype(df[c]) or isinstance(df[c].dtype, pd.CategoricalDtype):
                        raise ColumnError(f"Column '{c}' cannot be continuous: its dtype is {df[c].dtype}.")
                    v = Variable(c, "continuous")
                else:
                    cats = v.categories
                    if cats is None:
                        cats = tuple(sorted(df[c].dropna().unique().tolist()))
                    if kind == "binary" and len(cats) != 2:
                        raise ColumnError(f"Column '{c}' cannot be binary: it has {len(cats)} levels.")
                    v = Variable(c, kind, cats)
            out[c] = v
        return cls(out)

    def __getitem__(self, name: str) -> Variable:
        return self.variables[name]

    def __contains__(self, name: object) -> bool:
        return name in self.variables

    def __iter__(self):
        return iter(self.variables.values())

    @property
    def columns(self) -> list[str]:
        return list(self.variables)

    def kind(self, name: str) -> str:
        return self.variables[name].kind

    def continuous(self, columns: list[str] | None = None) -> list[str]:
        cols = self.columns if columns is None else columns
        return [c for c in cols if self.variables[c].kind == "continuous"]

    def categorical(self, columns: list[str] | None = None) -> list[str]:
        cols = self.columns if columns is None else columns
        return [c for c in cols if self.variables[c].is_categorical]

    def codes(self, s: pd.Series) -> np.ndarray:
        """Integer codes 0..C-1 of a categorical column (-1 for missing)."""
        v = self.variables[s.name]
        if not v.is_categorical:
            raise ColumnError(f"Column '{s.name}' is continuous; it has no category codes.")
        if isinstance(s.dtype, pd.CategoricalDtype) and tuple(s.cat.categories) == v.categories:
            return s.cat.codes.to_numpy().astype(np.int64)
        return pd.Categorical(s, categories=list(v.categories)).codes.astype(np.int64)

    def from_codes(self, name: str, codes: np.ndarray, like: pd.Series) -> pd.Series:
        """Inverse of :meth:`codes`, returning a Series with ``like``'s dtype."""
        v = self.variables[name]
        cats = list(v.categories)
        codes = np.asarray(codes)
        if isinstance(like.dtype, pd.CategoricalDtype):
            if tuple(like.cat.categories) == tuple(cats):
                return pd.Series(pd.Categorical.from_codes(codes, dtype=like.dtype), name=name)
            # The schema's levels came from elsewhere (a spec's declared levels, a wider file)
            # than ``like``'s dtype: decode by the schema's levels, never by position in
            # ``like``'s (that raised, or would silently mislabel), and keep both sets of levels.
            extra = [c for c in cats if c not in set(like.cat.categories)]
            order = cats if like.cat.ordered else list(like.cat.categories) + extra
            dtype = pd.CategoricalDtype(order, ordered=bool(like.cat.ordered))
            values = np.array(cats, dtype=object)[np.where(codes < 0, 0, codes)]
            out = pd.Series(pd.Categorical(values, dtype=dtype), name=name)
            out[codes < 0] = np.nan
            return out
        values = np.array(cats, dtype=object)[np.where(codes < 0, 0, codes)]
        out = pd.Series(values, name=name)
        out[codes < 0] = np.nan
        return out.astype(like.dtype) if not pd.api.types.is_object_dtype(like.dtype) else out

    def to_dict(self) -> dict[str, Any]:
        return {
            c: {"kind": v.kind, "categories": None if v.categories is None else [plain(x) for x in v.categories]}
            for c, v in self.variables.items()
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Schema":
        return cls({c: Variable(c, e["kind"], None if e["categories"] is None else tuple(e["categories"])) for c, e in d.items()})


