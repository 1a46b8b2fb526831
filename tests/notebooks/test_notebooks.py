"""NB-6: every notebook runs top to bottom in the suite, and is stored without outputs.

Each notebook is executed by nbclient in a fresh ``python3`` kernel whose interpreter must be
this test's own (the venv's): the kernel spec names ``python``, which jupyter_client replaces by
the launching interpreter, and the first cell executed (added in memory, never saved) proves it.
A cell error, or a notebook's own ``assert`` against theory or the API's figures, fails the test.

The kernel runs in an empty temporary directory, outside the checkout: a notebook that looked
for ``sweeps/`` or ``scenarios/`` from its working directory would fail, so this proves that it
finds its inputs through the package (``harness.examples``). A second added cell hooks IPython's
PNG formatter, so every figure the notebook shows is audited by
``harness.runner.figures.check_figure`` (a title, axis labels, legends, n and the method of any
interval) before it is drawn.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL = sorted(NOTEBOOKS.glob("*.ipynb"))
REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "capacity.ipynb": ("NB-4",),
    "billing.ipynb": ("NB-5",),
    "planning.ipynb": ("NB-13", "NB-16"),
}
#: The least number of figures each notebook shows (every one of them is audited).
FIGURES = {"capacity.ipynb": 6, "billing.ipynb": 4, "planning.ipynb": 5}

AUDIT = """
%matplotlib inline
from IPython import get_ipython
from matplotlib.figure import Figure
from harness.runner.figures import check_figure

_audited = []
_png = get_ipython().display_formatter.formatters["image/png"]
_draw = _png.lookup_by_type(Figure)


def _audit(figure):
    titles = [ax.get_title() for ax in figure.axes] or [figure.get_suptitle()]
    _audited.append({"figure": titles[0], "problems": check_figure(figure)})
    return _draw(figure)


_png.for_type(Figure, _audit)
"""
REPORT = "import json; print(json.dumps(_audited))"


@pytest.mark.req("NB-6")
def test_every_notebook_exists() -> None:
    assert {p.name for p in ALL} >= set(REQUIREMENTS) == set(FIGURES)


@pytest.mark.req("NB-6")
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_notebooks_find_their_inputs_through_the_package(path: Path) -> None:
    source = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    assert "Path.cwd()" not in source and "parents" not in source
    assert "from harness.examples import example" in source


@pytest.mark.req("NB-6")
def test_the_kernel_spec_resolves_to_this_interpreter() -> None:
    spec = KernelSpecManager().get_kernel_spec("python3")
    command = spec.argv[0]
    assert (
        command in {"python", "python3"}
        or Path(command).resolve() == Path(sys.executable).resolve()
    )


@pytest.mark.req("NB-6")
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_notebooks_are_stored_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: strip outputs before committing"
            assert cell.execution_count is None


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.req("NB-6", *REQUIREMENTS[p.name]), id=p.name)
     for p in ALL if p.name in REQUIREMENTS]
    + [pytest.param(p, marks=pytest.mark.req("NB-6"), id=p.name)
       for p in ALL if p.name not in REQUIREMENTS],
)  # fmt: skip
def test_notebook_runs_top_to_bottom(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    probe = nbformat.v4.new_code_cell("import sys; print(sys.executable)")
    notebook.cells.insert(0, probe)
    notebook.cells.insert(1, nbformat.v4.new_code_cell(AUDIT))
    notebook.cells.append(nbformat.v4.new_code_cell(REPORT))
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    printed = "".join(o.get("text", "") for o in notebook.cells[0].outputs).strip()
    assert Path(printed).resolve() == Path(sys.executable).resolve()
    audited = json.loads("".join(o.get("text", "") for o in notebook.cells[-1].outputs))
    assert len(audited) >= FIGURES[path.name], audited
    assert [entry for entry in audited if entry["problems"]] == []
    assert list(tmp_path.iterdir()) == []  # the notebook wrote nothing where it ran
    notebook.cells = notebook.cells[2:-1]
    ran = [c for c in notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in ran)
    # The plots show inline, as they would in JupyterLab (no forced non-interactive backend).
    images = [o for c in ran for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name} drew no plot inline"
