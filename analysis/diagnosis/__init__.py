"""Diagnosis: mismatches, the wait-for graph and the hang explained, decided as a verdict."""
