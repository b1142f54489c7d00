"""The sweep with real processes: Ray, papermill, kernels and rank processes.

Most tests sweep a small notebook of their own (`probe_notebook`), which behaves like a run notebook (same
parameters, writes run.py and result.json into out_dir) and, by the name of the model, passes, crashes its kernel,
hangs with rank processes in their own sessions, or installs a package for its run. It logs each execution to a file,
so that a test can count how many times each model ran. The demo test at the end runs the real run notebook on the
real demo catalog.
"""
import contextlib, json, os, re, shutil, signal, subprocess, sys, textwrap, time, zipfile
from pathlib import Path

import nbformat, pandas as pd, psutil, pytest

from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.processes import tagged_processes
from neuron_support.sweep import Prefetch, SweepItem, journal_path, run_folder, summary, sweep, sync_cache

CPU = library_stack("transformers", "cpu", found={})
PAIR = pair_key(CPU)

PARAMETERS = """\
model_id = ""
revision = None
out_dir = "."
device = "cpu"
backend = "aot_eager"
cores = 1
time_limit = 60
log_file = ""
library_version = ""
library = "transformers"
library_versions = {}
hold = 0.0
wheel = ""
"""

BODY = """\
import importlib.util, json, os, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path
out = Path(out_dir); out.mkdir(parents=True, exist_ok=True)
with open(log_file, "a") as f: f.write(f"{model_id} start\\n")
(out / "run.py").write_text(f"# run.py of {model_id}\\nprint('hello')\\n")
kind = model_id.split("/")[1].split("-")[0]
notes = f"cores={os.environ.get('NEURON_RT_VISIBLE_CORES', '-')}"
(out / "cores.txt").write_text(f"{os.environ.get('NEURON_RT_VISIBLE_CORES', '-')} {time.time()}")
import psutil; (out / "worker.txt").write_text(str(psutil.Process().parent().parent().pid))  # kernel < the run's child < Ray's worker
if kind == "crash": os._exit(3)
if kind == "hang":
    ranks = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True) for _ in range(cores)]
    (out / "ranks.txt").write_text(" ".join(str(r.pid) for r in ranks))
    time.sleep(600)
in_child = subprocess.run([sys.executable, "-c", "import sweepleak"], capture_output=True).returncode == 0
notes += f" leaked={importlib.util.find_spec('sweepleak') is not None or in_child}"
if kind == "pkg":  # the run module's own mechanism: install into the run's site folder, PYTHONPATH for run.py only
    from neuron_support.script import install_packages
    os.environ.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(Path(wheel).parent))  # offline: the wheel's folder is the index
    pins, why = install_packages(["sweepleak"], out / "site")
    assert pins == ["sweepleak==0.1"], why
    os.environ["PYTHONPATH"] = os.pathsep.join([str((out / "site").resolve()), os.environ.get("PYTHONPATH", "")])
    sys.path.insert(0, str(out / "site")); import sweepleak
    assert subprocess.run([sys.executable, "-c", "import sweepleak"]).returncode == 0
time.sleep(hold)
row = {"model_id": model_id, "library": library, "neuron_cores": cores, "runner": "run_dense", "result": "PASS",
       "notes": notes, "library_version": library_versions.get(library, library_version), "transformers": library_version,
       "tested_at": datetime.now(timezone.utc).isoformat(), "run_py": (out / "run.py").read_text(),
       "device": device, "backend": backend}
tmp = out / ".result.json.tmp"; tmp.write_text(json.dumps(row)); os.replace(tmp, out / "result.json")
with open(log_file, "a") as f: f.write(f"{model_id} end\\n")
"""


