"""Measurement: the probes the window shows live, and ``tkchat bench`` that reports them."""
