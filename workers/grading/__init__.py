"""Grading a transcript into the outcome taxonomy: steps, parameter matchers, chained values, normal forms, schema checks."""
