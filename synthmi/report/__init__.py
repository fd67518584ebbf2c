"""synthmi.report."""
