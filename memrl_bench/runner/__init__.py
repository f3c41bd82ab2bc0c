"""Layer 2, the runner: one run as data flows (`loop.py`) and its progress lines
(`progress.py`). It reaches methods, envs, protocols, actors, embedders and LLM kinds by
name through `core.registry`."""
