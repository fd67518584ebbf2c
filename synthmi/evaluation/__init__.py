"""synthmi.evaluation."""
