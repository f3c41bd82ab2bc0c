"""Token budgets of injected memory (full_context, simplemem): how a prompt block is counted and filled.

Tokens are the harness's estimate (memrl_bench.llm.estimate_tokens: UTF-8 bytes / 3,
rounded up), not the run model's tokenizer: retrieval is pure and synchronous by the
method contract, while ChatModel.count_tokens is a server call. The estimate over-counts
English text and code (about 4 bytes a token), so a block within the budget by the
estimate is within it by any usual tokenizer too; the same count is used in the report.
"""

from __future__ import annotations

from memrl_bench.llm import ESTIMATE_BYTES_PER_TOKEN


def block_tokens(text: str) -> int:
    """Estimated tokens of a prompt block."""
    return -(-len(text.encode()) // ESTIMATE_BYTES_PER_TOKEN)


def fill(header: str, entries: list[str], budget_tokens: int, separator: str = "\n") -> list[int]:
    """Positions of `entries`, in the order given, that go into `header` + the entries joined by `separator`
    within `budget_tokens`: greedily, stopping at the first entry that does not fit (as SimpleMem-Cross's
    ContextInjector packs its context). No entry fits: nothing is injected (not even the header)."""
    budget_bytes = budget_tokens * ESTIMATE_BYTES_PER_TOKEN
    used = len(header.encode())
    chosen: list[int] = []
    for position, entry in enumerate(entries):
        cost = len(entry.encode()) + (len(separator.encode()) if chosen else 0)
        if used + cost > budget_bytes:
            break
        used += cost
        chosen.append(position)
    return chosen
