"""synthmi: Bayesian multiple-imputation synthetic data.

Layers, lowest first (data flows down: a module imports only from its own
layer or a lower one, never up and never in a cycle). The order is written
once, as ``LAYERS`` in :mod:`synthmi._layers`; ``tests/test_layers.py`` walks
every import and fails on an arrow back up or a cycle::

    11 cli.py, __main__.py, __init__.py   the entry points; this package's facade
                             (Schema, Variable, SyntheticData resolved on first use)
    10 commands/             the command-line verbs
     9 workflow/, testing/   orchestration: evaluate a release, tune, demo; the shipped
                             test kit for synthesizers (check_synthesizer)
     8 report/               formats results (ReportData -> HTML); computes nothing
     7 data/                 bundled public data and workloads
     6 privacy/              DP mechanisms, accountant, DP Bayesian inference, DPSyn;
                             exact and empirical privacy audits
     5 models/               synthesizers: fit(df) -> sample(m) -> SyntheticData
     4 synthetic.py          the release container; writes metadata.json alone
     3 evaluation/           measures: take (original, copies, spec, rule), never a model
     2 diagnostics.py        convergence diagnostics and the release check
     1 kinds.py, columns.py, spec.py, schema.py, domain.py   the column description
     0 _layers.py, _validate.py, errors.py, _json.py, results.py, _numeric.py, _random.py,
       _progress.py, provenance.py, engine.py   base (_layers.py: this order)
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
