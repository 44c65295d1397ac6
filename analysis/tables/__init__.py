"""Tables: the map over files and the reduce into one narrow set of tables, cached."""
