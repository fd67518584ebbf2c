"""One place for input checks and their error messages.

Every public entry point validates through these helpers so that a bad input
gets one clear error naming the parameter or column
and what was wrong, in scikit-learn's sentence form::

    The 'epsilon' parameter of LaplaceMechanism must be > 0. Got -1 instead.

The errors are the package's own (:mod:`synthmi.errors`): a
:class:`~synthmi.errors.ParameterError` (a ``ValueError``) carries the
parameter, what was expected and what was got as fields, which the command
line maps to its options; a :class:`~synthmi.errors.ColumnError` names the
column(s); a wrong type is an :class:`~synthmi.errors.InputTypeError` (a
``TypeError``).

Messages never echo values *from the data* (they may be confidential): they
name columns, counts and parameters the caller passed, never cell values.
"""
from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .errors import ColumnError, InputTypeError, NotFittedError, ParameterError, _literal

# (NotFittedError is re-exported here: it used to be defined in this module)


def param_error(name: str, owner: str, requirement: str, got: Any) -> ParameterError:
    """Build the standard error for a parameter that breaks its constraint: a
    :class:`~synthmi.errors.ParameterError` (a ``ValueError``) reading "The '{name}'
    parameter of {owner} must be {requirement}. Got {got!r} instead.", with
    ``parameter``, ``owner``, ``expected`` and ``got`` (its repr) as fields."""
    return ParameterError.build(name, owner, requirement, got)


def check_scalar(
    value: Any,
    name: str,
    owner: str,
    *,
    kind: str = "real",
    lower: float | None = None,
    upper: float | None = None,
    lower_inclusive: bool = True,
    upper_inclusive: bool = True,
) -> float | int:
    """Check a real or integer scalar against optional bounds and return it.

    ``kind`` is ``"real"`` or ``"int"``; integers stored as floats (``3.0``)
    are accepted for ``"int"`` and returned as ``int``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        what = "an integer" if kind == "int" else "a real number"
        raise param_error(name, owner, what, value)
    if kind == "int":
        if not float(value).is_integer():
            raise param_error(name, owner, "a whole number", value)
        value = int(value)
    elif not np.isfinite(value):
        raise param_error(name, owner, "finite", value)
    if lower is not None:
        ok = value >= lower if lower_inclusive else value > lower
        if not ok:
            raise param_error(name, owner, f"{'>=' if lower_inclusive else '>'} {lower}", value)
    if upper is not None:
        ok = value <= upper if upper_inclusive else value < upper
        if not ok:
            raise param_error(name, owner, f"{'<=' if upper_inclusive else '<'} {upper}", value)
    return value


def check_epsilon(eps: Any, owner: str, name: str = "epsilon") -> float:
    """Privacy-loss parameter: a finite real > 0."""
    return float(check_scalar(eps, name, owner, lower=0.0, lower_inclusive=False))


def check_delta(delta: Any, owner: str, name: str = "delta") -> float:
    """Failure probability of approximate DP: a real in the open interval (0, 1)."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not (0.0 < delta < 1.0):
        raise param_error(name, owner, "in the open interval (0, 1)", delta)
    return float(delta)


def check_option(value: Any, name: str, owner: str, options: Iterable[str]) -> str:
    """A string drawn from a fixed set of options."""
    options = list(options)
    if value not in options:
        raise param_error(name, owner, "one of " + ", ".join(repr(o) for o in options), value)
    return value


