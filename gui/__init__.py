"""The two user interfaces: the `regtune` command and the Qt window.

Invariant: headless commands of `regtune` never import Qt.
"""
