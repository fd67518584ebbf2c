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

Dynamic imports are arrows too: ``importlib.import_module(x)`` / ``import_module(x)`` /
``__import__(x)`` are resolved when ``x`` is a string literal, an f-string of known pieces
(``__name__``, ``module.__name__`` of an imported module, a literal, an entry of a
module-level dict literal such as a ``_LAZY`` facade table or a ``METHODS`` registry,
directly or through a local unpacked from one, or ``.split(sep)`` of one), or an f-string
whose unknown tail follows a known package prefix (``f"{commands.__name__}.{name}"``: an
arrow to every module under ``synthmi.commands``). A dynamic import the walker cannot
resolve fails the test unless its ``file:function`` is in ``DYNAMIC_ALLOWED`` with the
reason it is safe.
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


#: dynamic imports the walker cannot resolve, by "file:function" -> why they draw no arrow up
DYNAMIC_ALLOWED: dict[str, str] = {}

_IMPORTERS = {("importlib", "import_module"), (None, "import_module"), (None, "__import__"),
              ("importlib", "__import__")}


def _is_dynamic_import(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    f = node.func
    if isinstance(f, ast.Name):
        return (None, f.id) in _IMPORTERS
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in _IMPORTERS


class _Unknown(Exception):
    pass


class _Resolver:
    """Possible string values of an expression in one module (see the module docstring)."""

    def __init__(self, name: str, is_package: bool, tree: ast.Module, modules):
        self.name, self.modules = name, modules
        self.tables: dict[str, list] = {}  # module-level dict literal -> its values
        self.aliases: dict[str, str] = {}  # a name bound to an imported synthmi module
        for node in tree.body:
            target, value = None, None
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target, value = node.target.id, node.value
            if target and isinstance(value, ast.Dict):
                try:
                    self.tables[target] = [ast.literal_eval(v) for v in value.values]
                except ValueError:
                    pass
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                for alias in node.names:
                    if f"{base}.{alias.name}" in modules:
                        self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        self.aliases[alias.asname] = alias.name

    def values(self, expr: ast.AST, function: ast.AST | None) -> set:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return {expr.value}
        if isinstance(expr, ast.Name) and expr.id == "__name__":
            return {self.name}
        if (isinstance(expr, ast.Attribute) and expr.attr == "__name__" and isinstance(expr.value, ast.Name)
                and expr.value.id in self.aliases):
            return {self.aliases[expr.value.id]}
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and expr.value.id in self.tables:
            return {v if isinstance(v, (str, tuple)) else repr(v) for v in self.tables[expr.value.id]}
        if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "split"
                and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant)):
            return {tuple(v.split(expr.args[0].value)) for v in self.values(expr.func.value, function)
                    if isinstance(v, str)}
        if isinstance(expr, ast.Name) and function is not None:
            return self._local(expr.id, function)
        raise _Unknown

    def _local(self, var: str, function: ast.AST) -> set:
        """A local assigned once in ``function``: ``var = e`` or ``a, var = e``."""
        found = []
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                t = node.targets[0]
                if isinstance(t, ast.Name) and t.id == var:
                    found.append((None, node.value))
                elif isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == var for e in t.elts):
                    index = next(i for i, e in enumerate(t.elts) if isinstance(e, ast.Name) and e.id == var)
                    found.append((index, node.value))
            elif isinstance(node, (ast.For, ast.comprehension, ast.With, ast.AugAssign, ast.NamedExpr)):
                targets = [node.target] if hasattr(node, "target") else [i.optional_vars for i in node.items]
                if any(isinstance(n, ast.Name) and n.id == var for t in targets if t for n in ast.walk(t)):
                    raise _Unknown  # bound by a loop or a context: any value
        if len(found) != 1:
            raise _Unknown
        index, value = found[0]
        got = self.values(value, function)
        if index is None:
            return got
        return {v[index] for v in got if isinstance(v, tuple) and len(v) > index}

    def targets(self, expr: ast.AST, function: ast.AST | None) -> set[str]:
        """Modules ``expr`` may name; raises _Unknown when it cannot tell."""
        if isinstance(expr, ast.JoinedStr):
            texts = {""}
            for i, piece in enumerate(expr.values):
                node = piece.value if isinstance(piece, ast.FormattedValue) else piece
                try:
                    options = self.values(node, function)
                except _Unknown:
                    if i == len(expr.values) - 1 and texts and all(t.endswith(".") for t in texts):
                        # a known package prefix, an unknown tail: every module under the prefix
                        under = {m for t in texts for m in self.modules if m.startswith(t)}
                        if under:
                            return under
                    raise
                if not all(isinstance(o, str) for o in options):
                    raise _Unknown
                texts = {t + o for t in texts for o in options}
            return texts
        out = self.values(expr, function)
        if not all(isinstance(o, str) for o in out):
            raise _Unknown
        return {o.split(":")[0] for o in out}


