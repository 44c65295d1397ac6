"""Plotly figures: pure functions of a view, shared by the dashboard and the HTML export."""
