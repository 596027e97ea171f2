"""Rich text: model markdown to safe HTML, block by block (Tk-free)."""
