"""What the dashboard and the HTML export query: one group's grid, one rank's entries and stacks."""
