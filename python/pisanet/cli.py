"""The `pisanet` command line: run, sweep, query, report, validate, schema, resources,
bench, plot, dbb-plan.

Exit codes: 0 success; 2 user error (invalid config, missing file, bad `--set` or
`--vary`, an unreachable scheduler, bad SQL, bad usage), reported as ONE line
`error: <message>` on stderr; 1 when a run broke an invariant (a simulator bug)
or a sweep point failed; 130 when interrupted (Ctrl-C): `run` then writes no
result file, `sweep` keeps every point finished so far. An unexpected error (a
pisanet bug) is one line too, exit 1; `--debug` anywhere on the command line
shows its traceback instead.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import pisanet
from pisanet import results, sweeps
from pisanet._core import ConfigError, InvariantError
from pisanet.config import ConfigLike, parse_set

EXIT_INVARIANT = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
# NOTE: recent typers vendor their own click; find its exception classes through
# typer's public BadParameter rather than importing click.
_ClickException: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)
_click_exceptions = sys.modules[_ClickException.__module__]
_Abort: type[BaseException] = typer.Abort
# A bare `pisanet` raises this (click >= 8.2); older clicks print the help themselves.
_NoArgsIsHelp: type[Exception] | tuple[()] = getattr(_click_exceptions, "NoArgsIsHelpError", ())


class _App(typer.Typer):
    """A Typer app whose usage errors are one line on stderr, like every other user error."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # `--debug` anywhere on the command line: a traceback for an unexpected error.
        debug = "--debug" in sys.argv[1:]
        if debug:
            sys.argv = [a for i, a in enumerate(sys.argv) if i == 0 or a != "--debug"]
        try:
            code = super().__call__(*args, standalone_mode=False, **kwargs)
        except _NoArgsIsHelp as e:
            ctx = getattr(e, "ctx", None)
            sys.stderr.write(ctx.get_help() + "\n" if ctx else f"{e}\n")
            sys.exit(EXIT_USAGE)
        except _ClickException as e:
            message = e.format_message()  # type: ignore[attr-defined]
            _fail(" ".join(message.split()), getattr(e, "exit_code", EXIT_USAGE))
        except _Abort:
            _fail("interrupted", EXIT_INTERRUPTED)
        except Exception as e:
            if debug:
                raise
            reason = " ".join(str(e).split()) or "no message"
            _fail(
                f"internal error: {type(e).__name__}: {reason} (a pisanet bug: please report "
                "it with the output of the same command and --debug)",
                EXIT_INVARIANT,
            )
        sys.exit(code if isinstance(code, int) else 0)


