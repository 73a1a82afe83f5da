"""Channels translate between the outside world and conversations; they hold no logic."""
