"""Importers: traces of real runs turned into timing profiles."""
