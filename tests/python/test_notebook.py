"""The example notebooks in docs/examples run as written (nbclient executes
them with the installed package), so they never go stale."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.ipynb")), ids=lambda p: p.name)
def test_example_notebook_runs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    # NOTE: raises CellExecutionError, with the cell and its traceback, if any cell fails.
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": EXAMPLES}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert any(o.get("output_type") == "display_data" for o in outputs), "the plot"


def test_there_is_an_example_notebook() -> None:
    assert (EXAMPLES / "sweep.ipynb").is_file()