@pytest.fixture(scope="module")
def probe_notebook(tmp_path_factory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell(BODY)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path_factory.mktemp("probe") / "probe.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def leak_wheel(tmp_path_factory) -> Path:
    "A real wheel of a one-module package, `sweepleak`, built by hand (pip installs it offline)."
    path = tmp_path_factory.mktemp("wheel") / "sweepleak-0.1-py3-none-any.whl"
    files = {"sweepleak/__init__.py": "X = 1\n",
             "sweepleak-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: sweepleak\nVersion: 0.1\n",
             "sweepleak-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items(): z.writestr(name, text)
        z.writestr("sweepleak-0.1.dist-info/RECORD", "".join(f"{n},,\n" for n in files) + "sweepleak-0.1.dist-info/RECORD,,\n")
    return path


def probe_params(log: Path, stack=CPU, **kw) -> dict:
    return {"log_file": str(log), "library_version": stack.library_version, **kw}


def executions(log: Path) -> dict:
    "How many times each model's notebook started and ended, from the probe's log."
    lines = log.read_text().split() if log.exists() else []
    pairs = list(zip(lines[::2], lines[1::2]))
    return {m: (sum(1 for x, e in pairs if x == m and e == "start"), sum(1 for x, e in pairs if x == m and e == "end"))
            for m in {m for m, _ in pairs}}


def results(out: Path, pair: str = PAIR) -> dict:
    t = read_table(table_path(out, pair))
    return dict(zip(t.model_id, t.result))


TRN2 = library_stack("transformers", found={"neuron": [4, 24 * 2**30]},
                    versions={**CPU.versions, "neuronx_cc": "2.21.33363.0", "torch_neuronx": "2.9.0.2.10.0"})
TRN2_PAIR = pair_key(TRN2)


def test_runs_crashes_and_hangs_each_get_their_row(tmp_path, probe_notebook, leak_wheel, monkeypatch):
    """A simulated trn2 host with 4 NeuronCores (Ray's `neuron_cores` declared by hand, FACTS.md): runs pass, crash,
    hang with 2 ranks, install a package; each gets its row, the hang is killed with its ranks, cores are contiguous."""
    items = [SweepItem(**d) for d in [
             {"model_id": "t/pass-1", "decision": "run", "cores": 1, "runner": "run_dense", "selection_rank": 1},
             {"model_id": "t/hang-1", "decision": "run", "cores": 2, "runner": "run_dense", "selection_rank": 2},
             {"model_id": "q/quantized", "decision": "excluded", "reason": "quantized: gptq", "exclusion": "quantized"},
             {"model_id": "t/skipped", "decision": "skip", "reason": "unchanged"},
             {"model_id": "t/crash-1", "decision": "run", "cores": 1, "runner": "run_dense"},
             {"model_id": "t/pkg-1", "decision": "run", "cores": 1, "runner": "run_dense"},
             {"model_id": "t/pass-2", "decision": "run", "cores": 4, "runner": "run_dense"},
             {"model_id": "t/pass-3", "decision": "run", "cores": 1, "runner": "run_dense"}]]
    log, out = tmp_path / "executions.log", tmp_path / "out"
    public, local, pushed = tmp_path / "public-cache", tmp_path / "neff-cache", tmp_path / "pushed-cache"
    (public / "neuronxcc-2.21.33363.0" / "MODULE_1").mkdir(parents=True)
    (public / "neuronxcc-2.21.33363.0" / "MODULE_1" / "model.neff").write_bytes(b"compiled graph")
    monkeypatch.setenv("TORCH_NEURONX_NEFF_CACHE_DIR", str(local))
    t0 = time.time()
    sweep(max_runs=5, out_dir=out, items=items, notebook=probe_notebook, stack=TRN2, time_limit=30, grace=5,
          parameters=probe_params(log, TRN2, wheel=str(leak_wheel)),
          cache_from=str(public / "neuronxcc-2.21.33363.0"), push_cache=str(pushed))
    took = time.time() - t0
    table = read_table(table_path(out, TRN2_PAIR)).set_index("model_id")
    # max_runs=5: the sixth "run" item is not reached; the skipped one gets nothing; the excluded one its row
    assert sorted(table.index) == ["q/quantized", "t/crash-1", "t/hang-1", "t/pass-1", "t/pass-2", "t/pkg-1"]
    assert table.loc["q/quantized", "result"] == "EXCLUDED" and table.loc["q/quantized", "exclusion"] == "quantized"
    assert pd.isna(table.loc["q/quantized", "neuron_cores"]) and pd.isna(table.loc["q/quantized", "runner"])
    for m in ("t/pass-1", "t/pkg-1", "t/pass-2"): assert table.loc[m, "result"] == "PASS", (m, table.loc[m, "notes"])
    # the crash: its kernel died; the hang: killed at the limit, with its ranks, and nothing else it started survives
    assert table.loc["t/crash-1", "result"] == "FAIL(other)" and "exit code" in table.loc["t/crash-1", "error"]
    assert table.loc["t/hang-1", "result"] == "FAIL(other)" and "time limit of 30 s" in table.loc["t/hang-1", "error"]
    assert table.loc["t/hang-1", "run_py"].startswith("# run.py of t/hang-1")
    ranks = [int(p) for p in (run_folder(out, TRN2_PAIR, "t/hang-1") / "ranks.txt").read_text().split()]
    assert len(ranks) == 2 and not [p for p in ranks if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    for m in ("t/pass-1", "t/hang-1", "t/crash-1", "t/pkg-1", "t/pass-2"):
        d = run_folder(out, TRN2_PAIR, m)
        assert tagged_processes(str(d.resolve())) == [], m
        # each run has its notebook, script and row
        assert {"run.ipynb", "run.py", "result.json"} <= {p.name for p in d.iterdir()}, m
        assert json.loads((d / "result.json").read_text())["model_id"] == m
    assert table.loc["t/pass-1", "selection_rank"] == 1 and pd.isna(table.loc["t/pass-2", "selection_rank"])
    # each run saw only its own cores, as one contiguous range of its plan's size
    seen = {}
    for m, k in (("t/pass-1", 1), ("t/hang-1", 2), ("t/crash-1", 1), ("t/pkg-1", 1), ("t/pass-2", 4)):
        d = run_folder(out, TRN2_PAIR, m)
        visible, start = (d / "cores.txt").read_text().split()
        first, _, last = visible.partition("-")
        cores = set(range(int(first), int(last or first) + 1))
        assert len(cores) == k and min(cores) % k == 0, (m, visible)  # contiguous, aligned on its size
        seen[m] = (cores, float(start), (d / "result.json").stat().st_mtime)
    for a in seen:
        for b in seen:
            if a < b and seen[a][1] < seen[b][2] and seen[b][1] < seen[a][2]:  # in flight at the same time
                assert not seen[a][0] & seen[b][0], (a, b, seen)
    # the package installed by t/pkg-1 for its run is not importable in the run after it (t/pass-2 needs all 4 cores)
    assert "leaked=False" in table.loc["t/pass-2", "notes"], table.loc["t/pass-2", "notes"]
    assert executions(log) == {m: (1, 1 if "pass" in m or "pkg" in m else 0)
                               for m in ("t/pass-1", "t/hang-1", "t/crash-1", "t/pkg-1", "t/pass-2")}
    assert json.loads(journal_path(out, TRN2_PAIR).read_text())["done"]
    # the compile cache came from the "public" cache before the runs, and went to the push destination after
    assert (local / "MODULE_1" / "model.neff").read_bytes() == b"compiled graph"
    assert (pushed / "MODULE_1" / "model.neff").read_bytes() == b"compiled graph"
    assert took < 300, took


def test_one_ray_for_a_sweep_over_two_libraries(tmp_path, probe_notebook):
    """Issue 28: a sweep over two libraries starts Ray once, not once per library; the second library's runs go to the
    Ray workers the first library's runs left idle; Ray is shut down once, as the sweep ends."""
    import io, ray
    items = [SweepItem(f"t/pass-{k}", "run", cores=1, runner="run_dense", selection_rank=k) for k in (1, 2)]
    log, out, said = tmp_path / "executions.log", tmp_path / "out", io.StringIO()
    stacks = [library_stack(name, "cpu", found={}) for name in ("transformers", "sentence-transformers")]   # each its own version
    sweep(out_dir=out, items=items, notebook=probe_notebook, stack=CPU, slots=2, time_limit=60, grace=5, prefetch_gb=0, stream=said,
          parameters=probe_params(log, library_versions={s.library: s.library_version for s in stacks}), libraries=[s.library for s in stacks])
    lines = said.getvalue().splitlines()
    assert sum("starting Ray" in l for l in lines) == 1, lines
    assert [l for l in lines if l.startswith("== ")] == ["== transformers: the Hub's transformers models",
                                                         "== sentence-transformers: the Hub's sentence-transformers models"], lines
    pairs = [pair_key(s) for s in stacks]
    workers = [{int((run_folder(out, pair, i.model_id) / "worker.txt").read_text()) for i in items} for pair in pairs]
    for pair in pairs: assert results(out, pair) == {"t/pass-1": "PASS", "t/pass-2": "PASS"}, pair
    assert workers[1] <= workers[0] and os.getpid() not in workers[0], workers   # the same processes: Ray's workers, kept
    assert not ray.is_initialized()


def test_prefetch_stays_within_its_budget(hub, tmp_path):
    "The weights of the runs to come are downloaded ahead, but no more bytes than the budget until a run ends."
    from conftest import ORG
    items = [SweepItem(f"{ORG}/tiny-llama-{c}", "run") for c in "ab"]
    cache = tmp_path / "hf-cache"
    one = Prefetch(items, endpoint=hub, cache_dir=cache).files(items[0])[1]
    assert one > 0
    fetch = Prefetch(items, budget_gb=1.5 * one / 2**30, endpoint=hub, cache_dir=cache)
    fetch.start()
    deadline = time.time() + 60
    while time.time() < deadline and not fetch.fetched: time.sleep(0.1)
    time.sleep(2)
    assert fetch.fetched == [items[0].model_id]  # the second would go over the budget
    fetch.release(items[0].model_id)
    fetch.join(60)
    assert fetch.fetched == [i.model_id for i in items]
    for i in items:
        assert list((cache / f"models--{i.model_id.replace('/', '--')}").glob("snapshots/*/model.safetensors")), i
    assert Prefetch(items, endpoint=hub, cache_dir=cache).files(items[1])[1] == 0  # nothing left to download


SWEEP_SCRIPT = """\
import json, sys
from neuron_support.sweep import SweepItem, sweep
from neuron_support.registry import library_stack
items = [SweepItem(f"t/pass-{{i}}", "run", selection_rank=i, cores=1) for i in range(1, 7)]
sweep(max_runs=4, out_dir=sys.argv[1], items=items, notebook={notebook!r}, slots=2, time_limit=60, parameters=json.loads(sys.argv[2]),
      stack=library_stack("transformers"))
"""


def run_sweep_process(script: Path, out: Path, log: Path, hold: float = 1.0, **popen):
    return subprocess.Popen([sys.executable, str(script), str(out), json.dumps(probe_params(log, hold=hold))],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def test_sigkill_and_restart_loses_nothing_and_reruns_nothing(tmp_path, probe_notebook):
    out, log = tmp_path / "out", tmp_path / "out.log"
    script = tmp_path / "sweep_probe.py"
    script.write_text(SWEEP_SCRIPT.format(notebook=str(probe_notebook)))
    # SIGKILL once two runs have finished and the third is in flight; then Ray's own processes go too (a lost host)
    proc = run_sweep_process(script, out, log, start_new_session=True)
    deadline = time.time() + 180
    while time.time() < deadline and len(list((out / "runs").glob("*/*/*/result.json"))) < 2: time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL); proc.wait()
    finished_before = {json.loads(p.read_text())["model_id"]: json.loads(p.read_text())["tested_at"]
                       for p in (out / "runs").glob("*/*/*/result.json")}
    time.sleep(2)
    with contextlib.suppress(ProcessLookupError): os.killpg(proc.pid, signal.SIGKILL)
    assert len(finished_before) >= 2, proc.stdout.read()
    assert not json.loads(journal_path(out, PAIR).read_text())["done"]
    # started again with the same command: it resumes, and finishes
    again = run_sweep_process(script, out, log)
    text, _ = again.communicate(timeout=300)
    assert again.returncode == 0, text
    assert "resuming the sweep" in text
    # the table an uninterrupted sweep of the same list writes (max_runs=4: the first four, all passing, by rank)
    got = read_table(table_path(out, PAIR))
    assert list(got.model_id) == [f"t/pass-{i}" for i in range(1, 5)]
    assert list(got.result) == ["PASS"] * 4
    assert list(got.selection_rank) == [1, 2, 3, 4]
    # the models that had finished did not run again: one start each, and their rows are from those runs
    runs = executions(log)
    for m, tested_at in finished_before.items():
        assert runs[m] == (1, 1), (m, runs)
        assert got.set_index("model_id").loc[m, "tested_at"] == pd.Timestamp(tested_at)
    assert all(e == 1 for _, e in runs.values()), runs  # every model finished exactly once
    for i in range(1, 7): assert tagged_processes(str(run_folder(out, PAIR, f"t/pass-{i}").resolve())) == []


# a kernel that exits before it answers, the first time it is started in the folder given (its marker), and starts as any
# kernel afterwards: what a busy host gave CI once (two kernels starting at once), here on purpose
DIES_ONCE = """import os, sys
if not os.path.exists(sys.argv[1]): open(sys.argv[1], "w").close(); sys.exit(3)
os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *sys.argv[2:]])
"""


def test_a_kernel_that_dies_at_its_start_is_no_verdict_and_runs_again(tmp_path, probe_notebook, monkeypatch):
    """A run whose notebook's kernel exited before it answered its first request ran nothing of the model: papermill's
    "Kernel died before replying to kernel_info" is a fault, not a FAIL(other); the sweep tries the run again and its row
    is the second try's. (A kernel that dies while a cell runs is the model's crash: the first test's `t/crash-1`.)"""
    import io
    kernel = tmp_path / "jupyter" / "kernels" / "dies-once"
    kernel.mkdir(parents=True)
    (tmp_path / "dies_once.py").write_text(DIES_ONCE)
    (kernel / "kernel.json").write_text(json.dumps({"argv": [sys.executable, str(tmp_path / "dies_once.py"), str(tmp_path / "died"), "-f", "{connection_file}"],
                                                    "display_name": "dies once", "language": "python"}))
    nb = nbformat.read(probe_notebook, as_version=4)
    nb.metadata["kernelspec"] = {"name": "dies-once", "display_name": "dies once", "language": "python"}
    nbformat.write(nb, notebook := tmp_path / "probe.ipynb")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))   # the sweep's Ray workers and their children inherit it
    log, out, said = tmp_path / "executions.log", tmp_path / "out", io.StringIO()
    sweep(max_runs=1, out_dir=out, items=[SweepItem("t/pass-1", "run", selection_rank=1, cores=1)], notebook=notebook, slots=1, time_limit=60,
          parameters=probe_params(log), stack=CPU, stream=said)
    assert (tmp_path / "died").is_file(), said.getvalue()   # the first kernel did die
    table = read_table(table_path(out, PAIR))
    assert table.result.tolist() == ["PASS"], (table[["result", "notes"]], said.getvalue())
    assert executions(log)["t/pass-1"] == (1, 1)   # the notebook's cells ran once: on the second try
    assert "kernel died at its start" in said.getvalue(), said.getvalue()

def test_ctrl_c_stops_the_runs_in_flight_without_a_verdict(tmp_path, probe_notebook):
    """Ctrl-C: the sweep kills its runs in flight, which is no crash of theirs: no row for them (each had a FAIL(other)
    row before, so that the restart counted it as finished; a run whose task Ray started during the stop too), and their
    logs say why. That a run without its row runs again on the restart is the SIGKILL test's."""
    out, log = tmp_path / "out", tmp_path / "out.log"
    script = tmp_path / "sweep_probe.py"
    script.write_text(SWEEP_SCRIPT.format(notebook=str(probe_notebook)))
    ctrl_c_on = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)   # as in a terminal's foreground: a suite started in the background
    proc = run_sweep_process(script, out, log, hold=600, start_new_session=True, preexec_fn=ctrl_c_on)   # (make test &) ignores SIGINT
    deadline = time.time() + 180   # the runs hold until stopped
    while time.time() < deadline and set(executions(log)) != {"t/pass-1", "t/pass-2"}: time.sleep(0.2)   # both slots' runs started
    flying = sorted(executions(log))
    os.killpg(proc.pid, signal.SIGINT)   # what a terminal's Ctrl-C sends
    text, _ = proc.communicate(timeout=120)
    assert flying == ["t/pass-1", "t/pass-2"] and "KeyboardInterrupt" in text, text
    assert not list(out.glob("runs/*/*/*/result.json")), [p.read_text()[:300] for p in out.glob("runs/*/*/*/result.json")]
    for m in flying:
        d = run_folder(out, PAIR, m)
        assert "its sweep stopped while it ran: no verdict" in (d / "sweep.log").read_text()
        assert tagged_processes(str(d.resolve())) == []
    assert not json.loads(journal_path(out, PAIR).read_text())["done"]   # what the restart resumes