app = _App(
    name="pisanet",
    help="Packet-level data-center network simulator with programmable (PISA) switches.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out_console = Console()
err_console = Console(stderr=True)


def _print_version(value: bool) -> None:
    if value:
        from pisanet import __version__

        print(f"pisanet {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print pisanet's version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Packet-level data-center network simulator with programmable (PISA) switches."""


def _fail(message: str, code: int) -> NoReturn:
    # NOTE: plain write, not rich: messages quote config text such as `[topology]`.
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    sys.exit(code)


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turns the library's exceptions into one-line messages and exit codes."""
    try:
        yield
    except ConfigError as e:
        _fail(str(e), EXIT_USAGE)
    except InvariantError as e:
        _fail(str(e), EXIT_INVARIANT)
    except KeyboardInterrupt:
        _fail("interrupted; no results written", EXIT_INTERRUPTED)
    except OSError as e:
        _fail(f"{e.filename or ''}: {e.strerror or e}".lstrip(": "), EXIT_USAGE)


@contextmanager
def _warnings_to_stderr() -> Iterator[None]:
    """The library's RuntimeWarnings (a corrupt point left out, ...) as `warning:` lines."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            yield
        finally:
            for message in dict.fromkeys(str(w.message) for w in caught):
                err_console.print(
                    f"warning: {message}", markup=False, highlight=False, soft_wrap=True
                )


def _database() -> Any:
    # NOTE: imported when a command needs it: pandas and DuckDB cost about half a
    # second and 60 MB that `pisanet run` does not need (docs/performance.md).
    from pisanet import database

    return database


def _run_with_progress(
    config: ConfigLike, overrides: list[str], quiet: bool, out: Path | None = None
) -> tuple[pisanet.Result, list[Path]]:
    # NOTE: no live display when stderr is not a terminal (CI logs, pipes).
    if quiet or not err_console.is_terminal:
        return pisanet._run(config, out, set=overrides, progress=None, overrides={})
    bar = Progress(
        TextColumn("[bold]sim[/] {task.fields[sim_ms]:>10.3f} ms"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("flows {task.fields[done]}/{task.fields[flows]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    with bar:
        task = bar.add_task("run", total=None, sim_ms=0.0, done=0, flows="?")

        def on_progress(sim_time_s: float, completed: int, total: int) -> bool:
            bar.update(
                task,
                completed=completed,
                total=total or None,
                sim_ms=sim_time_s * 1e3,
                done=completed,
                flows=total,
            )
            return True

        return pisanet._run(config, out, set=overrides, progress=on_progress, overrides={})


def _get(summary: dict[str, Any], path: str) -> Any:
    value: Any = summary
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        text = f"{value:,.3f}" if abs(value) < 1e4 else f"{value:,.0f}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = str(value)
    return f"{text} {unit}".rstrip()


# (label, summary key, unit)
SUMMARY_ROWS = [
    ("flows total", "flows.total", ""),
    ("flows completed", "flows.completed", ""),
    ("FCT mean", "fct_us.mean", "us"),
    ("FCT p50", "fct_us.p50", "us"),
    ("FCT p99", "fct_us.p99", "us"),
    ("short flows FCT mean", "fct_us.short.mean", "us"),
    ("short flows FCT p99", "fct_us.short.p99", "us"),
    ("large flows FCT mean", "fct_us.large.mean", "us"),
    ("large flows FCT p99", "fct_us.large.p99", "us"),
    ("slowdown mean", "slowdown.mean", ""),
    ("slowdown p99", "slowdown.p99", ""),
    ("retransmissions", "retransmissions", "packets"),
    ("packets injected", "packets.injected", ""),
    ("packets delivered", "packets.delivered", ""),
    ("packets dropped", "packets.dropped", ""),
    ("packets ECN-marked", "packets.ecn_marked", ""),
    ("conservation ok", "conservation_ok", ""),
    ("simulated time", "sim_time_s", "s"),
    ("wall time", "wall_time_s", "s"),
    ("events/s", "events_per_s", ""),
    ("packet-hops/s", "packet_hops_per_s", ""),
    ("peak RSS", "peak_rss_mb", "MB"),
    ("digest", "digest", ""),
]


def _title(text: str) -> None:
    """A table's title on a line of its own: a long config path is not folded to the
    table's width (it may run past the terminal's edge, and stays one line)."""
    out_console.print(text, style="italic", markup=False, highlight=False, soft_wrap=True)


def _summary_table(summary: dict[str, Any]) -> Table:
    table = Table(show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    for label, key, unit in SUMMARY_ROWS:
        table.add_row(label, _fmt(_get(summary, key), unit))
    return table


ConfigArg = Annotated[Path, typer.Argument(help="Config file (TOML).", show_default=False)]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a config key: key.path=value (repeatable)."),
]


@app.command()
def run(
    config: ConfigArg,
    out: Annotated[
        str | None, typer.Option(help="Result directory (default: results/<config stem>).")
    ] = None,
    set: SetOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Validate and print the resolved config only.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress, no table.")] = False,
) -> None:
    """Run a simulation and write its result directory."""
    with _user_errors():
        overrides = parse_set(set or [])
        if dry_run:
            sys.stdout.write(pisanet.resolve(config, set=overrides))
            return
        directory = results.check_out(out if out is not None else Path("results") / config.stem)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)
            # The run writes the result directory as it goes (flows.parquet
            # streamed, the rest at the end).
            result, written = _run_with_progress(config, overrides, quiet, directory)
        for w in caught:
            err_console.print(
                f"warning: {w.message}", markup=False, highlight=False, soft_wrap=True
            )
    if not quiet:
        _title(f"pisanet run {config}")
        out_console.print(_summary_table(result.summary))
        out_console.print(
            f"wrote {', '.join(p.name for p in written)} to {directory}/",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    stopped = _stopped_early(result.summary)
    if stopped:
        # NOTE: on stdout, beside the table, and even with -q: these numbers
        # describe a partial run.
        print(stopped)


def _stopped_early(summary: dict[str, Any]) -> str | None:
    """A line saying the run stopped at its time limit with flows unfinished, else None."""
    if summary.get("stop_reason") != "time_limit":
        return None
    flows = summary.get("flows", {})
    total, done = flows.get("total", 0), flows.get("completed", 0)
    if done >= total:
        return None
    started = flows.get("started", total)
    not_started = f", {total - started:,} not started" if started < total else ""
    return (
        f"stopped early: run.max_sim_time_ms reached at {summary.get('sim_time_s', 0) * 1e3:g} ms "
        f"with {total - done:,} of {total:,} flows unfinished{not_started}; the FCT figures "
        "cover the finished flows only (flows.parquet has each flow's delivered bytes); "
        "raise run.max_sim_time_ms to finish them"
    )


@app.command()
def validate(
    config: ConfigArg,
    set: SetOpt = None,
    show: Annotated[bool, typer.Option("--show", help="Print the resolved config.")] = False,
) -> None:
    """Check a config; exit 2 with the offending key if it is invalid."""
    with _user_errors():
        resolved = pisanet.resolve(config, set=parse_set(set or []))
    if show:
        sys.stdout.write(resolved)
    else:
        print(f"ok: {config}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the config."""
    print(json.dumps(pisanet.schema(), indent=2))


@app.command()
def resources(scheme: Annotated[str, typer.Argument(help="Scheme, e.g. ecmp.")]) -> None:
    """Print the resource report of a scheme's switch programs."""
    with _user_errors():
        print(pisanet.resources(scheme))


@app.command("dbb-plan")
def dbb_plan(
    config: Annotated[str, typer.Argument(help="Config whose topology to plan on.")],
    src: Annotated[str, typer.Option("--src", help="Source switch name.")],
    sink: Annotated[str, typer.Option("--sink", help="Sink switch name.")],
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    set: SetOpt = None,
) -> None:
    """Print DBB's plan (seed 001, section III) of one source-sink switch pair."""
    with _user_errors():
        plan = pisanet.dbb_plan(config, src, sink, set=parse_set(set or []))
    if json_out:
        print(json.dumps(plan))
        return
    gbps = plan["max_flow_bps"] / 1e9
    out_console.print(f"DBB plan {src} -> {sink}: maximum flow z = {gbps:g} Gb/s")
    links = Table("stage", "link", "port", "b_ij (Gb/s)", "rho_ij", "N_ij", title="links")
    for link in plan["links"]:
        links.add_row(
            str(link["stage"]),
            f"{link['from']}->{link['to']}",
            str(link["port"]),
            f"{link['b_bps'] / 1e9:g}",
            str(link["rho"]),
            str(link["n"]),
        )
    out_console.print(links)
    for i, members in enumerate(plan["stages"], start=1):
        total = f", rho^{i} = {plan['stage_sums'][i - 1]}" if i <= len(plan["stage_sums"]) else ""
        out_console.print(f"stage {i}: {' '.join(members)}{total}")
    sums = ", ".join(str(x) for x in plan["stage_sums"])
    out_console.print(f"N = lcm({sums}) = {plan['N']}")
    quotas = " ".join(f"Q({q['switch']}) = {q['quota']}" for q in plan["quotas"])
    out_console.print(f"quotas: {quotas}")
    rules = Table("switch", "cycle", "counter value -> next switch (port)", title="rules")
    for rule in plan["rules"]:
        seq = ", ".join(
            f"{i}->{n} ({p})"
            for i, (n, p) in enumerate(zip(rule["next"], rule["ports"], strict=True))
        )
        rules.add_row(rule["switch"], str(rule["cycle"]), seq)
    out_console.print(rules)
    paths = Table("packet seq.", *[f"stage {i + 1}" for i in range(len(plan["stages"]))])
    paths.title = "PDC"
    for i, path in enumerate(plan["pdc_paths"], start=1):
        paths.add_row(str(i), *path)
    out_console.print(paths)


@app.command()
def bench(
    scenario: Annotated[
        str, typer.Option(help="Benchmark scenario: fat_tree_k8 or fat_tree_k16.")
    ] = "fat_tree_k8",
    flows: Annotated[
        int | None, typer.Option(min=1, help="Number of flows (default: the scenario's).")
    ] = None,
    set: SetOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress line.")] = False,
) -> None:
    """Run a standard benchmark scenario and report simulator speed and memory."""
    with _user_errors():
        text = pisanet.bench_config(scenario)
        overrides = parse_set(set or [])
        if flows is not None:
            overrides.append(f"workload.flows={flows}")
        start = time.perf_counter()
        result, _ = _run_with_progress(text, overrides, quiet)
        wall = time.perf_counter() - start
    s = result.summary
    table = Table(title=f"pisanet bench {scenario}", show_header=False, title_justify="left")
    table.add_column("metric", style="bold")
    table.add_column("value", justify="right")
    for label, value in [
        ("flows", _fmt(_get(s, "flows.total"))),
        ("events", _fmt(_get(s, "events"))),
        ("events/s", _fmt(_get(s, "events_per_s"))),
        ("packet-hops/s", _fmt(_get(s, "packet_hops_per_s"))),
        ("peak memory (RSS)", _fmt(_get(s, "peak_rss_mb"), "MB")),
        ("simulated time", _fmt(_get(s, "sim_time_s"), "s")),
        ("wall time (run)", _fmt(_get(s, "wall_time_s"), "s")),
        ("wall time (total)", _fmt(wall, "s")),
        ("digest", _fmt(_get(s, "digest"))),
    ]:
        table.add_row(label, value)
    out_console.print(table)


@app.command()
def plot(
    directory: Annotated[Path, typer.Argument(help="A result directory (pisanet run --out).")],
    flow: Annotated[
        int | None,
        typer.Option(
            "--flow",
            help="Plot this flow's packets over time and hops (flow_ID.png, from "
            "trace.parquet: run with [metrics.trace] flows = [ID]).",
        ),
    ] = None,
) -> None:
    """Plot a result directory: fct_cdf.png and slowdown_by_size.png, or one flow's packets."""
    from pisanet import plots

    with _user_errors():
        if not (directory / "flows.parquet").is_file():
            raise ConfigError(f"{directory}: no flows.parquet (not a result directory?)")
        if flow is not None:
            trace = directory / results.TRACE_FILE
            if not trace.is_file():
                raise ConfigError(
                    f"{directory}: no trace.parquet; run with [metrics.trace] flows = [{flow}]"
                )
            try:
                written = [plots.plot_flow(directory, flow)]
            except ValueError as e:
                raise ConfigError(
                    f"{trace}: {e}; run with [metrics.trace] flows = [{flow}]"
                ) from None
        else:
            try:
                written = plots.plot_dir(directory)
            except plots.NothingToPlot as e:
                raise ConfigError(str(e)) from None
    print(f"wrote {', '.join(p.name for p in written)} to {directory}/")


def _sweep_with_progress(quiet: bool, **kwargs: Any) -> sweeps.SweepResult:
    # NOTE: no live display when stderr is not a terminal (CI logs, pipes).
    if quiet or not err_console.is_terminal:
        return sweeps.sweep(**kwargs)
    bar = Progress(
        TextColumn("[bold]sweep[/]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} done"),
        TextColumn("running {task.fields[running]}"),
        TextColumn("failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    )
    with bar:
        task = bar.add_task("sweep", total=None, running=0, failed=0)

        def on_progress(p: sweeps.SweepProgress) -> None:
            bar.update(task, completed=p.done, total=p.total, running=p.running, failed=p.failed)

        return sweeps.sweep(progress=on_progress, **kwargs)


@app.command()
def sweep(
    config: ConfigArg,
    vary: Annotated[
        list[str] | None,
        typer.Option(
            "--vary", "-v", help="Vary a config key: KEY=V1,V2,... (repeatable; cross product)."
        ),
    ] = None,
    seeds: Annotated[
        int | None, typer.Option(min=1, help="Run every point with run.seed = 1..N.")
    ] = None,
    out: Annotated[
        str | None,
        typer.Option(help="Sweep directory (default: results/<config stem>-<sweep id>)."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, help="Local worker processes (default: one per core)."),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(help="Run on a Dask cluster: its scheduler address, tcp://HOST:PORT."),
    ] = None,
    connect_timeout: Annotated[
        float,
        typer.Option(min=0.1, help="Seconds to wait for the Dask scheduler and a worker."),
    ] = sweeps.DEFAULT_CONNECT_TIMEOUT_S,
    tls_ca_file: Annotated[
        str | None,
        typer.Option(help="Dask over TLS (tls://HOST:PORT): the CA certificate (PEM)."),
    ] = None,
    tls_cert: Annotated[
        str | None, typer.Option(help="Dask over TLS: this client's certificate (PEM).")
    ] = None,
    tls_key: Annotated[
        str | None, typer.Option(help="Dask over TLS: this client's private key (PEM).")
    ] = None,
    set: SetOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress, no table.")] = False,
) -> None:
    """Run a config at every point of --vary x --seeds; rerun to finish an interrupted sweep."""
    with _user_errors():
        if workers is not None and scheduler is not None:
            raise ConfigError("give --workers or --scheduler, not both")
        security = sweeps.tls_security(tls_ca_file, tls_cert, tls_key)
        if security is not None and scheduler is None:
            raise ConfigError(
                "--tls-ca-file, --tls-cert and --tls-key go with --scheduler tls://..."
            )
        try:
            result = _sweep_with_progress(
                quiet,
                config=config,
                vary=sweeps.parse_vary(vary or []),
                seeds=seeds,
                out=out,
                workers=workers,
                scheduler=scheduler,
                connect_timeout=connect_timeout,
                security=security,
                set=parse_set(set or []),
            )
        except sweeps.SweepInterrupted as e:
            _fail(f"{e}; rerun the same command to run the rest", EXIT_INTERRUPTED)
    total = result.total
    if not quiet:
        _title(f"pisanet sweep {config}")
        table = Table(show_header=False)
        table.add_column("metric", style="bold")
        table.add_column("value", justify="right")
        for label, value in [
            ("points", total),
            ("finished now", result.ran),
            ("finished before", result.skipped),
            ("failed", result.failed),
        ]:
            table.add_row(label, f"{value:,}")
        out_console.print(table)
        where = result.directory
        out_console.print(
            f"wrote {where}/{_database().DB_FILE} (runs table, flows view); "
            f'next: pisanet query {where} "SELECT ..." or pisanet report {where}',
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if result.failed:
        _fail(
            f"{result.failed} of {total} points failed (see the runs table, status = 'failed'); "
            "rerun the same command to retry them",
            EXIT_INVARIANT,
        )


@app.command()
def query(
    directory: Annotated[Path, typer.Argument(help="A sweep directory (pisanet sweep --out).")],
    sql: Annotated[
        str,
        typer.Argument(help="SQL over runs, flows, ports, queues, port_rates.", show_default=False),
    ],
    format: Annotated[
        str, typer.Option("--format", "-f", help="Output: table, csv or json (records).")
    ] = "table",
) -> None:
    """Run SQL against a sweep's results.duckdb (rebuilt first if missing or stale)."""
    with _user_errors():
        if format not in ("table", "csv", "json"):
            raise ConfigError(f"--format {format!r}: expected table, csv or json")
        with _warnings_to_stderr():
            frame = _database().query(directory, sql)
    if format == "csv":
        sys.stdout.write(frame.to_csv(index=False))
    elif format == "json":
        sys.stdout.write(frame.to_json(orient="records", indent=2) + "\n")
    else:
        table = Table(show_header=True, header_style="bold")
        for column in frame.columns:
            table.add_column(
                str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left"
            )
        for row in frame.itertuples(index=False):
            table.add_row(*(_fmt(v.item() if hasattr(v, "item") else v) for v in row))
        out_console.print(table)


@app.command()
def report(
    directory: Annotated[Path, typer.Argument(help="A sweep directory (pisanet sweep --out).")],
) -> None:
    """Write PNG plots and index.html comparing the schemes of a sweep into DIR/report/."""
    from pisanet import report as report_module

    with _user_errors(), _warnings_to_stderr():
        written = report_module.write(directory)
    print(f"wrote {len(written)} files to {written[0].parent}/ (open index.html)")
