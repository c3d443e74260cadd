"""The Qt editor: the window, its engine host, the output window, undo commands, and the canvas,
panels and dialogs."""