def test_demo_sweep_part(hub, tmp_path, demo_sweep_of_libraries):
    """`neuron-support sweep --demo` as the README runs it, on a part of the demo's list (the session's one demo sweep,
    tests/conftest.py; the whole demo takes far longer than a test should here): the local Hub, the real selection, the real
    run notebook; each model of transformers' part gets its row. Then its rows are published to a Hub dataset and read back
    as the card says."""
    from conftest import DEMO_SWEEP_ONLY
    out, p = demo_sweep_of_libraries   # shared: read only (published from a copy)
    assert p.returncode == 0, p.stderr[-3000:]
    want = {"neuron-support-demo/tiny-llama": "PASS", "neuron-support-demo/tiny-no-weights": "EXCLUDED",
            "neuron-support-demo/giant-405b": "EXCLUDED", "neuron-support-demo/tiny-llama-gptq": "EXCLUDED",
            "neuron-support-demo/tiny-custom-code": "EXCLUDED", "neuron-support-demo/tiny-vit": "PASS",
            "neuron-support-demo/tiny-dinov2": "PASS", "neuron-support-demo/tiny-clip": "PASS", "neuron-support-demo/tiny-dpt-depth": "PASS", "neuron-support-demo/tiny-segformer-ade": "PASS",
            "neuron-support-demo/tiny-yolos": "PASS", "neuron-support-demo/tiny-vit-gpt2": "PASS", "neuron-support-demo/tiny-owlv2": "PASS",
            "neuron-support-demo/tiny-mask2former-ade": "PASS",   # the vision models: tests/test_vision.py
            "neuron-support-demo/tiny-whisper": "PASS", "neuron-support-demo/tiny-wav2vec2-ctc": "PASS", "neuron-support-demo/tiny-ast": "PASS",   # tests/test_audio.py
            "neuron-support-demo/tiny-patchtst": "PASS",   # tests/test_forecast.py
            "neuron-support-demo/tiny-qwen2.5-vl": "PASS", "neuron-support-demo/tiny-smolvlm": "PASS"}   # the vision-language models: tests/test_vision.py
    assert set(DEMO_SWEEP_ONLY["transformers"]) == set(want)
    table = read_table(table_path(out, PAIR)).set_index("model_id")
    minilm = "sentence-transformers/all-MiniLM-L6-v2"   # on transformers' list too, and named for sentence-transformers' part
    assert dict(table.result.drop(index=minilm)) == want, table[["result", "notes"]]
    assert dict(table.exclusion.dropna()) == {"neuron-support-demo/giant-405b": "too-large",
                                              "neuron-support-demo/tiny-no-weights": "no-weights",
                                              "neuron-support-demo/tiny-llama-gptq": "quantized",
                                              "neuron-support-demo/tiny-custom-code": "trust-remote-code"}
    for m, r in table.result.items():
        if r == "EXCLUDED": continue
        d = run_folder(out, PAIR, m)
        assert {"run.ipynb", "run.py", "result.json"} <= {f.name for f in d.iterdir()}, m
        assert json.loads((d / "result.json").read_text())["result"] == r
    assert table.loc["neuron-support-demo/tiny-llama", "notebook"].endswith("neuron-support-demo--tiny-llama/run.ipynb")
    # the real all-MiniLM-L6-v2 through transformers' encoder runner, on one core, held to the CPU's fp32 run
    m = table.loc[minilm]
    assert (m.runner, m.neuron_cores, m.result, m.check) == ("run_encoder", 1, "PASS", "cpu") and m.cpu_match[0] in "Y~", m
    assert len(m.revision) == 40
    # the summary and where things are
    assert "21 models: 17 PASS, 4 EXCLUDED" in p.stdout, p.stdout   # transformers' summary: the twenty above and all-MiniLM-L6-v2
    assert f"table:     {table_path(out, PAIR)}" in p.stdout
    # published (to the session's local Hub, which HF_ENDPOINT names) and read back with the card's own query
    from neuron_support.publish import publish, validate
    repo = "neuron-support-test/demo-sweep"
    mine = tmp_path / "out"   # transformers' table and runs alone: the other libraries' tables are theirs to publish
    table_path(mine, PAIR).parent.mkdir(parents=True)
    shutil.copy2(table_path(out, PAIR), table_path(mine, PAIR))
    shutil.copytree(out / "runs" / PAIR, mine / "runs" / PAIR)
    publish(mine, repo, token="hf_local_test_writer")
    back = pd.read_parquet(f"hf://datasets/{repo}/data")
    pd.testing.assert_frame_equal(validate(back).set_index("model_id").sort_index(), table.sort_index())
    query = ["neuronx_cc", "library", "library_version", "neuron_cores", "result"]
    pd.testing.assert_frame_equal(back[back.model_id == "neuron-support-demo/tiny-llama"][query].reset_index(drop=True),
                                  table.loc[["neuron-support-demo/tiny-llama"], query].reset_index(drop=True))


