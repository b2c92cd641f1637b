"""Parsing at the edge: the strict base of every user-written spec, YAML loading that names the file and field, and checks of the patterns a spec carries."""
