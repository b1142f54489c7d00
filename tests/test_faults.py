"""Faults are never verdicts: sweeps of the demo's models through a Hub that fails (a proxy answering 429 and 503), into a
cache on a small filesystem (tmpfs), and on a real two-node Ray cluster that loses a node while it runs a model. Each model
gets the verdict the session's quiet demo sweep gave it (tests/conftest.py: `demo_sweep_of_libraries`), or, where the fault
never ends, no row at all, said in the sweep's last lines."""
import contextlib, json, os, re, shutil, signal, subprocess, sys, tempfile, time
from pathlib import Path

import psutil, pytest

from conftest import free_port
from flaky_hub import FlakyHub, weight_file
from neuron_support.hub import hub_env
from neuron_support.publish import read_table, table_path
from neuron_support.stack import pair_key
from neuron_support.registry import library_stack
from neuron_support.sweep import journal_path, run_folder

PAIR = pair_key(library_stack("transformers", "cpu", found={}))
DEMO = "neuron-support-demo"
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"


def quiet_verdicts(demo_sweep_of_libraries, models) -> dict:
    "{model: (result, cpu_match)} of the session's quiet demo sweep (transformers' table)."
    out, p = demo_sweep_of_libraries
    assert p.returncode == 0, p.stderr[-2000:]
    t = read_table(table_path(out, PAIR)).set_index("model_id")
    return {m: (t.loc[m, "result"], t.loc[m, "cpu_match"]) for m in models}


def verdicts(out: Path) -> dict:
    t = read_table(table_path(out, PAIR)).set_index("model_id")
    return {m: (t.loc[m, "result"], t.loc[m, "cpu_match"]) for m in t.index}


def sweep(out: Path, models: list, env: dict, *extra, timeout=900) -> subprocess.CompletedProcess:
    "`neuron-support sweep --library transformers --device cpu --only MODELS` with `env` added, as a user runs it."
    cmd = [shutil.which("neuron-support"), "sweep", "--library", "transformers", "--device", "cpu", "--out", str(out), *extra, "--only", *models]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env={**os.environ, **env})


# A flaky Hub and a small disk ----------------------------------------------------------------------------------------

MODELS = [f"{DEMO}/tiny-llama", f"{DEMO}/tiny-smolvlm", f"{DEMO}/tiny-vit-gpt2", f"{DEMO}/tiny-vit"]   # 16, 16, 17 and 0.1 MB of weights
BROKEN = f"{DEMO}/tiny-clip"   # its weights are never served
CACHE_MB = 40   # each of them fits, not all together; SmolLM2's 270 MB never


def flaky_rule(method: str, path: str, n: int):
    """The Hub at scale: the first request of each weight file is rate-limited (429, Retry-After 1 s: huggingface_hub waits and
    asks again), every second download of one answers 503 (Retry-After 1 s: huggingface_hub raises it at once), and one
    model's weights always answer 503."""
    if not weight_file(path): return None
    if f"/{BROKEN}/" in path and method == "GET": return 503, {"Retry-After": "1"}
    if n == 1: return 429, {"Retry-After": "1"}
    if method == "GET" and n % 2 == 0: return 503, {"Retry-After": "1"}
    return None


