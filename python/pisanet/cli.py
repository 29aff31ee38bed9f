"""The `pisanet` command line: run, validate, schema, resources, bench, plot.

Exit codes: 0 success; 2 user error (invalid config, missing file, bad `--set`,
bad usage), reported as ONE line `error: <message>` on stderr; 1 when a run
broke an invariant (a simulator bug); 130 when interrupted (Ctrl-C), in which
case no result file is written.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

import pisanet
from pisanet import results
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


def _run_with_progress(config: ConfigLike, overrides: list[str], quiet: bool) -> pisanet.Result:
    # NOTE: no live display when stderr is not a terminal (CI logs, pipes).
    if quiet or not err_console.is_terminal:
        return pisanet.run(config, set=overrides)
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

        return pisanet.run(config, set=overrides, progress=on_progress)


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


def _summary_table(summary: dict[str, Any], title: str) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
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
        Path | None, typer.Option(help="Result directory [default: results/<config stem>].")
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
        result = _run_with_progress(config, overrides, quiet)
        directory = out if out is not None else Path("results") / config.stem
        written = results.write(directory, result)
    if not quiet:
        out_console.print(_summary_table(result.summary, f"pisanet run {config}"))
        out_console.print(f"wrote {', '.join(p.name for p in written)} to {directory}/")


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


@app.command()
def bench(
    scenario: Annotated[
        str, typer.Option(help="Benchmark scenario: fat_tree_k8 or fat_tree_k16.")
    ] = "fat_tree_k8",
    flows: Annotated[
        int | None, typer.Option(min=1, help="Number of flows [default: the scenario's].")
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
        result = _run_with_progress(text, overrides, quiet)
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
) -> None:
    """Plot a result directory: fct_cdf.png and slowdown_by_size.png."""
    from pisanet import plots

    with _user_errors():
        if not (directory / "flows.parquet").is_file():
            raise ConfigError(f"{directory}: no flows.parquet (not a result directory?)")
        written = plots.plot_dir(directory)
    print(f"wrote {', '.join(p.name for p in written)} to {directory}/")
