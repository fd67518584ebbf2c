"""Orchestration: the steps that fit synthesizers and run measures together.

The layer above models, privacy, data and the report (see
:mod:`synthmi._layers`): the measures below it take copies and never a model,
and the report below it formats what it is given; the work that needs both
lives here.

* :func:`evaluate_release` (``evaluate``) runs every measure on the original
  and the released copies and keeps aggregates only, as a
  :class:`~synthmi.report.data.ReportData` for :mod:`synthmi.report`;
* ``tuning`` fits synthesizers across tuning settings: the risk-utility
  frontier, masks tuned to risk targets, the independent baseline release;
* ``grid`` builds the default frontier grid of any file from its QIs' kinds
  (``synthmi frontier``);
* ``demo`` runs the main job end to end on the bundled Adult data.
"""
from .evaluate import evaluate_release

__all__ = ["evaluate_release"]