def check_random_state(random_state: Any) -> np.random.Generator:
    """Turn None / int / Generator into a ``numpy.random.Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or (
        isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)
    ):
        if random_state is not None and random_state < 0:
            raise param_error("random_state", "synthmi", "None, a Generator or an int >= 0", random_state)
        return np.random.default_rng(random_state)
    raise param_error("random_state", "synthmi", "None, a Generator or an int >= 0", random_state)


def check_dataframe(df: Any, name: str = "data", *, min_rows: int = 1) -> pd.DataFrame:
    """A non-empty DataFrame with unique string-like column names."""
    if not isinstance(df, pd.DataFrame):
        if type(df).__module__.startswith("dask"):
            raise InputTypeError(
                f"The '{name}' parameter must be a pandas DataFrame here: this function or model has no Dask path "
                "(on Dask run Rubin / DA-MI synthesis with sampler='fast', reidentification_risk, risk_subgroups, "
                "attribute_disclosure, utility_tables, pmse and DPSyn; see synthmi.engine). Fit on a subsample in memory "
                "(ddf.sample(frac=...).compute()) if that is valid for your use.",
                parameter=name, expected="a pandas DataFrame", got=type(df).__name__,
            )
        raise InputTypeError(template="The {parameter} must be a pandas DataFrame. Got "
                             f"{type(df).__name__} instead.",
                             parameter=name, expected="a pandas DataFrame", got=type(df).__name__)
    if df.shape[1] == 0:
        raise ParameterError(f"The '{name}' DataFrame has no columns.", parameter=name,
                             expected="a DataFrame with columns", got="no columns")
    if len(df) < min_rows:
        raise ParameterError(f"The '{name}' DataFrame has {len(df)} rows; at least {min_rows} are needed.",
                             parameter=name, expected=f"at least {min_rows} rows", got=f"{len(df)} rows")
    if df.columns.duplicated().any():
        dup = list(df.columns[df.columns.duplicated()])
        raise ColumnError(f"The '{name}' DataFrame has duplicated column names: {dup}.", column=dup,
                          problem="duplicated")
    return df


def check_columns_exist(df: pd.DataFrame, columns: Sequence[str], name: str, df_name: str = "data") -> list[str]:
    """Every name in ``columns`` is a column of ``df``; returns them as a list."""
    if isinstance(columns, str):
        columns = [columns]
    columns = list(columns)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ColumnError(
            template="The {parameter} names columns not in {data}: "
            + _literal(f"{missing}. Available columns: {list(df.columns)}."),
            parameter=name, data=df_name, column=missing, problem="not a column",
        )
    dup = sorted({c for c in columns if columns.count(c) > 1})
    if dup:
        raise ColumnError(template="The {parameter} names columns more than once: " + _literal(f"{dup}."),
                          parameter=name, column=dup, problem="named more than once")
    return columns


def _columns_phrase(cols: list, df_name: str, singular: str, plural: str) -> str:
    if len(cols) == 1:
        return f"Column '{cols[0]}' of '{df_name}' {singular}"
    return f"Columns {cols} of '{df_name}' {plural}"


def check_not_degenerate(df: pd.DataFrame, columns: Sequence[str], df_name: str = "data") -> None:
    """No column entirely missing, and none with a single observed value (every offender named)."""
    check_degenerate_found([c for c in columns if int(df[c].notna().sum()) == 0],
                           lambda: [c for c in columns if df[c].nunique(dropna=True) < 2], df_name)


def check_degenerate_found(empty: Sequence[str], constant: Any, df_name: str = "data") -> None:
    """:func:`check_not_degenerate`'s errors for the columns found ``empty`` (all missing) and ``constant``
    (a list, or a callable giving it, called only when none is empty); also for partitioned data."""
    if empty:
        raise ColumnError(_columns_phrase(empty, df_name, "is entirely missing (all NaN).",
                                          "are entirely missing (all NaN)."), column=empty, problem="entirely missing", data=df_name)
    constant = constant() if callable(constant) else constant
    if constant:
        raise ColumnError(
            _columns_phrase(constant, df_name, "is constant (one observed value); it carries",
                            "are constant (one observed value each); they carry")
            + " no information to model or synthesize.",
            column=constant, problem="constant", data=df_name,
        )


def check_no_missing(df: pd.DataFrame, columns: Sequence[str], df_name: str = "data", why: str = "") -> None:
    """Columns declared complete really are complete; every column with missing values is named."""
    bad = {c: int(df[c].isna().sum()) for c in columns}
    bad = {c: n for c, n in bad.items() if n}
    if not bad:
        return
    if len(bad) == 1:
        (c, n), = bad.items()
        msg = f"Column '{c}' of '{df_name}' has {n} missing values where none are allowed."
    else:
        listing = ", ".join(f"'{c}' ({n})" for c, n in bad.items())
        msg = f"Columns of '{df_name}' have missing values where none are allowed: {listing}."
    raise ColumnError(msg + (f" {why}" if why else ""), column=list(bad), problem="missing values", data=df_name)


def check_finite(df: pd.DataFrame, columns: Sequence[str], df_name: str = "data") -> None:
    """No infinite value in a numeric column; every such column is named."""
    bad = []
    for c in columns:
        s = df[c]
        if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
            if bool(np.isinf(s.to_numpy(dtype=float, na_value=np.nan)).any()):
                bad.append(c)
    if bad:
        raise ColumnError(
            f"Columns {bad} of '{df_name}' hold infinite values; replace them by finite numbers or missing values.",
            column=bad, problem="infinite values", data=df_name,
        )


def check_same_structure(
    original: pd.DataFrame, synthetic: pd.DataFrame, name: str = "synthetic", columns: Sequence[str] | None = None
) -> None:
    """Synthetic copy has the original's columns and, for categoricals, its categories.

    Only category *counts* are reported on mismatch: labels can be confidential.
    """
    cols = list(original.columns) if columns is None else list(columns)
    missing = [c for c in cols if c not in synthetic.columns]
    extra = [c for c in synthetic.columns if c not in original.columns] if columns is None else []
    if missing or extra:
        raise ColumnError(
            f"Columns of '{name}' do not match the original: missing {missing}, unexpected {extra}.",
            column=missing + extra, problem="columns differ from the original",
        )
    for c in cols:
        o, s = original[c], synthetic[c]
        o_cat = isinstance(o.dtype, pd.CategoricalDtype)
        s_cat = isinstance(s.dtype, pd.CategoricalDtype)
        o_num = pd.api.types.is_numeric_dtype(o) and not o_cat
        s_num = pd.api.types.is_numeric_dtype(s) and not s_cat
        if o_num != s_num:
            raise ColumnError(
                f"Column '{c}' is {'numeric' if o_num else 'categorical'} in the original but "
                f"{'numeric' if s_num else 'categorical'} in '{name}'.",
                column=c, problem="type differs from the original",
            )
        if not o_num:
            o_levels = set(o.cat.categories) if o_cat else set(o.dropna().unique())
            s_levels = set(s.cat.categories) if s_cat else set(s.dropna().unique())
            if s_cat and o_cat:
                s_levels = set(s.dropna().unique())
            unknown = s_levels - o_levels
            if unknown:
                raise ColumnError(
                    f"Column '{c}' of '{name}' has {len(unknown)} categor"
                    f"{'y' if len(unknown) == 1 else 'ies'} that the original does not have.",
                    column=c, problem="categories the original does not have",
                )


def check_copies(copies: Any, name: str = "synthetic", min_copies: int = 1) -> list[pd.DataFrame]:
    """A DataFrame, a list of them, or an object with ``.copies`` -> list of DataFrames."""
    if hasattr(copies, "copies") and not isinstance(copies, pd.DataFrame):
        copies = copies.copies
    if isinstance(copies, pd.DataFrame):
        copies = [copies]
    if not isinstance(copies, (list, tuple)):
        raise InputTypeError(
            f"The '{name}' parameter must be a DataFrame, a list of DataFrames or a SyntheticData. "
            f"Got {type(copies).__name__} instead.",
            parameter=name, expected="a DataFrame, a list of DataFrames or a SyntheticData",
            got=type(copies).__name__,
        )
    copies = list(copies)
    if len(copies) < min_copies:
        raise param_error(name, "synthmi", f"a list of at least {min_copies} DataFrame(s)", f"{len(copies)} copies")
    for j, c in enumerate(copies):
        check_dataframe(c, f"{name}[{j}]")
    return copies


# --------------------------------------------------------------------------- parameter constraints
class Interval:
    """A real (``kind="real"``) or integer (``kind="int"``) range, bounds optional.

    Used in a class's ``_parameter_constraints`` (scikit-learn's style): the
    parameters of a synthesizer are declared once, as data, and checked in ``fit``.
    """

    def __init__(self, kind: str, lower: float | None = None, upper: float | None = None,
                 closed: str = "both") -> None:
        if kind not in ("real", "int") or closed not in ("both", "left", "right", "neither"):
            raise ParameterError(f"Interval({kind!r}, closed={closed!r}) is not a valid constraint.")
        self.kind, self.lower, self.upper, self.closed = kind, lower, upper, closed

    def check(self, value: Any, name: str, owner: str) -> Any:
        return check_scalar(
            value, name, owner, kind=self.kind, lower=self.lower, upper=self.upper,
            lower_inclusive=self.closed in ("both", "left"), upper_inclusive=self.closed in ("both", "right"),
        )

    def describe(self) -> str:
        what = "an integer" if self.kind == "int" else "a real number"
        lo = "(-inf" if self.lower is None else ("[" if self.closed in ("both", "left") else "(") + f"{self.lower}"
        hi = "inf)" if self.upper is None else f"{self.upper}" + ("]" if self.closed in ("both", "right") else ")")
        return f"{what} in the range {lo}, {hi}"

    def __repr__(self) -> str:
        return f"Interval({self.kind!r}, {self.lower}, {self.upper}, closed={self.closed!r})"


class Options:
    """One of a fixed set of values (strings, usually)."""

    def __init__(self, *values: Any) -> None:
        self.values = tuple(values)

    def check(self, value: Any, name: str, owner: str) -> Any:
        if value not in self.values:
            raise param_error(name, owner, "one of " + ", ".join(repr(o) for o in self.values), value)
        return value

    def describe(self) -> str:
        return "one of " + ", ".join(repr(o) for o in self.values)

    def __repr__(self) -> str:
        return f"Options{self.values!r}"


_NAMED = {
    "boolean": ("True or False", lambda v: isinstance(v, (bool, np.bool_))),
    "random_state": (
        "None, an int >= 0 or a numpy Generator",
        lambda v: isinstance(v, np.random.Generator)
        or (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 0),
    ),
    "columns": (
        "a list of column names",
        lambda v: isinstance(v, Sequence) and not isinstance(v, str) and all(isinstance(c, str) for c in v),
    ),
    "dict": ("a dict", lambda v: isinstance(v, dict) or hasattr(v, "keys")),
    "array-like": ("array-like", lambda v: hasattr(v, "__len__") and not isinstance(v, (str, dict))),
    "object": ("any object", lambda v: True),
}


def _describe(c: Any) -> str:
    if c is None:
        return "None"
    if isinstance(c, (Interval, Options)):
        return c.describe()
    if isinstance(c, str):
        return _NAMED[c][0]
    if isinstance(c, type):
        return f"an instance of {c.__name__}"
    raise ParameterError(f"Unknown parameter constraint {c!r}.")


def _satisfies(c: Any, value: Any, name: str, owner: str) -> bool:
    if c is None:
        return value is None
    if isinstance(c, (Interval, Options)):
        try:
            c.check(value, name, owner)
        except ValueError:
            return False
        return True
    if isinstance(c, str):
        return bool(_NAMED[c][1](value))
    if isinstance(c, type):
        return isinstance(value, c)
    raise ParameterError(f"Unknown parameter constraint {c!r}.")


def validate_params(params: dict[str, Any], constraints: dict[str, list], owner: str) -> None:
    """Check each parameter against its declared constraints (any one may hold).

    A parameter whose only non-None constraint is an :class:`Interval` or
    :class:`Options` gets that check's own message (e.g. "must be >= 1");
    otherwise the message lists every allowed form.
    """
    for name, value in params.items():
        if name not in constraints:
            # user subclasses may declare none; every synthmi synthesizer declares all
            # of its parameters (tests/testing/test_common.py checks it)
            continue
        allowed = constraints[name]
        if any(_satisfies(c, value, name, owner) for c in allowed):
            continue
        real = [c for c in allowed if c is not None]
        if len(real) == 1 and isinstance(real[0], (Interval, Options)):
            real[0].check(value, name, owner)  # raises with the specific message
        descs = [_describe(c) for c in allowed]
        req = descs[0] if len(descs) == 1 else ", ".join(descs[:-1]) + " or " + descs[-1]
        raise param_error(name, owner, req, value)
