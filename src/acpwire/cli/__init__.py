"""The ``acp`` command line (Rich/Textual live only here)."""
