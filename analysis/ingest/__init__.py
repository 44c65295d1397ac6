"""Reading: find the dump files, decode each safely (native scanner or restricted
unpickler / JSON) and check it into per-file Arrow tables."""
