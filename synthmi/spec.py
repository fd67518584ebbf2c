"""The release spec: what a release treats as public, written down once.

A :class:`ReleaseSpec` says, for every column of the confidential data,

* its **role**: ``quasi_identifier`` (synthesized), ``keep`` (released
  unchanged, a predictor), ``outcome`` (an analysis variable, released
  unchanged like ``keep`` by partially synthetic methods), ``weight`` (a survey
  weight, released unchanged) or ``excluded`` (neither modelled nor released);
* its **kind**: ``continuous``, ``integer``, ``binary``, ``nominal`` or
  ``ordinal`` (:mod:`synthmi.kinds`, the one vocabulary);
* its public **levels** (categorical kinds) or **bounds** (numeric kinds),
  each marked ``declared`` (the data holder states they are public, e.g. from
  the survey's code book) or not (inferred from the data by
  :meth:`ReleaseSpec.draft`, hence confidential: differentially private code
  never reads them, see :meth:`ReleaseSpec.public_domain`), and for declared
  columns the ``other`` level and whether ``missing`` values may occur;

and, for the release as a whole, the masks of the quasi-identifiers (one per
column, or per risk subgroup ``low`` / ``medium`` / ``high``), per-variable
model settings (``models``, ``visit_sequence``: the same mapping the
conditional-model synthesizers take) and the analyses (formula, family) a
reviewer cares about.

It is drafted from a data frame (``synthmi spec --data file.csv > spec.json``),
edited by the user, saved to and loaded from JSON, and passed to the
synthesizers (``fit(df, spec)``), the evaluation functions (``spec=``) and the
command line (``--spec``). Kinds in models and evaluation come from the spec,
not from re-inferring dtypes.

It is the one description of the columns. Each column's facts are one
:class:`ColumnSpec` (:mod:`synthmi.columns`, with the checks of a declared
public domain); the :class:`~synthmi.schema.Schema` models use and the
:class:`~synthmi.domain.PublicDomain` DP code uses are views of the spec's
:class:`ColumnSpec` objects and hold nothing of their own
(:meth:`ReleaseSpec.schema`, :meth:`ReleaseSpec.public_domain`, the latter
from declared values only) and convert back without loss
(:meth:`ReleaseSpec.from_schema`, :meth:`ReleaseSpec.from_public_domain`). The
quasi-identifiers are resolved in one place, :func:`resolve_quasi_identifiers`
(given names, else the spec's, else those recorded with a release), which the
models, the evaluation functions and the command-line verbs call.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ._json import dumps, jsonable, plain
from .columns import ROLES, ColumnSpec, _err
from .domain import ColumnDomain, PublicDomain
from .kinds import CATEGORICAL_KINDS, KINDS, NUMERIC_KINDS
from .schema import Schema, Variable, _infer_variable
from .errors import ColumnError, InputError, InputNotFound, OutputExists

__all__ = ["ColumnSpec", "ReleaseSpec", "ROLES", "KINDS", "RISK_GROUPS", "as_spec", "spec_frames",
           "resolve_quasi_identifiers"]

# column kinds: KINDS and CATEGORICAL_KINDS of synthmi.kinds, the one vocabulary
#: risk subgroups that may carry their own masks
RISK_GROUPS = ("low", "medium", "high")
#: the analysis models' GLM families (synthmi.evaluation.analysis): binary, linear and count responses
FAMILIES = ("probit", "logit", "gaussian", "poisson", "negbin")
#: one word for the whole ``models`` setting: ``"auto"`` (chosen per column,
#: synthmi.models.model_choice) or a method that models every kind of column, for every
#: quasi-identifier (synthmi.models.conditional.WHOLE_METHODS)
WHOLE_MODELS = ("auto", "tree", "cart")
#: JSON format version written by :meth:`ReleaseSpec.to_dict`
FORMAT = 1

_OWNER = "ReleaseSpec"


@dataclass
class ReleaseSpec:
    """Roles, kinds, public levels/bounds, masks, model settings and analyses of a release.

    Parameters
    ----------
    columns : dict
        Column name -> :class:`ColumnSpec`, quasi-identifiers first (their order is the default visit sequence).
    masks : dict, optional
        Quasi-identifier -> mask spec (``{"K": 3, "sigma_e": 5}``, ``{"alpha": 2}``,
        ``{"p": 0.8}``; see :func:`~synthmi.models.masking.make_masking`), or
        ``{"low": {...}, "medium": {...}, "high": {...}}`` for masks per risk subgroup.
    models : dict, "auto", "tree" or "cart", optional
        Column -> per-variable model settings (``{"method": ..., "formula": "~ ..."}``,
        or ``"auto"``), passed to synthesizers that take ``models=``; ``"auto"`` alone:
        every quasi-identifier's model chosen by posterior predictive checks
        (:mod:`synthmi.models.model_choice`); ``"tree"`` or ``"cart"`` alone: that
        method for every quasi-identifier.
    visit_sequence : list of str, optional
        Order in which the quasi-identifiers are synthesized.
    analyses : list of dict
        ``{"formula": "y ~ x1 + x2", "family": "probit"}``: the models a reviewer
        checks; the first is the default of ``analyse`` and ``report``.
    source : str
        Where the declared public values come from (code book, documentation).
    na_values : list of str, optional
        Cell values of the data file that mean missing (``["?", ".", "-9"]``), as
        pandas ``read_csv``'s ``na_values``; the CLI reads the file with them.
    tuning : dict, optional
        How ``synthmi tune`` chose the masks (targets, objective, chosen settings,
        validated figures with their Monte Carlo SE: aggregates only), written by
        :meth:`~synthmi.workflow.tuning.TuneResult.to_spec`; the report shows it.
    """

    columns: dict[str, ColumnSpec] = field(default_factory=dict)
    masks: dict[str, Any] | None = None
    models: dict[str, Any] | None = None
    visit_sequence: list[str] | None = None
    analyses: list[dict[str, str]] = field(default_factory=list)
    source: str = ""
    na_values: list[str] | None = None
    tuning: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.columns = dict(self.columns)
        if self.tuning is not None and not isinstance(self.tuning, Mapping):
            raise _err("The 'tuning' of the spec", "an object (written by 'synthmi tune')", self.tuning)
        if self.na_values is not None:
            if isinstance(self.na_values, str) or not all(isinstance(v, (str, int, float)) for v in self.na_values):
                raise _err("The 'na_values' of the spec", 'a list of markers such as ["?", ".", "-9"]', self.na_values)
            self.na_values = [str(v) for v in self.na_values] or None
        for name, col in self.columns.items():
            if not isinstance(col, ColumnSpec) or col.name != name:
                raise InputError(f"The 'columns' of a ReleaseSpec must map each name to its ColumnSpec; '{name}' does not.")
        qi = self.quasi_identifiers
        if self.masks is not None:
            if not isinstance(self.masks, Mapping):
                raise _err("The 'masks' of the spec", "an object {column: mask} or {group: {column: mask}}", self.masks)
            keys = set(self.masks)
            if keys & set(RISK_GROUPS):
                if not keys <= set(RISK_GROUPS):
                    raise InputError(
                        f"The 'masks' of the spec mix risk groups and columns: {sorted(keys)}; either every key is "
                        f"one of {list(RISK_GROUPS)} or none is."
                    )
                per = [(g, self.masks[g]) for g in sorted(keys)]
            else:
                per = [(None, self.masks)]
            for g, mk in per:
                if not isinstance(mk, Mapping):
                    raise _err(f"The 'masks' of the spec for group '{g}'", "an object {column: mask}", mk)
                bad = [c for c in mk if c not in qi]
                if bad:
                    where = "" if g is None else f" (group '{g}')"
                    raise InputError(
                        f"The 'masks' of the spec{where} name columns that are not quasi-identifiers: {bad}. "
                        f"Quasi-identifiers: {qi}."
                    )
        if self.visit_sequence is not None:
            seq = list(self.visit_sequence)
            if sorted(seq) != sorted(qi) or len(set(seq)) != len(seq):
                raise InputError(
                    f"The 'visit_sequence' of the spec must list each quasi-identifier once ({qi}). Got {seq} instead."
                )
            self.visit_sequence = seq
        if self.models is not None and not (isinstance(self.models, str) and self.models in WHOLE_MODELS):
            if not isinstance(self.models, Mapping):
                raise _err("The 'models' of the spec",
                           "an object {column: settings} or one of " + ", ".join(f'"{w}"' for w in WHOLE_MODELS),
                           self.models)
            bad = [c for c in self.models if c not in self.columns]
            if bad:
                raise InputError(f"The 'models' of the spec name columns not in the spec: {bad}.")
        checked = []
        for i, a in enumerate(self.analyses or []):
            if not isinstance(a, Mapping) or not isinstance(a.get("formula"), str) or "~" not in a["formula"]:
                raise _err(f"Analysis {i} of the spec", "an object with a 'formula' such as \"y ~ x1 + x2\"", a)
            fam = a.get("family", "probit")
            if fam not in FAMILIES:
                raise _err(f"The 'family' of analysis {i} of the spec", f"one of {list(FAMILIES)}", fam)
            checked.append({"formula": a["formula"], "family": fam})
        self.analyses = checked

    # ---- roles -----------------------------------------------------------------
    def _role(self, *roles: str) -> list[str]:
        return [c for c, v in self.columns.items() if v.role in roles]

    @property
    def quasi_identifiers(self) -> list[str]:
        return self._role("quasi_identifier")

    @property
    def keep(self) -> list[str]:
        """Columns released unchanged by partially synthetic methods (keep, outcome, weight)."""
        return self._role("keep", "outcome", "weight")

    @property
    def outcomes(self) -> list[str]:
        return self._role("outcome")

    @property
    def weights(self) -> list[str]:
        return self._role("weight")

    @property
    def excluded(self) -> list[str]:
        return self._role("excluded")

    @property
    def released(self) -> list[str]:
        """Every column a release holds, in the spec's order (copies keep the data's order)."""
        return [c for c, v in self.columns.items() if v.released]

    def __getitem__(self, name: str) -> ColumnSpec:
        return self.columns[name]

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def kind(self, name: str) -> str:
        return self.columns[name].kind

    @property
    def inferred(self) -> list[str]:
        """Columns whose levels or bounds were inferred from the data (not declared public)."""
        return [c for c, v in self.columns.items() if (v.levels is not None or v.bounds is not None) and not v.declared]

    # ---- views used by models, evaluation and DP code -----------------------------
    def schema(self, columns: Iterable[str] | None = None) -> Schema:
        """The :class:`~synthmi.schema.Schema` of the released (or given) columns: a view of
        this spec's :class:`ColumnSpec` objects (the model's spelling, ``integer`` -> continuous)."""
        cols = self.released if columns is None else list(columns)
        return Schema({c: Variable.view(self.columns[c]) for c in cols})

    def public_domain(self) -> PublicDomain:
        """The :class:`synthmi.domain.PublicDomain` of the released columns, from DECLARED values only:
        a view of this spec's declared :class:`ColumnSpec` objects (checked by
        :meth:`ColumnSpec.public`, which raises a ``DomainError`` on a malformed declaration).

        Levels and bounds that were inferred from the data are confidential and
        left out (a DP method then asks for them instead of reading the data).
        """
        cols = {}
        for c in self.released:
            v = self.columns[c]
            if not v.declared or (v.levels is None and v.bounds is None):
                continue
            cols[c] = ColumnDomain.view(v)
        return PublicDomain(cols, source=self.source or "release spec (declared values)")

    @classmethod
    def from_public_domain(cls, domain: PublicDomain, quasi_identifiers: Sequence[str] | None = None) -> "ReleaseSpec":
        """The spec a public domain describes: every column declared, with its domain's kind,
        levels or bounds, point masses, ``other`` level and ``missing``.

        A domain says nothing of roles: the ``quasi_identifiers`` get that role and the
        other columns ``keep``. :meth:`public_domain` is the way back (a round trip
        returns an equal domain).
        """
        qi = list(quasi_identifiers or [])
        unknown = [c for c in qi if c not in domain]
        if unknown:
            raise InputError(f"The 'quasi_identifiers' name columns the domain does not declare: {unknown}.")
        cols = {}
        for c in role_order(list(domain), qi, None):
            cols[c] = ColumnSpec.from_domain(c, domain[c], "quasi_identifier" if c in qi else "keep")
        return cls(cols, source=domain.source)

    @classmethod
    def from_schema(cls, schema: Schema, quasi_identifiers: Sequence[str] | None = None,
                    keep: Sequence[str] | None = None) -> "ReleaseSpec":
        """The spec of a :class:`~synthmi.schema.Schema`'s columns: its kinds and levels (marked
        inferred, as a schema's levels are read from data), the ``quasi_identifiers`` with that
        role, the others kept (all of them when ``keep`` is None, else only ``keep``).
        :meth:`schema` is the way back (a round trip returns an equal schema).
        """
        qi = list(quasi_identifiers or [])
        keep_l = None if keep is None else list(keep)
        unknown = [c for c in qi + (keep_l or []) if c not in schema]
        if unknown:
            raise InputError(f"The 'quasi_identifiers' / 'keep' name columns the schema does not describe: {unknown}.")
        cols = {}
        for c in role_order(schema.columns, qi, keep_l):
            v = schema[c]
            role = "quasi_identifier" if c in qi else ("keep" if keep_l is None or c in keep_l else "excluded")
            levels = None if v.categories is None else tuple(plain(x) for x in v.categories)
            cols[c] = ColumnSpec(c, role, v.kind, levels=levels if v.is_categorical else None, declared=False)
        return cls(cols)

    def apply_kinds(self, df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """A copy of ``df`` whose dtypes follow the spec's kinds.

        Categorical kinds become pandas Categoricals (with the spec's levels when
        it has them; ordinal ones ordered), so evaluation code that branches on
        dtypes treats a 0/1-coded or numerically coded category as a category and a
        numeric column as a number. Values are never changed; a value outside the
        spec's levels is an error naming the column.
        """
        cols = list(df.columns) if columns is None else list(columns)
        out = df.copy()
        for c in cols:
            if c not in self.columns or c not in df.columns:
                continue
            v = self.columns[c]
            s = df[c]
            if v.is_categorical:
                levels = list(v.levels) if v.levels is not None else (
                    list(s.cat.categories) if isinstance(s.dtype, pd.CategoricalDtype)
                    else sorted(s.dropna().unique().tolist(), key=str)
                )
                vals = s.astype(object) if isinstance(s.dtype, pd.CategoricalDtype) else s
                cat = pd.Categorical(vals, categories=levels, ordered=v.kind == "ordinal")
                outside = cat.isna() & s.notna().to_numpy()
                if outside.any():
                    raise ColumnError(
                        f"Column '{c}' holds values outside the levels its spec lists "
                        f"({int(outside.sum())} cells); add them to the spec's levels or fix the data."
                    )
                out[c] = cat
            elif isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s):
                raise ColumnError(f"Column '{c}' is {v.kind} in the spec, but its values are not numbers (dtype {s.dtype}).")
        return out

    def check_data(self, df: pd.DataFrame, name: str = "df", dtypes: bool = True) -> None:
        """Every released column of the spec is in ``df``; kinds fit the dtypes.

        ``dtypes=False`` (differentially private paths): the columns only. A dtype is a
        reader's guess from the private values, so a DP path checks the values against
        the declared domain instead (an error naming the column only).
        """
        missing = [c for c in self.released if c not in df.columns]
        if missing:
            raise InputError(
                f"The spec names columns that are not in '{name}': {self.columns_with_roles(missing)}. Columns of "
                f"'{name}': {list(df.columns)}."
            )
        if not dtypes:
            return
        bad = [c for c in self.released if not self.columns[c].is_categorical
               and (isinstance(df[c].dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(df[c]))]
        if bad:
            raise ColumnError(
                f"Columns {self.columns_with_roles(bad)} are numeric kinds in the spec but hold non-numeric values in "
                f"'{name}'; change their kind to nominal/ordinal or fix the data."
            )

    def columns_with_roles(self, columns: Sequence[str]) -> str:
        """``'age' (quasi-identifier), 'y' (outcome)``: columns named with their role in the spec, for errors."""
        words = {"quasi_identifier": "quasi-identifier", "keep": "kept"}
        return ", ".join(f"'{c}' ({words.get(self.columns[c].role, self.columns[c].role)})" for c in columns)

    # ---- building --------------------------------------------------------------
    @classmethod
    def draft(
        cls,
        df: pd.DataFrame,
        quasi_identifiers: Sequence[str] | None = None,
        keep: Sequence[str] | None = None,
        kinds: Mapping[str, str] | None = None,
        source: str = "",
    ) -> "ReleaseSpec":
        """A spec drafted from a data frame, for the user to edit.

        Kinds come from dtypes (``integer`` for whole-number numeric columns);
        levels and bounds are the observed ones and marked ``declared: false``
        (inferred, hence confidential) until the user replaces them with public
        values and marks them declared. Quasi-identifiers get that role; of the
        others, ``keep`` (default: all) are kept and the rest excluded.
        """
        qi = list(quasi_identifiers or [])
        unknown = [c for c in qi if c not in df.columns]
        if unknown:
            raise InputError(f"The 'quasi_identifiers' name columns not in the data: {unknown}. Columns: {list(df.columns)}.")
        keep_set = None if keep is None else list(keep)
        if keep_set is not None:
            unknown = [c for c in keep_set if c not in df.columns]
            if unknown:
                raise InputError(f"The 'keep' columns are not in the data: {unknown}. Columns: {list(df.columns)}.")
            both = [c for c in keep_set if c in qi]
            if both:
                raise ColumnError(f"Columns {both} are given both as quasi-identifiers and as kept columns.")
        kinds = dict(kinds or {})
        cols: dict[str, ColumnSpec] = {}
        for c in role_order(df.columns, qi, keep_set):
            role = "quasi_identifier" if c in qi else ("keep" if keep_set is None or c in keep_set else "excluded")
            cols[c] = draft_column(c, df[c], role, kinds.get(c))
        return cls(cols, source=source)

    @classmethod
    def from_roles(
        cls,
        df: pd.DataFrame,
        quasi_identifiers: Sequence[str],
        keep: Sequence[str] | None = None,
        schema: Schema | Mapping[str, str] | None = None,
        private: bool = False,
    ) -> "ReleaseSpec":
        """The spec the ``quasi_identifiers=`` / ``keep=`` / ``schema=`` shortcut stands for.

        Columns in neither list are kept when ``keep`` is None, else excluded.
        Kinds are inferred from dtypes unless ``schema`` (a Schema, or a dict
        column -> kind) says otherwise; levels and bounds are inferred (not declared).
        ``private=True`` (differentially private fits): kinds and levels from the
        dtypes alone (a Categorical's categories are part of its dtype), never from
        the values, and nothing marked declared.
        """
        qi = list(quasi_identifiers)
        keep_l = None if keep is None else list(keep)
        if private:
            if schema is not None:
                raise InputError("Give the kinds of a differentially private release in a spec, not with 'schema='.")
            cols = {}
            for c in role_order(df.columns, qi, keep_l):
                role = "quasi_identifier" if c in qi else ("keep" if keep_l is None or c in keep_l else "excluded")
                cols[c] = column_from_dtype(c, df[c].dtype, role)
            return cls(cols)
        overrides = {} if schema is None or isinstance(schema, Schema) else dict(schema)
        inferred = Schema.infer(df, overrides)
        if isinstance(schema, Schema):
            inferred = Schema({c: schema[c] if c in schema else inferred[c] for c in df.columns})
        cols = {}
        for c in role_order(df.columns, qi, keep_l):
            role = "quasi_identifier" if c in qi else ("keep" if keep_l is None or c in keep_l else "excluded")
            var = inferred[c]
            cols[c] = _column_from_variable(c, df[c], var, role)
        return cls(cols)

    def with_roles(self, quasi_identifiers: Sequence[str] | None = None, keep: Sequence[str] | None = None) -> "ReleaseSpec":
        """A copy with the given roles changed (flags given beside ``--spec``)."""
        cols = dict(self.columns)
        qi = None if quasi_identifiers is None else list(quasi_identifiers)
        for group, role in ((qi, "quasi_identifier"), (keep, "keep")):
            for c in group or []:
                if c not in cols:
                    raise ColumnError(f"Column '{c}' is not in the spec. Columns of the spec: {list(cols)}.")
                cols[c] = replace(cols[c], role=role)
        if qi is not None:
            for c, v in cols.items():
                if v.role == "quasi_identifier" and c not in qi:
                    cols[c] = replace(v, role="keep")
        masks = self.masks
        if masks and qi is not None:
            masks = None if any(c not in qi for c in _mask_columns(masks)) else masks
        return ReleaseSpec(cols, masks, self.models, None if qi is not None else self.visit_sequence,
                           list(self.analyses), self.source, self.na_values,
                           self.tuning if masks is self.masks else None)

    def with_weight(self, column: str) -> "ReleaseSpec":
        """A copy in which ``column`` (given by ``weights=`` / ``--weights``) has the role "weight"."""
        if column not in self.columns:
            raise ColumnError(f"Column '{column}' is not in the spec. Columns of the spec: {list(self.columns)}.")
        cols = {c: replace(v, role="weight") if c == column else v for c, v in self.columns.items()}
        return ReleaseSpec(cols, self.masks, self.models, self.visit_sequence, list(self.analyses), self.source,
                           self.na_values, self.tuning)

    def public_view(self) -> "ReleaseSpec":
        """A copy without the inferred (confidential) levels and bounds: what a release may publish."""
        cols = {
            c: v if v.declared else replace(v, levels=None, bounds=None, point_masses=None)
            for c, v in self.columns.items()
        }
        return ReleaseSpec(cols, self.masks, self.models, self.visit_sequence, list(self.analyses), self.source,
                           self.na_values, self.tuning)

    # ---- JSON --------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "synthmi_spec": FORMAT,
            "source": self.source,
            "columns": {c: v.to_dict() for c, v in self.columns.items()},
            "analyses": [dict(a) for a in self.analyses],
        }
        if self.masks is not None:
            d["masks"] = jsonable(self.masks)
        if self.models is not None:
            d["models"] = jsonable(self.models)
        if self.visit_sequence is not None:
            d["visit_sequence"] = list(self.visit_sequence)
        if self.na_values:
            d["na_values"] = list(self.na_values)
        if self.tuning is not None:
            d["tuning"] = jsonable(self.tuning)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ReleaseSpec":
        if not isinstance(d, Mapping) or not isinstance(d.get("columns"), Mapping):
            raise InputError("A release spec must be a JSON object with a 'columns' object (see 'synthmi spec --help').")
        version = d.get("synthmi_spec", FORMAT)
        if version != FORMAT:
            raise InputError(f"This release spec has format version {version!r}; this synthmi reads version {FORMAT}.")
        unknown = sorted(set(d) - {"synthmi_spec", "source", "columns", "analyses", "masks", "models",
                                   "visit_sequence", "na_values", "note", "notes", "tuning"})
        if unknown:
            raise InputError(
                f"The release spec has unknown keys {unknown}; allowed: columns, masks, models, visit_sequence, "
                "analyses, na_values, source, note, tuning."
            )
        cols = {str(c): ColumnSpec.from_dict(str(c), v) for c, v in d["columns"].items()}
        return cls(
            columns=cols,
            masks=d.get("masks"),
            models=d.get("models"),
            visit_sequence=d.get("visit_sequence"),
            analyses=list(d.get("analyses") or []),
            source=str(d.get("source") or ""),
            na_values=d.get("na_values"),
            tuning=d.get("tuning"),
        )

    def to_json(self, indent: int = 2) -> str:
        return dumps(self.to_dict(), indent=indent)

    def save(self, path: str | Path, overwrite: bool = False) -> Path:
        """Write the spec as JSON; an existing file is kept unless ``overwrite=True``."""
        path = Path(path)
        if path.exists() and not overwrite:
            raise OutputExists(f"'{path}' already exists; pass overwrite=True to replace it.", path=path,
                               parameter="path", owner="ReleaseSpec.save")
        path.write_text(self.to_json() + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "ReleaseSpec":
        path = Path(path)
        if not path.is_file():
            raise InputNotFound(f"The spec file '{path}' does not exist.", path=path, parameter="path",
                                owner="ReleaseSpec.load")
        try:
            d = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(f"The spec file '{path}' is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
        return cls.from_dict(d)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReleaseSpec) and self.to_dict() == other.to_dict()


def spec_frames(spec: Any, original: pd.DataFrame, copies: list[pd.DataFrame]):
    """(spec or None, original, copies) with dtypes following the spec's kinds.

    The one way evaluation functions take a ``spec=``: with ``None`` the frames
    are returned unchanged (kinds follow dtypes, as before); otherwise every
    column the spec knows is converted by :meth:`ReleaseSpec.apply_kinds`.
    """
    if spec is None:
        return None, original, copies
    spec = as_spec(spec)
    return spec, spec.apply_kinds(original), [spec.apply_kinds(c) for c in copies]


def as_spec(spec: Any) -> ReleaseSpec:
    """A :class:`ReleaseSpec` from a spec, a dict (its JSON form) or a JSON file path."""
    if isinstance(spec, ReleaseSpec):
        return spec
    if isinstance(spec, Mapping):
        return ReleaseSpec.from_dict(spec)
    if isinstance(spec, (str, Path)):
        return ReleaseSpec.load(spec)
    raise _err("The 'spec' parameter", "a ReleaseSpec, its dict form or a JSON file path", type(spec).__name__)


def role_order(columns: Iterable[str], qi: list[str], keep: list[str] | None) -> list[str]:
    """Columns in the order the roles were given: the quasi-identifiers (their order is
    the default visit sequence), the kept columns (the predictors' order), then the rest."""
    rest = [c for c in columns if c not in qi and (keep is None or c not in keep)]
    return list(qi) + list(keep or []) + rest


def _mask_columns(masks: Mapping[str, Any]) -> list[str]:
    if set(masks) & set(RISK_GROUPS):
        return sorted({c for g in masks.values() for c in g})
    return list(masks)


def column_from_dtype(name: str, dtype: Any, role: str) -> ColumnSpec:
    """Kind (and levels) from a dtype alone: no value of the data is read."""
    if isinstance(dtype, pd.CategoricalDtype):
        cats = tuple(plain(x) for x in dtype.categories)
        kind = "ordinal" if dtype.ordered and len(cats) > 2 else ("binary" if len(cats) == 2 else "nominal")
        return ColumnSpec(name, role, kind, levels=cats, declared=False)
    if pd.api.types.is_bool_dtype(dtype):
        return ColumnSpec(name, role, "binary", levels=(False, True), declared=False)
    if pd.api.types.is_integer_dtype(dtype):
        return ColumnSpec(name, role, "integer")
    if pd.api.types.is_numeric_dtype(dtype):
        return ColumnSpec(name, role, "continuous")
    return ColumnSpec(name, role, "nominal")


def draft_column(name: str, s: pd.Series, role: str, kind: str | None) -> ColumnSpec:
    var = _infer_variable(name, s)
    if kind is not None:
        if kind not in KINDS:
            raise _err(f"The kind given for column '{name}'", f"one of {list(KINDS)}", kind)
        if kind in CATEGORICAL_KINDS and var.categories is None:
            cats = tuple(sorted(s.dropna().unique().tolist(), key=str))
            var = Variable(name, kind, cats)
        elif kind in CATEGORICAL_KINDS:
            var = Variable(name, kind, var.categories)
        else:
            var = Variable(name, "continuous")
        col = _column_from_variable(name, s, var, role)
        return replace(col, kind=kind) if kind in NUMERIC_KINDS else col
    return _column_from_variable(name, s, var, role)


def _column_from_variable(name: str, s: pd.Series, var: Variable, role: str) -> ColumnSpec:
    if var.is_categorical:
        levels = tuple(plain(x) for x in var.categories)
        return ColumnSpec(name, role, var.kind, levels=levels, declared=False)
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    whole = x.size > 0 and bool(np.all(np.mod(x, 1.0) == 0.0))
    kind = "integer" if (pd.api.types.is_integer_dtype(s.dtype) or whole) else "continuous"
    bounds = (float(x.min()), float(x.max())) if x.size else None
    return ColumnSpec(name, role, kind, bounds=bounds, declared=False)




def resolve_quasi_identifiers(given: Any = None, spec: Any = None, *, recorded: Sequence[str] | None = None,
                              df: pd.DataFrame | None = None, frame: str = "data", owner: str = "",
                              option: str | None = None, spec_option: str | None = "--spec") -> list[str]:
    """The quasi-identifiers of a release, resolved in this one place for every layer.

    The names ``given`` (a parameter, or the ``--qi`` flag), else the spec's columns
    with the role ``quasi_identifier``, else ``recorded`` (the ones recorded with a
    release). A single name is a list of one; each name may appear once; with ``df``
    each must be one of its columns; the result must not be empty.

    Parameters
    ----------
    given : str or list of str, optional
    spec : ReleaseSpec, its dict form or a JSON path, optional
    recorded : list of str, optional
    df : DataFrame, optional
        The frame the names must be columns of (named ``frame`` in errors).
    owner : str
        The function or class the names are given to (Python errors).
    option : str, optional
        The command-line flag that gives them (``"--qi"``): errors name it instead
        of the ``quasi_identifiers`` parameter.
    spec_option : str or None
        The flag of the command's spec, named in the error when there are none
        (``None``: the command takes no spec).
    """
    from ._validate import check_columns_exist, param_error

    name = option or "quasi_identifiers"
    if isinstance(given, str):
        given = [given]
    if given is not None and (len(given) or option is None):
        # (an empty --qi means "not given"; an empty Python list is an error below)
        qis = list(given)
    elif spec is not None and as_spec(spec).quasi_identifiers:
        qis = as_spec(spec).quasi_identifiers
    else:
        qis = list(recorded or [])
    if not qis:
        if option is not None:
            raise InputError(f"The '{option}' option must name at least one column."
                             + (f" Give {option}, or a {spec_option} that names quasi-identifiers." if spec_option
                                else ""))
        if given is None and spec is None:
            raise InputError(f"{owner} needs the 'quasi_identifiers' or a spec that names them.")
        raise param_error(name, owner, "a non-empty list of columns", qis)
    if df is not None:
        return check_columns_exist(df, qis, name, frame)
    dup = sorted({c for c in qis if qis.count(c) > 1})
    if dup:
        raise InputError(f"The '{name}' {'option' if option else 'parameter'} names columns more than once: {dup}.")
    return qis


def spec_quasi_identifiers(quasi_identifiers: Any, spec: Any, df: pd.DataFrame, owner: str,
                           frame: str = "original") -> list[str]:
    """The quasi-identifiers an evaluation function works on: given, or the spec's
    (:func:`resolve_quasi_identifiers`, checked against ``df``)."""
    return resolve_quasi_identifiers(quasi_identifiers, spec, df=df, frame=frame, owner=owner)
