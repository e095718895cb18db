"""``linkscope watch``: run a command and say, from NVML counters, which links carried its traffic."""
from __future__ import annotations

import typer

from ..atomic import check_paths
from .common import parse_gpu_list, stderr_console, write_error


def _parse_gpus(text: str | None) -> tuple[int, ...] | None:
    """``--gpus``: NVML indices, or ``all`` (the default)."""
    if text is None or text.strip() == "all":
        return None
    return tuple(parse_gpu_list(text, "--gpus") or ())


def _render(result, console) -> None:
    from ..counters.verdict import format_bytes_decimal as fb

    def b(total) -> str:
        if total is None or total.bytes is None:
            return "unsupported" if total is None or not total.notes else "N/A"
        text = fb(total.bytes)
        if total.estimate:
            text = "~" + text
        return text if total.complete else text + "*"

    def peak(total) -> str:
        return "N/A" if total is None or total.peak_gb_per_s is None else f"{total.peak_gb_per_s:.1f}"

    from ..report.console import Column, print_fitted

    print_fitted(console, f"link counters ({result.samples} samples, {result.duration_s:.2f} s, every {result.interval_s * 1000:g} ms)",
                 [Column("GPU", key=True), Column("name", justify="left", wrap=True), Column("NVLink TX", "NVL TX"),
                  Column("NVLink RX", "NVL RX"), Column("peak TX (GB/s)", "pk TX"), Column("peak RX (GB/s)", "pk RX"),
                  Column("PCIe TX"), Column("PCIe RX"), Column("verdict", justify="left")],
                 [[str(r.info.nvml_index), r.info.name, b(r.nvlink_tx), b(r.nvlink_rx), peak(r.nvlink_tx),
                   peak(r.nvlink_rx), b(r.pcie_tx), b(r.pcie_rx), r.verdict.kind] for r in result.gpus])
    link_rows = []
    for r in result.gpus:
        for link, tx, rx in r.nvlink_links:
            if any(t is not None and (t.bytes is None or t.bytes >= 1_000_000) for t in (tx, rx)):
                link_rows.append([str(r.info.nvml_index), str(link), b(tx), b(rx), peak(tx), peak(rx)])
    if link_rows:
        print_fitted(console, "NVLinks that moved data",
                     [Column("GPU", key=True), Column("link", key=True), Column("TX"), Column("RX"),
                      Column("peak TX (GB/s)", "pk TX"), Column("peak RX (GB/s)", "pk RX")], link_rows)
    for r in result.gpus:
        console.print(f"GPU {r.info.nvml_index}: {r.verdict.message}", markup=False)
    if any(r.pcie_tx is not None and r.pcie_tx.estimate for r in result.gpus):
        console.print("~ PCIe bytes integrated from nvmlDeviceGetPcieThroughput samples (an estimate)")
    if any(t is not None and t.bytes is not None and not t.complete
           for r in result.gpus for t in (r.nvlink_tx, r.nvlink_rx, r.pcie_tx, r.pcie_rx)):
        console.print("* incomplete: some readings failed or a counter reset (see --json notes)")
    for note in result.notes:
        console.print(f"linkscope/watch: {note}", markup=False)
    from ..counters.linkerrors import GROWTH_ISSUE_KINDS, GrowthVerdict, judged_lines

    for issue in (result.link_errors or {}).get("issues", []):
        if issue.get("kind") not in GROWTH_ISSUE_KINDS:  # link down, narrow: the growth is judged below
            console.print(f"link errors: {issue['sentence']}", markup=False)
    judged = [GrowthVerdict.from_dict(j) for j in (result.link_errors or {}).get("judged", [])]
    for line in judged_lines(judged):
        console.print(line[0].lower() + line[1:], markup=False)
    if result.link_errors is not None and not result.link_issues and (result.link_errors.get("after") or {}).get("gpus"):
        console.print("link errors: no error counter grew during the command; no link down or below its width",
                      markup=False)
    if result.expect is not None:
        status = {True: "passed", False: "FAILED", None: "undecided"}[result.expect.passed]
        console.print(f"--expect {result.expect.expected}: {status}: {result.expect.reason}", markup=False)


def register(app: typer.Typer) -> None:
    @app.command(
        "watch",
        context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    )
    def watch(
        command: list[str] = typer.Argument(..., metavar="COMMAND", help="The command to run."),
        interval: str = typer.Option("100ms", "--interval", help="Sampling period (e.g. 100ms, 1s)."),
        gpus: str = typer.Option(None, "--gpus", help="NVML GPU indices to watch, e.g. 0,1, or all (the default)."),
        expect: str = typer.Option(None, "--expect", help="nvlink: exit 3 when the command succeeded but its traffic did not take NVLink."),
        json_path: str = typer.Option(None, "--json", help="Write totals, verdicts and the timeline as JSON to FILE."),
        csv_path: str = typer.Option(None, "--csv", help="Write the timeline as CSV to FILE."),
        settle: str = typer.Option("200ms", "--settle", help="Wait after the command before the last sample."),
        baseline: str = typer.Option("1s", "--baseline", help="Sample the idle counters this long before the command; "
                                     "each GPU's traffic is judged above that background (0: no baseline)."),
    ) -> None:
        """Run COMMAND while sampling NVLink (per link) and PCIe counters; say where its traffic went.

        The command's output passes through; its exit code is returned (127: command not found).
        The summary goes to stderr. With --expect nvlink, a command that exits 0 but whose traffic did
        not take NVLink makes watch exit 3.

        Example: linkscope watch --expect nvlink --json watch.json -- python bench/copy_once.py 0 1 1GiB
        """
        from ..atomic import write_json_atomic, write_text_atomic
        from ..counters.sources import open_counter_source
        from ..counters.watch import WatchOptions, resolve_command, run_watch, timeline_csv, to_dict
        from ..errors import UserError
        from ..units import parse_duration_s

        if json_path == "-" or csv_path == "-":
            raise UserError("watch cannot write --json/--csv to stdout: stdout belongs to the command",
                            hint="give a file name, e.g. --json watch.json")
        check_paths(outputs={"--json": json_path, "--csv": csv_path})
        interval_s = parse_duration_s(interval)
        settle_s = parse_duration_s(settle) if settle not in ("0", "0s", "0ms") else 0.0
        baseline_s = parse_duration_s(baseline) if baseline not in ("0", "0s", "0ms") else 0.0
        options = WatchOptions(command=tuple(resolve_command(command)), interval_s=interval_s,
                               gpus=_parse_gpus(gpus), expect=expect, settle_s=settle_s, baseline_s=baseline_s)
        source = open_counter_source()
        try:
            result = run_watch(options, source)
        finally:
            source.close()
        try:
            if json_path:
                write_json_atomic(json_path, to_dict(result))
            if csv_path:
                write_text_atomic(csv_path, timeline_csv(result))
        except OSError as exc:
            raise write_error(exc.filename or json_path or csv_path, exc) from exc
        _render(result, stderr_console())
        for path in (json_path, csv_path):
            if path:
                stderr_console().print(f"wrote {path}", markup=False)
        code = result.final_exit_code
        if code:
            raise typer.Exit(code)