def test_a_sweep_renders_each_run_py_once(demo_sweep_of_libraries):
    """Issue 59: the selection renders a model's run.py to decide whether it runs, and the run's notebook shows, runs and
    keeps that same text. Counted across the sweep's processes (its driver, Ray's workers, each run's notebook kernel:
    tests/render_count): one render per run, where there were three (the selection's, the notebook's, `execute_plan`'s)."""
    from collections import Counter
    from conftest import RENDER_LOG, DEMO_SWEEP_ONLY
    out, p = demo_sweep_of_libraries
    assert p.returncode == 0, p.stderr[-3000:]
    renders = Counter(tuple(json.loads(line)) for line in (out.parent / RENDER_LOG).read_text().splitlines())
    rows = {f.parent: json.loads(f.read_text()) for f in out.glob("runs/*/*/*/result.json")}
    runs = {(r["library"], r["model_id"]): folder for folder, r in rows.items() if r["result"] != "EXCLUDED"}
    assert len(runs) >= 20 and {lib for lib, _ in runs} == set(DEMO_SWEEP_ONLY)   # every library's runs
    assert {run: renders[run] for run in runs} == dict.fromkeys(runs, 1), renders
    for folder, row in rows.items():   # the text that ran is the one kept
        if row["result"] != "EXCLUDED": assert row["run_py"] == (folder / "run.py").read_text(), row["model_id"]


