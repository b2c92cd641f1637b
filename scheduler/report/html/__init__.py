"""The self-contained HTML report: a page built from the scorecard, with its script and style as package files."""
