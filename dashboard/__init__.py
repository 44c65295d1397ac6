"""Flight Deck dashboard: browse a hung job's Flight Recorder dumps in a browser."""
