"""Time and size of the episode viewer and of the export for a results folder (BENCHMARKS.md, "Viewer and export").

    python scripts/bench_viewer.py RESULTS_DIR [--repeats 3]

Prints, as medians over the repeats of wall and CPU time: the time to load the folder for
the tables alone and as the report does (load_for_report: each run's viewer data made while
its records are in memory), to write the viewer (memrl_bench/report/viewer.py) from those
and from a load without them (each run folder read again, as before issue 18's fix), the
whole report with it, and memrl-bench-report's whole work both ways; the size of
the viewer's files and of the rest of the report; the time to export every episode
(memrl_bench.core.export) and every retrieval, and the size of the Parquet and CSV files.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from memrl_bench.core import export
from memrl_bench.report import load_for_report, report, write_report
from memrl_bench.report.load import load
from memrl_bench.report.viewer import write_viewer


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(times: list[tuple[float, float]], work, *args):
    """work(*args), its wall and CPU time appended to `times` (CPU: the machine may be shared)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = work(*args)
    times.append((time.perf_counter() - start, time.process_time() - cpu))
    return result


def read_twice(results_dir: Path, out: Path) -> Path:
    """The report as it was made before the viewer reused the loader's records: each run read again."""
    return write_report(load(results_dir), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench_viewer_"))
    stages = (
        "load, tables only",
        "load for the report",
        "viewer, runs read again",
        "viewer",
        "report with viewer",
        "whole, runs read twice",
        "whole, report()",
        "read runs (export)",
        "episodes table",
        "retrievals table",
        "write episodes",
        "write retrievals",
    )
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in stages}
    try:
        for repeat in range(args.repeats):
            plain = timed(times["load, tables only"], load, args.results_dir)
            results = timed(times["load for the report"], load_for_report, args.results_dir)
            timed(times["viewer, runs read again"], write_viewer, plain, scratch / f"viewer_again{repeat}")
            timed(times["viewer"], write_viewer, results, scratch / f"viewer{repeat}")
            report_dir = scratch / f"report{repeat}"
            timed(times["report with viewer"], write_report, results, report_dir)
            timed(times["whole, runs read twice"], read_twice, args.results_dir, scratch / f"twice{repeat}")
            timed(times["whole, report()"], report, args.results_dir, scratch / f"whole{repeat}")
            runs = timed(times["read runs (export)"], export.read_runs, args.results_dir)
            frames = {
                "episodes": timed(times["episodes table"], export.episodes_frame, runs),
                "retrievals": timed(times["retrievals table"], export.retrievals_frame, runs),
            }
            out = scratch / f"export{repeat}"
            for name, frame in frames.items():
                timed(times[f"write {name}"], export.write_tables, {name: frame}, out)
        n_runs, n_episodes = len(results.runs), sum(len(r.episodes) for _, r in runs)
        print(
            f"{args.results_dir}: {n_runs} runs, {n_episodes} logged episodes, {len(frames['retrievals'])} retrievals; medians of "
            f"{args.repeats}, wall / CPU"
        )
        for name, values in times.items():
            print(f"  {name:23s} {statistics.median(w for w, _ in values):8.2f} s / {statistics.median(c for _, c in values):6.2f} s")
        viewer_bytes = folder_bytes(report_dir / "episodes")
        print(
            f"  viewer files            {viewer_bytes / 1e6:8.2f} MB ({viewer_bytes / n_episodes:.0f} bytes per episode; largest run page "
            f"data {max(p.stat().st_size for p in (report_dir / 'episodes' / 'data').iterdir()) / 1e3:.0f} kB)"
        )
        print(f"  rest of the report      {(folder_bytes(report_dir) - viewer_bytes) / 1e6:8.2f} MB")
        print(f"  episode logs            {sum((Path(p) / 'episodes.jsonl').stat().st_size for p in results.runs['path']) / 1e6:8.2f} MB")
        for name in ("episodes.parquet", "episodes.csv", "retrievals.parquet", "retrievals.csv"):
            print(f"  {name:23s} {(out / name).stat().st_size / 1e6:8.2f} MB")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
