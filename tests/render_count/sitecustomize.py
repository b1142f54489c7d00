"""Counts every rendering of a run.py, in whatever process it happens (the sweep's driver, a Ray worker, a run's
notebook kernel): a process that finds this folder on its PYTHONPATH and NEURON_SUPPORT_RENDER_LOG in its environment
appends `[library, model_id]` to that file at each call of `neuron_support.script.render_run_py`. The session's demo
sweep runs so (tests/conftest.py), and tests/test_sweep.py counts the lines."""
import importlib.abc, importlib.machinery, json, os, sys

LOG = os.environ.get("NEURON_SUPPORT_RENDER_LOG")


class CountRenders(importlib.abc.MetaPathFinder):
    "Finds `neuron_support.script` as Python would, and wraps its `render_run_py` once the module has run, before anyone imports the name."
    def find_spec(self, name, path, target=None):
        if name != "neuron_support.script": return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None: return None
        run_module = spec.loader.exec_module
        def exec_module(module):
            run_module(module)
            render = module.render_run_py
            def render_run_py(plan, stack, *args, **kwargs):
                with open(LOG, "a") as f: f.write(json.dumps([stack.library, plan.model_id]) + "\n")
                return render(plan, stack, *args, **kwargs)
            module.render_run_py = render_run_py
        spec.loader.exec_module = exec_module
        return spec


if LOG: sys.meta_path.insert(0, CountRenders())
