"""The window's chrome: layout, menus, the message box, status, keys — and the window class that
composes the rooms."""
