"""One JSON converter for every file the package writes.

:func:`jsonable` turns a value into plain JSON types; :func:`dumps` and
:func:`dump` write it with ``allow_nan=False``, so no file the package writes
holds the non-JSON tokens ``NaN``/``Infinity`` (a missing or undefined figure is
``null``, which every JSON reader accepts).

==========================================  ==========================================
value                                       JSON
==========================================  ==========================================
``None``, ``pd.NA``, ``pd.NaT``, NaN, +-inf  ``null``
``bool``, ``numpy.bool_``                   ``true`` / ``false``
``int``, ``numpy.integer``                  number
``float``, ``numpy.floating`` (finite)      number
``str``, ``pathlib.Path``                   string (a path as written, ``str(p)``)
``datetime``/``date``/``pd.Timestamp``,     ISO 8601 string
``numpy.datetime64``
mapping (``dict``, ``pd.Series``)           object with ``str`` keys
``list``, ``tuple``, ``numpy.ndarray``      array
``set``, ``frozenset``                      array, sorted by the items' text (stable order)
``pd.DataFrame``                            array of records (one object per row)
an object with ``to_dict()``                its ``to_dict()``, converted
a dataclass instance                        its fields, converted
``enum.Enum``                               its value
anything else                               ``repr(value)`` (as metadata always recorded it)
==========================================  ==========================================

Layer 0 (base): imports only :mod:`synthmi.errors`.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import math
import numbers
from collections.abc import Mapping
from pathlib import PurePath
from typing import IO, Any

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = ["jsonable", "plain", "dumps", "dump", "loads_strict"]


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python scalar it holds (``np.int64(3)`` -> ``3``), anything else unchanged.

    The one normaliser of a level or bound taken from a dtype or an array, so levels compare and
    serialise the same whichever container held them (kept out of :func:`jsonable`, which also
    turns dates into text and NaN into ``None``: a level keeps its type)."""
    return value.item() if isinstance(value, np.generic) else value


def jsonable(obj: Any) -> Any:
    """``obj`` as plain JSON types (see the module's table); NaN and infinities become ``None``."""
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else None
    if obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, (pd.Timestamp, _dt.datetime, _dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, np.datetime64):
        return None if np.isnat(obj) else str(obj)
    if isinstance(obj, (pd.Timedelta, _dt.timedelta)):
        return str(obj)
    if isinstance(obj, PurePath):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return jsonable(obj.value)
    if isinstance(obj, pd.DataFrame):
        return [jsonable(r) for r in obj.to_dict("records")]
    if isinstance(obj, pd.Series):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return [jsonable(v) for v in sorted(obj, key=str)]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if callable(getattr(obj, "to_dict", None)) and not isinstance(obj, type):
        return jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    if isinstance(obj, numbers.Real):  # Fraction, Decimal-like reals
        return jsonable(float(obj))
    return repr(obj)


def dumps(obj: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """JSON text of ``jsonable(obj)``; never writes ``NaN``/``Infinity`` (``allow_nan=False``)."""
    return json.dumps(jsonable(obj), indent=indent, sort_keys=sort_keys, allow_nan=False)


def dump(obj: Any, fp: IO[str], *, indent: int | None = 2, sort_keys: bool = False) -> None:
    """Write :func:`dumps` of ``obj`` to the open text file ``fp``."""
    fp.write(dumps(obj, indent=indent, sort_keys=sort_keys))


def _refuse_constant(token: str) -> Any:
    raise InputError(f"{token} is not JSON (a file written by synthmi never holds it).")


def loads_strict(text: str) -> Any:
    """Parse JSON text, refusing the non-standard tokens ``NaN``, ``Infinity`` and ``-Infinity``."""
    return json.loads(text, parse_constant=_refuse_constant)
