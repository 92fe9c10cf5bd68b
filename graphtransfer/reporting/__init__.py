"""Showing results to people: evaluation tables as JSON and plots, training curves, drawings."""
