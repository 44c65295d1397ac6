"""The job's model: process groups, collective cells, progress and program order."""
