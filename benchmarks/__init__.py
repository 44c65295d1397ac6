"""Synthetic Flight Recorder dumps and the Flight Deck benchmark."""