@pytest.mark.skipif(not os.environ.get("NEURON_SUPPORT_FULL_DEMO"), reason="the whole demo sweep takes 30 min or more on 2 CPUs: set NEURON_SUPPORT_FULL_DEMO=1")
def test_whole_demo_sweep(tmp_path):
    "`neuron-support sweep --demo`: every model of the demo catalog gets its row, every run its files."
    from neuron_support.demo import build_demo
    catalog = json.loads((build_demo() / "catalog.json").read_text())
    out = tmp_path / "out"
    code = "import sys; from neuron_support.sweep import sweep; sweep(demo=True, out_dir=sys.argv[1], libraries=['transformers'])"
    p = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=4 * 3600)
    assert p.returncode == 0, p.stderr[-3000:]
    table = read_table(table_path(out, PAIR))
    assert set(table.model_id) == {m["id"] for m in catalog["models"] if m["library_name"] == "transformers"}
    for m in table[table.result != "EXCLUDED"].model_id:
        assert {"run.ipynb", "run.py", "result.json"} <= {f.name for f in run_folder(out, PAIR, m).iterdir()}, m


def mini_catalog(root: Path, ids: list) -> Path:
    "A catalog of a few demo models, their files hard-linked from the demo catalog: a Hub of its own to commit to."
    from neuron_support.demo import build_demo
    demo = build_demo()
    cat = json.loads((demo / "catalog.json").read_text())
    (root / "catalog.json").parent.mkdir(parents=True, exist_ok=True)
    (root / "catalog.json").write_text(json.dumps({"models": [m for m in cat["models"] if m["id"] in ids], "datasets": [],
                                                    "tokens": cat.get("tokens", {})}))
    for m in ids: shutil.copytree(demo / "models" / m, root / "models" / m, copy_function=os.link)
    return root


