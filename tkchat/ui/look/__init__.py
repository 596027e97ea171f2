"""How the window looks: theme and palette, the system's light or dark, fonts, text size and
projector mode, screen scaling, text that fits."""
