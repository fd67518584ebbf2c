"""What reviewers read: the disclosure review report and the paper exhibits.

* :func:`evaluate_release` (``collect``) runs the evaluation layer on the
  original and the released copies and keeps aggregates only;
* :func:`write_report` / :func:`render_report` (``html``) make one
  self-contained HTML file from them;
* ``figures`` holds the matplotlib figures, ``exhibits`` regenerates the
  source slides' tables and figures (``make figures``), ``browser`` renders a
  page in headless Chromium.
"""
from .collect import ReportData, evaluate_release
from .html import render_report, write_report

__all__ = ["ReportData", "evaluate_release", "render_report", "write_report"]