def dynamic_imports(name: str, path: Path, tree: ast.Module, modules, rel: str):
    """``(targets, unresolved)`` of the dynamic imports in one module: targets as
    ``(imported, "file:line")``, unresolved as ``"file:function (line N)"``."""
    resolver = _Resolver(name, path.name == "__init__.py", tree, modules)
    targets, unresolved = [], []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if _is_dynamic_import(child):
                try:
                    for t in sorted(resolver.targets(child.args[0], function)):
                        targets.append((t, f"{rel}:{child.lineno}"))
                except _Unknown:
                    where = function.name if function is not None else "<module>"
                    unresolved.append(f"{rel}:{where} (line {child.lineno})")
            visit(child, inner)

    visit(tree, None)
    return targets, unresolved


def unresolved_dynamic_imports(modules: dict[str, Path], root: Path | None = None,
                               allowed: dict[str, str] = DYNAMIC_ALLOWED) -> list[str]:
    root = PACKAGE_DIR.parent if root is None else root
    out = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for where in dynamic_imports(name, path, tree, modules, str(path.relative_to(root)))[1]:
            if where.split(" (line")[0] not in allowed:
                out.append(where + ": a dynamic import the layer walker cannot resolve")
    return sorted(out)


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
        dynamic, _ = dynamic_imports(name, path, tree, modules, str(path.relative_to(root)))
        for target, at in dynamic:
            if target == prefix or target.startswith(prefix + "."):
                parts = target.split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                if parts and ".".join(parts) != name:
                    edges.append((name, ".".join(parts), at))
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


def test_every_dynamic_import_is_resolved_or_allowed(modules, edges):
    found = unresolved_dynamic_imports(modules)
    assert not found, "\n".join(found)
    # the package's lazy facade and the verb / method registries are arrows too
    got = {(a, b) for a, b, _ in edges}
    assert {("synthmi", "synthmi.schema"), ("synthmi", "synthmi.synthetic"),
            ("synthmi.commands.synthesize", "synthmi.models.rubin"),
            ("synthmi.models", "synthmi.models.copula"), ("synthmi.cli", "synthmi.commands.synthesize")} <= got
    for where, reason in DYNAMIC_ALLOWED.items():
        assert reason.strip(), f"{where}: an allowed dynamic import needs its reason"


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
    assert layer_of("synthmi") == len(LAYERS) - 1 and layer_of("synthmi.evaluation.risk") == layer_of("synthmi.evaluation") == 3
    # the top package claims itself only, not every module under it
    assert layer_of("synthmi.newroom") is None and layer_of("synthmi.evaluationx") is None


def test_an_upward_dynamic_import_is_caught(tmp_path):
    files = {
        "synthmi/__init__.py": "",
        "synthmi/models/__init__.py": "",
        "synthmi/models/rubin.py": "",
        "synthmi/evaluation/__init__.py": "",
        "synthmi/evaluation/sneaky.py": (
            "import importlib\n"
            "def f():\n"
            "    return importlib.import_module('synthmi.models.rubin')\n"
        ),
    }
    mods = _write(tmp_path, files)
    edges = import_edges(mods, root=tmp_path)
    assert ("synthmi.evaluation.sneaky", "synthmi.models.rubin", "synthmi/evaluation/sneaky.py:3") in edges
    assert upward_arrows(edges) == [
        "synthmi/evaluation/sneaky.py:3: synthmi.evaluation.sneaky (layer 3) imports synthmi.models.rubin (layer 5)"
    ]


def test_dynamic_imports_resolve_or_fail(tmp_path):
    files = {
        "synthmi/__init__.py": (
            "_LAZY = {'Schema': 'schema', 'SyntheticData': 'synthetic'}\n"
            "def __getattr__(name):\n"
            "    import importlib\n"
            "    return getattr(importlib.import_module(f'{__name__}.{_LAZY[name]}'), name)\n"
        ),
        "synthmi/schema.py": "",
        "synthmi/synthetic.py": "x = __import__('synthmi.schema')\n",
        "synthmi/models/__init__.py": "",
        "synthmi/models/cart.py": "",
        "synthmi/models/rubin.py": "",
        "synthmi/commands/__init__.py": "",
        "synthmi/commands/run.py": (
            "from importlib import import_module\n"
            "METHODS: dict = {'cart': 'synthmi.models.cart:Cart'}\n"
            "def resolve(name):\n"
            "    module, cls = METHODS[name].split(':')\n"
            "    return getattr(import_module(module), cls)\n"
            "def every(names):\n"
            "    for n in names:\n"
            "        import_module(f'synthmi.models.{n}')\n"
            "def anything(name):\n"
            "    return import_module(name)\n"
        ),
    }
    mods = _write(tmp_path, files)
    got = {(a, b) for a, b, _ in import_edges(mods, root=tmp_path)}
    assert got == {
        ("synthmi", "synthmi.schema"), ("synthmi", "synthmi.synthetic"),  # the _LAZY facade
        ("synthmi.synthetic", "synthmi.schema"),  # __import__ of a literal
        ("synthmi.commands.run", "synthmi.models.cart"),  # a registry entry, split at ':'
        ("synthmi.commands.run", "synthmi.models.rubin"),  # a known prefix: every module under it
    }
    # an import of a parameter cannot be resolved: it fails unless allowed by name, with a reason
    assert unresolved_dynamic_imports(mods, root=tmp_path, allowed={}) == [
        "synthmi/commands/run.py:anything (line 10): a dynamic import the layer walker cannot resolve"
    ]
    assert unresolved_dynamic_imports(mods, root=tmp_path, allowed={"synthmi/commands/run.py:anything": "test"}) == []


