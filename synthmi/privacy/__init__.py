"""synthmi.privacy."""
