"""Talking to models: the adapters behind one protocol, what is encoded for them and decoded from them in each tool mode, tool specs and the safe JSON reader."""
