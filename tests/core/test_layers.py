"""The import graph: layers import downward only, no module imports itself back through others.

Layers, lowest first (README "Layers"): registry, isa, generators, core and the oracle,
backends, families, run, tools, cli.  A family may build on another (sparse wgmma on dense
wgmma) but never in a circle, and no generic module (run and below) imports a family by name:
the registry resolves families from strings.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = [
    ("ptxconf.registry", 0),
    ("ptxconf.cache", 0),
    ("ptxconf.isa", 1),
    ("ptxconf.generators", 2),
    ("ptxconf.core", 3),
    ("ptxconf.oracle", 3),
    ("ptxconf.figures", 3),
    ("ptxconf.backends", 4),
    ("ptxconf.families", 5),
    ("ptxconf.run", 6),
    ("ptxconf.tools", 7),
    ("ptxconf.docs", 7),
    ("ptxconf.junit", 6),
    ("ptxconf.cli", 8),
    ("ptxconf.console", 8),  # the console command: takes the signals, then imports the CLI
    ("ptxconf.pytest_plugin", 8),
    ("ptxconf", 0),  # the package root: __version__ only
]


def _modules() -> dict[str, Path]:
    mods = {}
    # The folders as installed (setup.py): conformance/ -> ptxconf, generators/ -> ptxconf.generators.
    for top, package in (("conformance", ["ptxconf"]), ("generators", ["ptxconf", "generators"])):
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT / top).with_suffix("")
            parts = package + list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = path
    return mods


def _layer(mod: str) -> int:
    for prefix, layer in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{mod}: in no layer")


def _family(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["ptxconf", "families"] else None


def _imports(mod: str, path: Path, known: set[str]) -> set[str]:
    """Every project module ``mod`` imports, at any depth of the file (late imports count too)."""
    tree = ast.parse(path.read_text())
    pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != mod:
                out.add(name)
    return out


GRAPH = {m: _imports(m, p, set(_modules())) for m, p in _modules().items()}


def test_no_upward_import():
    bad = []
    for mod, deps in GRAPH.items():
        for dep in deps:
            if dep in ("ptxconf",):
                continue
            if _layer(dep) > _layer(mod):
                bad.append(f"{mod} (layer {_layer(mod)}) imports {dep} (layer {_layer(dep)})")
    assert not bad, "\n".join(sorted(bad))


def test_no_generic_module_imports_a_family():
    bad = []
    for mod, deps in GRAPH.items():
        for dep in deps:
            fam = _family(dep)
            if fam is None:
                continue
            if _layer(mod) < _layer(dep):
                continue  # already an upward import (other test)
            own = _family(mod)
            if own is None and _layer(mod) <= _layer("ptxconf.run"):
                bad.append(f"generic module {mod} imports family {fam} ({dep})")
    assert not bad, "\n".join(sorted(bad))


def test_no_import_circle():
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        seen[m] = 1
        stack.append(m)
        for d in sorted(GRAPH.get(m, ())):
            if d.startswith(m + ".") or m.startswith(d + "."):
                continue  # a package and its own submodules
            if seen.get(d) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(d):] + [d]))
            if d not in seen:
                visit(d)
        stack.pop()
        seen[m] = 2

    for m in sorted(GRAPH):
        if m not in seen:
            visit(m)


def _reach(mod: str) -> set[str]:
    """Every project module ``mod`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [mod]
    while todo:
        for dep in GRAPH.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


RUN_LOOP = {"ptxconf.run.runner", "ptxconf.run.session", "ptxconf.run.planpool"}


def test_replay_and_diff_stand_on_the_observation_module_not_the_run_loop():
    """What replay and diff trust of a run is read by ``run.observations``; neither needs the loop that wrote it."""
    for mod in ("ptxconf.run.replay", "ptxconf.run.diff"):
        assert "ptxconf.run.observations" in GRAPH[mod], mod
        assert not _reach(mod) & RUN_LOOP, f"{mod} reaches {sorted(_reach(mod) & RUN_LOOP)}"


# Tools outside this rule for now, and why: their modules are owned by work in progress elsewhere, so their imports of
# family submodules are listed here exactly and are to be moved to the family's ``__init__`` names.
TOOLS_ALLOWED = {
    "ptxconf.tools.numerics.harness": {"ptxconf.families.mma.probe", "ptxconf.families.wgmma.desc",
                                       "ptxconf.families.wgmma.probe"},
}


def _declared(family_package: str) -> set[str]:
    """A family package's ``__all__``: what it declares tools may use."""
    tree = ast.parse(_modules()[family_package].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def test_tools_use_a_family_only_through_what_its_package_declares():
    """A tool imports a family's package (``from ptxconf.families.mma import Probe``), never a submodule of it, and
    only names the package's ``__all__`` declares (numerics and toolchains: the exact allow-list above)."""
    bad = []
    for mod, path in _modules().items():
        if not mod.startswith("ptxconf.tools."):
            continue
        for dep in GRAPH[mod]:
            fam = _family(dep)
            if fam is None:
                continue
            package = f"ptxconf.families.{fam}"
            if dep != package and dep not in TOOLS_ALLOWED.get(mod, set()):
                bad.append(f"{mod} imports {dep}: import it from {package} (and declare it in its __all__)")
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}  # ``import ptxconf.families.wgmma as wg``: wg -> the package
        used: dict[str, set[str]] = {}  # package -> names a tool takes of it
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and _family(node.module) \
                    and node.module == f"ptxconf.families.{_family(node.module)}":
                used.setdefault(node.module, set()).update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                aliases.update({a.asname: a.name for a in node.names
                                if a.asname and _family(a.name) and a.name == f"ptxconf.families.{_family(a.name)}"})
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                used.setdefault(aliases[node.value.id], set()).add(node.attr)
        allowed = {sub.rpartition(".")[2] for sub in TOOLS_ALLOWED.get(mod, set())}  # ``from PACKAGE import probe``
        for package, names in used.items():
            undeclared = names - _declared(package) - allowed
            if undeclared:
                bad.append(f"{mod} takes {sorted(undeclared)} of {package}, which does not declare them")
    assert not bad, "\n".join(sorted(bad))


def _role_names() -> set[str]:
    """The file names of ``ptxconf.families``' role table (its docstring: one ````name```` per line)."""
    doc = ast.get_docstring(ast.parse(_modules()["ptxconf.families"].read_text()))
    return {line.split("``")[1] for line in doc.splitlines() if line.startswith("``")}


def test_every_family_names_its_files_after_the_role_table():
    """One role, one file name: a family's files are named only from the table, and its case sets are drawn in
    cases.py, wherever the family keeps them."""
    names = _role_names()
    assert {"family.py", "cases.py", "probe.py", "compare.py", "spec.py", "schema.json"} <= names
    bad = []
    for folder in sorted(p for p in (ROOT / "conformance" / "families").iterdir() if (p / "family.py").is_file()):
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.name not in names:
                bad.append(f"{path.relative_to(ROOT)}: not a name of the role table in conformance/families/__init__.py")
            if path.suffix == ".py" and path.name != "cases.py":
                drawn = [node.name for node in ast.parse(path.read_text()).body
                         if isinstance(node, ast.FunctionDef) and node.name in ("make_cases", "make_checks")]
                bad += [f"{path.relative_to(ROOT)}: {name} belongs in cases.py" for name in drawn]
    assert not bad, "\n".join(bad)
