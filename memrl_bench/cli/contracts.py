"""The contract checks, for a part of one's own: a memory method or an environment given by
its registered name (built in or installed), as `package.module:Class`, or as the class.

    from memrl_bench.cli.contracts import check_method
    check_method("last_k")                      # the method's defaults
    check_method("last_k", {"k": 5})
    check_method(MyMethod, llm=scripted_model)  # a method managing its memory with an LLM

    python -m memrl_bench.cli.contracts method last_k [key=value ...]
    python -m memrl_bench.cli.contracts env my_env [key=value ...]

A broken promise raises its own MethodCheckError (memrl_bench.methods.checker) or
EnvCheckError (memrl_bench.envs.checker), one line naming the part and the check. The
command takes the settings a run would (the part's YAML, found as `method=<name>` finds
it, then the key=value pairs; only the pairs for a `package.module:Class`), prints the
line and exits 1 for a broken promise, 2 for wrong input. It gives a method no LLM: one
that needs one is checked from Python with `llm=`, a model answering its prompts.
"""

from __future__ import annotations

import sys
from typing import Any

import yaml

from memrl_bench.core import registry
from memrl_bench.core.config import InputError
from memrl_bench.envs import checker as env_checker
from memrl_bench.envs.base import Env
from memrl_bench.methods import checker as method_checker


def check_method(method: str | type, settings: dict[str, Any] | None = None, llm: Any = None) -> None:
    """Check a memory method (a name, `package.module:Class`, or the class) with `settings`;
    `llm` serves a method that manages memory with one (a scripted model answering its prompts)."""
    cls = registry.get("method", method) if isinstance(method, str) else method
    method_checker.check_method(cls, settings, llm=llm)


def check_env(env: str | type | Env, settings: dict[str, Any] | None = None, seed: int = 0) -> None:
    """Check an environment (a name, `package.module:Class`, the class, or a built env) with `settings`."""
    if isinstance(env, Env):
        env_checker.check_env(env)
        return
    cls = registry.get("env", env) if isinstance(env, str) else env
    built = cls(dict(settings or {}), seed=seed)
    try:
        env_checker.check_env(built)
    finally:
        built.close()


def _pairs(pairs: list[str]) -> dict[str, Any]:
    """key=value pairs (dotted keys nest, values read as YAML) as settings."""
    settings: dict[str, Any] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            raise InputError(f"{pair!r}: settings are key=value")
        *parents, last = key.split(".")
        node = settings
        for parent in parents:
            node = node.setdefault(parent, {})
        node[last] = yaml.safe_load(value)
    return settings


def _seed(settings: dict[str, Any]) -> int:
    """The env's seed among its settings (0 if none): an integer, or one line naming it."""
    seed = settings.get("seed")
    if seed is None:
        return 0
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed={seed!r}: the seed is an integer")
    return seed


def settings_of(kind: str, name: str, pairs: list[str]) -> dict[str, Any]:
    """The `kind` group of the config a run composes with `kind=name` and the pairs (without its name;
    an env's also without its roles); only the pairs for a name without a YAML."""
    # Hydra loads here, not for check_method from Python
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from memrl_bench.cli.hydra_support import compose, composing

    if ":" not in name:
        try:
            with composing():
                group = OmegaConf.to_container(compose([f"{kind}={name}", *(f"{kind}.{pair}" for pair in pairs)])[kind], resolve=True)
            return {k: v for k, v in group.items() if k not in ("name", "roles")}
        except MissingConfigException:
            pass  # no conf/<kind>/<name>.yaml: the part's defaults and the pairs
        except (HydraException, OmegaConfBaseException) as err:
            raise InputError(" ".join(line.strip() for line in str(err).splitlines() if line.strip())) from None
    return _pairs(pairs)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[0] not in ("method", "env"):
        print("usage: python -m memrl_bench.cli.contracts method|env NAME [key=value ...]", file=sys.stderr)
        sys.exit(2)
    kind, name, pairs = args[0], args[1], args[2:]
    try:
        settings = settings_of(kind, name, pairs)
        if kind == "method":
            check_method(name, settings)
            passed = [check.__name__ for check in method_checker.CHECKS]
        else:
            check_env(name, settings, seed=_seed(settings))
            passed = [check.__name__ for check in env_checker.CHECKS]
    except (method_checker.MethodCheckError, env_checker.EnvCheckError) as err:
        print(f"{kind} {name} breaks its contract: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    print(f"{kind} {name} keeps its contract ({', '.join(passed)})")


if __name__ == "__main__":
    main()
