"""QtWorkloadPanel: GEMM (M, N, K in 2..16) or MHA (the 1,512-config grid), options, a searchable picker.

Changing anything emits ``workloadRequested(workload, options)``; the window
rebuilds the program and re-runs the allocators in the background.
"""

from __future__ import annotations

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QCompleter, QDoubleSpinBox, QFormLayout, QGroupBox,
                               QHBoxLayout, QLabel, QLineEdit, QRadioButton, QSpinBox, QVBoxLayout, QWidget)

from engine.arch import ARCHS
from engine.errors import RegtuneError
from engine.workloads.gemm import SCHEDULES, SIZES, Gemm, tiles
from engine.workloads.mha import BATCHES, GROUPS, HEAD_DIMS, HEADS, SEQ_LEN, STRATEGIES


def config_label(workload: dict) -> str:
    if workload.get("kind") == "gemm":
        return f"gemm {workload['m']}x{workload['n']}x{workload['k']}"
    if workload.get("kind") != "mha":
        return f"program {workload.get('name', '')}".rstrip()
    return f"mha heads {workload['heads']} batch {workload['batch']} head_dim {workload['head_dim']} " \
           f"groups {workload['groups']}"


def all_config_labels() -> list[str]:
    out = [config_label({"kind": "gemm", "m": m, "n": n, "k": k}) for m in SIZES for n in SIZES for k in SIZES]
    out += [config_label({"kind": "mha", "heads": h, "batch": b, "head_dim": d, "groups": g})
            for h in HEADS for b in BATCHES for d in HEAD_DIMS for g in GROUPS]
    return out


def parse_config_label(text: str) -> dict:
    words = text.split()
    try:
        if words[0] == "gemm":
            m, n, k = (int(x) for x in words[1].split("x"))
            return {"kind": "gemm", "m": m, "n": n, "k": k, "dtype": "f32"}
        if words[0] == "mha":
            values = dict(zip(words[1::2], (int(x) for x in words[2::2])))
            return {"kind": "mha", "heads": values["heads"], "batch": values["batch"],
                    "head_dim": values["head_dim"], "groups": values["groups"], "seq_len": SEQ_LEN, "dtype": "f32"}
    except (IndexError, KeyError, ValueError):
        pass
    raise RegtuneError(f"not a config: {text!r} (write e.g. 'gemm 8x8x8' or 'mha heads 32 batch 64 head_dim 64 "
                       "groups 4')")


def _combo(values, current) -> QComboBox:
    c = QComboBox()
    c.addItems([str(v) for v in values])
    c.setCurrentText(str(current))
    return c


