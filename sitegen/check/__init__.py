"""`sitegen check`: the submission checker a results repository runs on every pull request, and a build on every bundle.

Each bundle gets its problems, one `file:$.field: message` line each, and a verdict: verified,
consistent or inconsistent (verdict.py). checker.py runs the checks of one bundle; command.py is
the command.
"""
