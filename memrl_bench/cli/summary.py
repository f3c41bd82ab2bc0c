"""The short results table printed on the terminal at the end of a run."""

from __future__ import annotations

from pathlib import Path


def _printable(text: str) -> str:
    """`text` with each character a terminal would act on (ESC, BEL, a carriage return ...) written as its escape: a model
    name holding ESC sequences reached the terminal raw through the run folder's name (57b)."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _pct(x: float | None) -> str:
    return "  -  " if x is None else f"{100 * x:5.1f}"


def summary_lines(name: str, metrics: dict) -> list[str]:
    """SR of the last epoch per phase, CSR and both forgetting rates of training, test SR per split."""
    labels = metrics.get("labels") or []
    lines = [_printable(name) + (f"  [{', '.join(labels)}]" if labels else "")]
    sr = metrics.get("success_rate", {})
    for phase, by_epoch in sr.items():
        if not by_epoch:
            continue
        last = list(by_epoch)[-1]
        extra = ""
        if phase in metrics.get("cumulative_success_rate", {}):
            csr = metrics["cumulative_success_rate"][phase]
            fr = metrics["forgetting"][phase]["forgetting_rate"]
            fr_last = list(fr.values())[-1] if fr else None
            extra = f"  CSR {_pct(list(csr.values())[-1])}  FR {_pct(fr_last)}"
        lines.append(f"  {phase:<26} epoch {last!s:>3}  SR {_pct(by_epoch[last])}{extra}")
    mem = metrics.get("memory_final", {})
    if mem.get("items"):
        lines.append(
            f"  memory: {mem['items']} items, never retrieved in any phase {_pct(mem['never_retrieved_any_phase_share'])}%, retrieval Gini "
            f"{mem['retrieval_gini']:.2f}"
        )
    return lines


def print_summary(name: str, metrics: dict, run_dir: Path | None = None) -> None:
    print("\n".join(summary_lines(name, metrics)))
    if run_dir is not None:
        print(f"  -> {_printable(str(run_dir))}")
