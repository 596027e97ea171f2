"""The shape of the code, checked: packages in layers without cycles, and no Tk where a
server machine (which has none) needs the code.

Two houses: the app, and the lab (``tkchat/lab/``: the bench, the grader, the classroom
simulation, record and replay, the watchdog) that measures it. The app imports nothing of the
lab; the command line names the lab's commands by import path (:data:`tkchat.cli.LAB_COMMANDS`);
the lab sees a window through one seam (``tkchat/lab/window.py``) and imports of the window
only a few toolkit pieces besides.

The layers, top to bottom: ``lab`` → ``cli`` → ``antipatterns`` → ``aio`` (the asyncio
modes, correct; the ``asyncio-*`` demos build on them) → ``ui`` → {``models``, ``serve``,
``course``, ``trace``} → {``consume``, ``generate``, ``transport``, ``store``, ``render``,
``i18n``, ``modes``} → ``conversation`` (the values every layer shares), ``events``,
``stats``, ``limits`` (the size budgets) and ``installed`` (the package data and the optional
extras).
The anti-patterns sit above the window they break, and the asyncio modes above the window they
run in; the window reaches both only through the one registry of modes
(:data:`tkchat.modes.PIPELINES`, import paths that
:func:`tkchat.ui.window.pipeline_choice.make_pipeline` imports), which this test reads like an
import.

``qt``, the Qt client, stands beside ``ui``: it uses the same Tk-free layers below, imports no
Tk, and only ``lab`` and ``cli`` (above both windows) may import it.

Inside ``ui`` each sub-folder and each top-level module is a room; the shared services
(``ui/base/``: translation, message box, status line, notices, the Services value) are a
ground floor below the features, and at most three pairs of rooms import each other.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tkchat

PACKAGE = Path(tkchat.__file__).parent
# Packages that must work without tkinter: the server, the command line's help, and every
# stage of the pipeline below the window.
TK_FREE = (
    "installed",
    "events",
    "stats",
    "limits",
    "modes",
    "i18n",
    "consume",
    "generate",
    "transport",
    "store",
    "render",
    "serve",
    "course",
    "models",
    "conversation",
    "trace",  # the main-thread sampler: the window runs it, the bench reads it
)


def _unit(path: Path) -> str:
    """The package (or top-level module) a file belongs to: tkchat/ui/window/chat_window.py ->
    "ui"."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _imports(path: Path) -> set[str]:
    """Every tkchat unit ``path`` imports, anywhere in the file (type-only imports too:
    they tie the modules together for a reader and for mypy just the same)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "tkchat" and len(parts) > 1:
                found.add(parts[1])
    return found


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        unit = _unit(path)
        graph[unit] |= _imports(path) - {unit}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_cycles_between_packages() -> None:
    assert _cycles(package_graph()) == []


def test_the_cycle_check_can_fail() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_lower_layers_never_import_the_window_or_the_tools_above_them() -> None:
    graph = package_graph()
    above = {"ui", "lab", "antipatterns", "aio", "cli"}
    for unit in TK_FREE:
        assert not graph[unit] & above, f"{unit} imports {graph[unit] & above}"
    # only through the registry: the next test
    assert not graph["ui"] & {"antipatterns", "aio"}, graph["ui"]


def _registry_edges() -> dict[str, str]:
    """Each mode's module and class name, from the one registry of modes."""
    from tkchat.modes import PIPELINES

    return dict(path.split(":") for path in PIPELINES.values())


def test_the_registry_of_modes_is_the_windows_only_way_to_the_anti_patterns() -> None:
    """The window (``ui``) imports each mode's class by the path the registry gives: an
    edge ui → antipatterns the static graph cannot see, so it is checked here: the registry
    names only the window's own pipeline, the asyncio modes and the anti-patterns, each class
    exists, and the anti-patterns and the asyncio modes are imported nowhere else below the
    tools (the ``asyncio-*`` demos build on the asyncio modes)."""
    import importlib

    edges = _registry_edges()
    units = {module.split(".")[1] for module in edges}
    assert units == {"ui", "aio", "antipatterns"}, units
    for module, name in edges.items():
        assert hasattr(importlib.import_module(module), name), f"{module}:{name}"
    graph = package_graph()
    importers = {unit for unit, imported in graph.items() if "antipatterns" in imported}
    assert importers <= {"lab", "cli"}, f"{importers} import the anti-patterns by name"
    importers = {unit for unit, imported in graph.items() if "aio" in imported}
    assert importers <= {"antipatterns", "lab", "cli"}, f"{importers} import tkchat/aio by name"


# -- two houses: the app imports nothing of the lab -----------------------------------------


