"""nvo's benchmark harness (bench/run.py): scenarios built on network namespaces, the
measurements taken in them, and the report written from the figures."""