def sweep_process(out: Path, endpoint: str, home: Path, max_runs: int) -> subprocess.CompletedProcess:
    from neuron_support.hub import hub_env
    code = ("import sys; from neuron_support.sweep import sweep; from neuron_support.registry import library_stack; "
            f"sweep(max_runs={max_runs}, out_dir=sys.argv[1], slots=2, time_limit=900, stack=library_stack('transformers'))")
    p = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=1500,
                       env={**os.environ, **hub_env(endpoint, home)})
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def run_times(out: Path) -> dict:
    return {m: str(t) for m, t in read_table(table_path(out, PAIR)).set_index("model_id").tested_at.items()} if table_path(out, PAIR).exists() else {}


def test_each_sweep_goes_further_down_the_list(tmp_path):
    """Issue 14: a sweep skips the models whose script does what the script of their last run did. `--max-runs 2` twice
    runs 4 distinct models; a third sweep runs none and says so; a new revision of one model makes it, and only it, run."""
    from huggingface_hub import HfApi
    from neuron_support.hub import hub_server
    ids = ["neuron-support-demo/tiny-llama", "neuron-support-demo/tiny-bert-mlm", "neuron-support-demo/tiny-bert-ner",
           "neuron-support-demo/tiny-distilbert-sentiment", "neuron-support-demo/tiny-llama-gptq"]
    catalog, out, home = mini_catalog(tmp_path / "catalog", ids), tmp_path / "out", tmp_path / "hf"
    hub_log = tmp_path / "hub.log"
    with hub_log.open("w") as log, hub_server(catalog, stderr=log, verbose=True) as endpoint:
        runs = []
        for max_runs in (2, 2, 2):
            before = run_times(out)
            p = sweep_process(out, endpoint, home, max_runs)
            after = run_times(out)
            runs.append({m for m, t in after.items() if before.get(m) != t and m != "neuron-support-demo/tiny-llama-gptq"})
            if max_runs and not runs[1:]:   # the first sweep talks as it goes (issue 16): the list as it is built, then the runs
                lines = p.stderr.splitlines()
                first = next(i for i, l in enumerate(lines) if " list 1: " in l)
                assert "listing the most used models" in lines[first - 1] and "[1/2 to run]" in p.stderr, p.stderr[-2000:]
                assert first < next(i for i, l in enumerate(lines) if "starting Ray" in l)
                # the time left is known from the plans' sizes before any run has ended
                assert "ETA ?" not in p.stderr and re.search(r"PASS +\S+ in (?:\d+m)?\d+s  \[1/2, ETA \d+", p.stderr), p.stderr[-2000:]
        assert len(runs[0]) == 2 and len(runs[1]) == 2 and not runs[0] & runs[1], runs   # 4 distinct models
        assert runs[2] == set(), runs
        assert "4 models skipped: run.py unchanged" in p.stderr and "no model to run" in p.stderr, p.stderr[-2000:]
        # a new commit of one model: its revision changes, and so does its script
        changed = sorted(runs[0])[0]
        HfApi(endpoint=endpoint, token="hf_local_test_writer").upload_file(path_or_fileobj=b"a note", path_in_repo="NOTE.md",
                                                                          repo_id=changed)
        before = run_times(out)
        sweep_process(out, endpoint, home, 2)
        assert {m for m, t in run_times(out).items() if before.get(m) != t and m != "neuron-support-demo/tiny-llama-gptq"} == {changed}
    # issue 28, item 5: each sweep listed the Hub, so none of its 5 runs asked again whether it answers (core.settle_hub's HEAD)
    requests = hub_log.read_text().splitlines()
    assert any(l.startswith("hub: GET /api/models") for l in requests) and not [l for l in requests if l.startswith("hub: HEAD /api/models")], requests[:20]
    table = read_table(table_path(out, PAIR)).set_index("model_id")
    assert table.loc["neuron-support-demo/tiny-llama-gptq", "result"] == "EXCLUDED"
    assert (table.drop(index="neuron-support-demo/tiny-llama-gptq").result == "PASS").all(), table[["result", "notes"]]


