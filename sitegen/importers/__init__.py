"""Importers turn other formats (captured pages, other tools' JSON) into bundles.

`registry.py` lists the importers and picks one by content; each format's module declares
its `Importer` (`importer.py`); `sweep.py` joins the files of a benchmark sweep into one bundle.
"""
