"""The noise laws of the mechanisms, cell by cell, for compiled consumers."""
