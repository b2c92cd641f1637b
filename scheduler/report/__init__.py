"""Scorecards for people and machines: one module or sub-package per output medium, sharing the cell formatters."""
