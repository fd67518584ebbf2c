"""The release workloads of the bundled data, defined once.

A workload is what a data provider decides before synthesizing: which columns
an intruder could know (quasi-identifiers), which are released unchanged
(kept), the analysis a reviewer cares about, the masks of DA-MI and the
intruder's matching tolerance. The demo, the figures, the benchmarks and the
command line's defaults all read them from here.

``ADULT``: UCI Adult (Becker & Kohavi 1996), recoded as in the DA-MI result
tables (race white / non-white, education <HS / HS / >HS; DA-MI is Jiang,
Mitra, Gao & Wang 2022, JASA 117:52-66): a probit of income (> 50K) on age,
sex, race and education.

* kept columns: the complete (no missing values) columns that are not a recode
  of a quasi-identifier (``education_num`` would reveal education) and not
  bookkeeping (``fnlwgt``, ``split``);
* DA-MI masks: age gets K = 3 noisy copies with sigma_e = 3 years (their mean
  has sd 3/sqrt(3) ~ 1.7 years against age's sd of 13.7: reliability
  1/(1 + 9/(3 * 188)) ~ 0.98); sex, race and education the linear mask
  W = 5 code(X) + N(0, 1), components 5 sd apart (W alone puts a record in the
  wrong adjacent level with probability Phi(-2.5) ~ 0.6%). With n = 48,842 the
  95% CIs of the education coefficients are only ~ +-0.06 wide, and weaker
  masks (alpha = 3) misclassify enough records to attenuate them by more than
  that (mean CI overlap ~0.58 at alpha = 3, ~0.95 at alpha = 5, M = 20;
  ``benchmarks/adult_table.py``);
* tolerance: the intruder matches age within one year.

``ADULT_DEMO`` is ``ADULT`` with three kept columns (marital status, hours per
week, income) instead of six, so that ``synthmi demo`` and the figures' DA-MI
fits on all 48,842 rows stay near a minute; everything else is ``ADULT``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Workload", "ADULT", "ADULT_DEMO", "WORKLOADS", "sample_rows"]


@dataclass(frozen=True)
class Workload:
    """One release workload of a bundled data set (see the module docstring)."""

    dataset: str
    quasi_identifiers: tuple[str, ...]
    keep: tuple[str, ...]
    formula: str
    family: str = "probit"
    masks: dict[str, dict[str, Any]] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        """The released columns: quasi-identifiers then kept columns."""
        return list(self.quasi_identifiers) + list(self.keep)

    def load(self, rows: int | None = None, seed: int = 0):
        """The bundled data restricted to the workload's columns (recoded).

        ``rows``: a simple random sample of that many rows (:func:`sample_rows`).
        """
        from . import load_dataset

        return sample_rows(load_dataset(self.dataset)[self.columns], rows, seed)


def sample_rows(df, rows: int | None = None, seed: int = 0):
    """A simple random sample of ``rows`` rows of ``df`` (all of them when ``rows`` is None
    or not smaller), with the categorical levels absent from the result dropped: an empty
    level would become an all-zero dummy column, which no model can estimate.

    The benchmarks' subsamples (``benchmarks/frontier.py``) and :meth:`Workload.load` use it,
    so one ``(rows, seed)`` means the same records everywhere. ``df`` is not modified.
    """
    import pandas as pd

    if rows is not None and rows < len(df):
        df = df.sample(n=rows, random_state=seed).reset_index(drop=True)
    else:
        df = df.copy()
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].cat.remove_unused_categories()
    return df


ADULT = Workload(
    dataset="adult",
    quasi_identifiers=("age", "sex", "race", "education"),
    keep=("income", "marital_status", "relationship", "hours_per_week", "capital_gain", "capital_loss"),
    formula="income ~ age + sex + race + education",
    family="probit",
    masks={
        "age": {"K": 3, "sigma_e": 3.0},
        "sex": {"alpha": 5.0},
        "race": {"alpha": 5.0},
        "education": {"alpha": 5.0},
    },
    tolerance={"age": 1.0},
)

ADULT_DEMO = replace(ADULT, keep=("marital_status", "hours_per_week", "income"))

#: the command line's default kept columns per bundled data set
WORKLOADS: dict[str, Workload] = {"adult": ADULT}