# --------------------------------------------------------------------------- one layering everywhere


def _doc_module(token: str) -> str:
    """``models/`` -> synthmi.models, ``cli.py`` -> synthmi.cli, ``synthmi/report/`` -> synthmi.report,
    ``__init__.py`` -> synthmi (the package's facade)."""
    token = token.strip("`").removeprefix("synthmi/").rstrip("/").removesuffix(".py")
    if token == "__init__":
        return "synthmi"
    return "synthmi." + token.replace("/", ".")


def _docstring_layers(doc: str) -> list[tuple[str, set[int]]]:
    """(module, {layer}) for each file named in the package docstring's layer list."""
    import re

    stated: list[tuple[str, set[int]]] = []
    layer = None
    for line in doc.split("::", 1)[1].splitlines():
        m = re.match(r"\s+(\d+)\s+(.*)", line)
        if m:
            layer, line = int(m.group(1)), m.group(2)
        if layer is None or not line.strip():
            continue
        names = line.strip().split("  ")[0]  # the description follows two spaces
        stated += [(_doc_module(t), {layer}) for t in re.findall(r"[\w/]+(?:\.py|/)", names)]
    return stated


def _readme_layers(readme: str) -> list[tuple[str, set[int]]]:
    """(module, {layers}) for each file named in README's tour table."""
    import re

    tour = readme.split("## A short tour", 1)[1].split("\n#", 1)[0]
    stated = []
    for row in re.findall(r"^\| ([\d, ]+) \| (.*?) \|", tour, flags=re.M):
        numbers = {int(n) for n in re.findall(r"\d+", row[0])}
        stated += [(_doc_module(t), numbers) for t in re.findall(r"`([^`]+(?:\.py|/))`", row[1])]
    return stated


def description_problems(stated: list[tuple[str, set[int]]], where: str, layers=LAYERS) -> list[str]:
    """A module described in the wrong layer, or a module of ``layers`` not described."""
    wrong = [f"{where}: {module} described as layer {sorted(numbers)}, synthmi/_layers.py says {layer_of(module)}"
             for module, numbers in stated if layer_of(module) not in numbers]
    named = {module for module, _ in stated}
    missing = [f"{where}: {prefix} (layer {i}) of synthmi/_layers.py is not described"
               for i, prefixes in enumerate(layers) for prefix in prefixes if prefix not in named]
    return wrong + missing


def test_the_package_docstring_and_readme_tell_the_same_order():
    # the order is written once (synthmi/_layers.py); the two descriptions of it must agree with it,
    # and each must describe every module the order places
    import synthmi

    doc = _docstring_layers(synthmi.__doc__)
    readme = _readme_layers((PACKAGE_DIR.parent / "README.md").read_text())
    assert len(doc) >= 15 and len(readme) >= 15, (doc, readme)  # both descriptions were read
    problems = description_problems(doc, "synthmi/__init__.py docstring") + description_problems(readme, "README.md")
    assert not problems, "\n".join(problems)


def test_a_description_missing_a_module_or_misplacing_one_is_caught():
    doc = """Layers::

        2 evaluation/     measures
        1 spec.py, __init__.py   the column description
    """
    stated = _docstring_layers(doc)
    assert stated == [("synthmi.evaluation", {2}), ("synthmi.spec", {1}), ("synthmi", {1})]
    layers = (("synthmi.spec", "synthmi.domain"), ("synthmi.evaluation",))
    problems = description_problems(stated, "doc", layers)
    top = len(LAYERS) - 1
    assert problems == [
        f"doc: synthmi.evaluation described as layer [2], synthmi/_layers.py says {layer_of('synthmi.evaluation')}",
        f"doc: synthmi described as layer [1], synthmi/_layers.py says {top}",
        "doc: synthmi.domain (layer 0) of synthmi/_layers.py is not described",
    ]
