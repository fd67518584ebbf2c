"""synthmi: Bayesian multiple-imputation synthetic data.

Layers (data flows down; nothing imports upward)::

    cli.py, report/      what people run and read
    evaluation/          utility, risk, combining rules, coherence (DataFrames only)
    models/              synthesizers: fit(df) -> sample(m) -> SyntheticData
    privacy/             DP mechanisms, accountant, DP Bayesian inference, DPSyn
    data/                bundled public data and loaders
    _validate.py         input checks and error messages
"""

__version__ = "0.1.0"
__all__ = ["Schema", "Variable", "SyntheticData", "__version__"]

#: public name -> module, imported on first use (PEP 562): `synthmi --help` and a command
#: line that fails validation need not import pandas' whole stack first (issue 30)
_LAZY = {"Schema": "schema", "Variable": "schema", "SyntheticData": "synthetic"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
