"""Reports of a finished run: figures and the Perfetto trace."""
