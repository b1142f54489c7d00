"""timm, the fourth library: its list, plan from `config.json` (the architecture and its family), exclusions, and the module its `run.py` carries."""
