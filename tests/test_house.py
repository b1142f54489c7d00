"""The shape of the package: run.py is whole modules, the modules import each other without a cycle and at their top,
and the processes that only plan, select or watch a run never start the stack (torch, a library's models)."""
import ast, importlib.util, json, subprocess, sys
from pathlib import Path

import pytest

from neuron_support.script import CARRIED_CORE, ENTRY, carried_modules, module_text

PACKAGE = Path(importlib.util.find_spec("neuron_support").origin).parent
MODULES = {p.stem: ast.parse(p.read_text()) for p in sorted(PACKAGE.glob("*.py")) if p.stem not in ("__init__", "_modidx")}


def own_imports(tree) -> list:  # [(module imported, the node)], the package's modules only
    "The package's modules a module imports, relative (`from .plan import`) or absolute (`from neuron_support.plan import`)."
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom):
            if n.level == 1 and n.module: found.append((n.module.split(".")[0], n))
            elif n.level == 1: found += [(a.name, n) for a in n.names]
            elif n.module and n.module.startswith("neuron_support."): found.append((n.module.split(".")[1], n))
            elif n.module == "neuron_support": found += [(a.name, n) for a in n.names]
        elif isinstance(n, ast.Import):
            found += [(a.name.split(".")[1], n) for a in n.names if a.name.startswith("neuron_support.")]
    return found


def cycle(graph: dict) -> list:
    "One import cycle of the graph as a list of modules, or [] when there is none."
    state, stack = {}, []
    def visit(m):
        state[m] = "open"; stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open": return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)): return found
        state[m] = "done"; stack.pop()
        return []
    for m in sorted(graph):
        if m not in state and (found := visit(m)): return found
    return []


def test_the_cycle_finder_finds_a_cycle():
    "The check below can fail: a graph with a cycle is caught, one without is not."
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle_between_the_package_modules():
    graph = {m: {name for name, _ in own_imports(t) if name in MODULES} - {m} for m, t in MODULES.items()}
    assert cycle(graph) == [], cycle(graph)


def test_project_imports_are_at_the_top_outside_the_cli():
    "Only the CLI defers the import of the package's modules (per subcommand); every other module imports them at its top."
    inner = [f"{m}.py:{n.lineno}" for m, t in MODULES.items() if m != "cli"
             for f in ast.walk(t) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for name, n in own_imports(f)]
    assert inner == []


def test_no_star_import_no_registration_by_mutation_no_fcntl():
    text = {m: (PACKAGE / f"{m}.py").read_text() for m in MODULES}
    assert [m for m, t in text.items() if "import *" in t] == []
    assert [m for m, t in text.items() if "RUNNERS.update(" in t or "CHECKS.update(" in t] == []
    assert [m for m, t in text.items() if "fcntl" in t] == []


@pytest.mark.parametrize("library, runner", [("transformers", None), ("transformers", "run_image_classifier"), ("transformers", "run_ctc"),
                                            ("transformers", "run_multimodal"), ("sentence-transformers", None), ("diffusers", None)])
def test_run_py_is_the_carried_modules_verbatim(library, runner):
    """run.py's code is each carried module's text in order, byte for byte, less only its imports of the other carried
    modules, and then the one line that hands the library's RUNNERS and CHECKS to main."""
    code, carried = module_text(library, runner), carried_modules(library, runner)
    assert carried[:len(CARRIED_CORE)] == CARRIED_CORE and len(carried) > len(CARRIED_CORE)   # the core, then the library's, in order
    assert code.endswith("\n" + ENTRY) and code.count(ENTRY) == 1
    at = 0
    for module in carried:
        text = Path(importlib.util.find_spec(module).origin).read_text()
        tree = ast.parse(text)
        left_out = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 1]
        assert all(n.module in {c.rsplit(".", 1)[-1] for c in carried} for n in left_out), module
        lines = text.splitlines(True)
        kept = "".join(l for i, l in enumerate(lines, 1) if not any(n.lineno <= i <= n.end_lineno for n in left_out))
        assert code.find(kept, at) == at, module   # in order, whole, where the previous one ended
        at += len(kept) + 1
    assert "from ." not in code and "import neuron_support" not in code and "from neuron_support" not in code


