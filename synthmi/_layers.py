"""The package's layer order, written once.

Data flows down: a module may import only from its own layer or a lower one,
and no two modules may import each other, directly or through others.
``tests/test_layers.py`` walks every import (module-level and inside
functions) of every module under ``synthmi/`` and fails on a cycle, on an
arrow from a lower layer to a higher one, and on a module that no layer
claims. The package docstring and README's tour describe this tuple; change
the order here and nowhere else.

Each layer is a tuple of module prefixes: ``"synthmi.evaluation"`` claims the
package and every module under it; ``"synthmi"`` alone claims only the
package's ``__init__`` (its version and lazily resolved names, a facade over
layers 1 and 4, hence placed on top), not the modules under it. Lowest layer
first.
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    # 0 base: input checks, errors, JSON, random streams, progress, provenance,
    #   and the pandas/Dask frame interface every model and measure is written against
    (
        "synthmi._layers",
        "synthmi._validate",
        "synthmi.errors",
        "synthmi._json",
        "synthmi.results",
        "synthmi._numeric",
        "synthmi._random",
        "synthmi._progress",
        "synthmi.provenance",
        "synthmi.engine",
    ),
    # 1 the column description: one ReleaseSpec and its views
    ("synthmi.kinds", "synthmi.columns", "synthmi.domain", "synthmi.schema", "synthmi.spec"),
    # 2 convergence diagnostics of posterior draws
    ("synthmi.diagnostics",),
    # 3 measures: take (original, copies, spec, rule), never a model
    ("synthmi.evaluation",),
    # 4 the release container: SyntheticData, writes metadata.json alone
    ("synthmi.synthetic",),
    # 5 synthesizers: fit(df) -> sample(m) -> SyntheticData
    ("synthmi.models",),
    # 6 differential privacy: mechanisms, accountant, DP synthesizers, exact and empirical audits
    ("synthmi.privacy",),
    # 7 bundled public data and loaders
    ("synthmi.data",),
    # 8 the disclosure review report: formats results, computes nothing
    ("synthmi.report",),
    # 9 orchestration: evaluate a release, tune, demo; the shipped test kit
    ("synthmi.workflow", "synthmi.testing"),
    # 10 the command-line verbs
    ("synthmi.commands",),
    # 11 the entry points, and the package itself: its __init__ is a facade that resolves
    #   Schema/Variable (layer 1) and SyntheticData (layer 4) on first use (PEP 562), so it sits
    #   above what it names; no module imports a name from the package (``from synthmi import``,
    #   ``from .. import name``), which the import-layer test would report as an arrow up
    ("synthmi.cli", "synthmi.__main__", "synthmi"),
)


def layer_of(module: str) -> int | None:
    """The layer that claims ``module`` (longest matching prefix), or None."""
    best, best_len = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            # the top package claims itself only: a new module must be placed explicitly
            claims_below = "." in prefix
            if (module == prefix or (claims_below and module.startswith(prefix + "."))) and len(
                prefix
            ) > best_len:
                best, best_len = index, len(prefix)
    return best
