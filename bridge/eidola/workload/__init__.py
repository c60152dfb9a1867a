"""Workloads: timing profiles, their ops and builder, collective generators, variability and importers."""
