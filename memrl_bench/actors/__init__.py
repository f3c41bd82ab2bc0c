"""Layer 1, actors: who plays an episode. `base.py` is the interface (an `Actor` plays a
batch of jobs on a pool of envs); `llm_actors.py` the LLM actors (ReAct and single turn),
with the parser of what a model writes (`matching.py` maps a free action onto the env's
commands, `memrl_alfworld.py` builds MemRL's own ALFWorld prompt)."""
