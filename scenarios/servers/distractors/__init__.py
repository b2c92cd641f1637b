"""Distractor tools for the tool-count axis: the catalogue and the server that lists it."""
