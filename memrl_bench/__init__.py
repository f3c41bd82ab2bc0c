"""memrl-bench: a fair, measured re-evaluation of memory methods for LLM agents."""

from pathlib import Path

__version__ = "0.1.0"

# The Hydra configs ship inside the package, so an installed wheel runs from any directory.
CONF_DIR = str(Path(__file__).resolve().parent / "conf")
