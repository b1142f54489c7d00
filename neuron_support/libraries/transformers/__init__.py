"""transformers, the first library: its list, plan and exclusions, its loading, its checks, each module its `run.py` carries, and its tiny-checkpoint builder."""
