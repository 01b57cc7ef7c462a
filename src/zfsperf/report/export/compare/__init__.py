"""A comparison in each of its formats, one module per format (as the report's exporters above):
the text every format shares (`text.py`: its rows, the lines above and the notes under them), the
terminal (`terminal.py`, fitted to the width), Markdown for a pull request (`markdown.py`), the
JSON object CI recipes read (`json.py`) and the CI gate's lines (`gate.py`)."""
