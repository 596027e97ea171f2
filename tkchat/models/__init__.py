"""Getting a better model: the catalogue (``catalogue.py``, ``catalogue.json``), the download
itself, run in a child process (``fetch.py``), and the parent's handle on it (``job.py``)."""
