"""diffusers, the third library: its list, plan from `model_index.json`, exclusions, and the module its `run.py` carries."""