class QtWorkloadPanel(QWidget):
    workloadRequested = Signal(dict, dict)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._quiet = True
        self.picker = QLineEdit()
        self.picker.setPlaceholderText("find a config: gemm 8x8x8, mha heads 32 batch 64 ... (Enter)")
        labels = all_config_labels()
        completer = QCompleter(QStringListModel(labels, self), self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setMaxVisibleItems(15)
        self.picker.setCompleter(completer)
        self.picker.returnPressed.connect(self._picked)
        self.picker_error = QLabel()
        self.picker_error.setStyleSheet("color: #d62728")
        self.gemm_radio, self.mha_radio = QRadioButton("GEMM"), QRadioButton("MHA")
        self.gemm_radio.setChecked(True)
        kinds = QHBoxLayout()
        kinds.addWidget(self.gemm_radio)
        kinds.addWidget(self.mha_radio)
        self.m, self.n, self.k = (self._spin(2, 16, 8) for _ in range(3))
        gemm = QGroupBox("GEMM  C = alpha A B + beta C (batched)")
        form = QFormLayout(gemm)
        form.addRow("M", self.m)
        form.addRow("N", self.n)
        form.addRow("K", self.k)
        self.tile = QComboBox()
        self.schedule = _combo(SCHEDULES, "k-outer")
        form.addRow("tile", self.tile)
        form.addRow("schedule", self.schedule)
        self.heads, self.batch = _combo(HEADS, 32), _combo(BATCHES, 64)
        self.head_dim, self.groups = _combo(HEAD_DIMS, 64), _combo(GROUPS, 4)
        mha = QGroupBox(f"MHA (seq_len {SEQ_LEN})")
        form = QFormLayout(mha)
        for label, w in (("heads", self.heads), ("batch", self.batch), ("head_dim", self.head_dim),
                         ("groups", self.groups)):
            form.addRow(label, w)
        form.addRow("seq_len", QLabel(str(SEQ_LEN)))
        self.strategies = {s: QCheckBox(s) for s in STRATEGIES}
        for box in self.strategies.values():
            form.addRow(box)
        self.gemm_box, self.mha_box = gemm, mha
        opts = QGroupBox("options")
        form = QFormLayout(opts)
        self.arch = _combo(ARCHS, "sm_80")
        self.budget = self._spin(24, 255, 255)
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
        layout.addWidget(gemm)
        layout.addWidget(mha)
        layout.addWidget(opts)
        layout.addStretch(1)
        for w in (self.m, self.n, self.k, self.budget):
            w.editingFinished.connect(self._changed)
        self.headroom.editingFinished.connect(self._changed)
        for w in (self.tile, self.schedule, self.heads, self.batch, self.head_dim, self.groups, self.arch):
            w.activated.connect(self._changed)
        for box in self.strategies.values():
            box.toggled.connect(self._changed)
        self.gemm_radio.toggled.connect(self._changed)
        for w in (self.m, self.n):
            w.valueChanged.connect(self._fill_tiles)
        self._fill_tiles()
        self._quiet = False
        self._sync_enabled()

    @staticmethod
    def _spin(lo, hi, value) -> QSpinBox:
        s = QSpinBox()
        s.setRange(lo, hi)
        s.setValue(value)
        s.setKeyboardTracking(False)
        return s

    def _fill_tiles(self, *_):
        current = self.tile.currentText()
        self.tile.blockSignals(True)
        self.tile.clear()
        self.tile.addItem("auto (largest within headroom)")
        self.tile.addItems([f"{a}x{b}" for a, b in tiles(Gemm(self.m.value(), self.n.value(), 2))])
        if self.tile.findText(current) >= 0:
            self.tile.setCurrentText(current)
        self.tile.blockSignals(False)

    def _sync_enabled(self):
        gemm = self.gemm_radio.isChecked()
        self.gemm_box.setEnabled(gemm)
        self.mha_box.setEnabled(not gemm)

    def workload(self) -> dict:
        if self.gemm_radio.isChecked():
            return {"kind": "gemm", "m": self.m.value(), "n": self.n.value(), "k": self.k.value(), "dtype": "f32"}
        return {"kind": "mha", "heads": int(self.heads.currentText()), "batch": int(self.batch.currentText()),
                "head_dim": int(self.head_dim.currentText()), "groups": int(self.groups.currentText()),
                "seq_len": SEQ_LEN, "dtype": "f32"}

    def options(self) -> dict:
        tile = self.tile.currentText()
        return {"arch": self.arch.currentText(), "budget": self.budget.value(), "headroom": self.headroom.value(),
                "schedule": self.schedule.currentText(),
                "tile": [int(x) for x in tile.split("x")] if "x" in tile and "auto" not in tile else None,
                "strategies": [s for s, box in self.strategies.items() if box.isChecked()], "bc": 16}

    def set_state(self, workload: dict, options: dict) -> None:
        """Show a workload and options without asking for a rebuild."""
        self._quiet = True
        if workload["kind"] == "gemm":
            self.gemm_radio.setChecked(True)
            self.m.setValue(workload["m"])
            self.n.setValue(workload["n"])
            self.k.setValue(workload["k"])
            self._fill_tiles()
            tile = options.get("tile")
            self.tile.setCurrentText(f"{tile[0]}x{tile[1]}" if tile else self.tile.itemText(0))
            self.schedule.setCurrentText(options.get("schedule", "k-outer"))
        elif workload["kind"] == "mha":
            self.mha_radio.setChecked(True)
            for w, key in ((self.heads, "heads"), (self.batch, "batch"), (self.head_dim, "head_dim"),
                           (self.groups, "groups")):
                w.setCurrentText(str(workload[key]))
            for s, box in self.strategies.items():
                box.setChecked(s in (options.get("strategies") or []))
        self.arch.setCurrentText(options.get("arch", "sm_80"))
        self.budget.setValue(int(options.get("budget", 255)))
        self.headroom.setValue(float(options.get("headroom", 0.25)))
        self._sync_enabled()
        self._quiet = False

    def _changed(self, *_):
        self._sync_enabled()
        if not self._quiet:
            self.workloadRequested.emit(self.workload(), self.options())

    def _picked(self):
        try:
            workload = parse_config_label(self.picker.text().strip())
        except RegtuneError as e:
            self.picker_error.setText(str(e))
            return
        self.picker_error.setText("")
        self.set_state(workload, self.options())
        self._changed()
