"""`python -m memrl_bench` and the `memrl-bench` command.

Importing Hydra takes half a second; a Ctrl-C meanwhile ends as quietly as one later.
"""

import sys


def main() -> None:
    try:
        from memrl_bench.cli.main import main as run_command
    except KeyboardInterrupt:
        print("memrl-bench: interrupted", file=sys.stderr)
        sys.exit(130)  # memrl_bench.core.interrupts.INTERRUPTED
    run_command()


if __name__ == "__main__":
    main()
