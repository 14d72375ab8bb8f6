"""The document model runs without Qt: importing and using it loads neither PySide6 nor pyqtgraph."""

import subprocess
import sys

SCRIPT = """
import sys
from gui.model import document, events, graph, registers, session, timeline, why
from gui.model.session import allocate_all
doc = document.Document(autosave=False)
doc.set_plans(allocate_all({"kind": "gemm", "m": 2, "n": 2, "k": 2, "dtype": "f32"}, doc.session.options), "dsatur")
timeline.plan_timeline(doc.plan, doc.analysis()).role_bars()
a = doc.analysis()
order = graph.value_order(a, doc.plan.assignment)
graph.interference_matrix(a.interference, order, graph.first_registers(a.names, doc.plan.assignment))
graph.neighbourhood(a.interference, order[0])
doc.why()
print(sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6") or m.startswith("gui.qt")))
"""


def test_the_model_imports_and_runs_without_qt():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
