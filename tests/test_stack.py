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
