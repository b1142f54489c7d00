"The `neuron-support` command as a user runs it: a real process, its output and its exit status."
import importlib.metadata, json, os, subprocess, sys

import pytest


def neuron_support(*args, env=None):
    return subprocess.run(["neuron-support", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_stack_json_on_this_machine():
    out = neuron_support("stack", "--json")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert (rec["device"], rec["backend"], rec["process_group"]) == ("cpu", "aot_eager", "gloo")
    import torch, transformers
    assert rec["torch"] == importlib.metadata.version("torch") and rec["transformers"] == transformers.__version__   # the distribution's version (no local tag, "+cu130")
    assert rec["neuronx_cc"] == rec["torch_neuronx"] == rec["nki"] == rec["neuron_driver"] == ""
    assert rec["compiler_key"] == f"cpu-aot_eager-torch{torch.__version__.split('+')[0]}"
    assert rec["library_key"] == f"transformers-{transformers.__version__}"


def test_backend_override_changes_the_key():
    rec = json.loads(neuron_support("stack", "--json", "--device", "cpu", "--backend", "inductor").stdout)
    assert rec["compiler_key"].startswith("cpu-inductor-torch")


def test_configured_cpu_capacity():
    rec = json.loads(neuron_support("stack", "--json", env={"NEURON_SUPPORT_CORE_GB": "0.5"}).stdout)
    assert rec["core_gb"] == 0.5


def test_bad_input_is_one_line_and_nonzero():
    for args in (["stack", "--device", "neuron"], ["stack", "--backend", "neuron"], ["stack", "--backend", "tvm"]):
        out = neuron_support(*args)
        assert out.returncode == 2
        assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith("neuron-support: error:"), out.stderr
        assert "Traceback" not in out.stderr


def test_help_lists_the_commands():
    out = subprocess.run(["neuron-support", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "stack" in out.stdout


def fake_torch_neuronx(root, version, body):
    "A torch-neuronx on PYTHONPATH: its metadata and a module with `body`; the real torch stays as it is."
    (root / "torch_neuronx").mkdir(parents=True)
    (root / "torch_neuronx" / "__init__.py").write_text(body)
    (root / f"torch_neuronx-{version}.dist-info").mkdir()
    (root / f"torch_neuronx-{version}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch-neuronx\nVersion: {version}\n")
    return {"PYTHONPATH": str(root)}


def test_a_broken_neuron_stack_stops_the_command(tmp_path):
    "Issue 15: where torch-neuronx is installed but the probe fails, `stack` names the cause and stops; --device cpu still works."
    env = fake_torch_neuronx(tmp_path / "broken", "2.13.0", "raise RuntimeError('Neuron driver not loaded')\n")
    out = neuron_support("stack", env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "the Neuron probe failed: RuntimeError: Neuron driver not loaded" in out.stderr and "--device cpu" in out.stderr
    cpu = neuron_support("stack", "--json", "--device", "cpu", env=env)
    assert cpu.returncode == 0 and json.loads(cpu.stdout)["device"] == "cpu", cpu.stderr


def test_the_xla_torch_neuronx_is_said_plainly(tmp_path):
    env = fake_torch_neuronx(tmp_path / "xla", "2.9.0.2.10.0", "")   # imports, and gives torch no `neuron`
    out = neuron_support("stack", env=env)
    assert out.returncode == 2 and "torch-neuronx 2.9.0.2.10.0 is the XLA-based one" in out.stderr, out.stderr
    assert neuron_support("stack", "--device", "cpu", env=env).returncode == 0


BAD_INPUTS = [
    (["run", "/etc/hostname"], "is a file"),
    (["run", "org/tiny llama"], "neither a local folder nor a Hub model id"),
    (["run", "org/../x"], "neither a local folder nor a Hub model id"),
    (["publish", "--repo", "../etc", "--dry-run"], "not a repo id"),
    (["run", "org/x", "--cores", "3"], "--cores must be a power of two"),
    (["run", "org/x", "--cores", "-1"], "--cores must be a power of two"),
    (["run", "org/x", "--cores", "32"], "--cores must be a power of two"),
    (["run", "org/x", "--time-limit", "-5"], "--time-limit must be positive"),
    (["run", "org/x", "--core-gb", "0"], "--core-gb must be positive"),
    (["sweep", "--out", "FILE"], "is a file"),
    (["run", "org/x", "--out", "FILE"], "is a file"),
    (["hub", "serve", "--port", "BUSY"], "is in use"),
    (["app", "--data", "DATA", "--port", "BUSY"], "is in use"),
]


@pytest.mark.parametrize("args, says", BAD_INPUTS, ids=[" ".join(a) for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, says):
    "Issue 15: each user mistake is one line on stderr, exit 2, and no row anywhere."
    import socket
    (tmp_path / "FILE").write_text("not a folder")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0)); busy.listen()
        args = [{"FILE": str(tmp_path / "FILE"), "BUSY": str(busy.getsockname()[1]), "DATA": str(tmp_path)}.get(a, a) for a in args]
        out = subprocess.run(["neuron-support", *args], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                             env={**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"})   # nothing listens there: no Hub is needed to refuse
    assert out.returncode == 2 and says in out.stderr and out.stderr.count("\n") == 1, out.stderr[-2000:]
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("result.json"))


def test_a_gated_model_without_a_token_says_so(hub, tmp_path):
    from conftest import ORG
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    out = subprocess.run(["neuron-support", "run", f"{ORG}/gated-llama", "--out", str(tmp_path)], capture_output=True, text=True,
                         timeout=300, env={**env, "HF_HOME": str(tmp_path / "hf")})
    assert out.returncode == 2 and "is gated: set HF_TOKEN" in out.stderr and out.stderr.count("\n") == 1, out.stderr
