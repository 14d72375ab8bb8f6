"""The Qt-free document model: the session (workload, plans, measurements), its change events and notifications.

Invariant: nothing in this package imports Qt, pyqtgraph or the two interfaces
(gui.cli, gui.qt); both interfaces read and change the document through it.
"""
