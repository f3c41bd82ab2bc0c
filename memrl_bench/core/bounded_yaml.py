"""YAML read within bounds before anything builds it: a sweep's record (the report) and every config file Hydra loads
from a folder (the CLI). An alias bomb of a few lines expands to billions of nodes (OmegaConf copies each alias), and deep
nesting exhausts the stack of yaml's composer."""

from __future__ import annotations

from pathlib import Path

from memrl_bench.core.errors import InputError
from memrl_bench.core.runfolder import open_regular

MAX_YAML_BYTES = 1 << 20  # Hydra's multirun.yaml is a few KB; the largest config of conf/ is 3.4 KB
MAX_YAML_NODES = 100_000  # nodes once aliases are expanded: Hydra's record has hundreds, and writes no alias
MAX_YAML_DEPTH = 64


class YAMLTooLargeError(InputError, ValueError):
    """YAML past the bounds above: a file, an expansion of its aliases or a nesting no sweep record or config has."""


def bounded_yaml(path: Path) -> str:
    """The text of a regular file of YAML within the bounds above, checked on the parser's events (no node is built, no
    recursion): YAMLTooLargeError past them."""
    import yaml

    with open_regular(path) as f:
        data = f.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise YAMLTooLargeError(f"larger than {MAX_YAML_BYTES} bytes")
    text = data.decode()
    sizes: dict[str, int] = {}  # nodes each anchor stands for
    open_nodes = [[None, 0]]  # [anchor, nodes so far] of each open collection; the first is the whole stream
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            open_nodes.append([event.anchor, 1])
            if len(open_nodes) > MAX_YAML_DEPTH:
                raise YAMLTooLargeError(f"nested more than {MAX_YAML_DEPTH} deep (line {event.start_mark.line + 1})")
            continue
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            anchor, nodes = open_nodes.pop()
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            anchor, nodes = None, sizes.get(event.anchor, 1)
        else:
            continue
        if anchor is not None:
            sizes[anchor] = nodes
        open_nodes[-1][1] += nodes
        if open_nodes[-1][1] > MAX_YAML_NODES:
            raise YAMLTooLargeError(f"more than {MAX_YAML_NODES} nodes once its aliases are expanded (line {event.start_mark.line + 1})")
    return text
