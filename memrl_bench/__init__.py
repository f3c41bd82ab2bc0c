"""memrl-bench: a fair, measured re-evaluation of memory methods for LLM agents."""

from pathlib import Path

__version__ = "0.1.0"

# The Hydra configs ship inside the package, so an installed wheel runs from any directory.
CONF_DIR = str(Path(__file__).resolve().parent / "conf")


def __getattr__(name: str):
    """memrl_bench.load_episodes and load_retrievals (memrl_bench.export), imported on first use: pandas is not loaded for every command."""
    if name in ("load_episodes", "load_retrievals"):
        from memrl_bench import export

        return getattr(export, name)
    raise AttributeError(f"module 'memrl_bench' has no attribute {name!r}")
