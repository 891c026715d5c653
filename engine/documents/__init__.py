"""Documents on workflow items: stored bytes (storage), rows and log entries (records), and
collection of files no row refers to (collect)."""
