"""Generation: the model runs on a worker thread and emits events; it never touches Tk."""
