"""The one kind vocabulary of synthmi's columns.

Every column a release describes has one of five kinds:

``continuous``
    real numbers;
``integer``
    whole numbers (a continuous variable on a whole-number grid);
``binary``
    two categories;
``nominal``
    unordered categories;
``ordinal``
    ordered categories.

The release spec (:mod:`synthmi.spec`) states the kind of every column; the
schema models use (:mod:`synthmi.schema`) and the public domain DP code uses
(:mod:`synthmi.domain`) are views of it and take their kinds from here. Two of
those views spell the vocabulary differently, for reasons of their own, and the
mappings are written down here once:

* a model does not distinguish ``integer`` from ``continuous`` (both are
  modelled as numbers; the integer grid is restored on release), so a
  :class:`~synthmi.schema.Variable` has one of :data:`MODEL_KINDS`
  (:func:`model_kind`);
* the public-domain JSON files (``*.domain.json``, ``--domain``) spell
  ``nominal`` as ``categorical`` (:data:`DOMAIN_KINDS`, :func:`domain_kind`,
  :func:`spec_kind`).

This module sits at the bottom of the column-description layer: it imports
nothing of synthmi, so schema, domain and spec can all use it without a cycle.
"""
from __future__ import annotations

__all__ = [
    "KINDS", "CATEGORICAL_KINDS", "NUMERIC_KINDS", "ORDERED_KINDS", "MODEL_KINDS", "DOMAIN_KINDS",
    "model_kind", "domain_kind", "spec_kind",
]

#: every column kind (``integer`` is a continuous variable on a whole-number grid)
KINDS: tuple[str, ...] = ("continuous", "integer", "binary", "nominal", "ordinal")
#: kinds whose values are levels (categories)
CATEGORICAL_KINDS: tuple[str, ...] = ("binary", "nominal", "ordinal")
#: kinds whose values are numbers in bounds
NUMERIC_KINDS: tuple[str, ...] = ("integer", "continuous")
#: kinds whose values have a public order
ORDERED_KINDS: tuple[str, ...] = ("ordinal",) + NUMERIC_KINDS

# the two spellings that differ from KINDS, each in one view
_MODEL_SPELLING = {"integer": "continuous"}
_DOMAIN_SPELLING = {"nominal": "categorical"}

#: the kinds of a model's :class:`~synthmi.schema.Variable` (``integer`` is modelled as continuous)
MODEL_KINDS: tuple[str, ...] = tuple(k for k in KINDS if k not in _MODEL_SPELLING)
#: the kinds as the public-domain JSON format spells them (discrete kinds first, as documented)
DOMAIN_KINDS: tuple[str, ...] = tuple(_DOMAIN_SPELLING.get(k, k) for k in ("nominal", "ordinal", "binary")
                                      + NUMERIC_KINDS)


def model_kind(kind: str) -> str:
    """The kind a model works with for a column of ``kind`` (``integer`` -> ``continuous``)."""
    return _MODEL_SPELLING.get(kind, kind)


def domain_kind(kind: str) -> str:
    """``kind`` as the public-domain JSON format spells it (``nominal`` -> ``categorical``)."""
    return _DOMAIN_SPELLING.get(kind, kind)


def spec_kind(kind: str) -> str:
    """The kind of :data:`KINDS` that a public-domain spelling means (``categorical`` -> ``nominal``)."""
    back = {v: k for k, v in _DOMAIN_SPELLING.items()}
    return back.get(kind, kind)
