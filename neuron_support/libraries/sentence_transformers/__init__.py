"""sentence-transformers, the second library: its list, plan and exclusions, and the module its `run.py` carries."""