KERNEL_IMPORTS = """import sys
from neuron_support.stack import detect_stack, stack_record, format_record, pair_key, write_atomic, utc_now
from neuron_support.facts import MAX_CORES, MAX_NEW_TOKENS, PROMPT, JUDGE_MODEL
from neuron_support.plan import plan_record
from neuron_support.libraries import make_plan, library_stack
from neuron_support.script import render_run_py, execute_plan, make_row, DEFAULT_TIME_LIMIT, OUTCOME_FILE
import neuron_support.cli, neuron_support.select, neuron_support.sweep, neuron_support.publish, neuron_support.architectures
heavy = [m for m in sys.modules if m.split(".")[0] in ("torch", "sentence_transformers", "diffusers")
         or m.startswith("transformers.models.") or m == "transformers.modeling_utils"]
print(json.dumps(heavy))
"""


def test_planning_and_watching_never_start_the_stack():
    """The run notebook's imports (tests/../nbs/run.ipynb's first cell), the CLI, the selection, the sweep's driver and the
    architecture table's, in a fresh interpreter: no torch, no library's model code."""
    out = subprocess.run([sys.executable, "-c", "import json\n" + KERNEL_IMPORTS], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
    # the check can fail: importing the carried core does start torch
    out = subprocess.run([sys.executable, "-c", "import json\nimport neuron_support.core\n" + KERNEL_IMPORTS], capture_output=True, text=True, timeout=300)
    assert "torch" in json.loads(out.stdout.strip().splitlines()[-1])


def test_the_run_notebook_imports_what_the_test_imports():
    "The kernel's imports above are the run notebook's own (its first code cell with imports), so the check above is of the real thing."
    nb = json.loads((PACKAGE.parent / "nbs" / "run.ipynb").read_text())
    first = next("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code" and "from neuron_support" in "".join(c["source"]))
    for line in first.splitlines():
        if line.startswith("from neuron_support"): assert line in KERNEL_IMPORTS, line


def test_planning_a_model_never_starts_the_stack(demo_catalog):
    "`make_plan` of a checkpoint that fits one core (what the CLI and the kernel each do first) reads configs and headers only."
    folder = demo_catalog / "models" / "neuron-support-demo" / "tiny-llama"
    code = ("import json, sys\nfrom neuron_support.stack import detect_stack\nfrom neuron_support.libraries import make_plan\n"
            f"plan = make_plan({str(folder)!r}, stack=detect_stack('cpu', found={{}}))\n"
            "print(json.dumps([plan.runner, plan.cores, 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["run_dense", 1, False]


NOTEBOOKS = Path(__file__).resolve().parents[1] / "nbs"
DEFINITION = r"^(?:async )?def |^class "


def definitions_per_export_cell(notebook:Path)->list:
    "For each `#| export` cell of a notebook: how many top-level functions and classes it defines."
    import re
    cells = json.loads(notebook.read_text())["cells"]
    return [len(re.findall(DEFINITION, src, re.M)) for c in cells
            if c["cell_type"] == "code" and (src := "".join(c["source"])).lstrip().startswith("#| export")]


def test_the_definition_counter_counts():
    cell = {"cell_type": "code", "source": ["#| export\n", "def a(): pass\n", "@patch\n", "def b(self:A): pass\n", "class C:\n", "    def m(self): pass\n"]}
    nb = Path(__import__("tempfile").mkdtemp()) / "x.ipynb"
    nb.write_text(json.dumps({"cells": [cell, {**cell, "source": ["x = 1\n", "def notexported(): pass\n"]}]}))
    assert definitions_per_export_cell(nb) == [3]   # a method inside its class is the class's


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("[0-9]*.ipynb")))
def test_one_definition_per_export_cell(notebook):
    "Each export cell holds one function or class (issue 27, item 4): a step, then its prose, example and test."
    counts = definitions_per_export_cell(NOTEBOOKS / notebook)
    assert max(counts, default=0) <= 1, f"{notebook}: export cells with several definitions: {[n for n in counts if n > 1]}"


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("[0-9]*.ipynb")))
def test_every_notebook_is_committed_executed(notebook):
    "A reader sees what the examples print: every notebook with code has outputs."
    cells = json.loads((NOTEBOOKS / notebook).read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code" and not "".join(c["source"]).lstrip().startswith(("#| export", "#| hide", "#| default_exp"))]
    assert not code or any(c.get("outputs") for c in code), f"{notebook} is committed unexecuted"
