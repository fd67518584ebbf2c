"""The results protocol: every measure's result reads the same way.

A result (``PMSEResult``, ``RiskResult``, ``CombineResult``, ...) derives from
:class:`Result` and supplies only its rows; the protocol gives it

``summary()``
    a :class:`SummaryTable`: the headline figures as a small table with a text
    form (``str``, ``print``) and an HTML form (``to_html()``, and
    ``_repr_html_`` for notebooks);
``to_frame()``
    a pandas DataFrame, the result's natural table (per copy, per term, per
    record: each result's docstring says which);
``to_dict()``
    a JSON-safe dict (through :func:`synthmi._json.jsonable`: NaN -> ``None``)
    of the summary and the result's settings, **never record-level values**
    (no cell of the original or of a copy, no per-record figure).

A subclass implements ``_summary_rows()`` (a DataFrame, or a mapping of figure
name -> value, shown as one ``value`` column) and may set ``_summary_title``,
override ``_summary_notes()`` (lines under the table), ``to_frame()`` and
``_dict_extra()`` (more JSON-safe, aggregate-only entries for ``to_dict()``).

Layer 0 (base): imports only :mod:`synthmi._json` and :mod:`synthmi.errors`.
"""
from __future__ import annotations

import html
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._json import jsonable
from .errors import InputTypeError

__all__ = ["Result", "SummaryTable"]


def _fmt(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return "NaN" if np.isnan(x) else f"{float(x):.4g}"
    return str(x)


class SummaryTable:
    """A result's headline figures: a small table with a title and notes.

    Text form: ``str(table)``; HTML form: :meth:`to_html` (``_repr_html_`` in
    notebooks); the figures: :meth:`to_frame`. A table of one ``value`` column
    (figure name -> value) also reads like a mapping: ``table["mean_risk"]``,
    ``"mean_risk" in table``, ``table.get(...)``, ``table.items()``.

    It is neither a string nor a sequence of rows: ``table[:300]`` or ``table[0]``
    raises a ``TypeError`` saying to slice ``str(table)`` (the text) or
    ``table.to_frame()`` (the figures) instead.
    """

    def __init__(self, frame: pd.DataFrame, title: str = "", notes: Sequence[str] = ()):
        self._frame = frame
        self.title = title
        self.notes = [str(n) for n in notes if n]

    # -- the three forms
    def to_frame(self) -> pd.DataFrame:
        """The table's figures (a copy)."""
        return self._frame.copy()

    def __str__(self) -> str:
        lines = [self.title, "=" * max(len(self.title), 20)] if self.title else []
        if len(self._frame):
            lines.append(self._frame.to_string(formatters={c: _fmt for c in self._frame.columns}))
        lines += self.notes
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def to_html(self) -> str:
        """The table as an HTML fragment (every label and note escaped)."""
        body = self._frame.to_html(formatters={c: _fmt for c in self._frame.columns}, escape=True,
                                   border=0, classes="synthmi-summary")
        cap = f"<caption>{html.escape(self.title)}</caption>" if self.title else ""
        body = body.replace(">\n  <thead>", ">\n" + cap + "\n  <thead>", 1) if cap else body
        notes = "".join(f"<p class=\"note\">{html.escape(n)}</p>" for n in self.notes)
        return f"<div class=\"synthmi-result\">{body}{notes}</div>"

    def _repr_html_(self) -> str:
        return self.to_html()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe: ``{"title", "rows": [{column: value}], "notes"}`` (row labels in ``"row"``)."""
        frame = self._frame
        if frame.index.nlevels == 1 and frame.index.name is None:
            frame = frame.rename_axis("row")
        frame = frame.reset_index()
        return jsonable({"title": self.title, "rows": frame, "notes": self.notes})

    # -- a one-column table reads like a mapping of figures
    def _values(self) -> pd.Series:
        if list(self._frame.columns) != ["value"]:
            raise KeyError("This summary has several columns: use to_frame() to read it.")
        return self._frame["value"]

    def __getitem__(self, key: str) -> Any:
        # a slice or a position is text slicing or row access: say where each lives
        # (an integer that is a figure's label is still read as that figure)
        if isinstance(key, slice) or (isinstance(key, (int, np.integer)) and not isinstance(key, bool)
                                      and key not in self._frame.index):
            raise InputTypeError(
                f"A summary table is read by figure name (table['mean_risk']), not by position: got {key!r}. "
                "Slice its text with str(table)[...] or its figures with table.to_frame().iloc[...].",
                parameter="key", owner="SummaryTable", expected="a figure name", got=type(key).__name__)
        return self._values()[key]

    def get(self, key: str, default: Any = None) -> Any:
        values = self._values()
        return values[key] if key in values.index else default

    def __contains__(self, key: object) -> bool:
        return key in self._frame.index

    def keys(self) -> list:
        return list(self._frame.index)

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(self._values().items())

    def __len__(self) -> int:
        return len(self._frame)


class Result:
    """Base of every measure's result (see the module docstring for the protocol)."""

    #: the summary table's title
    _summary_title: str = ""

    def _summary_rows(self) -> pd.DataFrame | Mapping[str, Any]:  # pragma: no cover - each result supplies it
        raise NotImplementedError

    def _summary_notes(self) -> list[str]:
        return []

    def _dict_extra(self) -> dict[str, Any]:
        """More aggregate-only entries for :meth:`to_dict` (settings, per-copy figures)."""
        return {}

    def summary(self) -> SummaryTable:
        """The headline figures as a :class:`SummaryTable` (``print`` it, or ``.to_html()``)."""
        rows = self._summary_rows()
        if not isinstance(rows, pd.DataFrame):
            rows = pd.DataFrame({"value": pd.Series(dict(rows), dtype=object)})
            rows.index.name = "figure"
        return SummaryTable(rows, self._summary_title, self._summary_notes())

    def to_frame(self) -> pd.DataFrame:
        """The result's table; by default the summary's figures."""
        return self.summary().to_frame()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe summary (NaN -> ``None``), no record-level values."""
        return jsonable({"summary": self.summary().to_dict(), **self._dict_extra()})

    def _repr_html_(self) -> str:
        return self.summary().to_html()