def sweep_processes(cli_pid: int) -> list:
    "The live processes of the sweep a `neuron-support` process started (its tag begins with that process's pid)."
    found = []
    for p in psutil.process_iter(["pid"]):
        with contextlib.suppress(psutil.Error, OSError):
            if p.environ().get("NEURON_SUPPORT_SWEEP", "").startswith(f"{cli_pid}:"): found.append(p)
    return found


def test_a_killed_sweep_leaves_nothing_running_and_resumes(tmp_path):
    """Issue 15: `neuron-support sweep --demo` killed with SIGKILL while runs are in flight takes its sweep, its Hub, Ray
    and its runs with it; a second sweep on the folder meanwhile stops with one line; the same command then resumes,
    running only what had not finished."""
    out = tmp_path / "out"
    models = ["neuron-support-demo/tiny-bert-mlm", "neuron-support-demo/tiny-bert-ner", "neuron-support-demo/tiny-distilbert-sentiment"]
    cmd = ["neuron-support", "sweep", "--demo", "--out", str(out), "--only", *models]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 900
    while time.time() < deadline and not list(out.glob("runs/*/*/*/result.json")): time.sleep(1)
    finished = {f.parent.name: json.loads(f.read_text())["tested_at"] for f in out.glob("runs/*/*/*/result.json")}
    assert finished, first.stderr.read() if first.poll() is not None else "no run finished"
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 2 and f"another sweep (process" in second.stderr, second.stderr[-2000:]
    assert len([l for l in second.stderr.splitlines() if l.strip()]) == 1, second.stderr
    assert sweep_processes(first.pid)   # Ray, the Hub, the demo's sweep, a run: all tagged
    first.kill(); first.wait()
    for _ in range(60):
        if not (left := sweep_processes(first.pid)): break
        time.sleep(0.5)
    assert not left, [(p.pid, p.cmdline()[:3]) for p in left]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    assert again.returncode == 0, again.stderr[-3000:]
    table = read_table(table_path(out, PAIR)).set_index("model_id")
    failed = {m: (r.result, r.notes, (run_folder(out, PAIR, m) / "sweep.log").read_text()[-2000:]) for m, r in table.iterrows() if r.result != "PASS"}
    assert sorted(table.index) == sorted(models) and not failed, failed   # each failure whole: its notes and its sweep.log's end
    for name, t in finished.items():   # what had finished before the kill was not run again
        assert json.loads((next(out.glob(f"runs/*/*/{name}/result.json"))).read_text())["tested_at"] == t
