"""memrl-bench: a fair, measured re-evaluation of memory methods for LLM agents."""

__version__ = "0.1.0"
