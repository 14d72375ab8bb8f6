"""QtWorkloadPanel: one form per workload (GEMM: M, N, K in 2..16; MHA: the 1,512-config grid), options, a picker.

Changing anything emits ``workloadRequested(workload, options)``; the window
rebuilds the program and re-runs the allocators in the background.

Invariant: a workload's fields live in its own form class, registered in
:data:`FORMS` under the workload's name; the panel asks the checked form
for the workload and hands a workload to the form registered under its
kind, so it never asks which workload it shows. Labels and the picker's
parsing come from the workload registry (:mod:`engine.workloads`).
"""

from __future__ import annotations

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QCompleter, QDoubleSpinBox, QFormLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QRadioButton, QSpinBox, QVBoxLayout, QWidget)

from engine.model.arch import ARCHS, DEFAULT_ARCH
from engine.base.errors import RegtuneError
from engine.workloads import (WORKLOADS, all_config_labels, check_workload, config_label,  # noqa: F401 (re-exported)
                              parse_config_label)
from engine.workloads.gemm import SCHEDULES, Gemm, tiles
from engine.workloads.mha import BATCHES, GROUPS, HEAD_DIMS, HEADS, SEQ_LEN, STRATEGIES


def _combo(values, current) -> QComboBox:
    c = QComboBox()
    c.addItems([str(v) for v in values])
    c.setCurrentText(str(current))
    return c


def _spin(lo, hi, value) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    s.setValue(value)
    s.setKeyboardTracking(False)
    return s


