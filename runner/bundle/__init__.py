"""The contract between `runner` and `sitegen`: everything both sides must say alike.

The bundle (schema.py) and how it is written and read (files.py), its run ids (ids.py), its
display facts and number formats (display.py, formats.py), redaction (redact.py), the metadata
flags both commands take (overrides.py), launch-command words (launch_words.py) and the wording
of errors (error_lines.py). This package imports msgspec, python-slugify and the standard library
only, never the rest of the runner, so sitegen (and anyone reading bundles) can use it without
the runner's HTTP stack. Nothing else crosses between runner and sitegen.
"""
