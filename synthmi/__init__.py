"""synthmi: Bayesian multiple-imputation synthetic data.

Layers (data flows down; nothing imports upward)::

    cli.py, report/      what people run and read
    evaluation/          utility, risk, combining rules, coherence (DataFrames only)
    models/              synthesizers: fit(df) -> sample(m) -> SyntheticData
    privacy/             DP mechanisms, accountant, DP Bayesian inference, DPSyn
    data/                bundled public data and loaders
    _validate.py         input checks and error messages
"""
import warnings as _warnings

# ArviZ (imported by PyMC and by synthmi's diagnostics) prints a once-a-day FutureWarning
# about its own refactor; it says nothing about the user's data or release, so synthmi's
# output hides that one message (and only it: every other warning still shows).
_warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning)

from .schema import Schema, Variable  # noqa: E402
from .synthetic import SyntheticData

__version__ = "0.1.0"
__all__ = ["Schema", "Variable", "SyntheticData", "__version__"]