class QtGemmForm(QGroupBox):
    """GEMM's fields: M, N, K, the tile (the divisors of M and N) and the schedule."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__("GEMM  C = alpha A B + beta C (batched)", parent)
        self.m, self.n, self.k = (_spin(2, 16, 8) for _ in range(3))
        form = QFormLayout(self)
        form.addRow("M", self.m)
        form.addRow("N", self.n)
        form.addRow("K", self.k)
        self.tile = QComboBox()
        # a long entry must not widen the panel past its dock
        self.tile.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.tile.setMinimumContentsLength(8)
        self.schedule = _combo(SCHEDULES, "k-outer")
        form.addRow("tile", self.tile)
        form.addRow("schedule", self.schedule)
        for w in (self.m, self.n, self.k):
            w.editingFinished.connect(self.changed)
        for w in (self.tile, self.schedule):
            w.activated.connect(self.changed)
        for w in (self.m, self.n):
            w.valueChanged.connect(self._fill_tiles)
        self._fill_tiles()

    def _fill_tiles(self, *_):
        current = self.tile.currentText()
        self.tile.blockSignals(True)
        self.tile.clear()
        self.tile.addItem("auto")           # the words would be cut in the dock: they are the tooltip
        self.tile.setItemData(0, "auto: the largest tile within the headroom target", Qt.ItemDataRole.ToolTipRole)
        self.tile.addItems([f"{a}x{b}" for a, b in tiles(Gemm(self.m.value(), self.n.value(), 2))])
        if self.tile.findText(current) >= 0:
            self.tile.setCurrentText(current)
        self.tile.blockSignals(False)

    def workload(self) -> dict:
        return Gemm(self.m.value(), self.n.value(), self.k.value()).as_dict()

    def options(self) -> dict:
        tile = self.tile.currentText()
        return {"schedule": self.schedule.currentText(),
                "tile": [int(x) for x in tile.split("x")] if "x" in tile and "auto" not in tile else None}

    def set_state(self, workload: dict, options: dict) -> None:
        self.m.setValue(workload["m"])
        self.n.setValue(workload["n"])
        self.k.setValue(workload["k"])
        self._fill_tiles()
        tile = options.get("tile")
        self.tile.setCurrentText(f"{tile[0]}x{tile[1]}" if tile else self.tile.itemText(0))
        self.schedule.setCurrentText(options.get("schedule", "k-outer"))


class QtMhaForm(QGroupBox):
    """MHA's fields: heads, batch, head_dim, groups (the seed's grid) and the strategies."""

    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(f"MHA (seq_len {SEQ_LEN})", parent)
        self.heads, self.batch = _combo(HEADS, 32), _combo(BATCHES, 64)
        self.head_dim, self.groups = _combo(HEAD_DIMS, 64), _combo(GROUPS, 4)
        form = QFormLayout(self)
        for label, w in (("heads", self.heads), ("batch", self.batch), ("head_dim", self.head_dim),
                         ("groups", self.groups)):
            form.addRow(label, w)
            w.activated.connect(self.changed)
        form.addRow("seq_len", QLabel(str(SEQ_LEN)))
        self.strategies = {s: QCheckBox(s) for s in STRATEGIES}
        for box in self.strategies.values():
            form.addRow(box)
            box.toggled.connect(self.changed)

    def workload(self) -> dict:
        return {"kind": "mha", "heads": int(self.heads.currentText()), "batch": int(self.batch.currentText()),
                "head_dim": int(self.head_dim.currentText()), "groups": int(self.groups.currentText()),
                "seq_len": SEQ_LEN, "dtype": "f32"}

    def options(self) -> dict:
        return {"strategies": [s for s, box in self.strategies.items() if box.isChecked()], "bc": 16}

    def set_state(self, workload: dict, options: dict) -> None:
        for w, key in ((self.heads, "heads"), (self.batch, "batch"), (self.head_dim, "head_dim"),
                       (self.groups, "groups")):
            w.setCurrentText(str(workload[key]))
        for s, box in self.strategies.items():
            box.setChecked(s in (options.get("strategies") or []))


#: workload name -> its form (a QGroupBox with ``changed``, ``workload()``, ``options()``, ``set_state()``)
FORMS = {"gemm": QtGemmForm, "mha": QtMhaForm}


class QtWorkloadPanel(QWidget):
    """A radio button and a form per workload of :data:`FORMS`, the options every workload shares, a picker."""

    workloadRequested = Signal(dict, dict)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._quiet = True
        self.picker = QLineEdit()
        self.picker.setPlaceholderText("find a config: gemm 8x8x8, mha heads 32 batch 64 ... (Enter)")
        completer = QCompleter(QStringListModel(all_config_labels(), self), self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setMaxVisibleItems(15)
        self.picker.setCompleter(completer)
        self.picker.returnPressed.connect(self._picked)
        self.picker_error = QLabel()
        self.picker_error.setStyleSheet("color: #d62728")
        self.picker_error.setWordWrap(True)        # the whole reason, on as many lines as it takes
        self.picker_error.hide()
        self.forms = {name: form() for name, form in FORMS.items() if name in WORKLOADS}
        self.radios = {name: QRadioButton(name.upper()) for name in self.forms}
        next(iter(self.radios.values())).setChecked(True)
        kinds = QHBoxLayout()
        for radio in self.radios.values():
            kinds.addWidget(radio)
            radio.toggled.connect(self._changed)
        opts = QGroupBox("options")
        form = QFormLayout(opts)
        self.arch = _combo(ARCHS, DEFAULT_ARCH)
        self.budget = _spin(24, 255, 255)
        self.headroom = QDoubleSpinBox()
        self.headroom.setRange(0.0, 0.9)
        self.headroom.setSingleStep(0.05)
        self.headroom.setValue(0.25)
        form.addRow("arch", self.arch)
        form.addRow("register budget", self.budget)
        form.addRow("headroom target", self.headroom)
        layout = QVBoxLayout(self)
        layout.addWidget(self.picker)
        layout.addWidget(self.picker_error)
        layout.addLayout(kinds)
        for f in self.forms.values():
            layout.addWidget(f)
            f.changed.connect(self._changed)
        layout.addWidget(opts)
        layout.addStretch(1)
        for w in (self.budget, self.headroom):
            w.editingFinished.connect(self._changed)
        self.arch.activated.connect(self._changed)
        self._quiet = False
        self._sync_enabled()

    def _checked(self) -> str:
        return next(name for name, radio in self.radios.items() if radio.isChecked())

    def _sync_enabled(self):
        """Show the checked workload's form only (the others would push its fields out of sight)."""
        checked = self._checked()
        for name, f in self.forms.items():
            f.setEnabled(name == checked)
            f.setVisible(name == checked)

    def workload(self) -> dict:
        return self.forms[self._checked()].workload()

    def options(self) -> dict:
        out = {"arch": self.arch.currentText(), "budget": self.budget.value(), "headroom": self.headroom.value()}
        for f in self.forms.values():
            out.update(f.options())
        return out

    def set_state(self, workload: dict, options: dict) -> None:
        """Show a workload and options without asking for a rebuild (a workload without a form: options only)."""
        self._quiet = True
        form = self.forms.get(workload.get("kind"))
        if form is not None:
            self.radios[workload["kind"]].setChecked(True)
            form.set_state(workload, options)
        self.arch.setCurrentText(options.get("arch", DEFAULT_ARCH))
        self.budget.setValue(int(options.get("budget", 255)))
        self.headroom.setValue(float(options.get("headroom", 0.25)))
        self._sync_enabled()
        self._quiet = False

    def _changed(self, *_):
        self._sync_enabled()
        if not self._quiet:
            self.workloadRequested.emit(self.workload(), self.options())

    def _picked(self):
        """Show the config typed in the picker, exactly that one; anything else is refused with the reason and
        nothing changes (a value out of range is never clamped to the nearest config)."""
        text = self.picker.text().strip()
        before = (self.workload(), self.options())
        try:
            workload = check_workload(parse_config_label(text), {}, repr(text))[0]
            self.set_state(workload, self.options())
            shown = self.workload()
            if shown != workload:
                raise RegtuneError(f"{text!r}: the form cannot show {config_label(workload)} "
                                   f"(it shows {config_label(shown)})")
        except RegtuneError as e:
            self.set_state(*before)
            self.picker_error.setText(str(e))
            self.picker_error.show()
            return
        self.picker_error.hide()
        self.picker_error.setText("")
        self._changed()
