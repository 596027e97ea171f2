"""Scenarios ``tkchat bench`` runs besides its modes, each against baselines of the same run."""