@contextlib.contextmanager
def small_filesystem(path: Path, mb: int):
    "A tmpfs of `mb` MB mounted at `path`, unmounted at the end (root only: skipped where mount is refused)."
    path.mkdir(parents=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mb}m", "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try: yield path
    finally: subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_flaky_hub_and_a_small_disk_change_no_verdict(demo_hub, demo_sweep_of_libraries, tmp_path):
    """One sweep through a Hub that answers 429 and 503 (a proxy in front of the local Hub) into a weights cache on a tmpfs of
    40 MB: every model gets the verdict the quiet sweep gave it; the model whose weights the Hub never serves, and SmolLM2,
    larger than the disk's budget, get no row, and the sweep's last lines say why."""
    flaky = FlakyHub(demo_hub, flaky_rule)
    with flaky.serving() as endpoint, small_filesystem(tmp_path / "hub-cache", CACHE_MB) as cache:
        env = {**hub_env(endpoint, tmp_path / "hf-home"), "HF_HUB_CACHE": str(cache), "NEURON_SUPPORT_CACHE": str(tmp_path / "refs"),
               "NEURON_SUPPORT_DISK_BUDGET": ""}   # the default budget: the tmpfs's own free space (conftest sets 20 GiB)
        p = sweep(tmp_path / "out", MODELS + [BROKEN, SMOLLM2], env, "--slots", "2", "--retries", "1")
        held = sorted(d.name for d in cache.glob("models--*"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert flaky.failed[429] >= len(MODELS) and flaky.failed[503] >= len(MODELS), flaky.failed   # the faults were met
    assert verdicts(tmp_path / "out") == quiet_verdicts(demo_sweep_of_libraries, MODELS)   # every verdict as quiet; no row for the other two
    # the Hub's: tried again, then left to the next sweep
    assert f"{BROKEN}: not the model's failure: Hub 503" in p.stderr and "trying it again in" in p.stderr, p.stderr[-3000:]
    assert json.loads(journal_path(tmp_path / "out", PAIR).read_text())["done"] is False   # the next sweep runs the broken one alone
    notebook = (run_folder(tmp_path / "out", PAIR, BROKEN) / "run.ipynb").read_text()   # its notebook says what failed, as a reader sees it
    assert "not the model's failure" in notebook and "Hub 503" in notebook
    # the disk's: the budget kept by evicting, and SmolLM2 never downloaded
    logs = "".join((run_folder(tmp_path / "out", PAIR, m) / "sweep.log").read_text() for m in MODELS)
    assert "evicted from the weights cache to make room" in logs
    assert "models--HuggingFaceTB--SmolLM2-135M-Instruct" not in held, held
    assert re.search(rf"{SMOLLM2}: larger than the disk budget: its \d+\.\d MiB of weights are more than the \d+\.\d MiB", p.stderr), p.stderr[-3000:]
    assert p.stdout.strip().splitlines()[-1] == ("2 runs not finished: Hub 503 1, larger than the disk budget 1; the same command runs them "
                                                 "again; a larger --disk-budget lets a checkpoint larger than the budget run"), p.stdout[-1000:]


# A cluster that grows, and loses a node ----------------------------------------------------------------------------

NODES = [f"{DEMO}/tiny-vit", f"{DEMO}/tiny-dinov2", f"{DEMO}/tiny-llama", f"{DEMO}/tiny-clip"]


def raylet_of(ray_start: subprocess.Popen) -> psutil.Process:
    "The raylet a `ray start --block` started: the node's own process, whose death is the node's."
    for _ in range(300):
        found = [c for c in psutil.Process(ray_start.pid).children(recursive=True) if c.name() == "raylet"]
        if found: return found[0]
        time.sleep(0.1)
    raise AssertionError("no raylet")


def ray_nodes(ray: str, address: str, env: dict) -> int:
    "How many nodes `ray status` lists as active."
    return len(re.findall(r"\b1 node_[0-9a-f]+", subprocess.run([ray, "status", "--address", address], env=env, capture_output=True, text=True).stdout))


def synced(out: Path, hosts: int, wait: float = 60.0):
    """Wait until `hosts` hosts said in the runs' logs that they synced their compile cache: a run is said to start on a
    host when it takes its cores, before it syncs, and a node killed in between would never sync."""
    end = time.time() + wait
    while time.time() < end:
        logs = [run_folder(out, PAIR, m) / "sweep.log" for m in NODES]
        if sum(f.read_text().count("this host's compile cache synced from") for f in logs if f.exists()) >= hosts: return
        time.sleep(0.2)


@contextlib.contextmanager
def ray_cluster(tmp_path: Path, env: dict):
    """A real Ray cluster on this host, bound to 127.0.0.1, with token authentication (Ray's default since 2.60, a token of the
    test's own): `ray start --head`, and a node that joins it (`ray start --address`) each time `join()` is called, each
    offering one rank slot. Yields (its address, join); stopped by the processes it started, never `ray stop`."""
    port, ray = free_port(), shutil.which("ray")
    address, started = f"127.0.0.1:{port}", []
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")   # Ray's sockets live under it: an AF_UNIX path holds 107 bytes, a test's tmp_path is longer
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--resources", '{"cpu_slots": 1}', "--block", "--disable-usage-stats"]

    def start(*args, enough) -> subprocess.Popen:   # a `ray start`, once `ray status` counts `enough` nodes; its log said if it fails
        log = tmp_path / f"ray-{len(started)}.log"
        node = subprocess.Popen([ray, "start", *args, *common], env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
        started.append(node)
        for _ in range(300):
            if ray_nodes(ray, address, env) >= enough: return node
            if node.poll() is not None: break
            time.sleep(0.5)
        raise AssertionError(f"the node did not start: {log.read_text()[-2000:]}")

    try:
        start("--head", "--port", str(port), "--temp-dir", temp, "--include-dashboard=false", enough=1)
        yield address, lambda: start("--address", address, enough=len(started) + 1)
    finally:
        for p in reversed(started):   # each `ray start --block` stops its node's processes when it is stopped
            with contextlib.suppress(ProcessLookupError): os.killpg(p.pid, signal.SIGTERM)
        for p in started:
            try: p.wait(timeout=60)
            except subprocess.TimeoutExpired: os.killpg(p.pid, signal.SIGKILL); p.wait()
        shutil.rmtree(temp, ignore_errors=True)


def test_a_node_that_joins_gets_runs_and_a_lost_node_changes_no_verdict(demo_hub, demo_sweep_of_libraries, tmp_path):
    """The sweep starts on a one-node cluster; a second node joins while it runs (an autoscaler's), gets its core map, syncs
    the compile cache before its first run, and takes a run; its raylet is then killed under that run (the node lost)."""
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.urandom(16).hex()}
    shared = tmp_path / "shared-cache"; (shared / "graphs").mkdir(parents=True); (shared / "graphs" / "a-graph.bin").write_bytes(b"compiled")
    env = {**os.environ, **auth, **hub_env(demo_hub, tmp_path / "hf-home"), "NEURON_SUPPORT_CACHE": str(tmp_path / "refs"),
           "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    with ray_cluster(tmp_path, env) as (address, join):
        cmd = [shutil.which("neuron-support"), "sweep", "--library", "transformers", "--device", "cpu", "--out", str(tmp_path / "out"),
               "--address", address, "--cache-from", str(shared), "--push-cache", str(tmp_path / "pushed"), "--only", *NODES]
        sweeping = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        lines, worker, host = [], None, None
        while line := sweeping.stderr.readline():
            lines.append(line)
            if worker is None and " start " in line: worker = join()   # the first run is on the head: a node joins
            if m := re.search(r"host (\w+) joined the cluster", line): host = m[1]
            if host and f" of host {host}" in line:   # a run on the new node: its raylet dies under it, once the node synced its cache
                synced(tmp_path / "out", 2); raylet_of(worker).kill(); break
        stderr = "".join(lines) + sweeping.stderr.read()   # to its end, then what little it printed on stdout
        stdout = sweeping.stdout.read(); sweeping.wait(timeout=60)
    assert sweeping.returncode == 0, stderr[-3000:]
    assert verdicts(tmp_path / "out") == quiet_verdicts(demo_sweep_of_libraries, NODES), stderr[-3000:]   # every verdict as quiet
    assert "not the model's failure: node lost" in stderr and "trying it again" in stderr, stderr[-3000:]
    assert f"host {host} left the cluster" in stderr, stderr[-3000:]
    assert "(raylet)" not in stderr + stdout and "state-dump" not in stderr + stdout, stderr[-3000:]   # Ray's own logs stay out of the terminal
    assert "not finished" not in stdout
    logs = "".join((run_folder(tmp_path / "out", PAIR, m) / "sweep.log").read_text() for m in NODES)
    assert logs.count("this host's compile cache synced from") == 2, logs[-3000:]   # once on each host, before its first run
    assert (tmp_path / "inductor" / "graphs" / "a-graph.bin").read_bytes() == b"compiled" and "pushed to" in logs
