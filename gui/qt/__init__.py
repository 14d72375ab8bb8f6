"""The window: thin Qt views and undo commands over the Qt-free document model in gui.model.

Invariant: the data lives in engine/ and gui.model; these modules translate its
change events into Qt signals and widgets, and edits into QUndoCommands.
"""
