"""Layer 3, commands: `memrl-bench` (`main.py`, a Hydra app), studies (`study.py`), the
contract checks by name (`contracts.py`), the Hydra adapter (`hydra_support.py`) and the
run's closing summary (`summary.py`). The report and the findings are their own folders of
this layer."""
