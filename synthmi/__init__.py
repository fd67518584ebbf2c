"""synthmi: Bayesian multiple-imputation synthetic data.

Layers (data flows down; nothing imports upward)::

    cli.py, report/      what people run and read
    evaluation/          utility, risk, combining rules, coherence (DataFrames only)
    models/              synthesizers: fit(df) -> sample(m) -> SyntheticData
    privacy/             DP mechanisms, accountant, DP Bayesian inference, DPSyn
    data/                bundled public data and loaders
    _validate.py         input checks and error messages
"""
from .schema import Schema, Variable
from .synthetic import SyntheticData

__version__ = "0.1.0"
__all__ = ["Schema", "Variable", "SyntheticData", "__version__"]
