"""The import graph follows the layer order in ``synthmi._layers`` (issue 27).

Every ``import`` / ``from ... import`` in every module under ``synthmi/`` is an
arrow, whether it sits at module level, inside a function, or under
``TYPE_CHECKING`` (a lazy import is still a dependency: it only moves the
failure to run time). Relative imports are resolved against the importing
module's package; ``from .. import diagnostics`` is an arrow to the module
``synthmi.diagnostics``, ``from . import combine`` (a name, not a module) an
arrow to the package. The test fails on a module no layer claims, on an arrow
from a lower layer to a higher one, and on any cycle between modules, naming
file:line. Negative controls feed the same checks synthetic graphs so the
test cannot pass because it read nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from synthmi._layers import LAYERS, layer_of

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "synthmi"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Every module under ``root``: dotted name -> file."""
    return {_module_name(path): path for path in sorted(root.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names (before its imported names)."""
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    if node.level - 1 > len(package) - 1:
        raise ValueError(f"relative import beyond the top package in {importer}")
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_edges(modules: dict[str, Path], prefix: str = "synthmi", root: Path | None = None
                 ) -> list[tuple[str, str, str]]:
    """Arrows ``(importer, imported, "file:line")`` between modules in ``modules`` (files named
    relative to ``root``, the directory holding the package)."""
    root = PACKAGE_DIR.parent if root is None else root
    edges = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        where = lambda node: f"{path.relative_to(root)}:{node.lineno}"  # noqa: E731
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    # `from pkg import mod` imports the module pkg.mod; `from pkg import name` the package
                    targets.append(sub if sub in modules else base)
            for target in targets:
                if target != prefix and not target.startswith(prefix + "."):
                    continue  # third-party or standard library
                if target not in modules:
                    # `import synthmi.a.b.attr`-style or a missing module: take the longest module prefix
                    parts = target.split(".")
                    while parts and ".".join(parts) not in modules:
                        parts.pop()
                    target = ".".join(parts)
                if target and target != name:
                    edges.append((name, target, where(node)))
    return edges


def unassigned(modules, layer=layer_of) -> list[str]:
    return sorted(f"{m} ({p.relative_to(PACKAGE_DIR.parent)}): no layer in synthmi/_layers.py"
                  for m, p in modules.items() if layer(m) is None)


def upward_arrows(edges, layer=layer_of) -> list[str]:
    found = set()
    for importer, imported, where in edges:
        low, high = layer(importer), layer(imported)
        if low is not None and high is not None and high > low:
            found.add(f"{where}: {importer} (layer {low}) imports {imported} (layer {high})")
    return sorted(found)


def cycles(edges) -> list[str]:
    """Every strongly connected component of more than one module, with its arrows."""
    graph: dict[str, set[str]] = {}
    for importer, imported, _ in edges:
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())
    # Tarjan's algorithm, iterative (the graph is small, but recursion limits are not ours to set)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
    found = []
    for component in components:
        arrows = sorted({f"{w}: {a} -> {b}" for a, b, w in edges if a in component and b in component})
        found.append(f"cycle among {sorted(component)}:\n    " + "\n    ".join(arrows))
    return sorted(found)


# --------------------------------------------------------------------------- the package


@pytest.fixture(scope="module")
def modules():
    return package_modules()


@pytest.fixture(scope="module")
def edges(modules):
    return import_edges(modules)


def test_the_walk_reads_the_package(modules, edges):
    # guards against a vacuous pass: the package has dozens of modules and arrows,
    # and a known lazy import inside a function is among them
    assert len(modules) > 50 and len(edges) > 100
    assert any(a == "synthmi.cli" and b.startswith("synthmi.commands") for a, b, _ in edges)


def test_every_module_has_a_layer(modules):
    missing = unassigned(modules)
    assert not missing, "\n".join(missing)


def test_no_arrow_goes_up(edges):
    up = upward_arrows(edges)
    assert not up, f"{len(up)} import(s) from a lower layer to a higher one:\n" + "\n".join(up)


def test_no_cycle(edges):
    found = cycles(edges)
    assert not found, "\n".join(found)


def test_layers_are_listed_once():
    prefixes = [p for layer in LAYERS for p in layer]
    assert len(prefixes) == len(set(prefixes))


# --------------------------------------------------------------------------- negative controls


def _write(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return {
        _module_name_under(tmp_path, p): p for p in sorted(tmp_path.rglob("*.py"))
    }


def _module_name_under(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def test_resolution_of_relative_and_lazy_imports(tmp_path):
    files = {
        "synthmi/__init__.py": "",
        "synthmi/diagnostics.py": "",
        "synthmi/evaluation/__init__.py": "from .combining import combine\n",
        "synthmi/evaluation/combining.py": "def combine():\n    from .. import diagnostics\n",
        "synthmi/evaluation/analysis.py": "from . import combine\nfrom ..synthetic import X\n",
        "synthmi/synthetic.py": "import synthmi.evaluation.combining\n",
    }
    mods = _write(tmp_path, files)
    edges = import_edges(mods, root=tmp_path)
    assert ("synthmi.evaluation.combining", "synthmi.diagnostics", "synthmi/evaluation/combining.py:2") in edges
    got = {(a, b) for a, b, _ in edges}
    assert got == {
        ("synthmi.evaluation", "synthmi.evaluation.combining"),
        ("synthmi.evaluation.combining", "synthmi.diagnostics"),  # lazy, `from .. import module`
        ("synthmi.evaluation.analysis", "synthmi.evaluation"),  # `from . import name`
        ("synthmi.evaluation.analysis", "synthmi.synthetic"),
        ("synthmi.synthetic", "synthmi.evaluation.combining"),
    }


def test_an_upward_arrow_is_caught():
    edges = [
        ("synthmi.evaluation.analysis", "synthmi.synthetic", "synthmi/evaluation/analysis.py:12"),
        ("synthmi.report.collect", "synthmi.evaluation.risk", "synthmi/report/collect.py:3"),
    ]
    up = upward_arrows(edges)
    assert up == [
        "synthmi/evaluation/analysis.py:12: synthmi.evaluation.analysis (layer 3) imports "
        "synthmi.synthetic (layer 4)"
    ]


def test_a_cycle_is_caught_and_a_chain_is_not():
    chain = [("a", "b", "a.py:1"), ("b", "c", "b.py:1")]
    assert cycles(chain) == []
    loop = chain + [("c", "a", "c.py:7"), ("c", "d", "c.py:8")]
    found = cycles(loop)
    assert len(found) == 1
    assert "['a', 'b', 'c']" in found[0] and "c.py:7: c -> a" in found[0] and "d" not in found[0].split(":")[0]


def test_an_unplaced_module_is_caught():
    fake = {"synthmi.newroom": PACKAGE_DIR / "newroom.py"}
    assert unassigned(fake) == ["synthmi.newroom (synthmi/newroom.py): no layer in synthmi/_layers.py"]
    assert layer_of("synthmi") == 0 and layer_of("synthmi.evaluation.risk") == layer_of("synthmi.evaluation") == 3
    # the top package claims itself only, not every module under it
    assert layer_of("synthmi.newroom") is None and layer_of("synthmi.evaluationx") is None


# --------------------------------------------------------------------------- one layering everywhere


def _doc_module(token: str) -> str:
    """``models/`` -> synthmi.models, ``cli.py`` -> synthmi.cli, ``synthmi/report/`` -> synthmi.report."""
    token = token.strip("`").removeprefix("synthmi/").rstrip("/").removesuffix(".py")
    return "synthmi." + token.replace("/", ".")


def test_the_package_docstring_and_readme_tell_the_same_order():
    # the order is written once (synthmi/_layers.py); the two descriptions of it must agree with it
    import re

    import synthmi

    stated: list[tuple[str, set[int]]] = []
    layer = None
    for line in synthmi.__doc__.split("::", 1)[1].splitlines():
        m = re.match(r"\s+(\d+)\s+(.*)", line)
        if m:
            layer, line = int(m.group(1)), m.group(2)
        if layer is None or not line.strip():
            continue
        names = line.split("  ")[0]  # the description follows two spaces
        stated += [(_doc_module(t), {layer}) for t in re.findall(r"[\w/]+(?:\.py|/)", names)]
    readme = (PACKAGE_DIR.parent / "README.md").read_text()
    tour = readme.split("## A short tour", 1)[1].split("\n#", 1)[0]
    for row in re.findall(r"^\| ([\d, ]+) \| (.*?) \|", tour, flags=re.M):
        numbers = {int(n) for n in re.findall(r"\d+", row[0])}
        stated += [(_doc_module(t), numbers) for t in re.findall(r"`([^`]+(?:\.py|/))`", row[1])]
    assert len(stated) >= 2 * 15, stated  # both descriptions were read
    wrong = [f"{module}: described as layer {sorted(numbers)}, synthmi/_layers.py says {layer_of(module)}"
             for module, numbers in stated if layer_of(module) not in numbers]
    assert not wrong, "\n".join(wrong)