def test_the_app_imports_nothing_of_the_lab() -> None:
    graph = package_graph()
    importers = {unit for unit, imported in graph.items() if "lab" in imported}
    assert importers == set(), f"{importers} import the lab"


def test_the_lab_commands_are_named_in_the_command_table() -> None:
    """The command line reaches the lab only through :data:`tkchat.cli.LAB_COMMANDS`: each
    names a module of ``tkchat/lab/commands/`` with the command's name."""
    import importlib

    from tkchat.cli import LAB_COMMANDS

    for name, module in LAB_COMMANDS.items():
        assert module.startswith("tkchat.lab.commands."), module
        assert name == importlib.import_module(module).NAME


def test_opening_the_window_loads_no_lab_module() -> None:
    code = (
        "import sys, tkchat.cli, tkchat.cli.window, tkchat.ui.window.chat_window\n"
        "print(sorted(name for name in sys.modules if name.startswith('tkchat.lab')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- the lab sees a window through one seam ------------------------------------------------
#
# A tool of the lab sees a chat window only as :class:`tkchat.lab.window.LabWindow`;
# ``tkchat/lab/window.py`` is the one lab module that knows the Tk window's parts (its adapter)
# and makes a window for the lab. Elsewhere the lab imports from ``tkchat.ui`` only these
# toolkit pieces, none of them a part of the window.

LAB = PACKAGE / "lab"
SEAM = LAB / "window.py"
LAB_MAY_IMPORT_FROM_UI: dict[str, set[str]] = {
    # the watchdog's own window: its look, its timers, the heartbeat it reads
    "tkchat.ui.look.lasting_font": {"lasting_font"},
    "tkchat.ui.look.palette": {"LIGHT", "Palette", "palette_named"},
    "tkchat.ui.look.scaling": {"dp"},
    "tkchat.ui.scheduler": {"AfterScheduler"},
    "tkchat.ui.teaching.watchdog_link": {"HeartbeatSender"},
    # the bench's baseline: what one stock tkhtmlview ``set_html`` costs
    "tkchat.ui.look.html_fonts": {"stock_tkhtmlview"},
    # the pipeline contract the self-test times, and how a student's pipeline is loaded and
    # guarded (the self-test's subject)
    "tkchat.ui.pipeline": {"Pipeline"},
    "tkchat.ui.transcript.transcript": {"AnswerView"},
    "tkchat.ui.teaching.outside": {
        "TK_THREADS",
        "GuardedPipeline",
        "OutsidePipelineError",
        "PipelineInterrupted",
        "TkCalledFromThread",
        "in_tk_callback",
        "load_outside_class",
    },
}


def _is_ui(module: str) -> bool:
    return module == "tkchat.ui" or module.startswith("tkchat.ui.")


def window_reach(tree: ast.AST, allowed: dict[str, set[str]]) -> list[str]:
    """What a module takes of the window beyond ``allowed`` (module: names): each other
    name imported from ``tkchat.ui`` (``TYPE_CHECKING`` imports too), each ``import
    tkchat.ui…``, and each reach past the lab's adapter to the window behind it
    (``.chat_app``)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "tkchat" and any(alias.name == "ui" for alias in node.names):
                found.append("tkchat.ui")
            elif _is_ui(node.module):
                names = allowed.get(node.module, set())
                found += [f"{node.module}.{a.name}" for a in node.names if a.name not in names]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_ui(alias.name)]
        elif isinstance(node, ast.Attribute) and node.attr == "chat_app":
            found.append(".chat_app")
    return found


def _lab_modules() -> list[Path]:
    return [path for path in sorted(LAB.rglob("*.py")) if path != SEAM]


def test_the_lab_sees_a_window_only_through_its_seam() -> None:
    reach = {
        _name(path): found
        for path in _lab_modules()
        if (
            found := window_reach(
                ast.parse(path.read_text(encoding="utf-8")), LAB_MAY_IMPORT_FROM_UI
            )
        )
    }
    assert reach == {}, "outside tkchat/lab/window.py, the lab reaches into the window"


def test_every_piece_the_lab_may_import_is_used() -> None:
    """The allow-list says what the lab still needs: a piece nobody imports leaves it."""
    used = {
        (node.module, alias.name)
        for path in _lab_modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module and _is_ui(node.module)
        for alias in node.names
    }
    listed = {(module, name) for module, names in LAB_MAY_IMPORT_FROM_UI.items() for name in names}
    assert listed - used == set()


def test_the_seam_check_can_fail() -> None:
    code = (
        "from tkchat.ui.window.chat_window import ChatApp\n"
        "from tkchat.ui.scheduler import AfterScheduler, CallbackCosts\n"
        "import tkchat.ui.health\n"
        "from tkchat import ui\n"
        "window.chat_app.flow.send()\n"
    )
    assert window_reach(ast.parse(code), {"tkchat.ui.scheduler": {"AfterScheduler"}}) == [
        "tkchat.ui.window.chat_window.ChatApp",
        "tkchat.ui.scheduler.CallbackCosts",
        "tkchat.ui.health",
        "tkchat.ui",
        ".chat_app",
    ]
    assert (
        window_reach(
            ast.parse("from tkchat.ui.scheduler import AfterScheduler"),
            {"tkchat.ui.scheduler": {"AfterScheduler"}},
        )
        == []
    )


# -- the window's rooms: a ground floor, few pairs that import each other -------------------

UI = PACKAGE / "ui"


def ui_room_graph() -> dict[str, set[str]]:
    """Rooms of ``tkchat/ui``: each sub-folder and each top-level module; an arrow for every
    import of another room, anywhere in a file (under ``TYPE_CHECKING`` too)."""
    rooms = {p.stem for p in UI.glob("*.py")} | {p.name for p in UI.iterdir() if p.is_dir()}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in UI.rglob("*.py"):
        room = path.relative_to(UI).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                parts = name.split(".")
                if parts[:2] == ["tkchat", "ui"] and len(parts) > 2 and parts[2] in rooms:
                    graph[room].add(parts[2])
        graph[room].discard(room)
    return graph


def two_way_pairs(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))


def test_few_rooms_of_the_window_import_each_other() -> None:
    pairs = two_way_pairs(ui_room_graph())
    assert len(pairs) <= 3, pairs


def test_the_ground_floor_imports_no_feature() -> None:
    """``ui/base`` serves the features and the window: it imports none of them."""
    graph = ui_room_graph()
    features = {"chats", "models", "settings", "teaching", "window", "transcript", "health"}
    assert not graph["base"] & features, graph["base"] & features


def test_the_pair_check_can_fail() -> None:
    assert two_way_pairs({"a": {"b", "c"}, "b": {"a"}, "c": set()}) == [("a", "b")]


HIDE_TK = "import sys; sys.modules['tkinter'] = None; sys.modules['_tkinter'] = None; "


def _run_without_tk(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_TK + code], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("args", [["--help"], ["serve", "--help"], ["bench", "--help"]])
def test_help_works_on_a_machine_without_tk(args: list[str]) -> None:
    result = _run_without_tk(f"from tkchat.cli import main; main({args!r})")
    assert result.returncode == 0, result.stderr
    assert "usage: tkchat" in result.stdout


def test_every_tk_free_package_imports_without_tk() -> None:
    modules = sorted(
        ".".join(("tkchat", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for unit in TK_FREE
        for path in (
            [PACKAGE / f"{unit}.py"]
            if (PACKAGE / f"{unit}.py").exists()
            else (PACKAGE / unit).rglob("*.py")
        )
    )
    assert "tkchat.serve.server" in modules and "tkchat.generate.worker" in modules
    code = f"import importlib\nfor name in {modules!r}:\n    importlib.import_module(name)"
    result = _run_without_tk(code)
    assert result.returncode == 0, result.stderr


def test_hiding_tk_is_noticed() -> None:
    result = _run_without_tk("import tkchat.ui.window.chat_window")
    assert result.returncode != 0 and "tkinter" in result.stderr


# -- the Qt client: beside the Tk window, never mixed with it -----------------------------------


def test_qt_stands_beside_the_tk_window() -> None:
    graph = package_graph()
    assert graph["qt"], "tkchat/qt/ imports the shared pipeline"
    assert not graph["qt"] & {"ui", "antipatterns", "lab", "cli"}, graph["qt"]
    importers = {unit for unit, imported in graph.items() if "qt" in imported}
    assert importers <= {"lab", "cli"}, f"{importers} import the Qt client"


HIDE_QT = "sys.modules['PySide6'] = None; "


def test_help_works_without_qt_and_the_qt_client_says_how_to_get_it() -> None:
    result = _run_without_tk(HIDE_QT + "from tkchat.cli import main; main(['--help'])")
    assert result.returncode == 0, result.stderr
    assert "--toolkit" in result.stdout
    # importlib.util.find_spec() cannot see the hidden module: hide it from it as well (and
    # only it: without llama_cpp either, the hint would name the extra's packages instead)
    code = (
        HIDE_QT
        + "import importlib.util; real = importlib.util.find_spec; "
        + "importlib.util.find_spec = lambda name, *a: "
        + "None if name.split('.')[0] == 'PySide6' else real(name, *a); "
        + "from tkchat.cli import main; raise SystemExit(main(['--toolkit', 'qt']))"
    )
    result = _run_without_tk(code)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "tkchat: the Qt client needs PySide6 (the qt extra), which is not installed: "
        "pip install -e '.[qt]'"
    )


def test_the_qt_client_imports_without_tk() -> None:
    pytest.importorskip("PySide6.QtWidgets", reason="the Qt client needs PySide6 (the qt extra)")
    modules = sorted(
        ".".join(("tkchat", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in (PACKAGE / "qt").rglob("*.py")
    )
    assert "tkchat.qt.window" in modules
    code = f"import importlib\nfor name in {modules!r}:\n    importlib.import_module(name)"
    result = _run_without_tk(code)
    assert result.returncode == 0, result.stderr


# -- budgets that keep the house small ------------------------------------------------------
#
# A module of at most 400 lines is the aim and 600 the limit; a function at most 60 lines
# (cyclomatic complexity at most 12: ruff's C901, pyproject.toml); a constructor at most 7
# parameters; a folder at most 15 modules. What broke a budget before it was set is listed
# below with its size then: an entry may only shrink, and one back within its budget must
# leave the list (so the list always says what is still owed).

MODULE_LIMIT = 600
FUNCTION_LIMIT = 60
CONSTRUCTOR_LIMIT = 7
FOLDER_LIMIT = 15

LONG_MODULES: dict[str, int] = {}
LONG_FUNCTIONS: dict[str, int] = {
    "ui/settings/dialog.py:ChatSettingsDialog.__init__": 128,
    "ui/chats/sidebar.py:ConversationSidebar.__init__": 115,
    "lab/bench/report.py:write_report": 111,
    "lab/bench/sse_bench.py:run_sse_bench": 98,
    "lab/bench/prompt_bench.py:prompt_verdicts": 97,
    "lab/watchdog.py:WatchdogWindow.draw": 74,
    "ui/models/picker.py:ModelPicker._build": 68,
    "ui/window/layout.py:ChatLayout._build_layout": 62,
    "ui/models/catalogue_dialog.py:CatalogueDialog._build": 62,
}
WIDE_CONSTRUCTORS: dict[str, int] = {
    "ui/teaching/lag_timeline.py:LagTimeline": 10,
    "ui/settings/dialog.py:ChatSettingsDialog": 9,
    "ui/models/catalogue_dialog.py:CatalogueDialog": 9,
    "ui/chats/sidebar.py:ConversationSidebar": 9,
    "ui/models/picker.py:ModelPicker": 8,
}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _functions(path: Path) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function of a module with its qualified name (``Class.method``)."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, Any]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + child.name, child
                yield from walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, prefix + child.name + ".")

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), "")


def _over(found: dict[str, int], limit: int, debts: dict[str, int]) -> list[str]:
    """What breaks a budget beyond its listed debt, and debts that are paid (to unlist)."""
    problems = [
        f"{name}: {size} (budget {limit}"
        + (f", listed at {debts[name]})" if name in debts else ")")
        for name, size in sorted(found.items())
        if size > max(limit, debts.get(name, 0))
    ]
    problems += [
        f"{name}: within its budget now ({found.get(name, 0)} ≤ {limit}): take it off the list"
        for name in sorted(debts)
        if found.get(name, 0) <= limit
    ]
    return problems


def test_modules_keep_to_their_length() -> None:
    found = {_name(p): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}
    assert _over(found, MODULE_LIMIT, LONG_MODULES) == []


def test_functions_keep_to_their_length() -> None:
    found = {
        f"{_name(path)}:{name}": node.end_lineno - node.lineno + 1  # type: ignore[operator]
        for path in _modules()
        for name, node in _functions(path)
    }
    assert _over(found, FUNCTION_LIMIT, LONG_FUNCTIONS) == []


def test_constructors_take_few_parameters() -> None:
    found: dict[str, int] = {}
    for path in _modules():
        for name, node in _functions(path):
            if name.endswith(".__init__"):
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1  # not self
                found[f"{_name(path)}:{name.removesuffix('.__init__')}"] = (
                    count + (a.vararg is not None) + (a.kwarg is not None)
                )
    assert _over(found, CONSTRUCTOR_LIMIT, WIDE_CONSTRUCTORS) == []


def test_folders_keep_few_modules() -> None:
    counts: dict[str, int] = defaultdict(int)
    for path in _modules():
        counts[path.parent.relative_to(PACKAGE).as_posix() or "tkchat"] += 1
    assert _over(counts, FOLDER_LIMIT, {}) == []


def test_the_budget_check_can_fail() -> None:
    assert _over({"a.py": 700, "b.py": 650, "c.py": 100}, 600, {"b.py": 660, "c.py": 620}) == [
        "a.py: 700 (budget 600)",
        "c.py: within its budget now (100 ≤ 600): take it off the list",
    ]
    assert _over({"b.py": 670}, 600, {"b.py": 660}) == ["b.py: 670 (budget 600, listed at 660)"]
