"""Measurement knows timing and memory, not attention: closures in, numbers out."""
