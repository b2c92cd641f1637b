"""Talking to models: the adapters behind one protocol, the wire format in each tool mode, tool specs and the safe JSON reader."""
