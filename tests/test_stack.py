"The `neuron-support` command as a user runs it: a real process, its output and its exit status."
import json, os, subprocess, sys


def neuron_support(*args, env=None):
    return subprocess.run(["neuron-support", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_stack_json_on_this_machine():
    out = neuron_support("stack", "--json")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    assert (rec["device"], rec["backend"], rec["process_group"]) == ("cpu", "aot_eager", "gloo")
    import torch, transformers
    assert rec["torch"] == torch.__version__ and rec["transformers"] == transformers.__version__
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
